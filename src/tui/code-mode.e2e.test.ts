/**
 * Code mode in the terminal app (#36 item 4), in a real terminal (tmux) against the fake model
 * server under DSH_TOOLS_MODE=code: a run_code program that calls bash twice is drawn as one code
 * card with the two commands nested under it and their output, at 80 and 120 columns.
 */
import { describe, expect, it } from 'vitest'
import { streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { Terminal, terminalTestBed } from '../../test-support/tmux.js'
import { noTitlePatch } from '../../test-support/patches.js'

const bed = terminalTestBed('the terminal app code-mode test')
const tmux = !bed.skip

const usage = { prompt_tokens: 1200, completion_tokens: 40 }

describe.skipIf(!tmux)('terminal app: a run_code card', () => {
  it.each([80, 120])('at %i columns the program\'s bash calls nest under its card, with their output', async (columns) => {
    const { home, cwd } = tempHome()
    const code = 'const a = await tools.bash({ command: "echo CODE_ONE", description: "first" })\nconst b = await tools.bash({ command: "echo CODE_TWO", description: "second" })\nreturn a.stdout.text.trim() + "+" + b.stdout.text.trim()'
    bed.server.enqueue(
      streamResponse([{ toolCall: { id: 'rc1', name: 'run_code', arguments: JSON.stringify({ code, description: 'Print two markers' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'PROGRAM_ANSWERED' }, { finish: 'stop', usage }]),
    )
    const terminal = Terminal.start([process.execPath, dshBin, '--patch', noTitlePatch()], {
      cwd, width: columns, height: 40,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: bed.server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined, DSH_TOOLS_MODE: 'code', TERM: 'xterm-256color' },
    })
    bed.keep(terminal)
    await terminal.waitFor('Ask dsh to do something', { what: 'the input box', timeoutMs: 20_000 })
    terminal.type('run the program')
    await terminal.waitFor('run the program', { what: 'the typed prompt' })
    terminal.keys('Enter')
    const history = await terminal.waitFor(/── 1 step|── 2 steps/, { what: 'the turn summary', history: true, timeoutMs: 30_000 })
    if (process.env.DSH_CAPTURES !== undefined) console.log(`--- ${columns} columns ---\n${history}`)
    const lines = history.split('\n')
    const card = lines.findIndex(line => /✓ code Print two markers · 2 calls/.test(line))
    expect(card).toBeGreaterThanOrEqual(0)
    expect(lines[card + 1]).toMatch(/^ {2,}✓ \$ echo CODE_ONE/)
    expect(lines[card + 2]).toMatch(/^ {4,}CODE_ONE/)
    expect(lines[card + 3]).toMatch(/^ {2,}✓ \$ echo CODE_TWO/)
    expect(history).toContain('PROGRAM_ANSWERED')
  })
})
