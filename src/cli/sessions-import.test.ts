/**
 * `dsh sessions import` through real processes: what an imported file may not bring along
 * (its permission knobs, its working folder) and where FILE is read from (security #42.5, #42.7).
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

/** A home that knows the fake model server; no permission default from the test's environment. */
const envFor = (home: string) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', DSH_PERMISSION_MODE: undefined })

/** A session run with danger-full-access / never in one home, exported to a file there. */
async function exportedDangerSession(): Promise<{ id: string; file: string; cwd: string }> {
  const { home, cwd } = tempHome()
  server.enqueue(streamResponse([{ text: 'ready' }, { finish: 'stop', usage }]))
  const run = await runDsh(['--permission-mode', 'danger-full-access', '--output', 'json', 'hello'], { cwd, env: envFor(home) })
  expect(run.code, run.stderr).toBe(0)
  const id = JSON.parse(run.stdout).sessionId as string
  const file = join(cwd, 'shared.jsonl')
  const exported = await runDsh(['sessions', 'export', id, '-o', file], { cwd, env: envFor(home) })
  expect(exported.code, exported.stderr).toBe(0)
  const types = readFileSync(file, 'utf8').trim().split('\n').slice(1).map(line => JSON.parse(line) as { type: string; data: Record<string, unknown> })
  expect(types.filter(event => event.type === 'sandbox/mode').at(-1)?.data.mode).toBe('danger-full-access')
  expect(types.filter(event => event.type === 'approval/policy').at(-1)?.data.policy).toBe('never')
  return { id, file, cwd: realpathSync(cwd) }
}

describe('dsh sessions import', () => {
  it('security #42.5: a file ending with danger-full-access / never is continued under this home\'s defaults, in this folder: a write outside the workspace is denied', async () => {
    const shared = await exportedDangerSession()
    const { home, cwd } = tempHome()
    const here = realpathSync(cwd)
    const imported = await runDsh(['sessions', 'import', shared.file], { cwd, env: envFor(home) })
    expect(imported.code, imported.stderr).toBe(0)

    // Outside the workspace and outside the temp areas workspace-write allows.
    const outsideDir = mkdtempSync('/dev/shm/dsh-outside-')
    const outside = join(outsideDir, 'escaped.txt')
    try {
      server.enqueue(
        streamResponse([
          { toolCall: { index: 0, id: 'w-out', name: 'write', arguments: JSON.stringify({ file_path: outside, content: 'escaped' }) } },
          { toolCall: { index: 1, id: 'w-in', name: 'write', arguments: JSON.stringify({ file_path: 'inside.txt', content: 'kept' }) } },
          { finish: 'tool_calls', usage },
        ]),
        streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
      )
      // Started from another folder: the session runs where it was imported, not where the file was made.
      const continued = await runDsh(['--session', shared.id, 'write both files'], { cwd: home, env: envFor(home) })
      expect(continued.code, continued.stderr).toBe(0)
      expect(existsSync(outside)).toBe(false)
      expect(readFileSync(join(here, 'inside.txt'), 'utf8')).toBe('kept')
      expect(existsSync(join(shared.cwd, 'inside.txt'))).toBe(false)
      expect(withoutSessionHint(continued.stderr)).toBe('dsh: a file write was denied by the sandbox (workspace-write mode). To run without the sandbox and without approvals, pass --permission-mode danger-full-access (or set DSH_PERMISSION_MODE).\n')
      const results = server.requests.at(-1)!.body.messages.filter((message: { role: string }) => message.role === 'tool') as { tool_call_id: string; content: string }[]
      expect(results.find(result => result.tool_call_id === 'w-out')?.content).toContain('[sandbox: file access denied under workspace-write mode]')
    } finally {
      rmSync(outsideDir, { recursive: true, force: true })
    }
    // The import said so, in one line.
    expect(imported.stderr).toBe(`dsh: imported session ${shared.id}: permission knobs from the file (danger-full-access, never) were dropped; ` +
      `this home's defaults apply (workspace-write, ask); working folder: ${here} (the file named ${shared.cwd})\n`)
    const listed = JSON.parse((await runDsh(['sessions', '--json'], { cwd, env: envFor(home) })).stdout) as { id: string; cwd?: string }[]
    expect(listed).toMatchObject([{ id: shared.id, cwd: here }])
  })

  it('security #42.5: this home\'s own default (DSH_PERMISSION_MODE) is what applies, and a file without knobs gets the same line without the dropped part', async () => {
    const shared = await exportedDangerSession()
    const { home, cwd } = tempHome()
    const env = { ...envFor(home), DSH_PERMISSION_MODE: 'read-only' }
    const imported = await runDsh(['sessions', 'import', shared.file], { cwd, env })
    expect(imported.code, imported.stderr).toBe(0)
    server.enqueue(
      streamResponse([{ toolCall: { id: 'w1', name: 'write', arguments: JSON.stringify({ file_path: 'note.txt', content: 'x' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
    )
    const continued = await runDsh(['--session', shared.id, 'write a note'], { cwd, env })
    expect(continued.code, continued.stderr).toBe(0)
    expect(existsSync(join(cwd, 'note.txt'))).toBe(false)
    expect(continued.stderr).toContain('denied by the sandbox (read-only mode)')
    expect(imported.stderr).toContain(`permission knobs from the file (danger-full-access, never) were dropped; this home's defaults apply (read-only, ask); working folder: ${realpathSync(cwd)}`)

    // The imported session, exported again from here, carries no knob of its own since the import.
    const again = join(cwd, 'again.jsonl')
    expect((await runDsh(['sessions', 'export', shared.id, '-o', again], { cwd, env })).code).toBe(0)
    const other = tempHome()
    const plain = await runDsh(['sessions', 'import', again], { cwd: other.cwd, env: envFor(other.home) })
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stderr).toBe(`dsh: imported session ${shared.id}: this home's defaults apply (workspace-write, ask); working folder: ${realpathSync(other.cwd)} (the file named ${realpathSync(cwd)})\n`)
  })

  it('#42.7: FILE is read relative to the current folder, not to --cwd DIR; a relative --cwd resolves once', async () => {
    const shared = await exportedDangerSession()
    const { home, cwd } = tempHome()
    const sub = join(cwd, 'sub')
    mkdirSync(sub)
    copyFileSync(shared.file, join(cwd, 'moved.jsonl'))
    const imported = await runDsh(['sessions', 'import', 'moved.jsonl', '--cwd', 'sub'], { cwd, env: envFor(home) })
    expect(imported.code, imported.stderr).toBe(0)
    expect(imported.stderr).toContain(`working folder: ${realpathSync(sub)} (the file named`)
    const listed = JSON.parse((await runDsh(['sessions', '--json'], { cwd, env: envFor(home) })).stdout) as { id: string; cwd?: string }[]
    expect(listed).toMatchObject([{ id: shared.id, cwd: realpathSync(sub) }])
    // A file that is only in DIR is not found from here.
    copyFileSync(shared.file, join(sub, 'only-in-sub.jsonl'))
    const missing = await runDsh(['sessions', 'import', '--new-id', 'only-in-sub.jsonl', '--cwd', 'sub'], { cwd, env: envFor(home) })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain(join(realpathSync(cwd), 'only-in-sub.jsonl'))
  })
})
