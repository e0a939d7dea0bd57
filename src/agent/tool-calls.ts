/**
 * The tool-call scheduler (T-2..T-6). Exclusive calls form barriers; parallel calls use a bounded
 * rolling pool and are reclassified right before they start. Calls start one at a time in model
 * order (the `tool/call` append, `tools/pre-execute` and approval are awaited per call); only the
 * bodies overlap; `tools/post-execute` and the `tool/result` append happen at the ordered commit.
 * Cancellation or an internal failure stops the refill and drains every started body.
 *
 * Independent of the loop: the loop supplies the log appends as callbacks.
 */
import type { Session } from '../session/api.js'
import type { ToolExecution, ToolResultRecord, ToolsService } from '../tools/api.js'

export { TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH } from '../tools/errors.js'

export const DEFAULT_MAX_PARALLEL_TOOL_CALLS = 10

export interface RunToolCallsOptions {
  /** The calls of one assistant message, in model order. */
  readonly calls: readonly ToolExecution[]
  readonly tools: ToolsService
  /** The activity's signal: aborting it cancels the batch (T-6). */
  readonly signal: AbortSignal
  /** What every tool gets besides its call id and signal. */
  readonly context: { readonly cwd: string; readonly session?: Session }
  /** Read at each group start, so a change applies to the next group only. */
  readonly maxParallelToolCalls?: () => number
  /** Appends `tool/call` (and runs the loop's checkpoints); resolves to its seq. Awaited per call in model order. */
  startCall(execution: ToolExecution): Promise<number>
  /** Appends `tool/result` with `sourceEventSeqs: [callSeq]`; called in model order. */
  commitResult(execution: ToolExecution, record: ToolResultRecord, callSeq: number): void | Promise<void>
  /** Appends the `tool/call` + `tool/result` pair (`ABORTED_BEFORE_DISPATCH`) for a call that never started. */
  abortedBeforeDispatch(execution: ToolExecution): Promise<void>
}

export interface ToolCallsSummary {
  /** Some committed result asked to end the tool loop. */
  readonly concludesTurn: boolean
  /** Results committed through `commitResult`. */
  readonly committed: number
  /** Calls closed through `abortedBeforeDispatch`. */
  readonly abortedBeforeDispatch: number
  readonly aborted: boolean
}

interface Slot {
  readonly execution: ToolExecution
  readonly callSeq: number
  /** Set once the outcome is known; commit waits for it in model order. */
  record?: ToolResultRecord
}

function readLimit(read: (() => number) | undefined): number {
  const value = read?.() ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS
  // NaN or a non-number would stall or explode the pool; at least one call must be able to run.
  if (typeof value !== 'number' || Number.isNaN(value)) return DEFAULT_MAX_PARALLEL_TOOL_CALLS
  return Math.max(1, Math.floor(value))
}

export async function runToolCalls(options: RunToolCallsOptions): Promise<ToolCallsSummary> {
  const { calls, tools, signal } = options
  const inFlight = new Map<Slot, Promise<Slot>>()
  let next = 0
  let committed = 0
  let concludesTurn = false

  /** `settled` runs when the body's outcome is known (so it can commit without waiting for a later start). */
  const start = async (execution: ToolExecution, settled: () => void): Promise<Slot> => {
    const callSeq = await options.startCall(execution)
    const slot: Slot = { execution, callSeq }
    // The pipeline's first half (ctx.tools builds it; `execute` runs the same steps for one call).
    const started = await tools.start(execution, { ...options.context, signal })
    if (started.kind === 'settled') {
      slot.record = started.record
    } else {
      inFlight.set(slot, started.outcome.then((record) => { slot.record = record; settled(); return slot }))
    }
    return slot
  }

  const commit = async (slot: Slot, record: ToolResultRecord): Promise<void> => {
    const final = await tools.finish(slot.execution, record)
    await options.commitResult(slot.execution, final, slot.callSeq)
    committed++
    if (final.concludesTurn === true) concludesTurn = true
    tools.committed(slot.execution, final)
  }

  /** One group: a single exclusive call, or a rolling pool of parallel calls. */
  const runGroup = async (): Promise<void> => {
    const limit = readLimit(options.maxParallelToolCalls)
    const slots: Slot[] = []
    let committedInGroup = 0
    let refill = true
    let failure: { error: unknown } | undefined
    // Commit across contiguous finished slots only: a finished later call waits for earlier ones.
    const commitReady = async (): Promise<void> => {
      while (failure === undefined && committedInGroup < slots.length && slots[committedInGroup].record !== undefined) {
        const slot = slots[committedInGroup++]
        await commit(slot, slot.record!)
      }
    }
    // Commits run one at a time on this chain, triggered by the loop below and by every body
    // that settles, so a finished result reaches the log even while a later call is still
    // starting (waiting for approval, say).
    let chain: Promise<void> = Promise.resolve()
    const pump = (): Promise<void> => {
      chain = chain.then(commitReady).catch((error: unknown) => { failure ??= { error } })
      return chain
    }
    const committed = async (): Promise<void> => {
      await pump()
      if (failure !== undefined) throw failure.error
    }
    try {
      await fill()
    } catch (error) {
      // No commit after an internal failure: bodies still settling must not write.
      failure ??= { error }
      await chain
      throw error
    }

    async function fill(): Promise<void> {
      for (;;) {
        while (refill && !signal.aborted && next < calls.length && inFlight.size < limit) {
          const execution = calls[next]
          // Reclassify right before start: registry or argument changes apply to unstarted calls.
          const parallel = tools.executionMode(execution).kind === 'parallel'
          if (!parallel && slots.length > 0) {
            refill = false
            break
          }
          slots.push(await start(execution, () => { void pump() }))
          next++
          if (!parallel) refill = false
          if (failure !== undefined) throw failure.error
          void pump()
        }
        await committed()
        if (inFlight.size === 0) return
        inFlight.delete(await Promise.race(inFlight.values()))
        // Commit before refilling, so a result reaches the log as soon as its turn comes.
        await committed()
      }
    }
  }

  try {
    while (next < calls.length && !signal.aborted) await runGroup()
  } catch (error) {
    // T-6: no fake results after an internal failure; started bodies still reach quiescence,
    // and the unpaired tool/call tail is left for crash repair.
    await Promise.allSettled(inFlight.values())
    throw error
  }

  let closed = 0
  for (; next < calls.length; next++) {
    await options.abortedBeforeDispatch(calls[next])
    closed++
  }
  return { concludesTurn, committed, abortedBeforeDispatch: closed, aborted: signal.aborted }
}
