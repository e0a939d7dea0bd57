import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import type { RequestErrorDecision, RequestErrorPayload } from '../agent/events.js'
import { SessionsServicePlugin, type Session } from '../session/index.js'
import type { RetryMode } from '../llm/api.js'
import { failure as makeFailure } from '../llm/errors.js'
import { LlmServicePlugin } from '../llm/service.js'
import type { LlmFailure } from '../llm/types.js'
import { LlmRetryPlugin, backoffMs, resolvePolicy, type RetryConfig } from './index.js'

interface Harness { ctx: Context; sleeps: number[] }

async function setup(config: RetryConfig = {}, modes: Record<string, RetryMode> = { p: 'normal' }): Promise<Harness> {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin)
  await ctx.plugin(LlmServicePlugin)
  for (const [provider, retry] of Object.entries(modes)) ctx.llm.register({ adapter: { provider, stream: async function* () {} }, models: [], retry })
  const sleeps: number[] = []
  let ids = 0
  await ctx.plugin(LlmRetryPlugin, { random: () => 0.5, sleep: async (ms: number) => { sleeps.push(ms) }, newRetryId: () => `r${++ids}`, ...config })
  return { ctx, sleeps }
}

function openStep(session: Session, turn = 1, step = 1): void {
  if (step === 1) session.append('turn/start', { turn })
  session.append('step/start', { turn, step })
}

const rateLimited = makeFailure('RATE_LIMIT', 'HTTP 429', { status: 429 })

function dispatch(ctx: Context, session: Session, failure: LlmFailure = rateLimited, extra: Partial<RequestErrorPayload> = {}): Promise<RequestErrorDecision> {
  const payload: RequestErrorPayload = { session, turn: 1, step: 1, provider: 'p', model: 'm', failure, signal: new AbortController().signal, ...extra }
  return ctx.waterfall('agent/request-error', payload, async () => ({ kind: 'fail' }))
}

const retryEvents = (session: Session) => session.events.filter(e => e.type.startsWith('llm/retry')).map(e => [e.type, e.data])

describe('LlmRetryPlugin (agent/request-error)', () => {
  it('K-4 / L-10: a retryable failure is retried: llm/retry before the wait, llm/retry-started after it', async () => {
    const { ctx, sleeps } = await setup()
    const session = ctx.sessions.create()
    openStep(session)
    const order: string[] = []
    ctx.on('session/event', (_s, event) => { order.push(`${event.type}@${sleeps.length}`) })
    expect(await dispatch(ctx, session)).toEqual({ kind: 'retry' })
    expect(sleeps).toEqual([500])
    expect(order).toEqual(['llm/retry@0', 'llm/retry-started@1'])
    expect(retryEvents(session)).toEqual([
      ['llm/retry', {
        retryId: 'r1', turn: 1, step: 1, provider: 'p', mode: 'normal',
        policyKey: '["normal",5,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],500,10000,0.1]',
        retry: 1, maxRetries: 5, delayMs: 500, failure: rateLimited,
      }],
      ['llm/retry-started', { retryId: 'r1', turn: 1, step: 1, retry: 1 }],
    ])
  })

  it('L-10: retryable codes are EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT, TRANSPORT; not STREAM_CLOSED', async () => {
    const { ctx } = await setup()
    const session = ctx.sessions.create()
    openStep(session)
    for (const code of ['EMPTY_RESPONSE', 'RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT']) {
      expect(await dispatch(ctx, session, makeFailure(code, code)), code).toEqual({ kind: 'retry' })
    }
    const before = session.length
    for (const code of ['STREAM_CLOSED', 'AUTH', 'QUOTA', 'CONTEXT_WINDOW_EXCEEDED', 'MALFORMED_RESPONSE', 'ABORTED']) {
      expect(await dispatch(ctx, session, makeFailure(code, code)), code).toEqual({ kind: 'fail' })
    }
    expect(session.length).toBe(before)
  })

  it('L-10: 5 retries with exponential backoff 500 ms..10 s, then the failure stands; one retryId across the chain', async () => {
    const { ctx, sleeps } = await setup()
    const session = ctx.sessions.create()
    openStep(session)
    for (let i = 0; i < 5; i++) expect(await dispatch(ctx, session)).toEqual({ kind: 'retry' })
    expect(await dispatch(ctx, session)).toEqual({ kind: 'fail' })
    expect(sleeps).toEqual([500, 1000, 2000, 4000, 8000])
    const retries = session.events.filter(e => e.type === 'llm/retry').map(e => e.data as { retry: number; retryId: string })
    expect(retries.map(r => r.retry)).toEqual([1, 2, 3, 4, 5])
    expect(new Set(retries.map(r => r.retryId))).toEqual(new Set(['r1']))
  })

  it('L-10: backoff is capped at 10 s and jittered by ±10% (injectable random)', () => {
    const policy = resolvePolicy({ maxRetries: 10 })
    expect(backoffMs(6, policy, () => 0.5)).toBe(10_000)
    expect(backoffMs(9, policy, () => 0.5)).toBe(10_000)
    expect(backoffMs(1, policy, () => 0)).toBe(450)
    expect(backoffMs(1, policy, () => 0.999999)).toBe(550)
    expect(backoffMs(6, policy, () => 0)).toBe(9_000)
  })

  it('L-10: a provider Retry-After within the cap is used exactly; above the cap the normal policy gives up', async () => {
    const { ctx, sleeps } = await setup()
    const session = ctx.sessions.create()
    openStep(session)
    expect(await dispatch(ctx, session, { ...rateLimited, providerRetryAfterMs: 3_217 })).toEqual({ kind: 'retry' })
    expect(sleeps).toEqual([3_217])
    const before = session.length
    expect(await dispatch(ctx, session, { ...rateLimited, providerRetryAfterMs: 10_001 })).toEqual({ kind: 'fail' })
    expect(session.length).toBe(before)
  })

  it('L-10: the always policy (from the provider registration) is unbounded and waits out a long Retry-After', async () => {
    const { ctx, sleeps } = await setup({}, { p: 'always' })
    const session = ctx.sessions.create()
    openStep(session)
    for (let i = 0; i < 8; i++) expect(await dispatch(ctx, session)).toEqual({ kind: 'retry' })
    expect(await dispatch(ctx, session, { ...rateLimited, providerRetryAfterMs: 60_000 })).toEqual({ kind: 'retry' })
    expect(sleeps.slice(-2)).toEqual([10_000, 60_000])
    const last = session.events.filter(e => e.type === 'llm/retry').at(-1)?.data as { retry: number; maxRetries: null; mode: string }
    expect(last).toMatchObject({ retry: 9, maxRetries: null, mode: 'always' })
  })

  it('L-10: the counter is keyed by turn, step and provider: a new step starts a new chain', async () => {
    const { ctx } = await setup({}, { p: 'normal', q: 'normal' })
    const session = ctx.sessions.create()
    openStep(session)
    await dispatch(ctx, session)
    await dispatch(ctx, session)
    await dispatch(ctx, session, rateLimited, { provider: 'q' })
    session.append('step/end', { turn: 1, step: 1 })
    openStep(session, 1, 2)
    await dispatch(ctx, session, rateLimited, { step: 2 })
    const data = session.events.filter(e => e.type === 'llm/retry').map(e => e.data as { retry: number; retryId: string; step: number; provider: string })
    expect(data.map(d => [d.provider, d.step, d.retry, d.retryId])).toEqual([['p', 1, 1, 'r1'], ['p', 1, 2, 'r1'], ['q', 1, 1, 'r2'], ['p', 2, 1, 'r3']])
  })

  it('L-10: the counter is read back from the log, so it survives a restart', async () => {
    const first = await setup()
    const session = first.ctx.sessions.create()
    openStep(session)
    await dispatch(first.ctx, session)
    await dispatch(first.ctx, session)
    const second = await setup({ newRetryId: () => 'fresh' })
    const restored = second.ctx.sessions.hydrate(session.header, session.events)
    expect(await dispatch(second.ctx, restored)).toEqual({ kind: 'retry' })
    expect(second.sleeps).toEqual([2000])
    expect(restored.events.at(-2)?.data).toMatchObject({ retry: 3, retryId: 'r1' })
  })

  it('L-10: cancellation during the wait wins: fail, and no llm/retry-started', async () => {
    let entered!: () => void
    const waiting = new Promise<void>(resolve => { entered = resolve })
    const { ctx } = await setup({
      sleep: (_ms, signal) => new Promise((_resolve, reject) => { entered(); signal.addEventListener('abort', () => reject(signal.reason)) }),
    })
    const session = ctx.sessions.create()
    openStep(session)
    const controller = new AbortController()
    const decision = dispatch(ctx, session, rateLimited, { signal: controller.signal })
    await waiting
    controller.abort()
    expect(await decision).toEqual({ kind: 'fail', failure: rateLimited })
    expect(retryEvents(session).map(([type]) => type)).toEqual(['llm/retry'])
  })

  it('L-10: an already cancelled activity is not retried and nothing is written', async () => {
    const { ctx } = await setup()
    const session = ctx.sessions.create()
    openStep(session)
    expect(await dispatch(ctx, session, rateLimited, { signal: AbortSignal.abort() })).toEqual({ kind: 'fail' })
    expect(retryEvents(session)).toEqual([])
  })

  it('S-2: registers strict validators for llm/retry and llm/retry-started, undone on unload', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionsServicePlugin)
    await ctx.plugin(LlmServicePlugin)
    const fiber = ctx.plugin(LlmRetryPlugin, {})
    await fiber
    expect(ctx.sessions.eventType('llm/retry')?.validate?.({ retryId: 'x' })).toMatch(/turn must be a positive integer/)
    const session = ctx.sessions.create()
    openStep(session)
    expect(() => session.append('llm/retry-started', { retryId: '', turn: 1, step: 1, retry: 1 })).toThrow(/retryId must be a non-empty string/)
    await fiber.dispose()
    expect(ctx.sessions.eventType('llm/retry')?.validate?.({ retryId: 'x' }) ?? null).toBeNull()
  })

  it('rejects a bad policy config with a message naming the field', () => {
    expect(() => resolvePolicy({ maxRetries: -1 })).toThrow('llm-retry: maxRetries must be a non-negative integer, got -1')
    expect(() => resolvePolicy({ jitter: 2 })).toThrow('llm-retry: jitter must be a number between 0 and 1, got 2')
    expect(() => resolvePolicy({ baseDelayMs: 100, maxDelayMs: 50 })).toThrow('llm-retry: maxDelayMs must be at least baseDelayMs (100), got 50')
  })
})
