/**
 * Requests waiting on registered answerers, one mechanism for approvals and for questions to the
 * user: answerers register for the life of the registering plugin's context, an open request is
 * listed until it settles, and it settles with what the answerers said or with its `cancelled`
 * outcome when the caller's signal or the plugin's unload aborts it. The answerers' own signal is
 * aborted once the request settled, whichever way.
 */
import type { Context } from 'cordis'

interface Open<V> {
  readonly view: V
  readonly controller: AbortController
}

export interface Settling<V, O> {
  /** The open request as listed and announced. */
  readonly view: V
  /** The caller's signal: aborting it cancels the request. */
  readonly signal: AbortSignal | undefined
  /** Asks the answerers; `signal` is aborted when the request settles or is cancelled. */
  ask(signal: AbortSignal): Promise<O>
  readonly cancelled: () => O
  /** The outcome should `ask` throw. */
  readonly otherwise: O
  /** Announces the listed request, then its outcome once it is no longer listed. */
  opened(view: V): void
  settled(view: V, outcome: O): void
}

export class PendingRequests<A, V extends { readonly id: string; readonly sessionId: string }> {
  /** The registered answerers, in registration order. */
  readonly answerers: A[] = []
  private readonly open = new Map<string, Open<V>>()

  constructor(private readonly ctx: Context, private readonly what: string) {}

  /** Registers `answerer` until the disposer runs or the registering context unloads. */
  register(answerer: A): () => void {
    if (typeof answerer !== 'function') throw new TypeError(`approval: ${this.what} must be a function`)
    const dispose = this.ctx.effect(() => {
      this.answerers.push(answerer)
      return () => {
        const i = this.answerers.indexOf(answerer)
        if (i >= 0) this.answerers.splice(i, 1)
      }
    }, `approval: ${this.what.replace(/^an? /, '')}`)
    return () => { void dispose() }
  }

  /** Copies of the open requests, of one session or all. */
  list(sessionId?: string): V[] {
    return [...this.open.values()].filter(open => sessionId === undefined || open.view.sessionId === sessionId).map(open => ({ ...open.view }))
  }

  /** Cancels every open request (nobody will answer any more). */
  cancelAll(): void {
    for (const open of this.open.values()) open.controller.abort()
  }

  async settle<O>(request: Settling<V, O>): Promise<O> {
    const { view, signal } = request
    const controller = new AbortController()
    const onAbort = () => controller.abort()
    signal?.addEventListener('abort', onAbort, { once: true })
    this.open.set(view.id, { view, controller })
    request.opened(view)
    let outcome = request.otherwise
    try {
      const cancelled = new Promise<O>(resolve => {
        if (controller.signal.aborted) resolve(request.cancelled())
        controller.signal.addEventListener('abort', () => resolve(request.cancelled()), { once: true })
      })
      outcome = await Promise.race([request.ask(controller.signal), cancelled])
    } finally {
      signal?.removeEventListener('abort', onAbort)
      this.open.delete(view.id)
      controller.abort()
      request.settled(view, outcome)
    }
    return outcome
  }
}
