/**
 * The one error type the model layer throws. Adapters throw it; `ctx.llm.stream()` turns any
 * throw into a terminal `finish` chunk carrying `toFailure()` (L-4).
 */
import type { LlmFailure } from './types.js'

export class LlmError extends Error {
  readonly code: string
  readonly status?: number
  readonly providerRetryAfterMs?: number
  readonly requestId?: string

  constructor(code: string, message: string, details: { status?: number; providerRetryAfterMs?: number; requestId?: string; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.name = 'LlmError'
    this.code = code
    if (details.status !== undefined) this.status = details.status
    if (details.providerRetryAfterMs !== undefined) this.providerRetryAfterMs = details.providerRetryAfterMs
    if (details.requestId !== undefined) this.requestId = details.requestId
  }

  toFailure(): LlmFailure {
    return failure(this.code, this.message, this)
  }
}

/** Builds a plain-JSON failure, leaving out absent optional fields (the log rejects undefined). */
export function failure(code: string, message: string, details: { status?: number; providerRetryAfterMs?: number; requestId?: string } = {}): LlmFailure {
  return {
    message,
    code,
    ...details.status !== undefined ? { status: details.status } : {},
    ...details.providerRetryAfterMs !== undefined ? { providerRetryAfterMs: details.providerRetryAfterMs } : {},
    ...details.requestId !== undefined ? { requestId: details.requestId } : {},
  }
}

/** Any thrown value as a failure; non-LlmErrors get `fallbackCode`. */
export function toFailure(error: unknown, fallbackCode: string): LlmFailure {
  if (error instanceof LlmError) return error.toFailure()
  const message = error instanceof Error ? error.message : String(error)
  return failure(fallbackCode, message || fallbackCode)
}
