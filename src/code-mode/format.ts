/**
 * A code run as the model reads it: the printed lines joined by newlines, then the returned
 * value (a string as it is, anything else as JSON indented by two spaces, written on one line
 * from nesting depth 5 on); nothing at all reads `(run_code completed with no output)`. A
 * failed run: `code run failed (<kind>): <message>`, then what it printed.
 */
import type { CodeRunResult } from '../code-runtime/api.js'
import type { JsonValue } from '../session/types.js'

export const NO_OUTPUT = '(run_code completed with no output)'
const COMPACT_DEPTH = 5

export function formatValue(value: JsonValue, depth = 0): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (depth >= COMPACT_DEPTH) return JSON.stringify(value)
  const pad = '  '.repeat(depth + 1)
  const close = '  '.repeat(depth)
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]'
    return `[\n${value.map((item) => `${pad}${formatValue(item, depth + 1)}`).join(',\n')}\n${close}]`
  }
  const entries = Object.entries(value)
  if (entries.length === 0) return '{}'
  return `{\n${entries.map(([key, item]) => `${pad}${JSON.stringify(key)}: ${formatValue(item, depth + 1)}`).join(',\n')}\n${close}}`
}

/** The success text of a run. */
export function formatRun(result: Extract<CodeRunResult, { ok: true }>): string {
  const parts = [...result.logs]
  if (result.value !== undefined) parts.push(typeof result.value === 'string' ? result.value : formatValue(result.value))
  const text = parts.join('\n')
  return text === '' ? NO_OUTPUT : text
}

/** The error message of a failed run (the result reads `Error: ` before it). */
export function failureMessage(result: Extract<CodeRunResult, { ok: false }>): string {
  const head = `code run failed (${result.kind}): ${result.message}`
  return result.logs.length > 0 ? `${head}\nCaptured output:\n${result.logs.join('\n')}` : head
}
