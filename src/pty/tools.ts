/** The six `terminal_*` tools over `ctx.pty` (texts in `./format.ts`, schemas in `./schemas.ts`). */
import { PassThrough } from 'node:stream'
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import { ToolError, ToolErrorCode } from '../tools/errors.js'
import { boundedTail, label, statusText, waitLines } from './format.js'
import type { PtyPlugin } from './index.js'
import { PTY_ERROR } from './index.js'
import { PTY_SCHEMAS, type PtySignal } from './schemas.js'
import type { Terminal, WaitReason } from './terminal.js'

interface Exchange {
  readonly text: string
  readonly reason: WaitReason | 'cancelled'
  readonly meta: Record<string, unknown>
}

function wholeNumber(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new ToolError(`${name} must be a whole number, 0 or more; got ${JSON.stringify(value)}`, ToolErrorCode.invalidArguments)
  return value
}

function exited(terminal: Terminal): ToolError {
  return new ToolError(`terminal session ${terminal.id} has ${statusText(terminal.status)}; read what it left with terminal_read or end it with terminal_close`, PTY_ERROR.exited)
}

export function createPtyTools(service: PtyPlugin): Tool[] {
  const limits = service.limits
  const waitOptions = (signal?: AbortSignal) => ({ timeoutMs: limits.waitTimeoutMs, silenceMs: limits.silenceMs, settleMs: limits.settleMs, ...(signal !== undefined ? { signal } : {}) })

  /** Writes `data`, waits, and renders what the terminal showed since. */
  async function exchange(terminal: Terminal, data: string, signal: AbortSignal): Promise<Exchange> {
    const mark = await terminal.mark()
    const since = performance.now()
    terminal.write(data)
    const reason = await terminal.wait(waitOptions(signal), since)
    const lines = terminal.screen.lines(mark)
    const shown = boundedTail(lines, limits.maxResultLines, limits.maxResultBytes)
    const viewport = boundedTail(lines, limits.rows, limits.maxResultBytes)
    const waited: WaitReason = reason === 'cancelled' ? 'timeout' : reason
    return {
      text: `${shown.text}\n${waitLines(waited, terminal.status, shown.truncated)}`,
      reason,
      meta: {
        terminal: { id: terminal.id, type: terminal.type, ...(terminal.name !== undefined ? { name: terminal.name } : {}) },
        viewport: viewport.text, waitReason: reason, sessionStatus: terminal.status, truncated: shown.truncated,
      },
    }
  }

  const tool = (name: keyof typeof PTY_SCHEMAS, execute: (args: Record<string, unknown>, context: ToolContext) => Promise<ToolOutput>, extra: Partial<Tool> = {}): Tool => ({
    name, description: PTY_SCHEMAS[name].description, parameters: PTY_SCHEMAS[name].parameters, execute, ...extra,
  })

  return [
    tool('terminal_open', async (args, context) => {
      const terminal = await service.open(args as { type: string; name?: string; cwd?: string }, context)
      const screen = boundedTail(terminal.screen.lines(), limits.maxResultLines, limits.maxResultBytes)
      return {
        content: [{ type: 'text', text: `started terminal session ${label(terminal.id, terminal.name)} [type: ${terminal.type}]\n${screen.text}${screen.truncated ? '\n[output truncated]' : ''}` }],
        meta: { terminal: { id: terminal.id, type: terminal.type, ...(terminal.name !== undefined ? { name: terminal.name } : {}), cwd: terminal.cwd }, viewport: screen.text },
      }
    }, { timeoutMs: limits.openTimeoutMs + 60_000 }),

    tool('terminal_send', async (args, context) => {
      const terminal = service.find(context, args.sessionId as string)
      if (!terminal.running) throw exited(terminal)
      const data = `${args.text as string}${args.submit === false ? '' : '\r'}`
      if (args.run_in_background === true) {
        const jobs = service.jobs()
        if (jobs === undefined || context.session === undefined) throw new ToolError('run_in_background needs the jobs row (ctx.jobs); nothing was sent', ToolErrorCode.failed)
        const job = jobs.start(context.session, {
          kind: 'terminal',
          label: `${terminal.id}: ${(args.text as string).split('\n')[0]!.slice(0, 80)}`,
          run: async (running) => {
            const stream = new PassThrough()
            running.attach(stream)
            const result = await exchange(terminal, data, running.signal)
            stream.end(result.text)
            return result.reason === 'cancelled' ? { status: 'failed', detail: 'stopped waiting' } : { status: 'completed' }
          },
        })
        return { content: [{ type: 'text', text: `started background job ${job.id}` }], meta: { job: { ...job }, terminal: { id: terminal.id } } as never }
      }
      const result = await exchange(terminal, data, context.signal)
      if (result.reason === 'cancelled') throw new ToolError(`cancelled while waiting; terminal session ${terminal.id} keeps running`, 'ABORTED')
      return { content: [{ type: 'text', text: result.text }], meta: result.meta as never }
    }, { timeoutMs: limits.waitTimeoutMs + 30_000 }),

    tool('terminal_read', async (args, context) => {
      const terminal = service.find(context, args.sessionId as string)
      const offset = wholeNumber(args.offset, 'offset', 0)
      const count = Math.min(Math.max(1, wholeNumber(args.count, 'count', limits.maxReadLines)), limits.maxReadLines)
      await terminal.screen.settled()
      const lines = terminal.screen.lines()
      const end = Math.max(0, lines.length - offset)
      const page = lines.slice(Math.max(0, end - count), end)
      const shown = boundedTail(page, limits.maxReadLines, limits.maxResultBytes)
      const returned = shown.truncated ? shown.text.split('\n').length : page.length
      const range = `[lines: ${Math.min(offset, lines.length)}-${Math.min(offset, lines.length) + returned} of ${lines.length}]`
      return { content: [{ type: 'text', text: `${shown.text}\n${range}${shown.truncated ? '\n[output truncated]' : ''}` }] }
    }),

    tool('terminal_signal', async (args, context) => {
      const terminal = service.find(context, args.sessionId as string)
      const signal = args.signal as PtySignal
      if (!terminal.running) throw exited(terminal)
      if (signal === 'SIGKILL' && terminal.programInForeground()) {
        throw new ToolError(`SIGKILL aimed at the terminal's own ${terminal.type} program is refused; use terminal_close to end terminal session ${terminal.id}`, PTY_ERROR.refused)
      }
      const names = terminal.foregroundNames()
      const mark = await terminal.mark()
      const since = performance.now()
      const sent = terminal.signalForeground(signal)
      if (sent === undefined || sent.pids.length === 0) throw new ToolError(`terminal session ${terminal.id} has no foreground process group to signal`, ToolErrorCode.failed)
      const reason = await terminal.wait({ ...waitOptions(context.signal), timeoutMs: Math.min(limits.waitTimeoutMs, limits.silenceMs) }, since)
      const shown = boundedTail(terminal.screen.lines(mark), limits.maxResultLines, limits.maxResultBytes)
      const waited: WaitReason = reason === 'cancelled' ? 'timeout' : reason
      return {
        content: [{ type: 'text', text: `sent ${signal} to the foreground process group of terminal session ${terminal.id} (${names.join(', ') || sent.group})\n${shown.text}\n${waitLines(waited, terminal.status, shown.truncated)}` }],
        meta: { terminal: { id: terminal.id }, signal, processGroup: sent.group, viewport: shown.text, waitReason: reason, sessionStatus: terminal.status } as never,
      }
    }),

    tool('terminal_list', async (_args, context) => {
      const terminals = service.terminals(context)
      if (terminals.length === 0) return { content: [{ type: 'text', text: '(no terminal sessions)' }] }
      const lines = terminals.map(t => `${label(t.id, t.name)} [type: ${t.type}] [session: ${statusText(t.status)}] cwd: ${t.cwd}${t.running ? ` foreground: ${t.foregroundNames().join(', ') || '?'}` : ''}`)
      return { content: [{ type: 'text', text: lines.join('\n') }] }
    }, { isConcurrencySafe: () => true }),

    tool('terminal_close', async (args, context) => {
      const id = args.sessionId as string
      await service.close(context, id)
      return { content: [{ type: 'text', text: `closed terminal session ${id}` }] }
    }),
  ]
}
