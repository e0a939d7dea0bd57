/**
 * A text-mode run in a terminal ends by saying which session it used and how to continue it,
 * on stderr, also when the user stops it with Ctrl-C. Needs tmux for a real terminal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { hasTmux, Terminal } from '../../test-support/tmux.js'

const tmux = hasTmux()
if (!tmux) console.warn('session-hint.test.ts: skipped, tmux is missing (apt-get install tmux)')

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

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
    const stopped = Terminal.start([process.execPath, dshBin, '--profile', 'headless', 'hello again'], { cwd, env, width: 160 })
    try {
      await stopped.waitFor(() => server.requests.length > 1, { what: 'the model request' })
      stopped.keys('C-c')
      const screen = await stopped.waitFor(() => stopped.exited(), { history: true, what: 'the run to stop' })
      expect(screen).toMatch(/dsh: session (\S+); continue with: dsh --session \1 "\.\.\."/)
    } finally {
      release()
      stopped.close()
    }
  })
})
