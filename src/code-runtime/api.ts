/**
 * The code runtime seam: runs one program the model wrote (the body of an async TypeScript
 * function) with a set of tools it may call, under hard limits, and gives back what it printed
 * and returned. Code mode (`run_code`) and later workflows build on it; the runtime knows nothing
 * of the tool pipeline: every inner call goes out through `CodeRunRequest.call`, and the caller
 * runs it through the whole pipeline.
 *
 * Providers: `./worker.ts` (a fresh worker thread per run, the program in a context of its own
 * with no Node API). Every provider passes `./runtime.conformance.ts`.
 */
import type { JsonValue } from '../session/types.js'

export interface CodeRunLimits {
  /** Busy time of the program (its thread running, not waiting on tool calls), in ms. */
  readonly computeMs: number
  /** Wall-clock ceiling of the whole run, in ms. */
  readonly maxWallMs: number
  /** Bytes of printed output and the returned value's JSON together. */
  readonly maxOutputBytes: number
  /** Heap ceiling of the program's thread. */
  readonly maxOldGenerationSizeMb: number
}

export const DEFAULT_CODE_RUN_LIMITS: CodeRunLimits = Object.freeze({
  computeMs: 60_000,
  maxWallMs: 600_000,
  maxOutputBytes: 64 * 1024 * 1024,
  maxOldGenerationSizeMb: 512,
})

/** What an inner tool call gives back to the program: its value, or a `ToolCallError` message. */
export type ToolCallAnswer =
  | { readonly ok: true; readonly value?: JsonValue }
  | { readonly ok: false; readonly message: string }

export interface CodeRunRequest {
  /** The body of an async function, TypeScript (types are stripped) or JavaScript; `await` and `return` work at its top. */
  readonly code: string
  /** The names the program reaches as `tools.<name>(args)`. */
  readonly tools: readonly string[]
  /**
   * Runs one inner call (arguments are plain JSON: lossy values are refused in the program
   * before they get here). `signal` aborts when the run settles; the run resolves only after
   * every call it started has settled, so no call outlives its run.
   */
  call(name: string, args: JsonValue, signal: AbortSignal): Promise<ToolCallAnswer>
  /** Aborting ends the run with kind `abort` (its reason as the message). */
  readonly signal?: AbortSignal
  readonly limits?: Partial<CodeRunLimits>
}

export type CodeRunFailureKind = 'timeout' | 'output-limit' | 'worker-exit' | 'exception' | 'abort' | 'invalid-output'

export type CodeRunResult =
  | { readonly ok: true; readonly logs: readonly string[]; readonly value?: JsonValue }
  | { readonly ok: false; readonly kind: CodeRunFailureKind; readonly message: string; readonly logs: readonly string[] }

export interface CodeRuntime {
  readonly name: string
  /** Never throws for anything the program does: failures are results. */
  run(request: CodeRunRequest): Promise<CodeRunResult>
}
