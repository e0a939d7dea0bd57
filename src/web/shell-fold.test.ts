/**
 * A `!command` the terminal app ran (src/tui/shell.ts) in the web's conversation fold
 * (web/src/fold.ts, in Node): drawn as a bash card with its command, output and exit code, read
 * from the very message the terminal app logs.
 */
import { describe, expect, it } from 'vitest'
import { LogFold } from '../../web/src/fold.js'
import { shellInput } from '../tui/shell.js'

describe('fold: !command from the terminal app', () => {
  it('becomes a bash card: command, exit code and output, not a user bubble', () => {
    const message = shellInput({ command: 'git status', exitCode: 1, output: 'not a repository\n' })
    const fold = new LogFold()
    fold.apply([
      { type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } },
      { type: 'user/message', seq: 1, time: 2, data: message },
      { type: 'user/message', seq: 2, time: 2, data: { id: 'm2', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'why?' }] } },
    ] as never)
    expect(fold.items.map(item => item.kind)).toEqual(['shell', 'user'])
    const shell = fold.items[0]!
    expect(shell.kind === 'shell' && JSON.parse(shell.call.arguments).command).toBe('git status')
    expect(shell.kind === 'shell' && shell.call.result).toMatchObject({ text: 'not a repository\n', meta: { exitCode: 1 } })
    const empty = new LogFold()
    empty.apply([{ type: 'user/message', seq: 0, time: 1, data: shellInput({ command: 'true', exitCode: 0, output: '' }) }] as never)
    expect(empty.items[0]!.kind === 'shell' && empty.items[0]!.call.result?.text).toBe('')
    // Stopped with Esc: no exit code, drawn as failed.
    const stopped = new LogFold()
    stopped.apply([{ type: 'user/message', seq: 0, time: 1, data: shellInput({ command: 'sleep 9', exitCode: null, output: '' }) }] as never)
    expect(stopped.items[0]!.kind === 'shell' && stopped.items[0]!.call.result?.isError).toBe(true)
  })
})
