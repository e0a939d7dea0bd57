/**
 * `/model PROVIDER/MODEL` in the terminal app as a user types it: the real `dsh` in tmux (80x24),
 * switching from DeepSeek to the Anthropic preset between turns, the turn answered by the local
 * Messages fake over real HTTP and priced from the shipped prices (no settings).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FakeAnthropic, messagesStream } from '../../test-support/fake-anthropic.js'
import { noTitlePatch } from '../../test-support/patches.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { hasTmux, Terminal } from '../../test-support/tmux.js'

const tmux = hasTmux()
let anthropic: FakeAnthropic
const terminals: Terminal[] = []
beforeEach(async () => { anthropic = await FakeAnthropic.start() })
afterEach(async () => {
  for (const terminal of terminals.splice(0)) terminal.close()
  await anthropic.close()
})

describe.skipIf(!tmux)('/model with provider presets (tmux)', () => {
  it('/model anthropic/claude-sonnet-4-5 switches the route; the next turn goes over the Messages API and shows its cost', async () => {
    const { home, cwd } = tempHome()
    const terminal = Terminal.shell({
      cwd, width: 80, height: 24,
      env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'test-key', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: 'sk-ant-tui', ANTHROPIC_BASE_URL: anthropic.url, DSH_MODEL: undefined, NO_COLOR: undefined, TERM: 'xterm-256color' },
    })
    terminals.push(terminal)
    await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
    terminal.type(`clear; ${process.execPath} ${dshBin} --patch ${noTitlePatch()}`)
    terminal.keys('Enter')
    await terminal.waitFor('Ask dsh to do something', { what: 'the input box', timeoutMs: 20_000 })
    expect(terminal.screen()).toMatch(/deepseek-v4-flash · /)
    terminal.type('/model anthropic/claude-sonnet-4-5')
    await terminal.waitFor(screen => screen.replace(/[│\s]+/g, '').includes('/modelanthropic/claude-sonnet-4-5'), { what: 'the typed command' })
    terminal.keys('Enter')
    await terminal.waitFor('Model: claude-sonnet-4-5 (anthropic)', { what: 'the switch', history: true })
    await terminal.waitFor(/claude-sonnet-4-5 · /, { what: 'the status bar on the new model' })

    anthropic.enqueue(messagesStream([{ thinking: 'a short plan', signature: 'sig' }, { text: 'Hello from the Messages API.' }, { stop: 'end_turn', usage: { output_tokens: 2000 } }], { start: { input_tokens: 100_000 } }))
    terminal.type('say hello')
    await terminal.waitFor(screen => screen.replace(/[│\s]+/g, '').includes('sayhello'), { what: 'the typed prompt' })
    terminal.keys('Enter')
    await terminal.waitFor(/── 1 step · .* in · .* out/, { what: 'the turn summary', history: true })
    const history = terminal.history()
    expect(history).toContain('Hello from the Messages API.')
    // Shipped price of claude-sonnet-4-5: 100k in at $3/M, 2k out at $15/M.
    expect(history).toMatch(/── 1 step · 100k in · 2\.0k out · [\d.]+m?s · \$0\.3300/)
    expect(anthropic.requests.at(-1)?.headers['x-api-key']).toBe('sk-ant-tui')
    expect(anthropic.requests.at(-1)?.body.model).toBe('claude-sonnet-4-5')
  })
})
