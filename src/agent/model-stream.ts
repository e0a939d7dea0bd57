/**
 * One model attempt as the loop consumes it: every chunk is appended as
 * `assistant/chunk` and fed to a BlockAssembler until the finish chunk, the end of the stream or
 * a cancel. Cancellation stops consumption at once (an adapter that ignores the signal cannot hold
 * the loop) and the aborted tail is not logged.
 */
import { BlockAssembler } from '../llm/assembler.js'
import { toFailure } from '../llm/errors.js'
import type { LlmService } from '../llm/api.js'
import type { LlmCallOptions, LlmFailure, StreamChunk } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { SessionRuleError } from '../session/types.js'
import { LoopInvariantError } from './invariant.js'

export interface Streamed {
  readonly assembler: BlockAssembler
  readonly chunkSeqs: number[]
  /** Consumption stopped because the activity was cancelled. */
  readonly cancelled: boolean
}

/**
 * A loop bug (A-11 violation, a rejected append) stops the loop loudly; anything else thrown by an
 * extension point ends the turn with an error naming the hook, so one bad plugin cannot wedge it.
 */
export function isFatal(error: unknown): boolean {
  return error instanceof LoopInvariantError || error instanceof SessionRuleError
}

function listenerFailure(error: unknown): LlmFailure {
  if (isFatal(error)) throw error
  return toFailure(error, 'LLM_STREAM_FAILED')
}

export async function streamAttempt(llm: LlmService, session: Session, turn: number, step: number, options: LlmCallOptions, signal: AbortSignal): Promise<Streamed | { readonly failure: LlmFailure }> {
  const assembler = new BlockAssembler()
  const chunkSeqs: number[] = []
  let cancelled = false
  let chunks: AbortableChunks
  try {
    chunks = new AbortableChunks(llm.stream(options)[Symbol.asyncIterator](), signal)
  } catch (error) {
    return { failure: listenerFailure(error) }
  }
  try {
    while (true) {
      let next: IteratorResult<StreamChunk> | 'aborted'
      try {
        next = await chunks.next()
      } catch (error) {
        // An `llm/stream` listener threw (adapter throws are finish chunks already, L-4).
        return { failure: listenerFailure(error) }
      }
      if (next === 'aborted' || signal.aborted) {
        cancelled = true
        // Close the stream without waiting for a misbehaving adapter.
        chunks.close()
        break
      }
      if (next.done === true) break
      const chunk: StreamChunk = next.value
      chunkSeqs.push(session.append('assistant/chunk', { turn, step, chunk }).seq)
      assembler.push(chunk)
      if (chunk.type === 'finish') {
        // Closed, not abandoned: the adapter's `finally` runs now (a transport returns its
        // connection for the next request), without the loop waiting for it.
        chunks.close()
        break
      }
    }
  } finally {
    chunks.release()
  }
  return { assembler, chunkSeqs, cancelled }
}

/**
 * The chunks of one stream, each `next()` settling early with `'aborted'` when the signal fires.
 * One abort listener per attempt wakes whichever `next()` is pending; racing every chunk against
 * one long-lived abort promise would add a reaction to it per chunk, held until the step ends.
 */
class AbortableChunks {
  private wake: ((value: 'aborted') => void) | undefined
  private readonly onAbort = (): void => { this.wake?.('aborted') }

  constructor(private readonly iterator: AsyncIterator<StreamChunk>, private readonly signal: AbortSignal) {
    if (!signal.aborted) signal.addEventListener('abort', this.onAbort, { once: true })
  }

  next(): Promise<IteratorResult<StreamChunk> | 'aborted'> {
    if (this.signal.aborted) return Promise.resolve('aborted')
    return new Promise((resolve, reject) => {
      this.wake = resolve
      this.iterator.next().then(resolve, reject)
    })
  }

  /** Ends the stream in the background (its `return()`), never waiting for the adapter. */
  close(): void {
    void Promise.resolve().then(() => this.iterator.return?.()).catch(() => undefined)
  }

  release(): void {
    this.wake = undefined
    this.signal.removeEventListener('abort', this.onAbort)
  }
}
