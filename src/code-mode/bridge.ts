/**
 * A `run_code` program's tool calls, each through the whole tool pipeline (ctx.tools `start`,
 * the body, `finish`, `committed`: validation, `tools/pre-execute` with hooks and approval, the
 * sandbox and the write fence inside the tools, `tools/post-execute`), scheduled as the model's
 * own calls are (T-2..T-5): calls start one at a time in the order the program made them;
 * consecutive concurrency-safe calls overlap (at most `maxParallel`); a call that is not waits
 * until every earlier one is committed, runs alone, and later calls wait for its commit; every
 * call commits in order. Each call is in the log: `tool/code-dispatch-start` when it enters the
 * pipeline, `tool/code-dispatch` (its native result) when it commits.
 *
 * When the run is over, calls not yet started are dropped without events; started ones are
 * drained (their signal is aborted by the runtime), so nothing is dispatched after the outer
 * result.
 */
import type { Session } from '../session/api.js'
import type { JsonValue } from '../session/types.js'
import type { ToolResultRecord, ToolsService, ToolExecution } from '../tools/api.js'
import type { ScopeKey } from '../scope/index.js'
import type { ToolCallAnswer } from '../code-runtime/api.js'
import type { ImageBlock, TextBlock } from '../llm/types.js'

export const DISPATCH_START_EVENT = 'tool/code-dispatch-start'
export const DISPATCH_EVENT = 'tool/code-dispatch'

export interface BridgeOptions {
  readonly tools: ToolsService
  /** The outer `run_code` call. */
  readonly callId: string
  readonly cwd: string
  readonly session?: Session
  readonly scope?: ScopeKey
  readonly maxParallel: number
  /** Executions this bridge made: they are inner calls (the code-only rule lets them through). */
  readonly inner: WeakSet<ToolExecution>
}

/** The text of a record's text blocks. */
export function recordText(record: { readonly content: readonly (TextBlock | ImageBlock)[] }): string {
  return record.content.filter((block): block is TextBlock => block.type === 'text').map((block) => block.text).join('\n')
}

export class InnerCalls {
  private count = 0
  private startTail: Promise<unknown> = Promise.resolve()
  private commitTail: Promise<unknown> = Promise.resolve()
  /** Resolves when the last exclusive call so far is committed: later calls start after it. */
  private barrier: Promise<unknown> = Promise.resolve()
  private running = 0
  private readonly slotWaiters: (() => void)[] = []
  /** Successful results that hold an image, in dispatch order (queued after the outer result). */
  readonly images: ToolResultRecord[] = []

  constructor(private readonly options: BridgeOptions) {}

  call(name: string, args: JsonValue, signal: AbortSignal): Promise<ToolCallAnswer> {
    const { tools, callId, session, scope } = this.options
    const subCallId = `${callId}:code:${++this.count}`
    const execution: ToolExecution = Object.freeze({ callId: subCallId, name, arguments: JSON.stringify(args), parentCallId: callId, ...(scope !== undefined ? { scope } : {}) })
    this.options.inner.add(execution)
    const exclusive = tools.executionMode(execution).kind !== 'parallel'
    const gate = exclusive ? this.commitTail : this.barrier
    const ids = { rootCallId: callId, parentCallId: callId, subCallId, name, arguments: args }

    const started = this.startTail.then(async () => {
      await gate
      if (!exclusive) await this.slot()
      if (signal.aborted) {
        if (!exclusive) this.release()
        return undefined
      }
      session?.append(DISPATCH_START_EVENT, ids)
      return tools.start(execution, { cwd: this.options.cwd, signal, ...(session !== undefined ? { session } : {}) })
    })
    this.startTail = started.catch(() => undefined)
    const outcome = started.then(async (start) => {
      try {
        return start === undefined ? undefined : start.kind === 'settled' ? start.record : await start.outcome
      } finally {
        if (start !== undefined && !exclusive) this.release()
      }
    })
    const committed = this.commitTail.then(async () => {
      const record = await outcome
      if (record === undefined) return undefined
      const final = await tools.finish(execution, record)
      session?.append(DISPATCH_EVENT, { ...ids, isError: final.isError, content: final.content as unknown as JsonValue })
      tools.committed(execution, final)
      if (!final.isError && final.content.some((block) => block.type === 'image')) this.images.push(final)
      return final
    })
    this.commitTail = committed.catch(() => undefined)
    if (exclusive) this.barrier = this.commitTail
    return committed.then((final): ToolCallAnswer => {
      if (final === undefined) return { ok: false, message: `run_code run is over (${reasonOf(signal)}); ${name} tool call abandoned` }
      if (final.isError) return { ok: false, message: recordText(final).replace(/^Error: /, '') }
      return { ok: true, value: final.value !== undefined ? final.value : recordText(final) }
    })
  }

  private slot(): Promise<void> {
    if (this.running < this.options.maxParallel) {
      this.running++
      return Promise.resolve()
    }
    return new Promise((resolve) => this.slotWaiters.push(() => { this.running++; resolve() }))
  }

  private release(): void {
    this.running--
    this.slotWaiters.shift()?.()
  }
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason
  return reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'aborted'
}
