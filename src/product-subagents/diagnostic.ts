/**
 * The safe failure line of a product run: fixed fields only, never the product's own error text
 * (it may hold paths, task text or credentials). Optional facts are left out when unknown.
 */
export interface FailureFacts {
  /** The product's display name (`Codex`, `Claude Code`). */
  readonly product: string
  /** Where it failed: `spawn`, `turn`, `query-run`, `process`... */
  readonly stage: string
  /** The product's error category (a result subtype, an error kind) or `unknown`. */
  readonly category: string
  readonly httpStatus?: number
  readonly exitCode?: number
  readonly signal?: string
}

export function failureLine(facts: FailureFacts): string {
  const parts = [`product: ${facts.product}`, `stage: ${facts.stage}`, `category: ${facts.category}`]
  if (facts.httpStatus !== undefined) parts.push(`HTTP status: ${facts.httpStatus}`)
  if (facts.exitCode !== undefined) parts.push(`exit code: ${facts.exitCode}`)
  if (facts.signal !== undefined) parts.push(`signal: ${facts.signal}`)
  return `Product subagent failure (${parts.join('; ')})`
}

/** A category word from the product's output: letters, digits, `_` and `-` only, else `unknown`. */
export function safeCategory(value: unknown): string {
  return typeof value === 'string' && /^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(value) ? value : 'unknown'
}

/** The foreground tool result of a failed run (the recorded wording). */
export function failureText(diagnostic: string, partial: string): string {
  const lines = ['Error: subagent run failed', `Diagnostic: ${diagnostic}`]
  if (partial.trim() !== '') lines.push('Partial output before the run ended:', partial)
  return lines.join('\n')
}
