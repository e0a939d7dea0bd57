/**
 * `!command` in the terminal app: the command runs in the session's folder with the user's own
 * rights, as if typed in their shell (the user typed it: it is not the model's bash tool, and no
 * sandbox or approval applies), with the environment every child gets (secrets removed). Its
 * output goes to the model as context for the next step (`agent.inject`: no turn starts), as a
 * user message whose source says what ran: `{kind:'plugin', plugin:'shell', command, exitCode}`.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import type { UserMessage } from '../llm/types.js'
import { scrubbedEnvironment } from '../config/credentials.js'

export const SHELL_PLUGIN = 'shell'
/** Output kept for the model: its head and tail when longer. */
export const SHELL_OUTPUT_MAX = 30_000

export interface ShellRun {
  readonly command: string
  /** null when a signal ended it (Esc, or from outside). */
  readonly exitCode: number | null
  /** stdout and stderr as they came, cut to SHELL_OUTPUT_MAX (head and tail). */
  readonly output: string
}

/** Runs `command` with `/bin/bash -c` in `cwd`; `signal` stops its whole process group. */
export function runShell(command: string, cwd: string, signal: AbortSignal): Promise<ShellRun> {
  return new Promise(resolve => {
    const child = spawn('/bin/bash', ['-c', command], { cwd, env: scrubbedEnvironment(), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let output = ''
    let dropped = 0
    const take = (chunk: Buffer) => {
      output += chunk.toString('utf8')
      // Keep the head and a growing tail; the middle goes.
      if (output.length > SHELL_OUTPUT_MAX * 2) {
        dropped += output.length - SHELL_OUTPUT_MAX * 2
        output = output.slice(0, SHELL_OUTPUT_MAX) + output.slice(output.length - SHELL_OUTPUT_MAX)
      }
    }
    child.stdout!.on('data', take)
    child.stderr!.on('data', take)
    const stop = () => { try { process.kill(-child.pid!, 'SIGTERM') } catch { /* already gone */ } }
    signal.addEventListener('abort', stop, { once: true })
    const done = (exitCode: number | null, extra = '') => {
      signal.removeEventListener('abort', stop)
      resolve({ command, exitCode, output: cut(output + extra, dropped) })
    }
    child.on('error', error => done(127, `${error.message}\n`))
    child.on('close', (code) => done(code))
  })
}

function cut(text: string, dropped: number): string {
  if (text.length <= SHELL_OUTPUT_MAX && dropped === 0) return text
  const half = SHELL_OUTPUT_MAX / 2
  const gone = dropped + Math.max(0, text.length - SHELL_OUTPUT_MAX)
  return `${text.slice(0, half)}\n[… ${gone} characters cut …]\n${text.slice(-half)}`
}

function header(command: string, exitCode: number | null): string {
  return `The user ran \`${command}\` in their shell, in the workspace (${exitCode === null ? 'stopped' : `exit code ${exitCode}`}); its output is below, for context. It was not a tool call.`
}

/** The message the model gets: what ran and how it ended, a blank line, the output. */
export function shellInput(run: ShellRun): UserMessage {
  return {
    id: randomUUID(),
    role: 'user',
    content: [{ type: 'text', text: `${header(run.command, run.exitCode)}\n\n${run.output === '' ? '(no output)' : run.output}` }],
    source: { kind: 'plugin', plugin: SHELL_PLUGIN, command: run.command, exitCode: run.exitCode },
  }
}

/** A logged shell message back to what ran (for the conversation on screen), or undefined. */
export function shellRunOf(message: UserMessage): ShellRun | undefined {
  const source = message.source as { kind: string; plugin?: unknown; command?: unknown; exitCode?: unknown }
  if (source.kind !== 'plugin' || source.plugin !== SHELL_PLUGIN || typeof source.command !== 'string') return undefined
  const exitCode = typeof source.exitCode === 'number' ? source.exitCode : null
  const block = message.content[0]
  const text = block?.type === 'text' ? block.text : ''
  const prefix = `${header(source.command, exitCode)}\n\n`
  const output = text.startsWith(prefix) ? text.slice(prefix.length) : text
  return { command: source.command, exitCode, output: output === '(no output)' ? '' : output }
}
