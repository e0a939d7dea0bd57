/**
 * Agent-loop extension points that other seams hook before the loop itself exists.
 * The full `ctx.agents` / `ctx.agentLoop` surface lives beside the loop; these shapes are the
 * public contract (A-5, A-6, L-10).
 */
import type {} from 'cordis'
import type { LlmFailure } from '../llm/types.js'
import type { Session } from '../session/api.js'

export interface RequestErrorPayload {
  readonly session: Session
  readonly turn: number
  readonly step: number
  readonly provider: string
  readonly model: string
  readonly failure: LlmFailure
  /** Fires when the activity is cancelled; a pending retry wait must give up. */
  readonly signal: AbortSignal
}

/** `retry`: rebuild the request in the same turn and step. `fail`: end the turn with the error. */
export type RequestErrorDecision = { readonly kind: 'retry' } | { readonly kind: 'fail'; readonly failure?: LlmFailure }

declare module 'cordis' {
  interface Events {
    /**
     * @mode waterfall. Called when a model attempt ends in an error finish. A listener that owns
     * recovery returns `{kind:'retry'}` without calling next; the innermost default is `fail`.
     */
    'agent/request-error'(payload: RequestErrorPayload, next: () => Promise<RequestErrorDecision>): Promise<RequestErrorDecision>
  }
}
