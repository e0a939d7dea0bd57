/**
 * A text-mode run ends by saying which session it used and how to continue it, on stderr (scripts
 * read stdout), piped or in a terminal, also when the user stops it with Ctrl-C. The terminal
 * part needs tmux.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, runDsh, SESSION_HINT, tempHome } from '../../test-support/run-dsh.js'
import { hasTmux, Terminal } from '../../test-support/tmux.js'

const tmux = hasTmux()
if (!tmux) console.warn('session-hint.test.ts: skipped, tmux is missing (apt-get install tmux)')

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

describe('the session hint of a piped run (item 19)', () => {
  it('text mode prints the session id and how to continue on stderr even when stderr is not a terminal', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'piped answer' }, { finish: 'stop', usage }]))
    const result = await runDsh(['--profile', 'headless', 'hello'], { cwd, env })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('piped answer\n')
    const id = result.stderr.match(SESSION_HINT)?.[1]
    expect(id).toBeDefined()
    expect(result.stderr).toBe(`dsh: session ${id}; continue with: dsh --session ${id} "..."\n`)
  })

  it('stream-json prints no hint: every line of stdout carries the session id', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'streamed' }, { finish: 'stop', usage }]))
    const result = await runDsh(['--profile', 'headless', '--output', 'stream-json', 'hello'], { cwd, env })
    expect(result.code).toBe(0)
    expect(result.stderr).toBe('')
  })
})

describe.skipIf(!tmux)('the session hint of a text-mode run', () => {
  it('prints the session id and how to continue at the end, and after Ctrl-C', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'all done' }, { finish: 'stop', usage }]))
    const done = Terminal.start([process.execPath, dshBin, '--profile', 'headless', 'hello'], { cwd, env, width: 160 })
    try {
      const screen = await done.waitFor(text => done.exited() && /all done/.test(text), { history: true, what: 'the run to end' })
      expect(screen).toMatch(/dsh: session (\S+); continue with: dsh --session \1 "\.\.\."/)
    } finally {
      done.close()
    }

    let release!: () => void
    const hold = new Promise<void>(resolve => { release = resolve })
    server.enqueue(streamResponse([{ text: 'partial' }, { until: hold }, { finish: 'stop', usage }] as never))
    const asked = server.requests.length
    const stopped = Terminal.start([process.execPath, dshBin, '--profile', 'headless', 'hello again'], { cwd, env, width: 160 })
    try {
      await stopped.waitFor(() => server.requests.length > asked, { what: 'the model request' })
      stopped.keys('C-c')
      const screen = await stopped.waitFor(() => stopped.exited(), { history: true, what: 'the run to stop' })
      expect(screen).toMatch(/dsh: session (\S+); continue with: dsh --session \1 "\.\.\."/)
    } finally {
      release()
      stopped.close()
    }
  })
})
