/**
 * What `/exit` says about resuming (#44.6), in a real terminal (tmux) against the fake model
 * server: `dsh -c` only where it would open this session; a session with nothing to go back to
 * (no turn, no name) is named by its id alone.
 */
import { describe, expect, it } from 'vitest'
import { streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { Terminal, terminalTestBed } from '../../test-support/tmux.js'
import { noTitlePatch } from '../../test-support/patches.js'

const bed = terminalTestBed('the terminal app exit-hint test')
const tmux = !bed.skip

async function open(home: string, cwd: string): Promise<Terminal> {
  const terminal = Terminal.start([process.execPath, dshBin, '--patch', noTitlePatch()], {
    cwd, width: 100, height: 30, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: bed.server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined, TERM: 'xterm-256color' },
  })
  bed.keep(terminal)
  await terminal.waitFor('Ask dsh to do something', { what: 'the input box', timeoutMs: 20_000 })
  return terminal
}

async function exit(terminal: Terminal): Promise<string> {
  terminal.type('/exit')
  await terminal.waitFor('/exit', { what: 'the typed command' })
  terminal.keys('Enter')
  return terminal.waitFor(/is stored\.\nResume: .*(\n.*)?/, { what: 'the exit lines', history: true })
}

describe.skipIf(!tmux)('terminal app: /exit says how to resume', () => {
  it('a session left without a turn is named by id alone (dsh -c would open another); one with a turn also offers dsh -c', async () => {
    const { home, cwd } = tempHome()
    const empty = await exit(await open(home, cwd))
    const id = /Session (\S+) is stored\./.exec(empty)![1]!
    expect(empty).toContain(`Resume: dsh --session ${id}`)
    expect(empty).not.toContain('dsh -c')

    bed.server.enqueue(streamResponse([{ text: 'HELLO_BACK' }, { finish: 'stop', usage: { prompt_tokens: 5, completion_tokens: 2 } }]))
    const terminal = await open(home, cwd)
    terminal.type('hello')
    await terminal.waitFor('hello', { what: 'the typed prompt' })
    terminal.keys('Enter')
    await terminal.waitFor(/── 1 step/, { what: 'the turn summary', history: true })
    const used = await exit(terminal)
    expect(used).toMatch(/Resume: dsh -c {3}\(the latest session in this folder\)\n {4}or: dsh --session \S+/)
  })
})
