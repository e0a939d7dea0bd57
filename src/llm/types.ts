/**
 * The provider-neutral model vocabulary (contracts L-1, L-2, S-12).
 *
 * Everything a session log stores about a conversation is expressed in these shapes; only
 * adapters know a wire format. Messages are frozen once built.
 */

export type Role = 'system' | 'user' | 'assistant'

export interface TextBlock { readonly type: 'text'; readonly text: string }
export interface ReasoningBlock { readonly type: 'reasoning'; readonly text: string; readonly signature?: string }
/** An image carried inline (base64 data without the `data:` prefix). */
export interface InlineImageBlock {
  readonly type: 'image'
  readonly data: string
  readonly mimeType: string
  readonly id?: string
}
/** An image stored by reference in an attachment store (as recorded logs of the original do). */
export interface AttachedImageBlock {
  readonly type: 'image'
  readonly attachment: {
    readonly attachmentId: string
    readonly mediaType: string
    readonly width?: number
    readonly height?: number
    readonly bytes?: number
    readonly name?: string
  }
}
export type ImageBlock = InlineImageBlock | AttachedImageBlock
/** `arguments` is the raw JSON string the model produced; the harness never re-encodes it. */
export interface ToolCallBlock { readonly type: 'tool-call'; readonly id: string; readonly name: string; readonly arguments: string }
export interface ToolResultBlock {
  readonly type: 'tool-result'
  readonly toolCallId: string
  readonly content: readonly (TextBlock | ImageBlock)[]
  readonly isError: boolean
}

export type ContentBlock = TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock
export type ContentBlockType = ContentBlock['type']

/**
 * Who produced a message: an axis separate from the role. These are the kinds the runtime
 * writes and branches on. A loaded log may carry other, plugin-defined kinds on a user message
 * (recorded logs have `goal`, `skill-catalog`, ...; the session validators accept any string
 * `kind` there and check only the kinds below), so code reading sources from a log must treat
 * an unrecognised kind as opaque (no exhaustive switch). They are not a `{kind: string}` member
 * here because a string-typed kind would stop `kind === 'tool'` from narrowing to `callId`.
 */
export type MessageSource =
  | { readonly kind: 'user' }
  | { readonly kind: 'plugin'; readonly plugin?: string; readonly [key: string]: unknown }
  | { readonly kind: 'model'; readonly provider: string; readonly model: string }
  | { readonly kind: 'tool'; readonly callId: string }

export interface Message {
  readonly id: string
  readonly role: Role
  readonly content: readonly ContentBlock[]
  readonly source: MessageSource
}

export interface UserMessage extends Message { readonly role: 'user' }
export interface AssistantMessage extends Message {
  readonly role: 'assistant'
  readonly source: { readonly kind: 'model'; readonly provider: string; readonly model: string }
}
/** S-12: a tool result is a user-role message holding exactly one tool-result block. */
export interface ToolResultMessage extends Message {
  readonly role: 'user'
  readonly content: readonly [ToolResultBlock]
  readonly source: { readonly kind: 'tool'; readonly callId: string }
}

/** L-2: counts are disjoint; `inputTokens` excludes cache reads. */
export interface TokenUsage {
  readonly inputTokens?: number
  readonly outputTokens?: number
  readonly cacheReadTokens?: number
  readonly cacheWriteTokens?: number
  readonly reasoningTokens?: number
}

export interface LlmFailure {
  readonly message: string
  readonly code: string
  readonly status?: number
  readonly providerRetryAfterMs?: number
  readonly requestId?: string
}

export type FinishReason =
  | { readonly kind: 'stop' }
  | { readonly kind: 'tool-calls' }
  | { readonly kind: 'max-tokens' }
  | { readonly kind: 'aborted'; readonly failure: LlmFailure }
  | { readonly kind: 'error'; readonly failure: LlmFailure }

/** L-1: the seven chunk shapes every adapter emits. */
export type StreamChunk =
  | { readonly type: 'block-start'; readonly index: number; readonly blockType: ContentBlockType }
  | { readonly type: 'text-delta'; readonly index: number; readonly text: string }
  | { readonly type: 'reasoning-delta'; readonly index: number; readonly text: string }
  | { readonly type: 'tool-call-delta'; readonly index: number; readonly id: string; readonly name?: string; readonly argumentsDelta: string }
  | { readonly type: 'block-end'; readonly index: number; readonly block: ContentBlock }
  | { readonly type: 'usage'; readonly usage: TokenUsage }
  | { readonly type: 'finish'; readonly reason: FinishReason; readonly replayState?: unknown }

export type ReasoningEffort = 'low' | 'medium' | 'high' | 'max'

/** A tool as the model sees it (never carries timeouts or executors). */
export interface ToolSchema {
  readonly name: string
  readonly description: string
  readonly parameters: Readonly<Record<string, unknown>>
}

/** What a caller asks of `ctx.llm.stream()`; `prepareCall` fills defaults from the catalogue. */
export interface LlmCallOptions {
  readonly provider: string
  readonly model: string
  readonly system?: string
  readonly messages: readonly Message[]
  readonly tools?: readonly ToolSchema[]
  readonly maxTokens?: number
  readonly temperature?: number
  readonly stop?: readonly string[]
  readonly thinking?: boolean
  readonly reasoningEffort?: ReasoningEffort
  readonly signal?: AbortSignal
  /** Free-form tags; the agent loop marks its own requests here (see the invariant, A-11). */
  readonly meta?: Readonly<Record<string, unknown>>
  /**
   * Reads the bytes of an image a message references by attachment id (the session's store).
   * Adapters that send images call it while serialising; without it an attachment is named only.
   */
  readonly attachments?: AttachmentReader
}

/** The bytes and media type of a stored attachment, or undefined when the store lacks it. */
export type AttachmentReader = (attachmentId: string) => Promise<{ readonly data: Uint8Array; readonly mediaType: string } | undefined>

/** An adapter turns one call into one provider attempt (L-5). */
export interface LlmAdapter {
  readonly provider: string
  stream(options: LlmCallOptions): AsyncIterable<StreamChunk>
  /**
   * The adapter itself waits for `requestHold(options)` (./request-hold.ts) right before its
   * request leaves, so it can build the request meanwhile. Otherwise the LLM service waits for
   * the hold before calling `stream`.
   */
  readonly awaitsRequestHold?: boolean
  /** A one-line problem that would make every call fail (e.g. a missing API key), checked before work starts. */
  readiness?(): string | undefined
  /**
   * Opens what the next call for `model` will use (a connection to the endpoint) without sending
   * a request: a turn asks when it starts, the terminal app when a prompt is being typed. Best
   * effort, cheap when already done, never throws (./connections.ts).
   */
  warm?(model: string): void
  /**
   * When the problem is a missing API key: the variable it is read from (`DEEPSEEK_API_KEY`), so
   * a surface can offer to store one (the terminal app asks for it on first run).
   */
  missingCredential?(): string | undefined
}

export interface ModelInfo {
  readonly provider: string
  readonly model: string
  readonly contextWindow: number
  readonly defaultMaxTokens: number
  readonly reasoningEfforts: readonly ReasoningEffort[]
  readonly imageInput: boolean
  readonly thinking?: boolean
}
