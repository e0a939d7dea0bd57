import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'
import { realisticLog } from '../persistence/backend.conformance.js'
import { JsonlBackend } from '../persistence/jsonl/backend.js'
import { SqliteBackend } from '../persistence/sqlite/backend.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

/** A stored session whose last turn is open (as after a crash), in a home folder's JSONL store. */
async function storedOpenSession(home: string, cwd: string): Promise<{ id: string; path: string }> {
  const { header, events } = await realisticLog(1, 5, 30)
  const backend = new JsonlBackend({ root: join(home, 'sessions') })
  await backend.create({ ...header, cwd }, events)
  const path = (await backend.pathOf(header.id))!
  await backend.close()
  return { id: header.id, path }
}

describe('dsh sessions', () => {
  it('D-5: resuming a session with a damaged line inside its open turn is refused in one line naming file and line; nothing is cut; `dsh sessions repair` writes a copy that continues', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    const { id, path } = await storedOpenSession(home, cwd)
    const lines = readFileSync(path, 'utf8').split('\n')
    const at = lines.length - 8
    lines.splice(at, 0, lines[at]) // a duplicated line, seven intact lines after it
    const damaged = lines.join('\n')
    writeFileSync(path, damaged)

    const resumed = await runDsh(['--session', id, 'go on'], { cwd, env })
    expect(resumed.code).toBe(1)
    expect(resumed.stderr.trim().split('\n')).toHaveLength(1)
    expect(resumed.stderr).toContain(`${path}: line ${at + 2}: wrong-seq`)
    expect(resumed.stderr).toContain(`dsh sessions repair ${id}`)
    expect(readFileSync(path, 'utf8')).toBe(damaged)

    const repaired = await runDsh(['sessions', 'repair', id], { cwd, env })
    expect(repaired.stderr).toBe('')
    expect(repaired.code).toBe(0)
    const copyId = /into session (\S+)/.exec(repaired.stdout)![1]
    expect(copyId).not.toBe(id)
    expect(readFileSync(path, 'utf8')).toBe(damaged)

    server.enqueue(streamResponse([{ text: 'continued' }, { finish: 'stop', usage }]))
    const continued = await runDsh(['--session', copyId, 'go on'], { cwd, env })
    expect(withoutSessionHint(continued.stderr)).toBe('')
    expect(continued.stdout).toBe('continued\n')
  })

  it('D-7 one writer per session: a second dsh on a running session is refused in one line naming the holder; listing still reads; the next run after the first ends continues it', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    let finish!: () => void
    const finished = new Promise<void>(resolve => { finish = resolve })
    server.enqueue(streamResponse([{ text: 'working' }, { until: finished }, { finish: 'stop', usage }]))
    let output = ''
    let sawChunk!: (id: string) => void
    const chunk = new Promise<string>(resolve => { sawChunk = resolve })
    const first = runDsh(['--output', 'stream-json', 'a long task'], {
      cwd, env,
      onSpawn: child => child.stdout!.on('data', (data: Buffer) => {
        output += data.toString()
        // A streamed chunk comes after the checkpoint before the request: the session is stored.
        const line = output.split('\n').find(text => text.includes('"assistant/chunk"'))
        if (line) sawChunk(JSON.parse(line).sessionId)
      }),
    })
    const id = await chunk
    const second = await runDsh(['--session', id, 'interfere'], { cwd, env })
    expect(second.code).toBe(1)
    expect(second.stderr).toMatch(new RegExp(`^dsh: session ${id} is in use by another writer \\(pid \\d+ on \\S+, since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)\\n$`))
    const listed = await runDsh(['sessions', '--json'], { cwd, env })
    expect(JSON.parse(listed.stdout).map((s: { id: string }) => s.id)).toContain(id)
    finish()
    const done = await first
    expect(done.code).toBe(0)
    server.enqueue(streamResponse([{ text: 'continued' }, { finish: 'stop', usage }]))
    const third = await runDsh(['--session', id, 'go on'], { cwd, env })
    expect(withoutSessionHint(third.stderr)).toBe('')
    expect(third.stdout).toBe('continued\n')
    const texts = server.requests.at(-1)!.body.messages.map((message: { role: string; content: string }) => `${message.role}:${message.content}`)
    expect(texts).toContain('user:a long task')
    expect(texts).not.toContain('user:interfere')
  })

  it('--cwd naming a missing folder (or a file) is refused with exit 2 and nothing is stored', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    const before = server.requests.length
    for (const target of [join(cwd, 'no-such-folder'), 'relative/missing']) {
      const result = await runDsh(['--cwd', target, 'do something'], { cwd, env })
      expect(result.code).toBe(2)
      expect(result.stderr).toMatch(/^dsh: --cwd .*: no such folder\n$/)
    }
    writeFileSync(join(cwd, 'a-file'), 'x')
    const file = await runDsh(['--cwd', 'a-file', 'do something'], { cwd, env })
    expect(file.code).toBe(2)
    expect(file.stderr).toBe(`dsh: --cwd ${join(cwd, 'a-file')}: not a folder\n`)
    expect(server.requests.length).toBe(before)
    const listed = await runDsh(['sessions', '--json'], { cwd, env })
    expect(JSON.parse(listed.stdout)).toEqual([])
  })

  it('`dsh sessions export` then `import` moves a session to another home; a taken id is refused (exit 1), --new-id keeps both; a bad file names its line', async () => {
    const { home, cwd } = tempHome()
    const { id } = await storedOpenSession(home, cwd)
    const file = join(cwd, 'moved.jsonl')
    const exported = await runDsh(['sessions', 'export', id, '-o', file], { cwd, env: { DSH_HOME: home } })
    expect(exported.code).toBe(0)
    expect(exported.stderr).toMatch(new RegExp(`^exported session ${id} \\(\\d+ events\\) to ${file}\n$`))
    const onStdout = await runDsh(['sessions', 'export', id], { cwd, env: { DSH_HOME: home } })
    expect(onStdout.stdout).toBe(readFileSync(file, 'utf8'))
    const other = tempHome()
    const imported = await runDsh(['sessions', 'import', file], { cwd: other.cwd, env: { DSH_HOME: other.home } })
    // One line: the session runs here, with this home's permission defaults (security #42.5).
    expect(imported.stderr).toBe(`dsh: imported session ${id}: this home's defaults apply (workspace-write, ask); working folder: ${other.cwd} (the file named ${cwd})\n`)
    expect(imported.code).toBe(0)
    // The export was taken with its last turn open: the copy is stored closed.
    expect(imported.stdout).toMatch(new RegExp(`^imported session ${id} \\(\\d+ events\\); its open turn was closed as interrupted\ncontinue with: dsh --session ${id} "\\.\\.\\."\n$`))
    const again = await runDsh(['sessions', 'import', file], { cwd: other.cwd, env: { DSH_HOME: other.home } })
    expect(again.code).toBe(1)
    expect(again.stderr).toBe(`dsh: import: session "${id}" is already stored; import it under a new id (--new-id) or remove the stored one first\n`)
    // A copy, from stdin, given a working folder of this machine (the exporter's may not exist here).
    const copy = await runDsh(['sessions', 'import', '--new-id', '-', '--cwd', '.'], { cwd: other.cwd, env: { DSH_HOME: other.home }, input: readFileSync(file, 'utf8') })
    expect(copy.code).toBe(0)
    expect(copy.stdout).toContain(`imported session ${id}-imported `)
    const listed = JSON.parse((await runDsh(['sessions', '--json'], { cwd: other.cwd, env: { DSH_HOME: other.home } })).stdout) as { id: string; lastTurn?: string; cwd?: string }[]
    expect(listed.map(s => [s.id, s.lastTurn, s.cwd]).sort()).toEqual([[id, 'interrupted', other.cwd], [`${id}-imported`, 'interrupted', other.cwd]])
    const noFolder = await runDsh(['sessions', 'import', '--new-id', file, '--cwd', 'no-such-folder'], { cwd: other.cwd, env: { DSH_HOME: other.home } })
    expect(noFolder.code).toBe(2)
    expect(noFolder.stderr).toContain('--cwd "no-such-folder" is not a folder')
    writeFileSync(file, readFileSync(file, 'utf8').replace(/\n[^\n]*\n$/, '\n{"type":\n'))
    const bad = await runDsh(['sessions', 'import', '--new-id', file], { cwd: other.cwd, env: { DSH_HOME: other.home } })
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/^dsh: import: not a valid session log: line \d+: /)
  })

  it('an unknown argument to `dsh sessions` is a usage error (exit 2) naming it', async () => {
    const { home, cwd } = tempHome()
    const result = await runDsh(['sessions', '--bogus'], { cwd, env: { DSH_HOME: home } })
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/unknown argument "--bogus"/)
    expect(result.stdout).toBe('')
  })

  it('`dsh sessions` shows how the last turn of each session ended (completed, error, or still open)', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'fine' }, { finish: 'stop', usage }]))
    const ok = await runDsh(['--profile', 'headless', '--output', 'stream-json', 'hello'], { cwd, env })
    expect(ok.code).toBe(0)
    const okId = JSON.parse(ok.stdout.trim().split('\n').at(-1)!).sessionId as string
    const open = await storedOpenSession(home, cwd)
    const listed = await runDsh(['sessions'], { cwd, env: { DSH_HOME: home } })
    expect(listed.code).toBe(0)
    const [head, ...rows] = listed.stdout.trimEnd().split('\n')
    expect(head).toMatch(/\bLAST TURN\b/)
    expect(rows.find(row => row.startsWith(okId))).toMatch(/\bcompleted\b/)
    expect(rows.find(row => row.startsWith(open.id))).toMatch(/\bopen\b/)
    const json = JSON.parse((await runDsh(['sessions', '--json'], { cwd, env: { DSH_HOME: home } })).stdout) as { id: string; lastTurn?: string }[]
    expect(json.find(s => s.id === okId)?.lastTurn).toBe('completed')
    expect(json.find(s => s.id === open.id)?.lastTurn).toBe('open')
  })

  it('`dsh sessions` lines its columns up by display width: wide titles (CJK, emoji) and a long folder cut with an ellipsis', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    const deep = join(cwd, 'a-rather-long-folder-name-'.repeat(3), '数据文件夹')
    mkdirSync(deep, { recursive: true })
    for (const [title, folder] of [['列出文件 🚀 please', cwd], ['plain ascii title', cwd], ['整理 the notes', deep]]) {
      server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
      expect((await runDsh(['--profile', 'headless', title], { cwd: folder, env })).code).toBe(0)
    }
    const listed = await runDsh(['sessions'], { cwd, env: { DSH_HOME: home } })
    expect(listed.code).toBe(0)
    const lines = listed.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(4)
    const wideChar = /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60\u{1f300}-\u{1faff}]/u
    const columnOf = (line: string, at: number) => [...line.slice(0, at)].reduce((width, char) => width + (wideChar.test(char) ? 2 : 1), 0)
    const lastTurn = columnOf(lines[0], lines[0].indexOf('LAST TURN'))
    for (const line of lines.slice(1)) expect(columnOf(line, line.lastIndexOf('completed')), line).toBe(lastTurn)
    expect(listed.stdout).toContain('列出文件 🚀 please')
    // The deep folder is cut to 60 columns, whole characters, with an ellipsis.
    const cut = lines.find(line => line.includes('整理'))!
    expect(cut).toMatch(new RegExp(`${cwd}/a-rather-long[^ ]*…  `))
    expect(cut).not.toMatch(/[\ud800-\udfff]/u)
  })

  it('S-13: a session of a newer format version is listed as unreadable (naming why), not dropped', async () => {
    const { home, cwd } = tempHome()
    const newer = await storedOpenSession(home, cwd)
    const lines = readFileSync(newer.path, 'utf8').split('\n')
    const header = JSON.parse(lines[0]!)
    lines[0] = JSON.stringify({ ...header, version: header.version + 1 })
    writeFileSync(newer.path, lines.join('\n'))
    const listed = await runDsh(['sessions'], { cwd, env: { DSH_HOME: home } })
    expect(listed.code).toBe(0)
    const row = listed.stdout.split('\n').find(line => line.startsWith(newer.id))
    expect(row).toMatch(/unreadable/)
    const json = JSON.parse((await runDsh(['sessions', '--json'], { cwd, env: { DSH_HOME: home } })).stdout) as { id: string; unreadable?: string }[]
    expect(json.find(s => s.id === newer.id)?.unreadable).toMatch(/newer than this runtime supports/)
  })

  it('#43 item 13: `dsh sessions` over a damaged SQLite file lists the session it cannot load as damaged, with the load\'s own message on stderr (file, session, repair command); the intact one stays healthy', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    const patch = join(home, 'sqlite.yml')
    writeFileSync(patch, '- id: persistence\n  name: persistence-sqlite\n')
    const file = join(home, 'sessions.db')
    const backend = new SqliteBackend({ file })
    const { header, events } = await realisticLog(40, 7)
    await backend.create({ ...header, cwd }, events)
    const small = await realisticLog(1, 8)
    await backend.create({ ...small.header, id: 'zz-intact', cwd }, small.events)
    const pages = backend.db.prepare<[], { pageno: number }>("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno").all()
    const pageSize = backend.db.pragma('page_size', { simple: true }) as number
    backend.db.pragma('wal_checkpoint(TRUNCATE)')
    await backend.close()
    // As in the SQLite store's load test: a leaf page of the first session's events overwritten.
    const bytes = readFileSync(file)
    bytes.fill(0x5a, (pages[1]!.pageno - 1) * pageSize, pages[1]!.pageno * pageSize)
    writeFileSync(file, bytes)

    const listed = await runDsh(['sessions', '--patch', patch], { cwd, env })
    expect(listed.code).toBe(0)
    const rows = listed.stdout.split('\n')
    expect(rows.find(line => line.startsWith(header.id))).toMatch(/damaged: cannot be loaded/)
    expect(rows.find(line => line.startsWith('zz-intact'))).toMatch(/completed$/)
    const said = listed.stderr.trim().split('\n')
    expect(said).toHaveLength(1)
    expect(said[0]).toContain(`${file}: session ${JSON.stringify(header.id)} cannot be read, the database file is damaged`)
    expect(said[0]).toContain(`dsh sessions repair ${header.id}`)
    const json = JSON.parse((await runDsh(['sessions', '--patch', patch, '--json'], { cwd, env })).stdout) as { id: string; damaged?: boolean; unreadable?: string }[]
    expect(json.find(s => s.id === header.id)).toMatchObject({ damaged: true, unreadable: said[0]!.replace(/^dsh: /, '') })

    const resumed = await runDsh(['--patch', patch, '--session', header.id, 'go on'], { cwd, env })
    expect(resumed.code).toBe(1)
    expect(resumed.stderr).toContain(said[0]!.replace(/^dsh: /, ''))
  })

  it('`dsh sessions delete ID` moves a session to the store\'s trash (no longer listed or resumable, its files kept); an unknown id is exit 1, a missing one a usage error', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'kept for now' }, { finish: 'stop', usage }]))
    const run = await runDsh(['--output', 'json', 'hello'], { cwd, env })
    const id = JSON.parse(run.stdout).sessionId as string
    expect((await runDsh(['sessions'], { cwd, env })).stdout).toContain(id.slice(0, 8))
    const deleted = await runDsh(['sessions', 'delete', id], { cwd, env })
    expect(deleted.stderr).toBe('')
    expect(deleted.code).toBe(0)
    expect(deleted.stdout).toContain(`deleted session ${id}`)
    expect((await runDsh(['sessions'], { cwd, env })).stdout).not.toContain(id.slice(0, 8))
    const resumed = await runDsh(['--session', id, 'again'], { cwd, env })
    expect(resumed.code).toBe(1)
    expect(resumed.stderr).toMatch(/not stored/)
    // The log is kept in the trash, not unlinked.
    const trash = join(home, 'sessions', '.trash')
    expect(readdirSync(trash).some(name => name.endsWith(id))).toBe(true)
    const again = await runDsh(['sessions', 'delete', id], { cwd, env })
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/no stored session/)
    expect((await runDsh(['sessions', 'delete'], { cwd, env })).code).toBe(2)
  })

  it('--session and `dsh sessions delete|export` take the start of a stored id, as the lists show it', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'first answer' }, { finish: 'stop', usage }]), streamResponse([{ text: 'second answer' }, { finish: 'stop', usage }]))
    const id = JSON.parse((await runDsh(['--output', 'json', 'hello'], { cwd, env })).stdout).sessionId as string
    const short = id.slice(0, 8)
    const resumed = await runDsh(['--output', 'json', '--session', short, 'again'], { cwd, env })
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(JSON.parse(resumed.stdout).sessionId).toBe(id)
    expect(server.requests.at(-1)!.body.messages.some((message: { content: unknown }) => JSON.stringify(message.content).includes('first answer'))).toBe(true)
    const exported = await runDsh(['sessions', 'export', short], { cwd, env })
    expect(exported.code, exported.stderr).toBe(0)
    expect(exported.stdout).toContain(id)
    const deleted = await runDsh(['sessions', 'delete', short], { cwd, env })
    expect(deleted.code, deleted.stderr).toBe(0)
    expect(deleted.stdout).toContain(`deleted session ${id}`)
    const gone = await runDsh(['--session', short, 'more'], { cwd, env })
    expect(gone.code).toBe(1)
    expect(gone.stderr).toContain(`session "${short}" is not stored`)
  })
})
