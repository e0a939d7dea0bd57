/**
 * Agent-loop extension points that other seams hook before the loop itself exists.
 * The full `ctx.agents` / `ctx.agentLoop` surface lives beside the loop; these shapes are the
 * public contract (A-5, A-6, L-10).
 */
import type {} from 'cordis'
import type { LlmFailure, ReasoningEffort } from '../llm/types.js'
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

/** What a step's request asks of the model beside its route: the fields a per-step policy may set. */
export interface RequestConfig {
  readonly maxTokens?: number
  readonly temperature?: number
  readonly thinking?: boolean
  readonly reasoningEffort?: ReasoningEffort
}

export interface RequestConfigPayload {
  readonly session: Session
  readonly turn: number
  readonly step: number
  readonly provider: string
  readonly model: string
}

declare module 'cordis' {
  interface Events {
    /**
     * @mode waterfall. Called when a model attempt ends in an error finish. A listener that owns
     * recovery returns `{kind:'retry'}` without calling next; the innermost default is `fail`.
     */
    'agent/request-error'(payload: RequestErrorPayload, next: () => Promise<RequestErrorDecision>): Promise<RequestErrorDecision>
    /**
     * @mode waterfall (synchronous). Called as each step's request is built: a per-step policy
     * (say, less reasoning after a tool result) returns the config to ask with; `next()` gives the
     * agent's own. The result is validated like the agent's config and written into the log
     * first (a `request/header` change), so the request stays a function of the log.
     */
    'agent/request-config'(payload: RequestConfigPayload, next: () => RequestConfig): RequestConfig
  }
}
