/** The six terminal tools' names, descriptions and parameters, as the model sees them. */
import type { JsonSchema } from '../tools/json-schema.js'

export const PTY_TOOL_NAMES = ['terminal_open', 'terminal_send', 'terminal_read', 'terminal_signal', 'terminal_list', 'terminal_close'] as const

export const PTY_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGTSTP', 'SIGHUP'] as const
export type PtySignal = typeof PTY_SIGNALS[number]

const sessionId = { type: 'string', description: 'Terminal session id.' } as const

export const PTY_SCHEMAS: Record<typeof PTY_TOOL_NAMES[number], { description: string; parameters: JsonSchema }> = {
  terminal_open: {
    description: 'Create a persistent, owner-isolated terminal session from a registered backend type. Use this for shell or REPL state that must survive across tool calls.',
    parameters: {
      type: 'object',
      properties: {
        type: { type: 'string', description: 'Registered terminal backend type, usually "shell".' },
        name: { type: 'string', description: 'Optional owner-local display name such as "main" or "gdb".' },
        cwd: { type: 'string', description: 'Initial working directory. Defaults to the deployment workspace root.' },
      },
      required: ['type'],
    },
  },
  terminal_send: {
    description: 'Send text to a persistent terminal. By default Enter is submitted and the call waits for a prompt, stdin wait, output silence, timeout, or session exit. Background mode returns a job id for job_output/job_kill.',
    parameters: {
      type: 'object',
      properties: {
        sessionId: { type: 'string', description: 'Terminal session id returned by terminal_open or terminal_list.' },
        text: { type: 'string', description: 'UTF-8 text to write to the terminal.' },
        submit: { type: 'boolean', description: 'Submit Enter after text (default true). Set false for control characters or incomplete REPL input.' },
        run_in_background: { type: 'boolean', description: 'Return a job id immediately; collect with job_output or stop with job_kill.' },
      },
      required: ['sessionId', 'text'],
    },
  },
  terminal_read: {
    description: 'Read a bounded page of retained output from a persistent terminal without sending input.',
    parameters: {
      type: 'object',
      properties: {
        sessionId,
        offset: { type: 'number', description: 'Newest-relative line offset (default 0).' },
        count: { type: 'number', description: 'Requested line count (default 500; backend caps apply).' },
      },
      required: ['sessionId'],
    },
  },
  terminal_signal: {
    description: 'Send an allowed signal to the current foreground process group of a persistent terminal.',
    parameters: {
      type: 'object',
      properties: {
        sessionId,
        signal: { type: 'string', description: 'Signal to deliver. Shell-targeted SIGKILL is rejected; use terminal_close.', enum: [...PTY_SIGNALS] },
      },
      required: ['sessionId', 'signal'],
    },
  },
  terminal_list: {
    description: 'List persistent terminal sessions owned by the current agent.',
    parameters: { type: 'object', properties: {} },
  },
  terminal_close: {
    description: 'Close one persistent terminal and wait until its captured owned process tree is gone.',
    parameters: { type: 'object', properties: { sessionId }, required: ['sessionId'] },
  },
}
