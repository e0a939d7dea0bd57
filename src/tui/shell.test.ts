/**
 * `!command` in the terminal app (src/tui/shell.ts): a real bash run, the message the model gets,
 * and the conversation item, shown once whether it comes from the run or from the log.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConversationFold } from './fold.js'
import { runShell, SHELL_OUTPUT_MAX, shellInput, shellRunOf } from './shell.js'

describe('!command', () => {
  it('runs in the folder with bash, stdout and stderr as they came, and the exit code', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-shell-'))
    writeFileSync(join(cwd, 'here.txt'), 'x')
    const run = await runShell('ls; echo oops >&2; exit 3', cwd, new AbortController().signal)
    expect(run).toEqual({ command: 'ls; echo oops >&2; exit 3', exitCode: 3, output: 'here.txt\noops\n' })
  })

  it('secrets are not in its environment', async () => {
    process.env.DSH_TEST_API_KEY = 'do-not-leak'
    try {
      const run = await runShell('echo "[$DSH_TEST_API_KEY]"', tmpdir(), new AbortController().signal)
      expect(run.output).toBe('[]\n')
    } finally {
      delete process.env.DSH_TEST_API_KEY
    }
  })

  it('an abort stops the command and its children (exit code null)', async () => {
    const controller = new AbortController()
    const running = runShell('echo started; sleep 30 & wait', tmpdir(), controller.signal)
    setImmediate(() => controller.abort())
    const run = await running
    expect(run.exitCode).toBeNull()
  })

  it('long output keeps its head and tail and says how much was cut', async () => {
    const run = await runShell(`head -c ${SHELL_OUTPUT_MAX * 3} /dev/zero | tr '\\0' a; echo; echo END`, tmpdir(), new AbortController().signal)
    expect(run.output.length).toBeLessThan(SHELL_OUTPUT_MAX + 100)
    expect(run.output).toMatch(/^a+\n\[… \d+ characters cut …\]\na+\nEND\n$/)
  })

  it('the model gets what ran, how it ended and the output; the log message reads back to the same run', () => {
    const message = shellInput({ command: 'git status', exitCode: 0, output: 'clean\n' })
    expect(message.content).toEqual([{ type: 'text', text: 'The user ran `git status` in their shell, in the workspace (exit code 0); its output is below, for context. It was not a tool call.\n\nclean\n' }])
    expect(message.source).toEqual({ kind: 'plugin', plugin: 'shell', command: 'git status', exitCode: 0 })
    expect(shellRunOf(message)).toEqual({ command: 'git status', exitCode: 0, output: 'clean\n' })
    expect(shellRunOf(shellInput({ command: 'true', exitCode: null, output: '' }))).toEqual({ command: 'true', exitCode: null, output: '' })
    expect(shellRunOf({ ...message, source: { kind: 'plugin', plugin: 'dsh-runtime-context' } })).toBeUndefined()
  })

  it('the conversation shows it once: from the run, and again from the log only in place', () => {
    const fold = new ConversationFold()
    const message = shellInput({ command: 'ls', exitCode: 0, output: 'a\n' })
    fold.shell(message)
    fold.apply({ seq: 5, time: 1, type: 'user/message', data: message } as never)
    expect(fold.items).toEqual([{ kind: 'shell', key: `sh:${message.id}`, command: 'ls', exitCode: 0, output: 'a\n' }])
  })
})
