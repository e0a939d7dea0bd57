/**
 * Tool failures as records (T-7): a failure is never thrown past `ctx.tools`; it becomes an
 * `isError` result whose text starts with `Error: ` and whose `error` names what went wrong.
 */
import type { ToolResultRecord } from './api.js'

/** Error codes the registry and scheduler produce; tools may use their own codes too. */
export const ToolErrorCode = {
  /** The body threw without a code of its own. */
  failed: 'TOOL_FAILED',
  unknownTool: 'UNKNOWN_TOOL',
  invalidArguments: 'INVALID_ARGUMENTS',
  denied: 'DENIED',
  timeout: 'TIMEOUT',
  invalidOutput: 'INVALID_OUTPUT',
  /** A `tools/pre-execute` or `tools/post-execute` listener threw or answered nonsense: fail closed. */
  policyFailed: 'POLICY_FAILED',
} as const

/** T-6: the body started and the call was cancelled; a successful outcome is replaced by this. */
export const TOOL_ABORTED = 'ABORTED'
/** T-6: the call was cancelled before its body started. */
export const TOOL_ABORTED_BEFORE_DISPATCH = 'ABORTED_BEFORE_DISPATCH'

export function abortedRecord(): ToolResultRecord {
  return errorRecord('tool call aborted', 'AbortError', TOOL_ABORTED)
}

export function abortedBeforeDispatchRecord(): ToolResultRecord {
  return errorRecord('tool call aborted before dispatch', 'AbortError', TOOL_ABORTED_BEFORE_DISPATCH)
}

/** T-6: cancellation keeps an error outcome and turns a successful one into `ABORTED`. */
export function cancellationResult(record: ToolResultRecord): ToolResultRecord {
  return record.isError ? record : abortedRecord()
}

/** Throw from a tool body to choose the result's error code (`ToolError('no such file', 'NOT_FOUND')`). */
export class ToolError extends Error {
  override name = 'ToolError'
  constructor(message: string, readonly code: string = ToolErrorCode.failed, options?: ErrorOptions) {
    super(message, options)
  }
}

export function errorRecord(message: string, name: string, code: string): ToolResultRecord {
  return { content: [{ type: 'text', text: `Error: ${message}` }], isError: true, error: { name, code } }
}

/** A thrown value as a record: keeps a string `code` the error carries, else `fallbackCode`. */
export function thrownRecord(error: unknown, fallbackCode: string = ToolErrorCode.failed): ToolResultRecord {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return errorRecord(error.message || error.name, error.name || 'Error', typeof code === 'string' && code !== '' ? code : fallbackCode)
  }
  return errorRecord(String(error), 'Error', fallbackCode)
}
