/**
 * The session log vocabulary (contracts S-1..S-15).
 *
 * A session is an append-only list of `SessionEvent`s; everything else (model history, inbox,
 * titles, usage) is derived from it. The data shapes of the core event types live in
 * `SessionEventMap`; plugins add their own through declaration merging *and* by registering a
 * validator with the event-type registry (S-2), which is what load-time checks consult.
 */
import type {
  AssistantMessage, ContentBlock, LlmFailure, StreamChunk, TokenUsage, ToolResultMessage, UserMessage,
} from '../llm/types.js'

export const SESSION_FORMAT_VERSION = 0

/** JSON values as stored in the log (S-5: plain JSON only). */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue }

/** S-4 */
export type AbortReason =
  | { readonly kind: 'user' | 'parent' | 'disposed' | 'legacy' }
  | { readonly kind: 'hook'; readonly reason: string }

export type TurnEndReason =
  | { readonly kind: 'completed' }
  | { readonly kind: 'aborted'; readonly reason: AbortReason }
  | { readonly kind: 'blocked'; readonly message?: string }
  | { readonly kind: 'error'; readonly error: LlmFailure }
  | { readonly kind: 'max-tokens' }
  /** Written only by crash repair (C-3); no loop ever emits it. */
  | { readonly kind: 'interrupted' }

export type InboxTarget = 'next-turn' | 'next-step'

export interface EpochHeader {
  readonly config: { readonly provider: string; readonly model: string; readonly maxTokens?: number; readonly temperature?: number; readonly stop?: readonly string[]; readonly thinking?: boolean; readonly reasoningEffort?: string }
  readonly system: string
  /** Tool schemas as sent to the model. The loop always writes it (`[]` without tools); recorded logs of tool-less sessions omit it, which reads as `[]`. */
  readonly tools?: JsonValue
}

export interface RequestContext { readonly provider: string; readonly model: string; readonly contextWindow?: number }

export interface TodoItem { readonly content: string; readonly status: 'pending' | 'in_progress' | 'completed'; readonly [key: string]: JsonValue | undefined }

/** S-1: the session core plus the plugin-owned types the runtime ships. */
export interface SessionEventMap {
  'turn/start': { turn: number }
  'turn/end': { turn: number; reason: TurnEndReason }
  'step/start': { turn: number; step: number }
  'step/end': { turn: number; step: number }
  'user/message': UserMessage
  'assistant/chunk': { turn: number; step: number; chunk: StreamChunk }
  'assistant/message': { turn: number; step: number; message: AssistantMessage; usage?: TokenUsage; interrupted?: true }
  'tool/call': { turn: number; step: number; callId: string; name: string; arguments: string }
  'tool/result': { turn: number; step: number; message: ToolResultMessage; error?: { name: string; code: string }; meta?: JsonValue }
  'todo/write': { todos: TodoItem[] }
  'request/header': { header: EpochHeader; reason: 'initial' | 'resume' | 'change' }
  'request/context': RequestContext
  'session/end-seed': Record<string, never>
  'agent/inbox/spliced': { target: InboxTarget; start: number; removedCount?: number; inserted: UserMessage[]; outcome?: 'canceled' }
}

export type SessionEventType = keyof SessionEventMap | (string & {})

export type SurfaceOp = 'append' | { readonly op: 'replace'; readonly start: number; readonly end: number }

/** S-1: the only top-level keys an event envelope may carry; every reader checks against this set. */
export const ENVELOPE_KEYS: ReadonlySet<string> = new Set(['type', 'seq', 'time', 'data', 'ignorable', 'surfaceOp', 'sourceEventSeqs'])

/** The envelope (S-1). No other top-level key is accepted on load. */
export interface SessionEvent<T extends string = string> {
  readonly type: T
  readonly seq: number
  readonly time: number
  readonly data: T extends keyof SessionEventMap ? SessionEventMap[T] : unknown
  readonly ignorable?: true
  readonly surfaceOp?: SurfaceOp
  readonly sourceEventSeqs?: readonly number[]
}

/** Event types that carry a surface op and may produce a model message (S-6). */
export const SURFACE_EVENT_TYPES = ['user/message', 'assistant/message', 'tool/result'] as const
export type SurfaceEventType = typeof SURFACE_EVENT_TYPES[number]

export interface AppendOptions {
  readonly surfaceOp?: SurfaceOp
  readonly sourceEventSeqs?: readonly number[]
  readonly ignorable?: true
  /** Overrides the clock (tests, replay, repair). */
  readonly time?: number
}

/** S-13: the first line of a stored log. */
export interface SessionHeader {
  readonly type: 'session'
  readonly version: number
  readonly id: string
  readonly createdAt: number
  readonly cwd?: string
  readonly parentSession?: string
  readonly seedLength?: number
  readonly origin?: JsonValue
  readonly delegationDepth: number
  readonly agentPreset?: string
}

/** A validator for one event type's `data`; returns a problem description or null. */
export type EventDataValidator = (data: unknown) => string | null

/** S-2: one entry of the event-type registry. */
export interface EventTypeDefinition {
  readonly type: string
  readonly validate?: EventDataValidator
  /** Owner plugin, for error messages. */
  readonly owner?: string
}

/** Rejections name the rule, the seq and what was wrong. */
export class SessionRuleError extends Error {
  constructor(readonly rule: string, readonly seq: number | undefined, detail: string) {
    super(`${rule}${seq === undefined ? '' : ` at seq ${seq}`}: ${detail}`)
    this.name = 'SessionRuleError'
  }
}

export type { ContentBlock }
