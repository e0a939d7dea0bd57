/**
 * The retry policy (L-10), a listener on `agent/request-error` (waterfall).
 *
 * The counter lives in the session log, not in memory: `llm/retry` is appended before the wait
 * and `llm/retry-started` after it, and the retry number is read back from the current step's
 * events, so a restarted process continues the same count and the same `retryId` chain.
 */
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { RequestErrorDecision, RequestErrorPayload } from '../agent/events.js'
import type { Session } from '../session/api.js'
import type { EventDataValidator } from '../session/types.js'
import type { RetryMode } from '../llm/api.js'
import type { LlmFailure } from '../llm/types.js'

export const RETRY_OWNER = 'llm-retry'
export const DEFAULT_RETRYABLE_CODES: readonly string[] = Object.freeze(['EMPTY_RESPONSE', 'RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT'])

export interface LlmRetryData {
  readonly retryId: string
  readonly turn: number
  readonly step: number
  readonly provider: string
  readonly mode: RetryMode
  /** The policy parameters as JSON; retries are counted per key, so a policy change restarts the count. */
  readonly policyKey: string
  /** 1-based number of this retry. */
  readonly retry: number
  /** null in `always` mode (unbounded). */
  readonly maxRetries: number | null
  readonly delayMs: number
  readonly failure: LlmFailure
}

export interface LlmRetryStartedData {
  readonly retryId: string
  readonly turn: number
  readonly step: number
  readonly retry: number
}

declare module '../session/types.js' {
  interface SessionEventMap {
    'llm/retry': LlmRetryData
    'llm/retry-started': LlmRetryStartedData
  }
}

export interface RetryConfig {
  /** Retries per turn/step in `normal` mode (default 5). */
  maxRetries?: number
  /** First backoff (default 500 ms); doubles per retry up to maxDelayMs (default 10 000 ms). */
  baseDelayMs?: number
  maxDelayMs?: number
  /** Relative jitter applied to the backoff, 0..1 (default 0.1 = ±10%). */
  jitter?: number
  retryableCodes?: readonly string[]
  /** Injectable for tests: uniform [0, 1). */
  random?: () => number
  /** Injectable for tests: resolves after `ms`, rejects when `signal` fires. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  newRetryId?: () => string
}

interface Policy {
  readonly maxRetries: number
  readonly baseDelayMs: number
  readonly maxDelayMs: number
  readonly jitter: number
  readonly codes: readonly string[]
}

export function resolvePolicy(config: RetryConfig = {}): Policy {
  const policy = {
    maxRetries: config.maxRetries ?? 5,
    baseDelayMs: config.baseDelayMs ?? 500,
    maxDelayMs: config.maxDelayMs ?? 10_000,
    jitter: config.jitter ?? 0.1,
    codes: [...config.retryableCodes ?? DEFAULT_RETRYABLE_CODES],
  }
  const bad = (field: string, want: string, value: unknown) => new Error(`${RETRY_OWNER}: ${field} must be ${want}, got ${JSON.stringify(value)}`)
  if (!Number.isSafeInteger(policy.maxRetries) || policy.maxRetries < 0) throw bad('maxRetries', 'a non-negative integer', policy.maxRetries)
  for (const field of ['baseDelayMs', 'maxDelayMs'] as const) {
    if (typeof policy[field] !== 'number' || !Number.isFinite(policy[field]) || policy[field] < 0) throw bad(field, 'a non-negative number of milliseconds', policy[field])
  }
  if (policy.maxDelayMs < policy.baseDelayMs) throw bad('maxDelayMs', `at least baseDelayMs (${policy.baseDelayMs})`, policy.maxDelayMs)
  if (typeof policy.jitter !== 'number' || !(policy.jitter >= 0 && policy.jitter <= 1)) throw bad('jitter', 'a number between 0 and 1', policy.jitter)
  if (!policy.codes.every(code => typeof code === 'string' && code !== '')) throw bad('retryableCodes', 'a list of failure codes', policy.codes)
  return policy
}

/** The JSON policy key: `[mode, maxRetries|null, codes, baseDelayMs, maxDelayMs, jitter]`. */
export function policyKey(mode: RetryMode, policy: Policy): string {
  return JSON.stringify([mode, mode === 'always' ? null : policy.maxRetries, policy.codes, policy.baseDelayMs, policy.maxDelayMs, policy.jitter])
}

/** Backoff for the n-th retry (1-based): base * 2^(n-1), capped, then ±jitter. */
export function backoffMs(retry: number, policy: Policy, random: () => number): number {
  const capped = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1))
  return Math.max(0, Math.round(capped * (1 + policy.jitter * (2 * random() - 1))))
}

/**
 * Earlier retries of this turn/step/provider/policy, read from the log. Scans back only to the
 * step's `step/start`, so the cost is the length of the current step, not of the log.
 */
export function priorRetries(session: Session, turn: number, step: number, provider: string, key: string): { count: number; retryId?: string } {
  let count = 0
  let retryId: string | undefined
  const events = session.events
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]
    if (event.type === 'turn/start' || event.type === 'step/start') {
      const data = event.data as { turn: number; step?: number }
      if (data.turn < turn || (data.turn === turn && (event.type === 'turn/start' || (data.step ?? 0) <= step))) break
      continue
    }
    if (event.type !== 'llm/retry') continue
    const data = event.data as LlmRetryData
    if (data.turn !== turn || data.step !== step || data.provider !== provider || data.policyKey !== key) continue
    count++
    retryId ??= data.retryId
  }
  return { count, ...retryId !== undefined ? { retryId } : {} }
}

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => { clearTimeout(timer); reject(signal.reason) }
    const timer = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve() }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/** Decides one request error; `next` is the rest of the waterfall (fail by default). */
export async function decideRetry(
  ctx: Context, config: RetryConfig, policy: Policy, payload: RequestErrorPayload, next: () => Promise<RequestErrorDecision>,
): Promise<RequestErrorDecision> {
  const { session, turn, step, provider, failure, signal } = payload
  if (!policy.codes.includes(failure.code) || signal.aborted) return next()
  const mode = ctx.llm.retryMode(provider)
  const key = policyKey(mode, policy)
  const prior = priorRetries(session, turn, step, provider, key)
  const retry = prior.count + 1
  if (mode === 'normal' && retry > policy.maxRetries) return next()
  let delayMs: number
  if (failure.providerRetryAfterMs !== undefined) {
    // The provider's own wait is honoured exactly; one beyond the cap is not worth waiting for.
    if (mode === 'normal' && failure.providerRetryAfterMs > policy.maxDelayMs) return next()
    delayMs = failure.providerRetryAfterMs
  } else {
    delayMs = backoffMs(retry, policy, config.random ?? Math.random)
  }
  const retryId = prior.retryId ?? (config.newRetryId ?? randomUUID)()
  session.append('llm/retry', {
    retryId, turn, step, provider, mode, policyKey: key, retry, maxRetries: mode === 'always' ? null : policy.maxRetries, delayMs, failure,
  })
  try {
    await (config.sleep ?? defaultSleep)(delayMs, signal)
  } catch (error) {
    if (signal.aborted) return { kind: 'fail', failure }
    throw error
  }
  // A cancel that lands as the timer fires still wins.
  if (signal.aborted) return { kind: 'fail', failure }
  session.append('llm/retry-started', { retryId, turn, step, retry })
  return { kind: 'retry' }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isCount = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 1

export const validateRetry: EventDataValidator = (data) => {
  if (!isObject(data)) return 'llm/retry data must be an object'
  if (typeof data.retryId !== 'string' || data.retryId === '') return 'llm/retry.retryId must be a non-empty string'
  for (const field of ['turn', 'step', 'retry']) if (!isCount(data[field])) return `llm/retry.${field} must be a positive integer`
  if (typeof data.provider !== 'string') return 'llm/retry.provider must be a string'
  if (data.mode !== 'normal' && data.mode !== 'always') return 'llm/retry.mode must be "normal" or "always"'
  if (typeof data.policyKey !== 'string') return 'llm/retry.policyKey must be a string'
  if (data.maxRetries !== null && !(Number.isSafeInteger(data.maxRetries) && (data.maxRetries as number) >= 0)) return 'llm/retry.maxRetries must be a non-negative integer or null'
  if (typeof data.delayMs !== 'number' || !(data.delayMs >= 0)) return 'llm/retry.delayMs must be a non-negative number'
  if (!isObject(data.failure) || typeof data.failure.code !== 'string' || typeof data.failure.message !== 'string') return 'llm/retry.failure must be {code, message, ...}'
  return null
}

export const validateRetryStarted: EventDataValidator = (data) => {
  if (!isObject(data)) return 'llm/retry-started data must be an object'
  if (typeof data.retryId !== 'string' || data.retryId === '') return 'llm/retry-started.retryId must be a non-empty string'
  for (const field of ['turn', 'step', 'retry']) if (!isCount(data[field])) return `llm/retry-started.${field} must be a positive integer`
  return null
}

/** Loads the policy: registers the two event types and the `agent/request-error` listener. */
export class LlmRetryPlugin {
  static readonly inject = ['llm', 'sessions']

  constructor(ctx: Context, config: RetryConfig = {}) {
    const policy = resolvePolicy(config ?? {})
    ctx.effect(() => ctx.sessions.registerEventType({ type: 'llm/retry', validate: validateRetry, owner: RETRY_OWNER }))
    ctx.effect(() => ctx.sessions.registerEventType({ type: 'llm/retry-started', validate: validateRetryStarted, owner: RETRY_OWNER }))
    ctx.on('agent/request-error', (payload, next) => decideRetry(ctx, config ?? {}, policy, payload, next))
  }
}
