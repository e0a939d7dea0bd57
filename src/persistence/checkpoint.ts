/**
 * Checkpoint policy (D-3): nothing the model or a tool acts on is only in memory. Before every
 * model request of a live session, every top-level tool execution and every `agent/pre-step`
 * continuation, the session is flushed through the `session/flush` durability barrier.
 *
 * Load with `ctx.plugin(CheckpointPolicy)`; it needs only `ctx.sessions` (whoever listens to
 * `session/flush` does the writing, normally `ctx.sessionPersistence`).
 */
import type { Context } from 'cordis'
import type {} from '../agent/api.js'
import type { StreamChunk } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { abortedBeforeDispatchRecord } from '../tools/errors.js'
import { acceptsRequestHolds, holdRequest } from '../llm/request-hold.js'
import { eventsOf, serviceLookup } from '../kernel/index.js'

/** The barrier itself: resolves once every event of `session` so far is stored. */
export async function checkpoint(ctx: Context, session: Session): Promise<void> {
  await eventsOf(ctx).parallel('session/flush', session)
}

/** The live session a model call belongs to, from `meta.sessionId` set by the loop. */
function sessionOfCall(sessions: () => Context['sessions'] | undefined, meta: Readonly<Record<string, unknown>> | undefined): Session | undefined {
  const id = meta?.sessionId
  if (typeof id !== 'string') return undefined
  const session = sessions()?.get(id)
  return session?.live ? session : undefined
}

export class CheckpointPolicy {
  static inject = ['sessions']

  constructor(ctx: Context) {
    // Resolved once (three checkpoints per step; docs/kernel.md, "Hot paths"). The plugin injects
    // `sessions`, so it is reloaded, and these re-resolved, when that service changes.
    const events = eventsOf(ctx)
    const sessions = serviceLookup(ctx, 'sessions')
    const flush = (session: Session) => events.parallel('session/flush', session)
    ctx.on('llm/stream', (options, next) => {
      const session = sessionOfCall(sessions, options.meta)
      if (session === undefined) return next()
      return (async function* (): AsyncGenerator<StreamChunk> {
        const flushed = flush(session)
        if (!acceptsRequestHolds(options)) {
          await flushed
          yield* next()
          return
        }
        // The request is built while the flush is in flight, and held until it is done: nothing
        // of it is sent before every event so far is stored (docs/decisions.md).
        holdRequest(options, flushed)
        const inner = next()[Symbol.asyncIterator]()
        // No chunk can come before the hold is released; a failed flush answers first.
        const first = inner.next()
        first.catch(() => undefined)
        let finished = false
        try {
          await flushed
          let result = await first
          while (result.done !== true) {
            yield result.value
            result = await inner.next()
          }
          finished = true
        } finally {
          // Left early (a failed flush, the consumer's return, a throw): the inner stream is closed.
          if (!finished) await inner.return?.()
        }
      })()
    })

    ctx.on('tools/execute', async (_execution, context, next) => {
      const session = context.session
      if (session === undefined || !session.live) return next()
      if (context.signal.aborted) return abortedBeforeDispatchRecord()
      // A cancel while the checkpoint is pending wins: the body never starts.
      let onAbort!: () => void
      const aborted = new Promise<'aborted'>((resolve) => {
        onAbort = () => resolve('aborted')
        context.signal.addEventListener('abort', onAbort, { once: true })
      })
      try {
        const outcome = await Promise.race([flush(session).then(() => 'flushed' as const), aborted])
        if (outcome === 'aborted' || context.signal.aborted) return abortedBeforeDispatchRecord()
      } finally {
        context.signal.removeEventListener('abort', onAbort)
      }
      return next()
    })

    ctx.on('agent/pre-step', async (payload, next) => {
      if (payload.session.live) await flush(payload.session)
      return next()
    })
  }
}
