/**
 * `ctx.tools`: tool registration (scoped), argument validation and the execution pipeline (T-1..T-7).
 */
import type {} from 'cordis'
import type { ImageBlock, TextBlock, ToolSchema } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { JsonValue } from '../session/types.js'
import type { ScopeKey } from '../scope/index.js'

export interface ToolContext {
  readonly callId: string
  /** Session cwd; relative paths resolve against it. */
  readonly cwd: string
  readonly signal: AbortSignal
  readonly session?: Session
  readonly scope?: ScopeKey
  /** `ToolExecution.parentCallId`: set when a program, not the model, made the call. */
  readonly parentCallId?: string
  /**
   * Live output while the body runs (bash's stdout and stderr as they arrive), for surfaces that
   * show progress: emitted as `tools/output`, never stored (the result is what the log keeps).
   */
  readonly output?: (stream: 'stdout' | 'stderr', text: string) => void
}

/**
 * The tool context as `tools/execute` listeners see it: a listener may replace `signal` before
 * it calls `next()` (a deadline fused with the caller's, say); the body gets the signal set when
 * it starts. Put the previous one back after `next()` settles.
 */
export type ExecuteContext = Omit<ToolContext, 'signal'> & { signal: AbortSignal }

/** A piece of a running call's live output (`tools/output`). */
export interface ToolOutputChunk {
  readonly session?: Session
  readonly callId: string
  readonly toolName: string
  readonly stream: 'stdout' | 'stderr'
  readonly text: string
}

/** What a tool body returns. A thrown error becomes an `isError` result (T-7). */
export interface ToolOutput {
  readonly content: readonly (TextBlock | ImageBlock)[]
  readonly isError?: boolean
  /** Structured data for UIs (diffs, exit codes...); stored as `tool/result.meta`. */
  readonly meta?: JsonValue
  /** Ends the tool loop after this step. */
  readonly concludesTurn?: boolean
  /**
   * The result as a program sees it (code mode: what `await tools.<name>(args)` resolves to),
   * typed by `Tool.outputType`. Never stored: the log keeps `content` (and `meta`).
   */
  readonly value?: JsonValue
}

export interface Tool<A = any> {
  readonly name: string
  readonly description: string
  /** JSON Schema of the arguments as sent to the model. */
  readonly parameters: Readonly<Record<string, unknown>>
  /** Optional validator/parser; returns parsed args or throws with a readable message. */
  parse?(args: unknown): A
  execute(args: A, context: ToolContext): Promise<ToolOutput> | ToolOutput
  /** Never sent to the model. */
  readonly timeoutMs?: number
  /** T-2: parallel only when this returns exactly `true`. */
  isConcurrencySafe?(args: A): unknown
  /**
   * The TypeScript type of `ToolOutput.value` (code mode declares it to the model); without it
   * the value is `JsonValue` (the result's text when the tool gives no value).
   */
  readonly outputType?: string
}

export type ToolExecutionMode = { readonly kind: 'parallel' } | { readonly kind: 'exclusive' }

export interface ToolExecution {
  readonly callId: string
  readonly name: string
  /** Raw argument string from the model. */
  readonly arguments: string
  readonly scope?: ScopeKey
  /** The call whose program made this one (code mode's inner calls); absent for the model's own. */
  readonly parentCallId?: string
}

export interface ToolResultRecord {
  readonly content: readonly (TextBlock | ImageBlock)[]
  readonly isError: boolean
  readonly error?: { readonly name: string; readonly code: string }
  readonly meta?: JsonValue
  readonly concludesTurn?: boolean
  /** `ToolOutput.value`, carried to the caller; never stored. */
  readonly value?: JsonValue
}

/**
 * A call through the first half of the pipeline (T-3 splits it so policy runs per call in model
 * order while bodies overlap): argument validation, `tools/pre-execute` and approval, then, if
 * they let it run and the caller is not cancelled, its body started. `settled`: no body runs
 * (unknown tool, invalid arguments, denied, cancelled before dispatch); `running`: `outcome` is
 * the body's record through `tools/execute` and the tool's timeout, with cancellation applied
 * (T-6: a successful outcome of a body that quiesced after the caller's abort is `ABORTED`),
 * before `tools/post-execute`. `outcome` never rejects.
 */
export type StartedToolCall =
  | { readonly kind: 'settled'; readonly record: ToolResultRecord }
  | { readonly kind: 'running'; readonly outcome: Promise<ToolResultRecord> }

export interface ToolsService {
  /** Registers a tool globally or for one scope; the disposer removes it (an effect). */
  register(tool: Tool, scope?: ScopeKey): () => void
  get(name: string, scope?: ScopeKey): Tool | undefined
  /** Tools visible from `scope`, sorted by name (T-1, Y-1). */
  list(scope?: ScopeKey): readonly Tool[]
  schemas(scope?: ScopeKey): readonly ToolSchema[]
  /** T-2 fail-closed classification. */
  executionMode(execution: ToolExecution): ToolExecutionMode
  /**
   * Runs one call through the whole pipeline on its own: `start`, the body's outcome, `finish`,
   * the same steps the scheduler (src/agent/tool-calls.ts) takes per call. Never throws for tool
   * failures: they become error records.
   */
  execute(execution: ToolExecution, context: Omit<ToolContext, 'callId' | 'scope'>): Promise<ToolResultRecord>
  /** The first half of the pipeline: parse, validate, `tools/pre-execute`, approval, then the body started. Never throws. */
  start(execution: ToolExecution, context: Omit<ToolContext, 'callId' | 'scope'>): Promise<StartedToolCall>
  /** The last half of the pipeline: `tools/post-execute`. Never throws. */
  finish(execution: ToolExecution, record: ToolResultRecord): Promise<ToolResultRecord>
  /** Announces a committed result through `tools/result` (contained emit). */
  committed(execution: ToolExecution, record: ToolResultRecord): void
}

export type PreExecuteDecision =
  | { readonly kind: 'allow' }
  /** `message` (optional) is the whole result text after `Error: `; default `tool call denied: <reason>`. */
  | { readonly kind: 'deny'; readonly reason: string; readonly message?: string }
  | { readonly kind: 'ask'; readonly reason?: string }

declare module 'cordis' {
  interface Context {
    tools: ToolsService
  }
  interface Events {
    /** @mode waterfall. Policy before a call; default `allow`. `ask` goes through `ctx.approval` (fails closed without it). */
    'tools/pre-execute'(execution: ToolExecution, next: () => Promise<PreExecuteDecision>): Promise<PreExecuteDecision>
    /** @mode waterfall. Around the tool body; a listener may swap `context.signal` for the calls downstream (`ExecuteContext`). */
    'tools/execute'(execution: ToolExecution, context: ExecuteContext, next: () => Promise<ToolResultRecord>): Promise<ToolResultRecord>
    /** @mode waterfall. Rewrite a finished record before it is committed. */
    'tools/post-execute'(execution: ToolExecution, record: ToolResultRecord, next: () => Promise<ToolResultRecord>): Promise<ToolResultRecord>
    /** @mode emit (contained). A result was committed. */
    'tools/result'(execution: ToolExecution, record: ToolResultRecord): void
    /** @mode emit (contained). Live output of a running call (not in the log); see `ToolContext.output`. */
    'tools/output'(chunk: ToolOutputChunk): void
  }
}
