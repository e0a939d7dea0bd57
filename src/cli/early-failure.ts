/**
 * A headless run that fails before its first turn (a usage error, a missing key, an unknown
 * session, a bad profile) prints one stderr line; under `--output json` or `stream-json` it also
 * prints one result object on stdout, so a script reading stdout always gets an answer:
 * `{type: 'result', sessionId: null, output: '', reason: {kind: 'error', error: {code, message}}}`
 * (json) or `{..., error: {code, message}}` (stream-json, the recorded result shape).
 */
export type JsonOutput = 'json' | 'stream-json'

/** The output format the app arguments ask for (`--output X` or `--output=X`), when it is JSON. */
export function jsonOutputOf(args: readonly string[]): JsonOutput | undefined {
  let format: string | undefined
  for (let i = 0; i < args.length; i += 1) {
    if (args[i] === '--') break
    if (args[i] === '--output') format = args[i + 1]
    else if (args[i]!.startsWith('--output=')) format = args[i]!.slice('--output='.length)
  }
  return format === 'json' || format === 'stream-json' ? format : undefined
}

/** The result line of an early failure, with a trailing newline. */
export function failureLine(output: JsonOutput, code: string, message: string): string {
  const error = { code, message }
  return `${JSON.stringify({ type: 'result', sessionId: null, output: '', ...output === 'json' ? { reason: { kind: 'error', error } } : { error } })}\n`
}

/** The code of an early failure: the error's own code, USAGE for exit 2, MISSING_API_KEY for a provider's missing key, else `fallback`. */
export function failureCode(error: unknown, exit: number, message: string, fallback = 'STARTUP_FAILED'): string {
  const own = (error as { code?: unknown } | undefined)?.code
  if (typeof own === 'string' && /^[A-Z][A-Z0-9_]+$/.test(own)) return own
  if (exit === 2) return 'USAGE'
  // A provider that cannot start without its key says so in these words (llm/deepseek).
  if (/\b[A-Z][A-Z0-9_]*_API_KEY is not set\b/.test(message)) return 'MISSING_API_KEY'
  return fallback
}
