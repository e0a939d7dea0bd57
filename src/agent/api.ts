/**
 * The public face of the agent seam (contracts A-*, K-2, P-1): `ctx.agents` (the live registry of
 * agents), `ctx.agentLoop` (the replaceable loop driver) and the loop's events with their modes.
 */
import type { Context } from 'cordis'
import type { ContentBlock, ReasoningEffort, UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { AbortReason, InboxTarget, TurnEndReason } from '../session/types.js'
import type { ScopeKey } from '../scope/index.js'
import type { PromptAssembly } from '../prompt/api.js'

/** The model route and limits of one agent's requests (written into `request/header.config`). */
export interface AgentLoopConfig {
  readonly provider: string
  readonly model: string
  readonly maxTokens?: number
  readonly temperature?: number
  readonly thinking?: boolean
  readonly reasoningEffort?: ReasoningEffort
  /** T-3: cap of the rolling pool of parallel-safe tool bodies (default 10, read per group). */
  readonly maxParallelToolCalls?: number
}

export { DEFAULT_MAX_PARALLEL_TOOL_CALLS } from './tool-calls.js'

/** Public status: `running` only while a turn is open (the maintenance phase shows as idle). */
export type AgentStatus = 'idle' | 'running'

/** What callers may hand to `send`: a ready user message, plain text or content blocks. */
export type AgentInput = string | readonly ContentBlock[] | UserMessage

export interface CancelOptions {
  /** Keep queued input; by default the inbox is cleared with `outcome: 'canceled'`. */
  readonly keepInbox?: boolean
  /** Recorded in `turn/end aborted`; default `{kind:'user'}`. */
  readonly reason?: AbortReason
}

/** A read-only view of the two inbox lists. */
export interface InboxView {
  readonly nextTurn: readonly UserMessage[]
  readonly nextStep: readonly UserMessage[]
}

/** One running loop instance, created by `ctx.agentLoop.create` for one agent. */
export interface AgentLoop {
  readonly status: AgentStatus
  readonly inbox: InboxView
  /** queue `message` on `target`; `wake` starts a turn when idle. Returns the queued message. */
  send(message: UserMessage, target: InboxTarget, wake: boolean): UserMessage
  /** */
  cancel(options?: CancelOptions): void
  /** Runs `work` in the maintenance phase (shows as idle; a wake meanwhile is latched). */
  maintain(work: (signal: AbortSignal) => Promise<void>): Promise<void>
  /** Resolves when the loop is idle with nothing latched. */
  whenIdle(): Promise<void>
  /** Cancels with `{kind:'disposed'}`, drains and refuses further input. */
  dispose(): Promise<void>
}

export interface Agent {
  /** Equal to the session id: one live agent per session. */
  readonly id: string
  readonly session: Session
  /** P-1: registrations through `ctx` are visible to this agent only and die with it. */
  readonly scope: ScopeKey
  readonly ctx: Context
  readonly config: AgentLoopConfig
  readonly status: AgentStatus
  readonly inbox: InboxView
  send(input: AgentInput, target: InboxTarget, wake?: boolean): UserMessage
  /** next-turn + wake */
  followup(input: AgentInput): UserMessage
  /** next-step + wake */
  steer(input: AgentInput): UserMessage
  /** next-step, no wake */
  inject(input: AgentInput): UserMessage
  cancel(options?: CancelOptions): void
  whenIdle(): Promise<void>
  dispose(): Promise<void>
}

export interface CreateAgentOptions {
  /** An existing live session; a new one is created when absent. */
  readonly sessionId?: string
  readonly cwd?: string
  /** Overrides the registry's default loop config. */
  readonly loop?: Partial<AgentLoopConfig>
  /** Parent scope (delegation): the agent's key is bound under it (P-2). */
  readonly parentScope?: ScopeKey
}

export interface AgentsService {
  /** The default loop config new agents start from (the agents row's `loop`), before per-agent overrides. */
  readonly defaultLoop?: Partial<AgentLoopConfig>
  create(options?: string | CreateAgentOptions): Agent
  get(id: string): Agent | undefined
  list(): readonly Agent[]
  dispose(id: string): Promise<void>
}

export interface AgentLoopService {
  create(agent: Agent): AgentLoop
}

export interface PreStepPayload {
  readonly session: Session
  readonly agent: Agent
  /** The claimed inbox messages. */
  readonly messages: readonly UserMessage[]
  readonly turn: number
  readonly step: number
  readonly signal: AbortSignal
  readonly assembly: PromptAssembly
}

export type PreStepDecision =
  | { readonly kind: 'enter'; readonly messages: readonly UserMessage[] }
  | { readonly kind: 'reject'; readonly message?: string }

export interface TurnStoppingPayload {
  readonly session: Session
  readonly agent: Agent
  readonly turn: number
  readonly signal: AbortSignal
  /** Queue input on next-step; the turn then goes on. */
  steer(input: AgentInput): void
}

declare module 'cordis' {
  interface Context {
    agents: AgentsService
    agentLoop: AgentLoopService
  }
  interface Events {
    /**
     * @mode waterfall. Before each step, after claim and prompt assembly. The innermost
     * default is `{kind:'enter', messages: claimed (+ runtime-context message)}`; a listener may
     * rewrite the list or return `{kind:'reject'}` (the turn ends `blocked`, A-4). The checkpoint
     * plugin flushes here before calling next (D-3).
     */
    'agent/pre-step'(payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision>
    /**
     * @mode serial. The turn would end and next-step is empty. Listeners may `steer()`;
     * when input arrived the turn goes on. Listeners should return nothing: the loop ignores
     * results, but in serial mode a result that is not null/undefined/false skips later listeners.
     */
    'agent/turn-stopping'(payload: TurnStoppingPayload): Promise<void>
    /** @mode emit (contained). The public status changed. */
    'agent/status'(agent: Agent, status: AgentStatus): void
    /** @mode emit (contained). A turn closed; `turn/end` is already in the log. */
    'agent/turn-end'(agent: Agent, turn: number, reason: TurnEndReason): void
    /** @mode emit (contained). An agent joined the registry. */
    'agent/created'(agent: Agent): void
    /** @mode emit (contained). An agent left the registry (its scope is gone). */
    'agent/disposed'(agent: Agent): void
  }
}
