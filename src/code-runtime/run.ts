/**
 * One code run as every provider drives it: compile, open the provider's channel to the
 * program's thread, answer its tool calls, count its output, and end it on its own end, a
 * limit or the caller's abort. Ending terminates the channel, aborts the calls still in flight
 * and resolves once they have settled, so no call outlives its run.
 */
import type { JsonValue } from '../session/types.js'
import { DEFAULT_CODE_RUN_LIMITS, type CodeRunFailureKind, type CodeRunLimits, type CodeRunRequest, type CodeRunResult, type ToolCallAnswer } from './api.js'
import { compileProgram } from './compile.js'

/** A message from the program's thread (`./bootstrap.ts` lists them). */
export type ThreadMessage = { readonly type?: unknown; readonly [key: string]: unknown }

/** The provider's link to one program thread. */
export interface ProgramChannel {
  send(message: object): void
  /** Busy time of the program's thread so far, when the parent can see it (sampled by the run). */
  busyMs?(): number
  /** Ends the thread; idempotent. */
  close(): void
}

export interface ChannelHandlers {
  message(message: ThreadMessage): void
  /** The thread ended, or could not start, before it finished. */
  ended(kind: CodeRunFailureKind, message: string): void
}

export type OpenChannel = (start: { readonly script: string; readonly tools: readonly string[]; readonly limits: CodeRunLimits }, handlers: ChannelHandlers) => Promise<ProgramChannel>

const SAMPLE_MS = 25

const reasonText = (reason: unknown): string =>
  reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'aborted'

export async function runProgram(request: CodeRunRequest, open: OpenChannel): Promise<CodeRunResult> {
  const limits = { ...DEFAULT_CODE_RUN_LIMITS, ...request.limits }
  const logs: string[] = []
  const fail = (kind: CodeRunFailureKind, message: string): CodeRunResult => ({ ok: false, kind, message, logs })
  if (request.signal?.aborted) return fail('abort', reasonText(request.signal.reason))
  let script: string
  try {
    script = await compileProgram(request.code)
  } catch (error) {
    return fail('exception', `SyntaxError: ${(error as Error).message}`)
  }
  if (request.signal?.aborted) return fail('abort', reasonText(request.signal.reason))

  const run = new AbortController()
  const inFlight = new Set<Promise<void>>()
  let channel: ProgramChannel | undefined
  let bytes = 0
  let settled = false
  let sampler: NodeJS.Timeout | undefined
  let wall: NodeJS.Timeout | undefined
  let resolveRun!: (result: CodeRunResult) => void
  const done = new Promise<CodeRunResult>((resolve) => { resolveRun = resolve })

  const settle = (result: CodeRunResult) => {
    if (settled) return
    settled = true
    clearInterval(sampler)
    clearTimeout(wall)
    request.signal?.removeEventListener('abort', onAbort)
    run.abort(new Error(result.ok ? 'the program finished' : `the program ended (${result.kind})`))
    channel?.close()
    void Promise.allSettled([...inFlight]).then(() => resolveRun(result))
  }
  const onAbort = () => settle(fail('abort', reasonText(request.signal?.reason)))
  const spend = (text: string): boolean => {
    bytes += Buffer.byteLength(text) + 1
    if (bytes <= limits.maxOutputBytes) return true
    settle(fail('output-limit', `outer output exceeded ${limits.maxOutputBytes} bytes`))
    return false
  }
  const answer = (id: unknown, result: ToolCallAnswer) => {
    if (settled) return
    channel?.send(result.ok
      ? { type: 'answer', id, ok: true, ...result.value !== undefined && { value: JSON.stringify(result.value) } }
      : { type: 'answer', id, ok: false, message: result.message })
  }
  const call = (id: unknown, name: string, args: string) => {
    const pending = (async () => {
      let result: ToolCallAnswer
      try {
        result = await request.call(name, JSON.parse(args) as JsonValue, run.signal)
      } catch (error) {
        result = { ok: false, message: error instanceof Error ? error.message : String(error) }
      }
      answer(id, result)
    })()
    inFlight.add(pending)
    void pending.finally(() => inFlight.delete(pending))
  }
  const message = (message: ThreadMessage) => {
    if (settled || message === null || typeof message !== 'object') return
    if (message.type === 'log' && typeof message.text === 'string') {
      if (spend(message.text)) logs.push(message.text)
    } else if (message.type === 'call' && typeof message.name === 'string' && typeof message.args === 'string') {
      // Only the names this run was given: the thread is not trusted to ask for others.
      if (request.tools.includes(message.name)) call(message.id, message.name, message.args)
      else answer(message.id, { ok: false, message: `no tool "${message.name}" in this run` })
    } else if (message.type === 'finish') {
      const text = typeof message.text === 'string' ? message.text : undefined
      if (message.kind === 'done') {
        if (text === undefined) settle({ ok: true, logs })
        else if (spend(text)) settle({ ok: true, logs, value: JSON.parse(text) as JsonValue })
      } else if (message.kind === 'exception' || message.kind === 'invalid-output' || message.kind === 'timeout' || message.kind === 'worker-exit') {
        settle(fail(message.kind, text ?? 'the program failed'))
      }
    }
  }

  request.signal?.addEventListener('abort', onAbort, { once: true })
  wall = setTimeout(() => settle(fail('timeout', `wall-clock ceiling reached (${limits.maxWallMs}ms)`)), limits.maxWallMs)
  try {
    channel = await open({ script, tools: request.tools, limits }, { message, ended: (kind, text) => settle(fail(kind, text)) })
  } catch (error) {
    settle(fail('worker-exit', `the program's thread could not start: ${error instanceof Error ? error.message : String(error)}`))
    return done
  }
  if (settled) channel.close()
  const busy = channel.busyMs?.bind(channel)
  if (busy !== undefined && !settled) {
    sampler = setInterval(() => {
      const spent = busy()
      if (spent > limits.computeMs) settle(fail('timeout', `compute budget exhausted (${Math.round(spent)}ms busy)`))
    }, SAMPLE_MS)
  }
  return done
}
