/**
 * The delegation seam (SA-1..SA-17): `ctx.subagents` starts child agents for a parent agent
 * through named providers (`spawn`, `fork`), runs them one-shot or continuable, routes
 * messages, reports and settlement notices between parent and child, and announces runs
 * through `subagent/started` and `subagent/finished`. The model-facing tools are thin
 * consumers of this service (tools.ts).
 */
import type {} from 'cordis'
import type { Agent } from '../agent/api.js'
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { JsonValue, TurnEndReason } from '../session/types.js'

export type SubagentMode = 'one-shot' | 'continuable'

/** `subagent/descriptor` data (child log only). */
export interface SubagentDescriptor {
  readonly version: 2
  readonly mode: SubagentMode
  readonly provider: string
  readonly label?: string
  readonly agentProvider?: string
  readonly agentModel?: string
}

/** What a provider needs to build the child's session. */
export interface ChildSessionRequest {
  readonly parent: Agent
  /** The child's `delegationDepth` (already checked against maxDepth). */
  readonly depth: number
}

/** A named way to create a child session (SA-1, SA-4). */
export interface SubagentProvider {
  readonly name: string
  /** Creates and publishes the child's session: header fields plus any seed. */
  createSession(request: ChildSessionRequest): Session
}

export interface StartOptions {
  readonly parent: Agent
  readonly provider: string
  readonly prompt: string
  readonly label?: string
  /** SA-2: the deepest allowed child depth (0 forbids delegation). */
  readonly maxDepth: number
  /** The parent's tool call that starts the child (for surfaces). */
  readonly callId?: string
  /** The child's model route instead of the parent's (either part alone). */
  readonly route?: { readonly provider?: string; readonly model?: string }
  /** Called once the child's session is published, before its agent exists (workflows record it). */
  onPublished?(childSessionId: string): void
  /** Equips the child's agent before its first turn (scoped tools, sections: a workflow's `structured_output`). */
  setup?(child: Agent): void
}

/** How a one-shot child run ended (SA-5, SA-6). */
export interface SubagentRunResult {
  readonly childSessionId: string
  readonly reason: TurnEndReason | undefined
  /** Text of the child's last non-empty assistant message (seed excluded), or accumulated text. */
  readonly text: string
  /** The tool result text for the parent. */
  readonly output: string
  readonly isError: boolean
}

export type ChildStatus = 'running' | 'idle' | 'ready'

export interface SubagentStarted {
  readonly parentSessionId: string
  readonly childSessionId: string
  readonly provider: string
  readonly mode: SubagentMode
  readonly label?: string
  readonly callId?: string
}

export interface SubagentFinished {
  readonly provider: string
  readonly agentId: string
  readonly parentSessionId: string
  readonly childSessionId: string
  readonly status: 'ok' | 'error'
  readonly stopReason: string
  readonly lastAssistantMessage?: JsonValue
}

export interface SubagentsService {
  /** Registers a provider by name; the disposer removes it (an effect). */
  provider(provider: SubagentProvider): () => void
  providers(): readonly string[]
  /** SA-1: the depth a child of `parent` would get. */
  childDepth(parent: Agent): number
  /** One-shot: start a child, run one turn, return its outcome; `signal` aborts the child (SA-15). */
  run(options: StartOptions, signal: AbortSignal): Promise<SubagentRunResult>
  /** Continuable: start a child and return its durable id once its inbox accepted the prompt (SA-8). */
  start(options: StartOptions): Promise<string>
  /** SA-9: queue `message` as the child's next FIFO turn; throws SubagentError NOT_RESUMABLE. */
  send(parent: Agent, childId: string, message: string): Promise<UserMessage>
  /** SA-15: cancel the target's current turn (keeps its inbox); a settled or absent target is a no-op. */
  interrupt(caller: Agent, agentId: string): void
  /** SA-16: one line per continuable child (or descendant). */
  list(parent: Agent, scope: 'children' | 'descendants'): Promise<readonly string[]>
  /** SA-12: deliver a child's report to its direct parent as next-step input. */
  report(child: Agent, output: string): UserMessage
  /** Resolves when `agentId` is idle and no continuable descendant is running or has undelivered notices. */
  whenQuiet(agentId: string): Promise<void>
}

export class SubagentError extends Error {
  constructor(readonly code: 'NOT_RESUMABLE' | 'DEPTH_EXCEEDED' | 'UNKNOWN_PROVIDER' | 'NOT_A_CHILD', message: string) {
    super(message)
    this.name = 'SubagentError'
  }
}

declare module 'cordis' {
  interface Context {
    subagents: SubagentsService
  }
  interface Events {
    /** @mode emit (contained). A child session was created for a parent (SA-17). */
    'subagent/started'(info: SubagentStarted): void
    /** @mode emit (contained). A one-shot run or a continuable activation ended (SA-17). */
    'subagent/finished'(info: SubagentFinished): void
  }
}
