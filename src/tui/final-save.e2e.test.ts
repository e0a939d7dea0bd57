/**
 * The terminal app's exit when the store cannot take the end of the session (docs/persistence.md,
 * "When the store fails"), through the real binary in tmux: the same final save as headless
 * (retried for a bounded time), then one line naming the session and how many events are not
 * stored, and exit 1, never "Session ... is stored".
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { gate } from '../../test-support/gate.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { lockSqlite, type SqliteLock } from '../../test-support/sqlite-lock.js'
import { hasTmux, Terminal } from '../../test-support/tmux.js'
import { SqliteBackend } from '../persistence/sqlite/backend.js'

const tmux = hasTmux()
if (!tmux) console.warn('skipping terminal app tests: tmux is missing (apt-get install -y tmux)')

let server: FakeDeepSeek
let terminal: Terminal | undefined
let lock: SqliteLock | undefined
beforeEach(async () => { server = await FakeDeepSeek.start() })
afterEach(async () => {
  terminal?.close()
  await lock?.release()
  lock?.child.kill()
  terminal = lock = undefined
  await server.close()
})

const usage = { prompt_tokens: 1200, completion_tokens: 40 }

describe.skipIf(!tmux)('the terminal app\'s final save (tmux)', () => {
  it('D-2: the SQLite store locked by another process past the retry window: one line naming the session and how many events are not stored, exit 1', async () => {
    const { home, cwd } = tempHome()
    const file = join(home, 'sessions.db')
    const patch = join(home, 'patch.yml')
    writeFileSync(patch, '- id: session-title\n  config:\n    llm: false\n- id: persistence\n  name: persistence-sqlite\n  config:\n    retryMs: 600\n    busyTimeoutMs: 100\n')
    const held = gate()
    server.enqueue(streamResponse([{ text: 'the answer' }, { until: held.promise }, { text: ', in full' }, { finish: 'stop', usage }]))
    terminal = Terminal.shell({ cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined, NO_COLOR: undefined, TERM: 'xterm-256color' }, width: 100, height: 30 })
    await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
    terminal.type(`clear; ${process.execPath} ${dshBin} --patch ${patch}; echo "exit $?"`)
    terminal.keys('Enter')
    await terminal.waitFor('Ask dsh to do something', { what: 'the input box', timeoutMs: 20_000 })
    terminal.type('question')
    await terminal.waitFor('question', { what: 'the typed text' })
    terminal.keys('Enter')
    await server.waitForRequests(1)
    // The session and its writer lock are stored by now (the checkpoint before the request).
    lock = await lockSqlite(file)
    held.open()
    await terminal.waitFor('the answer, in full', { what: 'the whole answer', history: true })
    terminal.keys('C-c')
    await terminal.waitFor('Press Ctrl-C again to exit')
    terminal.keys('C-c')
    const left = await terminal.waitFor(/^exit \d+$/m, { what: 'the exit status', history: true, timeoutMs: 20_000 })
    // The line wraps in the terminal: read with the white space squeezed out.
    const line = /dsh:session([0-9a-f-]{36})isnotfullystored:itslast(\d+)of(\d+)eventscouldnotbewritten/.exec(left.replace(/\s+/g, ''))
    expect(line, left).not.toBeNull()
    expect(left).toMatch(/^exit 1$/m)
    expect(left).not.toMatch(/Session \S+ is stored\./)
    await lock.release()
    const backend = new SqliteBackend({ file })
    try {
      const stored = await backend.loadStored(line![1]!)
      expect(stored, `${line![1]} in ${left}`).toBeDefined()
      expect(stored!.events.length + Number(line![2])).toBe(Number(line![3]))
    } finally {
      await backend.close()
    }
  }, 60_000)
})
