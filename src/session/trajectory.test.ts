/**
 * The trajectory fold over a hand-written log with known times: model time (retry waits left
 * out), time to first chunk, tool time, retries, tokens, and cost from a price table.
 */
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from './types.js'
import { readPriceTable, trajectoryOf, withShippedPrices } from './trajectory.js'

function log(rows: [number, string, unknown][]): SessionEvent[] {
  return rows.map(([time, type, data], seq) => ({ seq, time, type, data }) as SessionEvent)
}

const usage = (inputTokens: number, outputTokens: number, cacheReadTokens = 0) => ({ inputTokens, outputTokens, cacheReadTokens })

const LOG = log([
  [1000, 'turn/start', { turn: 1 }],
  [1000, 'user/message', { role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }],
  [1010, 'step/start', { turn: 1, step: 1 }],
  [1011, 'request/context', { provider: 'p', model: 'm1' }],
  [1100, 'assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'par' } }],
  [1300, 'llm/retry', { retryId: 'r', turn: 1, step: 1, retry: 1, maxRetries: 3, delayMs: 500, failure: { code: 'TRANSPORT' } }],
  [1800, 'llm/retry-started', { retryId: 'r', turn: 1, step: 1, retry: 1 }],
  [1900, 'assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'ok' } }],
  [2100, 'assistant/chunk', { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'tool-calls' } } }],
  [2101, 'assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [] }, usage: usage(1000, 100, 3000) }],
  [2110, 'tool/call', { turn: 1, step: 1, callId: 'a', name: 'bash', arguments: '{}' }],
  [2115, 'tool/call', { turn: 1, step: 1, callId: 'b', name: 'read', arguments: '{}' }],
  [2615, 'tool/result', { turn: 1, step: 1, message: { role: 'user', content: [{ type: 'tool-result', toolCallId: 'b', content: [], isError: true }] } }],
  [3110, 'tool/result', { turn: 1, step: 1, message: { role: 'user', content: [{ type: 'tool-result', toolCallId: 'a', content: [], isError: false }] } }],
  [3120, 'step/end', { turn: 1, step: 1 }],
  [3130, 'step/start', { turn: 1, step: 2 }],
  [3400, 'assistant/chunk', { turn: 1, step: 2, chunk: { type: 'text-delta', index: 0, text: 'done' } }],
  [3430, 'assistant/message', { turn: 1, step: 2, message: { role: 'assistant', content: [] }, usage: usage(50, 10) }],
  [3440, 'step/end', { turn: 1, step: 2 }],
  [3450, 'turn/end', { turn: 1, reason: { kind: 'completed' } }],
  [5000, 'turn/start', { turn: 2 }],
  [5010, 'step/start', { turn: 2, step: 1 }],
  [5011, 'request/context', { provider: 'q', model: 'unpriced' }],
  [5200, 'assistant/message', { turn: 2, step: 1, message: { role: 'assistant', content: [] }, usage: usage(7, 3) }],
  [5210, 'step/end', { turn: 2, step: 1 }],
  [5220, 'turn/end', { turn: 2, reason: { kind: 'error' } }],
])

describe('trajectoryOf', () => {
  const trajectory = trajectoryOf(LOG, { m1: { input: 1, output: 4, cacheRead: 0.25 } })

  it('times each step from the log: model time without retry waits, first chunk, tools', () => {
    const [first, second] = trajectory.turns[0]!.steps
    // Attempt 1: 1010 → 1300 (290 ms); wait 1300 → 1800; attempt 2: 1800 → 2100 (300 ms).
    expect(first).toMatchObject({ step: 1, provider: 'p', model: 'm1', modelMs: 590, firstChunkMs: 100, retries: 1, retryWaitMs: 500, toolMs: 1500 })
    expect(first!.tools).toEqual([
      { callId: 'b', name: 'read', ms: 500, isError: true },
      { callId: 'a', name: 'bash', ms: 1000, isError: false },
    ])
    expect(first!.usage).toEqual({ inputTokens: 1000, outputTokens: 100, cachedTokens: 3000, reasoningTokens: 0 })
    expect(second).toMatchObject({ step: 2, model: 'm1', modelMs: 270, firstChunkMs: 270, retries: 0, toolMs: 0 })
    expect(trajectory.turns[0]).toMatchObject({ turn: 1, durationMs: 2450, reason: 'completed', modelMs: 860, toolMs: 1500, retries: 1 })
  })

  it('prices steps whose model is in the table and says which are unpriced', () => {
    expect(trajectory.turns[0]!.cost).toBeCloseTo((1000 * 1 + 3000 * 0.25 + 100 * 4 + 50 * 1 + 10 * 4) / 1e6, 12)
    expect(trajectory.turns[1]!.cost).toBeNull()
    expect(trajectory.turns[1]!.steps[0]).toMatchObject({ model: 'unpriced', modelMs: 190, cost: null })
    expect(trajectory.totals).toMatchObject({ steps: 3, retries: 1, unpricedSteps: 1, modelMs: 1050, toolMs: 1500 })
    expect(trajectory.totals.usage).toEqual({ inputTokens: 1057, outputTokens: 113, cachedTokens: 3000, reasoningTokens: 0 })
    expect(trajectory.totals.cost).toBeCloseTo(trajectory.turns[0]!.cost!, 12)
  })

  it('prefers a provider/model price, and drops malformed price entries', () => {
    expect(trajectoryOf(LOG, { m1: { input: 1, output: 1 }, 'p/m1': { input: 0, output: 0 } }).totals.cost).toBe(0)
    expect(readPriceTable({ good: { input: 1, output: 2 }, bad: { input: -1, output: 2 }, worse: 'x', partial: { input: 1 } })).toEqual({ good: { input: 1, output: 2 } })
    expect(readPriceTable(['x'])).toEqual({})
  })

  it('cache writes (Anthropic) count as prompt tokens and cost the cacheWrite price (input when unset)', () => {
    const written = log([
      [0, 'turn/start', { turn: 1 }],
      [1, 'step/start', { turn: 1, step: 1 }],
      [2, 'request/context', { provider: 'anthropic', model: 'c' }],
      [3, 'assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [] }, usage: { inputTokens: 10, cacheWriteTokens: 1000, cacheReadTokens: 2000, outputTokens: 100 } }],
      [4, 'step/end', { turn: 1, step: 1 }],
      [5, 'turn/end', { turn: 1, reason: { kind: 'completed' } }],
    ])
    const priced = trajectoryOf(written, readPriceTable({ 'anthropic/c': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } }))
    expect(priced.totals.usage).toEqual({ inputTokens: 1010, outputTokens: 100, cachedTokens: 2000, reasoningTokens: 0, cacheWriteTokens: 1000 })
    expect(priced.totals.cost).toBeCloseTo((10 * 3 + 1000 * 3.75 + 2000 * 0.3 + 100 * 15) / 1e6, 12)
    expect(trajectoryOf(written, { c: { input: 3, output: 15 } }).totals.cost).toBeCloseTo((1010 * 3 + 2000 * 3 + 100 * 15) / 1e6, 12)
  })

  it('the user\'s prices win over shipped ones, a bare model key over a shipped provider/model key', () => {
    const shipped = { 'p/m1': { input: 9, output: 9 }, 'q/other': { input: 2, output: 2 } }
    const table = withShippedPrices(shipped, readPriceTable({ m1: { input: 1, output: 4, cacheRead: 0.25 } }))
    expect(table).toEqual({ 'q/other': { input: 2, output: 2 }, m1: { input: 1, output: 4, cacheRead: 0.25 } })
    expect(trajectoryOf(LOG, table).turns[0]!.cost).toBeCloseTo(trajectory.turns[0]!.cost!, 12)
    expect(trajectoryOf(LOG, withShippedPrices(shipped, {})).turns[0]!.cost).toBeCloseTo((1000 * 9 + 3000 * 9 + 100 * 9 + 50 * 9 + 10 * 9) / 1e6, 12)
  })

  it('lists a tool still running without a time, and survives malformed events', () => {
    const open = trajectoryOf([...LOG.slice(0, 11), { seq: 99, time: 1, type: 'tool/result', data: null } as unknown as SessionEvent])
    expect(open.turns[0]!.steps[0]!.tools).toEqual([{ callId: 'a', name: 'bash', ms: null, isError: false }])
  })
})
