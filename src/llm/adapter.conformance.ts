/**
 * The shared adapter conformance suite (L-1..L-9): every model adapter runs it through a harness
 * that starts its route against a local fake of its wire protocol (real HTTP) and says, in that
 * wire's own words, how the server answers each scenario. It pins what the agent loop relies on
 * whatever the provider: the assembled content, tool calls with the raw arguments and their id on
 * every delta, one finish and nothing after it, the usage, and the failure codes the retry policy
 * branches on (retryable RATE_LIMIT with the provider's Retry-After, SERVER, TIMEOUT; not
 * retryable AUTH, CONTEXT_WINDOW_EXCEEDED, STREAM_CLOSED, MALFORMED_RESPONSE, MISSING_CREDENTIAL).
 */
import type { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { BlockAssembler } from './assembler.js'
import type { LlmCallOptions, LlmFailure, StreamChunk } from './types.js'
import './api.js'

/** What the fake server answers, described without a wire. */
export type Scenario =
  | { readonly kind: 'text'; readonly text: string; readonly inputTokens: number; readonly outputTokens: number }
  | { readonly kind: 'reasoning-then-text'; readonly reasoning: string; readonly text: string }
  | { readonly kind: 'tool-call'; readonly id: string; readonly name: string; readonly pieces: readonly string[] }
  | { readonly kind: 'max-tokens'; readonly text: string }
  | { readonly kind: 'empty' }
  | { readonly kind: 'rate-limited'; readonly retryAfterSeconds: number }
  | { readonly kind: 'overloaded' }
  | { readonly kind: 'bad-key' }
  | { readonly kind: 'context-overflow' }
  | { readonly kind: 'truncated'; readonly text: string }
  | { readonly kind: 'malformed' }
  /** Some text, then nothing for `ms` (longer than the harness's idle timeout). */
  | { readonly kind: 'stall'; readonly text: string; readonly ms: number }

export interface AdapterHarness {
  readonly name: string
  readonly route: { readonly provider: string; readonly model: string }
  /** A context with `ctx.llm` and the adapter's route; `key: false` starts it with no key anywhere. */
  setup(options: { key: boolean; idleTimeoutMs?: number }): Promise<Context>
  respond(scenario: Scenario): void
  /** Requests the fake server has received so far. */
  requests(): number
  /** The route needs no key (a local server): the missing-key case does not apply. */
  readonly keyless?: boolean
}

export function describeAdapterConformance(harness: AdapterHarness): void {
  describe(`${harness.name} adapter conformance (L-1..L-9)`, () => {
    const run = async (scenario: Scenario | undefined, options: { key?: boolean; idleTimeoutMs?: number; call?: Partial<LlmCallOptions> } = {}) => {
      const ctx = await harness.setup({ key: options.key ?? true, ...options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {} })
      if (scenario !== undefined) harness.respond(scenario)
      const chunks: StreamChunk[] = []
      const call = ctx.llm.prepareCall({ ...harness.route, messages: [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }], ...options.call })
      for await (const chunk of ctx.llm.stream(call)) chunks.push(chunk)
      const finishes = chunks.filter(chunk => chunk.type === 'finish')
      // L-4: exactly one finish, and it is the last chunk.
      expect(finishes).toHaveLength(1)
      expect(chunks.at(-1)).toBe(finishes[0])
      const finish = finishes[0] as Extract<StreamChunk, { type: 'finish' }>
      const failure = finish.reason.kind === 'error' || finish.reason.kind === 'aborted' ? finish.reason.failure : undefined
      return { chunks, finish, failure: failure as LlmFailure | undefined, assembler: new BlockAssembler().pushAll(chunks) }
    }

    it('L-1: text streams as deltas and assembles; usage is reported (L-2)', async () => {
      const { assembler, finish, chunks } = await run({ kind: 'text', text: 'Hello there', inputTokens: 21, outputTokens: 4 })
      expect(assembler.content()).toEqual([{ type: 'text', text: 'Hello there' }])
      expect(finish.reason).toEqual({ kind: 'stop' })
      expect(chunks.some(chunk => chunk.type === 'text-delta')).toBe(true)
      expect(chunks.find(chunk => chunk.type === 'usage')).toMatchObject({ usage: { inputTokens: 21, outputTokens: 4 } })
    })

    it('L-3: reasoning comes before the text it led to', async () => {
      const { assembler } = await run({ kind: 'reasoning-then-text', reasoning: 'think first', text: 'answer' })
      const content = assembler.content()
      expect(content.map(block => block.type)).toEqual(['reasoning', 'text'])
      expect(content[0]).toMatchObject({ text: 'think first' })
    })

    it('L-1, R-2: a tool call keeps the raw arguments, each delta names the call, the finish is tool-calls', async () => {
      const { assembler, finish, chunks } = await run({ kind: 'tool-call', id: 'call_7', name: 'read', pieces: ['{"path"', ': "a b.txt"}'] })
      expect(assembler.content()).toEqual([{ type: 'tool-call', id: 'call_7', name: 'read', arguments: '{"path": "a b.txt"}' }])
      expect(finish.reason).toEqual({ kind: 'tool-calls' })
      const deltas = chunks.filter((chunk): chunk is Extract<StreamChunk, { type: 'tool-call-delta' }> => chunk.type === 'tool-call-delta' && chunk.argumentsDelta !== '')
      expect(deltas.length).toBeGreaterThan(1)
      expect(deltas.every(delta => delta.id === 'call_7' && delta.name === 'read')).toBe(true)
    })

    it('L-2: the output limit is a max-tokens finish', async () => {
      expect((await run({ kind: 'max-tokens', text: 'cut sh' })).finish.reason).toEqual({ kind: 'max-tokens' })
    })

    it('L-7: a completed response with no content is EMPTY_RESPONSE (retryable)', async () => {
      expect((await run({ kind: 'empty' })).failure).toMatchObject({ code: 'EMPTY_RESPONSE' })
    })

    it('L-9: 429 is RATE_LIMIT with the provider\'s Retry-After', async () => {
      expect((await run({ kind: 'rate-limited', retryAfterSeconds: 3 })).failure).toMatchObject({ code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 3000 })
    })

    it('L-9: an overloaded or failing server is SERVER', async () => {
      const { failure } = await run({ kind: 'overloaded' })
      expect(failure?.code).toBe('SERVER')
      expect(failure?.status).toBeGreaterThanOrEqual(500)
    })

    it('L-9: a refused key is AUTH; a prompt over the window is CONTEXT_WINDOW_EXCEEDED', async () => {
      expect((await run({ kind: 'bad-key' })).failure).toMatchObject({ code: 'AUTH', status: 401 })
      expect((await run({ kind: 'context-overflow' })).failure).toMatchObject({ code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 })
    })

    it('L-7: a stream cut before its end is STREAM_CLOSED; data that is not JSON is MALFORMED_RESPONSE', async () => {
      expect((await run({ kind: 'truncated', text: 'half' })).failure).toMatchObject({ code: 'STREAM_CLOSED' })
      expect((await run({ kind: 'malformed' })).failure).toMatchObject({ code: 'MALFORMED_RESPONSE' })
    })

    it('L-9: a stalled stream times out (TIMEOUT) after the text it sent', async () => {
      const { failure, chunks } = await run({ kind: 'stall', text: 'so far', ms: 2_000 }, { idleTimeoutMs: 150 })
      expect(failure).toMatchObject({ code: 'TIMEOUT' })
      expect(chunks.some(chunk => chunk.type === 'text-delta')).toBe(true)
    })

    it('L-4: the caller\'s abort ends the attempt as aborted', async () => {
      const ctx = await harness.setup({ key: true })
      harness.respond({ kind: 'stall', text: 'streaming', ms: 2_000 })
      const controller = new AbortController()
      const chunks: StreamChunk[] = []
      for await (const chunk of ctx.llm.stream(ctx.llm.prepareCall({ ...harness.route, signal: controller.signal, messages: [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }] }))) {
        chunks.push(chunk)
        if (chunk.type === 'text-delta') controller.abort()
      }
      expect(chunks.at(-1)).toMatchObject({ type: 'finish', reason: { kind: 'aborted' } })
    })

    it.skipIf(harness.keyless === true)('no key: MISSING_CREDENTIAL before any request, and readiness says so', async () => {
      const before = harness.requests()
      const { failure } = await run(undefined, { key: false })
      expect(failure).toMatchObject({ code: 'MISSING_CREDENTIAL' })
      expect(harness.requests()).toBe(before)
    })
  })
}
