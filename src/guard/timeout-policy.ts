/**
 * The per-tool timeout policy (row `guard-timeout-policy`, docs/guards.md): deadlines a
 * deployment sets on tool calls by tool name, on top of the ones tools declare themselves.
 *
 * - The budget of a call: its tool's entry in `tools` (an exact name first, else the matching
 *   pattern with the most literal characters; `*` is a wildcard), else `defaultMs`; `capMs` cuts
 *   every budget to at most itself, and alone is a deadline for every call. `0` in `tools` exempts
 *   the tool from the policy, cap included. Nothing configured: nothing armed.
 * - Calls that run in the background (`run_in_background: true`) are exempt: they answer at once.
 * - A `tools/execute` listener: the body's signal is swapped for one that aborts with the caller's
 *   and at the deadline. The tool stops as it does on a cancel (bash kills its process tree);
 *   once it has, the result is `TOOL_TIMEOUT`, naming the policy. A body is never abandoned, so a
 *   tool that ignores its signal runs on past the deadline (the policy cannot kill same-process
 *   code). A cancel of the caller wins over the deadline.
 * - A tool's own `timeoutMs` (the registry's, `TIMEOUT`) and bash's `timeoutMs` argument stay in
 *   force: whichever deadline comes first ends the call.
 */
import type { Context } from 'cordis'
import type { ExecuteContext, ToolExecution, ToolResultRecord } from '../tools/api.js'
import { errorRecord } from '../tools/errors.js'
import { namePattern, type NamePattern } from './patterns.js'

export const TOOL_TIMEOUT = 'TOOL_TIMEOUT'

export interface TimeoutPolicyConfig {
  /** Budget in ms per tool name or `*` pattern (`{ web_fetch: 60000, 'mcp__*': 120000 }`); 0 exempts. */
  readonly tools?: Readonly<Record<string, number>>
  /** Budget of a tool no entry names (none by default). */
  readonly defaultMs?: number
  /** The longest deadline the policy arms (none by default). */
  readonly capMs?: number
}

interface Entry {
  readonly pattern: NamePattern
  readonly ms: number
}

/** The budget of one call and where it came from (for the error text). */
export interface Budget {
  readonly ms: number
  readonly rule: string
}

const WHERE = 'guard-timeout-policy'

function positive(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new TypeError(`${WHERE}: ${name} must be a positive number of milliseconds, not ${JSON.stringify(value)}`)
  return value
}

export class TimeoutPolicy {
  private readonly exact = new Map<string, number>()
  private readonly patterns: Entry[] = []
  private readonly defaultMs: number | undefined
  private readonly capMs: number | undefined

  constructor(config: TimeoutPolicyConfig = {}) {
    for (const key of Object.keys(config)) {
      if (key !== 'tools' && key !== 'defaultMs' && key !== 'capMs') throw new TypeError(`${WHERE}: unknown setting ${JSON.stringify(key)} (expected tools, defaultMs, capMs)`)
    }
    const tools = config.tools ?? {}
    if (typeof tools !== 'object' || tools === null || Array.isArray(tools)) throw new TypeError(`${WHERE}: tools must map tool names or patterns to milliseconds, not ${JSON.stringify(tools)}`)
    for (const [name, ms] of Object.entries(tools)) {
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw new TypeError(`${WHERE}: tools.${name} must be milliseconds (0 exempts the tool), not ${JSON.stringify(ms)}`)
      const pattern = namePattern(name, `${WHERE}: tools`)
      if (name.includes('*')) this.patterns.push({ pattern, ms })
      else this.exact.set(name, ms)
    }
    // Most specific first; equally specific ones in the order written.
    this.patterns.sort((a, b) => b.pattern.literal - a.pattern.literal)
    this.defaultMs = positive(config.defaultMs, 'defaultMs')
    this.capMs = positive(config.capMs, 'capMs')
  }

  /** Whether any call can get a deadline (else the plugin adds nothing to a call). */
  get armed(): boolean {
    return this.defaultMs !== undefined || this.capMs !== undefined
      || [...this.exact.values()].some(ms => ms > 0) || this.patterns.some(entry => entry.ms > 0)
  }

  /** The deadline of a call to `name`, or undefined when none applies. */
  budget(name: string): Budget | undefined {
    const own = this.exact.get(name)
    const matched = own !== undefined ? { ms: own, rule: `tools.${name}` } : this.patterns.find(entry => entry.pattern.test(name))
    const chosen = matched === undefined ? undefined : 'rule' in matched ? matched : { ms: matched.ms, rule: `tools.${matched.pattern.source}` }
    if (chosen?.ms === 0) return undefined
    const base = chosen ?? (this.defaultMs !== undefined ? { ms: this.defaultMs, rule: 'defaultMs' } : undefined)
    if (this.capMs !== undefined && (base === undefined || base.ms > this.capMs)) return { ms: this.capMs, rule: 'capMs' }
    return base
  }
}

/** The result of a call the policy ended. */
export function timeoutRecord(name: string, budget: Budget): ToolResultRecord {
  return errorRecord(`tool call timed out after ${budget.ms}ms: ${name} ran past the deadline set by the tool timeout policy (${budget.rule} = ${budget.ms} in ${WHERE})`, 'ToolTimeoutError', TOOL_TIMEOUT)
}

/** A call that answers at once and leaves its work to a background job. */
function inBackground(raw: string): boolean {
  if (!raw.includes('run_in_background')) return false
  try {
    return (JSON.parse(raw) as { run_in_background?: unknown }).run_in_background === true
  } catch {
    return false
  }
}

export class TimeoutPolicyPlugin {
  static readonly inject = ['tools']
  readonly policy: TimeoutPolicy

  constructor(ctx: Context, config: TimeoutPolicyConfig = {}) {
    this.policy = new TimeoutPolicy(config)
    // Nothing armed (the shipped default): no listener, so a tool call pays nothing for the row.
    if (this.policy.armed) ctx.on('tools/execute', (execution, context, next) => this.around(execution, context, next))
  }

  private async around(execution: ToolExecution, context: ExecuteContext, next: () => Promise<ToolResultRecord>): Promise<ToolResultRecord> {
    const budget = this.policy.budget(execution.name)
    if (budget === undefined || inBackground(execution.arguments)) return next()
    const caller = context.signal
    if (caller.aborted) return next()
    const deadline = new AbortController()
    let expired = false
    const onAbort = () => { deadline.abort(caller.reason) }
    caller.addEventListener('abort', onAbort, { once: true })
    const timer = setTimeout(() => {
      expired = true
      deadline.abort(new DOMException(`${execution.name} ran past its ${budget.ms} ms deadline (${WHERE})`, 'TimeoutError'))
    }, budget.ms)
    context.signal = deadline.signal
    try {
      const record = await next()
      return expired && !caller.aborted ? timeoutRecord(execution.name, budget) : record
    } finally {
      clearTimeout(timer)
      caller.removeEventListener('abort', onAbort)
      context.signal = caller
    }
  }
}
