/**
 * #44.6: `dsh sessions` and the web's sidebar list the sessions worth going back to. A session
 * with nothing in it and one whose only turn failed are left out (one stderr line counts them);
 * `--all` (web: `sessions.list {all: true}`) lists every one. `dsh sessions restore ID` brings a
 * deleted session back from the store's trash.
 */
import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { errorResponse, FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { startWebApi } from '../../test-support/web-api.js'
import { JsonlBackend } from '../persistence/jsonl/backend.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

/** A home holding a completed run, a failed first run and a session with no turn at all. */
async function mixedHome() {
  const { home, cwd } = tempHome()
  const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
  server.enqueue(streamResponse([{ text: 'PONG' }, { finish: 'stop', usage }]))
  const good = JSON.parse((await runDsh(['--output', 'json', 'say pong'], { cwd, env })).stdout) as { sessionId: string }
  server.enqueue(errorResponse(401, { error: { message: 'bad key' } }))
  const failed = await runDsh(['--output', 'json', 'say pong'], { cwd, env })
  expect(failed.code).toBe(1)
  const bad = JSON.parse(failed.stdout) as { sessionId: string; reason: { kind: string } }
  expect(bad.reason.kind).toBe('error')
  const empty = randomUUID()
  const backend = new JsonlBackend({ root: join(home, 'sessions') })
  await backend.create({ type: 'session', version: 0, id: empty, createdAt: Date.now(), cwd, delegationDepth: 0 }, [])
  await backend.close()
  return { home, cwd, env, good: good.sessionId, bad: bad.sessionId, empty }
}

describe('sessions worth going back to (#44.6)', () => {
  it('dsh sessions leaves out a failed first run and an empty session, says how many on stderr; --all lists them; --json the same', async () => {
    const { cwd, env, good, bad, empty } = await mixedHome()
    const listed = await runDsh(['sessions'], { cwd, env })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain(good)
    expect(listed.stdout).not.toContain(bad)
    expect(listed.stdout).not.toContain(empty)
    expect(listed.stderr).toBe('dsh: 2 sessions with no completed turn not shown (dsh sessions --all lists them)\n')

    const all = await runDsh(['sessions', '--all'], { cwd, env })
    expect(all.stderr).toBe('')
    for (const id of [good, bad, empty]) expect(all.stdout).toContain(id)

    const json = await runDsh(['sessions', '--json'], { cwd, env })
    expect((JSON.parse(json.stdout) as { id: string }[]).map(s => s.id)).toEqual([good])
    const allJson = await runDsh(['sessions', '--json', '--all'], { cwd, env })
    expect((JSON.parse(allJson.stdout) as { id: string }[]).map(s => s.id).sort()).toEqual([good, bad, empty].sort())
  })

  it('the web sidebar\'s sessions.list leaves them out too, and lists them with all: true', async () => {
    const { home, cwd, good, bad, empty } = await mixedHome()
    const web = await startWebApi({ home, cwd })
    try {
      const list = async (params: Record<string, unknown>) => await web.ctx.webApi.get('sessions.list')!(params, {} as never) as { id: string }[]
      expect((await list({})).map(s => s.id)).toEqual([good])
      expect((await list({ all: true })).map(s => s.id).sort()).toEqual([good, bad, empty].sort())
    } finally {
      await web.stop()
    }
  })
})

describe('dsh sessions restore ID (#44.6)', () => {
  for (const store of ['jsonl', 'sqlite'] as const) {
    it(`${store}: a deleted session comes back from the trash, listed and resumable with its history; restoring it again while it is stored is refused, an id not in the trash is exit 1`, async () => {
      const { home, cwd } = tempHome()
      const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
      const patch = join(home, 'store.yml')
      writeFileSync(patch, store === 'sqlite' ? '- id: persistence\n  name: persistence-sqlite\n' : '[]\n')
      server.enqueue(streamResponse([{ text: 'the first answer' }, { finish: 'stop', usage }]))
      const id = (JSON.parse((await runDsh(['--patch', patch, '--output', 'json', 'hello'], { cwd, env })).stdout) as { sessionId: string }).sessionId
      const deleted = await runDsh(['--patch', patch, 'sessions', 'delete', id], { cwd, env })
      expect(deleted.stdout).toContain(`dsh sessions restore ${id} puts it back`)
      expect((await runDsh(['--patch', patch, 'sessions', '--all'], { cwd, env })).stdout).not.toContain(id)

      const restored = await runDsh(['--patch', patch, 'sessions', 'restore', id], { cwd, env })
      expect(restored.stderr).toBe('')
      expect(restored.code).toBe(0)
      expect(restored.stdout).toBe(`restored session ${id} from the store's trash\ncontinue with: dsh --session ${id} "..."\n`)
      const listed = await runDsh(['--patch', patch, 'sessions', '--json'], { cwd, env })
      expect(JSON.parse(listed.stdout)).toMatchObject([{ id, turns: 1, lastTurn: 'completed' }])
      server.enqueue(streamResponse([{ text: 'again' }, { finish: 'stop', usage }]))
      const resumed = await runDsh(['--patch', patch, '--output', 'json', '--session', id, 'more'], { cwd, env })
      expect(resumed.code, resumed.stderr).toBe(0)
      expect(JSON.stringify(server.requests.at(-1)!.body.messages)).toContain('the first answer')

      const twice = await runDsh(['--patch', patch, 'sessions', 'restore', id], { cwd, env })
      expect(twice.code).toBe(1)
      expect(twice.stderr).toMatch(/^dsh: session ".*" is stored; it cannot be restored over\n$/)
      expect((await runDsh(['--patch', patch, 'sessions', 'restore', 'no-such-id'], { cwd, env })).stderr).toBe('dsh: no session "no-such-id" in the store\'s trash (restore takes the whole id that delete printed)\n')
      expect((await runDsh(['--patch', patch, 'sessions', 'restore'], { cwd, env })).code).toBe(2)
    })
  }
})
