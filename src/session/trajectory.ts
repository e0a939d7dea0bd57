/**
 * The trajectory of a session, derived from its log alone: per turn and step, the model time
 * (step/start or llm/retry-started to the step's last chunk or its message), tokens in / out /
 * cached / reasoning (the step's `assistant/message` usage), tool time (tool/call to tool/result),
 * retries and the time spent waiting between them; totals; and the cost where the price of the
 * step's model is known (`request/context` names the route of the requests that follow).
 */
import type { SessionEvent } from './types.js'

/** USD per million tokens. `cacheRead` and `cacheWrite` default to `input`. */
export interface ModelPrice {
  readonly input: number
  readonly output: number
  readonly cacheRead?: number
  readonly cacheWrite?: number
}

/** Prices by `model` or `provider/model` (the more specific wins). */
export type PriceTable = Readonly<Record<string, ModelPrice>>

export interface TrajectoryUsage {
  /** Prompt tokens not read from the cache, those written to it included. */
  inputTokens: number
  outputTokens: number
  cachedTokens: number
  reasoningTokens: number
  /** Of `inputTokens`, those written to the provider's cache (Anthropic); present when some were. */
  cacheWriteTokens?: number
}

export interface TrajectoryTool {
  readonly callId: string
  readonly name: string
  /** tool/call to tool/result; null while it runs (or when the result is missing). */
  readonly ms: number | null
  readonly isError: boolean
}

export interface TrajectoryStep {
  readonly step: number
  model: string | null
  provider: string | null
  modelMs: number
  /** First chunk of the last attempt minus its start: time to first token. */
  firstChunkMs: number | null
  usage: TrajectoryUsage
  toolMs: number
  tools: TrajectoryTool[]
  retries: number
  retryWaitMs: number
  /** USD, or null when the model has no price. */
  cost: number | null
}

export interface TrajectoryTurn {
  readonly turn: number
  readonly startedAt: number
  durationMs: number | null
  reason: string | null
  steps: TrajectoryStep[]
  usage: TrajectoryUsage
  modelMs: number
  toolMs: number
  retries: number
  cost: number | null
}

export interface Trajectory {
  turns: TrajectoryTurn[]
  totals: { usage: TrajectoryUsage; modelMs: number; toolMs: number; retries: number; steps: number; cost: number | null; unpricedSteps: number }
}

const zero = (): TrajectoryUsage => ({ inputTokens: 0, outputTokens: 0, cachedTokens: 0, reasoningTokens: 0 })

function add(into: TrajectoryUsage, usage: TrajectoryUsage): void {
  into.inputTokens += usage.inputTokens
  into.outputTokens += usage.outputTokens
  into.cachedTokens += usage.cachedTokens
  into.reasoningTokens += usage.reasoningTokens
  if (usage.cacheWriteTokens !== undefined) into.cacheWriteTokens = (into.cacheWriteTokens ?? 0) + usage.cacheWriteTokens
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0
}

/** A request's `usage` (`assistant/message`) in the trajectory's terms; what is missing or malformed counts 0. */
export function trajectoryUsage(usage: { inputTokens?: unknown; outputTokens?: unknown; cacheReadTokens?: unknown; cacheWriteTokens?: unknown; reasoningTokens?: unknown }): TrajectoryUsage {
  // The log's counts are disjoint (L-2); here cache writes are prompt tokens like the rest.
  const writes = count(usage.cacheWriteTokens)
  return {
    inputTokens: count(usage.inputTokens) + writes, outputTokens: count(usage.outputTokens),
    cachedTokens: count(usage.cacheReadTokens), reasoningTokens: count(usage.reasoningTokens),
    ...writes > 0 ? { cacheWriteTokens: writes } : {},
  }
}

export function priceOf(prices: PriceTable, provider: string | null, model: string | null): ModelPrice | undefined {
  if (model === null) return undefined
  return (provider !== null ? prices[`${provider}/${model}`] : undefined) ?? prices[model]
}

export function costOf(usage: TrajectoryUsage, price: ModelPrice): number {
  const writes = usage.cacheWriteTokens ?? 0
  return ((usage.inputTokens - writes) * price.input + writes * (price.cacheWrite ?? price.input) + usage.cachedTokens * (price.cacheRead ?? price.input) + usage.outputTokens * price.output) / 1_000_000
}

/** Folds a log into its trajectory; unknown or malformed events are skipped. */
export function trajectoryOf(events: readonly SessionEvent[], prices: PriceTable = {}): Trajectory {
  const turns: TrajectoryTurn[] = []
  let route: { provider: string | null; model: string | null } = { provider: null, model: null }
  let turn: TrajectoryTurn | undefined
  let step: TrajectoryStep | undefined
  /** Start of the running attempt, its first and last chunk times. */
  let attempt: { start: number; first: number | null; last: number | null; closed: boolean } | undefined
  let retryAt: number | undefined
  const toolStarts = new Map<string, { at: number; name: string; step: TrajectoryStep }>()
  const closeAttempt = (end: number | null) => {
    if (step === undefined || attempt === undefined || attempt.closed) return
    const stop = end ?? attempt.last
    if (stop !== null) step.modelMs += Math.max(0, stop - attempt.start)
    step.firstChunkMs = attempt.first === null ? step.firstChunkMs : attempt.first - attempt.start
    attempt.closed = true
  }
  for (const event of events) {
    const data = event.data as Record<string, any> | undefined
    switch (event.type) {
      case 'request/context':
        route = { provider: typeof data?.provider === 'string' ? data.provider : null, model: typeof data?.model === 'string' ? data.model : null }
        // Logged while the step prepares its request: the route of this step's requests.
        if (step !== undefined && attempt !== undefined && !attempt.closed && attempt.first === null) Object.assign(step, route)
        break
      case 'turn/start':
        turn = { turn: Number(data?.turn), startedAt: event.time, durationMs: null, reason: null, steps: [], usage: zero(), modelMs: 0, toolMs: 0, retries: 0, cost: null }
        turns.push(turn)
        step = undefined
        break
      case 'step/start':
        if (turn === undefined) break
        step = { step: Number(data?.step), model: route.model, provider: route.provider, modelMs: 0, firstChunkMs: null, usage: zero(), toolMs: 0, tools: [], retries: 0, retryWaitMs: 0, cost: null }
        turn.steps.push(step)
        attempt = { start: event.time, first: null, last: null, closed: false }
        break
      case 'assistant/chunk':
        if (attempt !== undefined && !attempt.closed) {
          attempt.first ??= event.time
          attempt.last = event.time
        }
        break
      case 'llm/retry':
        if (step === undefined) break
        closeAttempt(event.time)
        step.retries += 1
        retryAt = event.time
        break
      case 'llm/retry-started':
        if (step === undefined || attempt === undefined) break
        step.retryWaitMs += Math.max(0, event.time - (retryAt ?? attempt.last ?? attempt.start))
        retryAt = undefined
        attempt = { start: event.time, first: null, last: null, closed: false }
        break
      case 'assistant/message':
        if (step === undefined) break
        closeAttempt(attempt?.last ?? event.time)
        if (data?.usage !== undefined) step.usage = trajectoryUsage(data.usage)
        break
      case 'tool/call':
        if (step !== undefined && typeof data?.callId === 'string') toolStarts.set(data.callId, { at: event.time, name: String(data.name ?? '?'), step })
        break
      case 'tool/result': {
        const block = data?.message?.content?.[0]
        const callId = block?.toolCallId
        const started = typeof callId === 'string' ? toolStarts.get(callId) : undefined
        if (started === undefined) break
        toolStarts.delete(callId)
        const ms = Math.max(0, event.time - started.at)
        started.step.tools.push({ callId, name: started.name, ms, isError: block?.isError === true })
        started.step.toolMs += ms
        break
      }
      case 'step/end':
        closeAttempt(null)
        break
      case 'turn/end':
        if (turn === undefined) break
        closeAttempt(null)
        turn.durationMs = event.time - turn.startedAt
        turn.reason = typeof data?.reason?.kind === 'string' ? data.reason.kind : null
        break
    }
  }
  // Tools still running (or whose result never came) are listed without a time.
  for (const [callId, started] of toolStarts) started.step.tools.push({ callId, name: started.name, ms: null, isError: false })

  const totals = { usage: zero(), modelMs: 0, toolMs: 0, retries: 0, steps: 0, cost: null as number | null, unpricedSteps: 0 }
  for (const entry of turns) {
    for (const item of entry.steps) {
      const price = priceOf(prices, item.provider, item.model)
      item.cost = price === undefined ? null : costOf(item.usage, price)
      add(entry.usage, item.usage)
      entry.modelMs += item.modelMs
      entry.toolMs += item.toolMs
      entry.retries += item.retries
      if (item.cost !== null) entry.cost = (entry.cost ?? 0) + item.cost
      else if (item.usage.inputTokens + item.usage.outputTokens + item.usage.cachedTokens > 0) totals.unpricedSteps += 1
    }
    add(totals.usage, entry.usage)
    totals.modelMs += entry.modelMs
    totals.toolMs += entry.toolMs
    totals.retries += entry.retries
    totals.steps += entry.steps.length
    if (entry.cost !== null) totals.cost = (totals.cost ?? 0) + entry.cost
  }
  return { turns, totals }
}

/** Reads a price table from settings (`model.prices`) or row config, dropping malformed entries. */
export function readPriceTable(value: unknown): Record<string, ModelPrice> {
  const out: Record<string, ModelPrice> = {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return out
  for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
    const price = entry as Record<string, unknown> | null
    const ok = (field: unknown) => typeof field === 'number' && Number.isFinite(field) && field >= 0
    if (price === null || typeof price !== 'object' || !ok(price.input) || !ok(price.output) || (price.cacheRead !== undefined && !ok(price.cacheRead)) || (price.cacheWrite !== undefined && !ok(price.cacheWrite))) continue
    out[name] = {
      input: price.input as number, output: price.output as number,
      ...price.cacheRead === undefined ? {} : { cacheRead: price.cacheRead as number },
      ...price.cacheWrite === undefined ? {} : { cacheWrite: price.cacheWrite as number },
    }
  }
  return out
}

/**
 * The shipped prices under the user's (`model.prices`): a user's entry wins, also a bare `model`
 * key over a shipped `provider/model` one (which `priceOf` would otherwise prefer).
 */
export function withShippedPrices(shipped: PriceTable, user: PriceTable): Record<string, ModelPrice> {
  const out: Record<string, ModelPrice> = { ...shipped }
  for (const name of Object.keys(user)) {
    if (name.includes('/')) continue
    for (const key of Object.keys(out)) if (key.endsWith(`/${name}`)) delete out[key]
  }
  return Object.assign(out, user)
}
