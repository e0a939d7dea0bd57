import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  FakeDeepSeek, bodyBytes, chunksResponse, errorResponse, sseEvent, streamResponse, truncated, type FakeResponse,
} from '../../../test-support/fake-deepseek.js'
import { BlockAssembler } from '../assembler.js'
import { LlmServicePlugin } from '../service.js'
import type { LlmCallOptions, Message, StreamChunk } from '../types.js'
import { DEEPSEEK_PROVIDER, DeepSeekPlugin, type DeepSeekConfig } from './index.js'

let server: FakeDeepSeek

beforeEach(async () => { server = await FakeDeepSeek.start() })
afterEach(async () => { await server.close() })

async function setup(config: DeepSeekConfig = {}) {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin)
  await ctx.plugin(DeepSeekPlugin, { baseUrl: server.url, apiKey: 'sk-test', ...config })
  return ctx
}

const user = (text: string): Message => ({ id: 'u1', role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })
const call = (extra: Partial<LlmCallOptions> = {}): LlmCallOptions => ({ provider: DEEPSEEK_PROVIDER, model: 'deepseek-v4-flash', messages: [user('hi')], ...extra })

async function run(ctx: Context, options: LlmCallOptions = call()) {
  const chunks: StreamChunk[] = []
  for await (const chunk of ctx.llm.stream(ctx.llm.prepareCall(options))) chunks.push(chunk)
  const assembler = new BlockAssembler().pushAll(chunks)
  return { chunks, assembler, finish: chunks.at(-1) as Extract<StreamChunk, { type: 'finish' }> }
}

const failureOf = (chunk: StreamChunk | undefined) => chunk?.type === 'finish' && (chunk.reason.kind === 'error' || chunk.reason.kind === 'aborted') ? chunk.reason.failure : undefined

/** A realistic thinking + tool-call response, usage on a trailing chunk. */
const recorded = (options: { chunkBytes?: number } = {}) => streamResponse([
  { reasoning: '' },
  { reasoning: 'The user wants ' },
  { reasoning: 'a listing.' },
  { text: 'Listing ' },
  { text: 'files…' },
  { toolCall: { index: 0, id: 'call_a', name: 'bash', arguments: '' } },
  { toolCall: { index: 0, arguments: '{"command":' } },
  { toolCall: { index: 0, arguments: '"ls -la"}' } },
  { toolCall: { index: 1, id: 'call_b', name: 'read', arguments: '{"path":"ü.txt"}' } },
  { finish: 'tool_calls' },
  { usage: { prompt_tokens: 100, completion_tokens: 20, prompt_cache_hit_tokens: 60, completion_tokens_details: { reasoning_tokens: 7 } } },
], options)

describe('DeepSeek adapter over HTTP', () => {
  it('L-7: streams deltas live and emits block-end, usage and finish together at [DONE]', async () => {
    const ctx = await setup()
    server.enqueue(recorded())
    const { chunks, assembler } = await run(ctx)
    expect(chunks).toEqual([
      { type: 'block-start', index: 0, blockType: 'reasoning' },
      { type: 'reasoning-delta', index: 0, text: 'The user wants ' },
      { type: 'reasoning-delta', index: 0, text: 'a listing.' },
      { type: 'block-start', index: 1, blockType: 'text' },
      { type: 'text-delta', index: 1, text: 'Listing ' },
      { type: 'text-delta', index: 1, text: 'files…' },
      { type: 'block-start', index: 2, blockType: 'tool-call' },
      { type: 'tool-call-delta', index: 2, id: 'call_a', name: 'bash', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 2, id: 'call_a', name: 'bash', argumentsDelta: '{"command":' },
      { type: 'tool-call-delta', index: 2, id: 'call_a', name: 'bash', argumentsDelta: '"ls -la"}' },
      { type: 'block-start', index: 3, blockType: 'tool-call' },
      { type: 'tool-call-delta', index: 3, id: 'call_b', name: 'read', argumentsDelta: '{"path":"ü.txt"}' },
      { type: 'block-end', index: 0, block: { type: 'reasoning', text: 'The user wants a listing.' } },
      { type: 'block-end', index: 1, block: { type: 'text', text: 'Listing files…' } },
      { type: 'block-end', index: 2, block: { type: 'tool-call', id: 'call_a', name: 'bash', arguments: '{"command":"ls -la"}' } },
      { type: 'block-end', index: 3, block: { type: 'tool-call', id: 'call_b', name: 'read', arguments: '{"path":"ü.txt"}' } },
      { type: 'usage', usage: { inputTokens: 40, outputTokens: 20, cacheReadTokens: 60, reasoningTokens: 7 } },
      { type: 'finish', reason: { kind: 'tool-calls' } },
    ])
    expect(assembler.content().map(b => b.type)).toEqual(['reasoning', 'text', 'tool-call', 'tool-call'])
  })

  it('L-7: nothing is finalised before [DONE], even after the finish chunk and usage arrived', async () => {
    const ctx = await setup()
    let release!: () => void
    const gate = new Promise<void>(resolve => { release = resolve })
    // The finish chunk, a trailing usage chunk, then one more delta (which the translator still
    // streams). Events are parsed in order, so once that delta is out, anything the finish or the
    // usage would have finalised is out too. The server holds [DONE] until the test releases it.
    server.enqueue(streamResponse([{ text: 'a' }, { finish: 'stop' }, { usage: { prompt_tokens: 3, completion_tokens: 2 } }, { text: 'b' }, { until: gate }]))
    const iterator = ctx.llm.stream(call())[Symbol.asyncIterator]()
    const early: StreamChunk[] = []
    for (;;) {
      const next = await iterator.next()
      if (next.done === true) break
      early.push(next.value)
      if (next.value.type === 'text-delta' && next.value.text === 'b') break
    }
    expect(early).toEqual([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'text-delta', index: 0, text: 'a' },
      { type: 'text-delta', index: 0, text: 'b' },
    ])
    release()
    const rest: StreamChunk[] = []
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) rest.push(next.value)
    expect(rest).toEqual([
      { type: 'block-end', index: 0, block: { type: 'text', text: 'ab' } },
      { type: 'usage', usage: { inputTokens: 3, outputTokens: 2 } },
      { type: 'finish', reason: { kind: 'stop' } },
    ])
  })

  it('L-7: no empty delta of any kind opens a block (the empty first reasoning chunk)', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([
      { reasoning: '' }, { text: '' }, { toolCall: { index: 0, arguments: '' } }, { raw: sseEvent({ choices: [{ index: 0, delta: { role: 'assistant', content: null } }] }) },
      { text: 'ok' }, { finish: 'stop' },
    ]))
    const { chunks } = await run(ctx)
    expect(chunks.filter(c => c.type === 'block-start')).toEqual([{ type: 'block-start', index: 0, blockType: 'text' }])
  })

  it('L-7: usage may ride on the finish chunk; SSE comments are ignored', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ comment: 'keep-alive' }, { text: 'x' }, { comment: 'keep-alive' }, { finish: 'stop', usage: { prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } } }]))
    const { chunks } = await run(ctx)
    expect(chunks.slice(-2)).toEqual([{ type: 'usage', usage: { inputTokens: 6, outputTokens: 2, cacheReadTokens: 4 } }, { type: 'finish', reason: { kind: 'stop' } }])
  })

  it('L-8: input tokens exclude cache reads; without cache fields nothing is subtracted', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ text: 'x' }, { finish: 'stop' }, { usage: { prompt_tokens: 9, completion_tokens: 4 } }]))
    const { chunks } = await run(ctx)
    expect(chunks.find(c => c.type === 'usage')).toEqual({ type: 'usage', usage: { inputTokens: 9, outputTokens: 4 } })
  })

  it('L-7: EOF without [DONE] is STREAM_CLOSED and nothing was finalised', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ text: 'half' }, { finish: 'stop' }], { done: false }))
    const { chunks, finish } = await run(ctx)
    expect(chunks.some(c => c.type === 'block-end' || c.type === 'usage')).toBe(false)
    expect(failureOf(finish)).toMatchObject({ code: 'STREAM_CLOSED' })
    expect(finish.reason.kind).toBe('error')
  })

  it('L-7: stop with no blocks, no finish reason with no blocks, and a 200 without body are EMPTY_RESPONSE', async () => {
    const ctx = await setup()
    server.enqueue(
      streamResponse([{ reasoning: '' }, { finish: 'stop', usage: { prompt_tokens: 5, completion_tokens: 0 } }]),
      streamResponse([{ usage: { prompt_tokens: 5, completion_tokens: 0 } }]),
      { status: 200, segments: [] },
    )
    const first = await run(ctx)
    expect(first.chunks).toEqual([
      { type: 'usage', usage: { inputTokens: 5, outputTokens: 0 } },
      { type: 'finish', reason: { kind: 'error', failure: { code: 'EMPTY_RESPONSE', message: 'model returned a completed response with no content' } } },
    ])
    expect(failureOf((await run(ctx)).finish)?.code).toBe('EMPTY_RESPONSE')
    expect(failureOf((await run(ctx)).finish)?.code).toBe('EMPTY_RESPONSE')
  })

  it('L-7: bad JSON in a data line is MALFORMED_RESPONSE', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ text: 'a' }, { raw: 'data: {"choices": [\n\n' }, { finish: 'stop' }]))
    expect(failureOf((await run(ctx)).finish)).toMatchObject({ code: 'MALFORMED_RESPONSE' })
  })

  it('L-7: length is max-tokens (tool calls dropped by the assembler); other reasons are upper-cased errors (insufficient_system_resource is a retryable SERVER failure)', async () => {
    const ctx = await setup()
    server.enqueue(
      streamResponse([{ text: 'partial' }, { toolCall: { id: 'c', name: 'write', arguments: '{"pa' } }, { finish: 'length' }]),
      streamResponse([{ text: 'nope' }, { finish: 'content_filter' }]),
      streamResponse([{ finish: 'insufficient_system_resource' }]),
    )
    const truncatedRun = await run(ctx)
    expect(truncatedRun.finish.reason).toEqual({ kind: 'max-tokens' })
    expect(truncatedRun.assembler.content()).toEqual([{ type: 'text', text: 'partial' }])
    expect(failureOf((await run(ctx)).finish)?.code).toBe('CONTENT_FILTER')
    expect(failureOf((await run(ctx)).finish)).toMatchObject({ code: 'SERVER', message: expect.stringContaining('insufficient_system_resource') })
  })

  it('L-7: fragments split at arbitrary byte boundaries (through events and UTF-8) give the same chunks', async () => {
    const ctx = await setup()
    server.enqueue(recorded())
    const whole = (await run(ctx)).chunks
    for (const size of [1, 2, 3, 7, 64]) {
      server.enqueue(recorded({ chunkBytes: size }))
      expect((await run(ctx)).chunks).toEqual(whole)
    }
  })

  it('L-7: a stream cut at every byte offset never crashes, is classified, and finalises nothing', async () => {
    const ctx = await setup()
    // A compact recording keeps this at a few hundred HTTP round trips; openai-wire.test.ts cuts
    // the full one in memory.
    const full = streamResponse([
      { reasoning: '' }, { reasoning: 'hm' }, { comment: 'ka' }, { text: 'é' },
      { toolCall: { index: 0, id: 'c', name: 'ls', arguments: '{"a":' } }, { toolCall: { index: 0, arguments: '1}' } },
      { finish: 'tool_calls' }, { usage: { prompt_tokens: 3, completion_tokens: 2 } },
    ], { bare: true })
    const length = bodyBytes(full).length
    for (let cut = 0; cut < length; cut++) {
      server.enqueue(truncated(full, cut))
      const { chunks, finish } = await run(ctx)
      const code = failureOf(finish)?.code
      expect(code, `cut at byte ${cut}`).toBe(cut === 0 ? 'EMPTY_RESPONSE' : 'STREAM_CLOSED')
      expect(chunks.some(c => c.type === 'block-end' || c.type === 'usage'), `cut at byte ${cut}`).toBe(false)
    }
    server.enqueue(truncated(full, length))
    expect((await run(ctx)).finish.reason).toEqual({ kind: 'tool-calls' })
  }, 120_000)

  it('handles a 10,000-chunk stream', async () => {
    const ctx = await setup()
    const parts = Array.from({ length: 10_000 }, (_, i) => `t${i};`)
    server.enqueue(streamResponse([...parts.map(text => ({ text })), { finish: 'stop' }]))
    const { chunks, assembler } = await run(ctx)
    expect(chunks.filter(c => c.type === 'text-delta')).toHaveLength(10_000)
    expect(assembler.content()).toEqual([{ type: 'text', text: parts.join('') }])
  })
})

describe('DeepSeek wire request (L-6)', () => {
  it('L-6: serialises system first, tool results as role:tool, assistant content as a string', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop' }]))
    const messages: Message[] = [
      user('list files'),
      { id: 'a1', role: 'assistant', source: { kind: 'model', provider: DEEPSEEK_PROVIDER, model: 'deepseek-v4-flash' }, content: [
        { type: 'reasoning', text: 'need ls' },
        { type: 'tool-call', id: 'c1', name: 'bash', arguments: '{"command": "ls"}' },
        { type: 'tool-call', id: 'c2', name: 'bash', arguments: '{"command":"true"}' },
      ] },
      { id: 't1', role: 'user', source: { kind: 'tool', callId: 'c1' }, content: [{ type: 'tool-result', toolCallId: 'c1', isError: false, content: [{ type: 'text', text: 'a.txt' }] }] },
      { id: 't2', role: 'user', source: { kind: 'tool', callId: 'c2' }, content: [{ type: 'tool-result', toolCallId: 'c2', isError: false, content: [] }] },
      { id: 'u2', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'note' }, { type: 'tool-result', toolCallId: 'c3', isError: true, content: [{ type: 'text', text: 'Error: x' }] }] },
      { id: 'u3', role: 'user', source: { kind: 'user' }, content: [] },
      { id: 'a2', role: 'assistant', source: { kind: 'model', provider: DEEPSEEK_PROVIDER, model: 'deepseek-v4-flash' }, content: [{ type: 'text', text: 'done' }] },
      { id: 'u4', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'see' }, { type: 'image', data: 'iVBOR', mimeType: 'image/png' }] },
    ]
    await run(ctx, call({ system: 'You are dsh.', messages, tools: [{ name: 'bash', description: 'run', parameters: { type: 'object' } }], temperature: 0.5, stop: ['END'] }))
    const body = server.requests[0].body
    expect(server.requests[0].path).toBe('/chat/completions')
    expect(server.requests[0].headers.authorization).toBe('Bearer sk-test')
    expect(body.messages).toEqual([
      { role: 'system', content: 'You are dsh.' },
      { role: 'user', content: 'list files' },
      { role: 'assistant', content: '', reasoning_content: 'need ls', tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command": "ls"}' } },
        { id: 'c2', type: 'function', function: { name: 'bash', arguments: '{"command":"true"}' } },
      ] },
      { role: 'tool', tool_call_id: 'c1', content: 'a.txt' },
      { role: 'tool', tool_call_id: 'c2', content: '(no output)' },
      { role: 'user', content: 'note' },
      { role: 'tool', tool_call_id: 'c3', content: 'Error: x' },
      { role: 'user', content: '' },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } }] },
    ])
    expect(body).toMatchObject({
      model: 'deepseek-v4-flash', stream: true, stream_options: { include_usage: true }, max_tokens: 256_000, temperature: 0.5, stop: ['END'],
      tools: [{ type: 'function', function: { name: 'bash', description: 'run', parameters: { type: 'object' } } }],
    })
  })

  it('thinking defaults on; effort is sent only with thinking; thinking off is explicit', async () => {
    const ctx = await setup()
    for (let i = 0; i < 3; i++) server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop' }]))
    await run(ctx)
    await run(ctx, call({ reasoningEffort: 'max', model: 'deepseek-v4-pro' }))
    await run(ctx, call({ thinking: false, reasoningEffort: 'high' }))
    const [a, b, c] = server.requests.map(r => r.body)
    expect(a.thinking).toEqual({ type: 'enabled' })
    expect(a.reasoning_effort).toBeUndefined()
    expect(b).toMatchObject({ model: 'deepseek-v4-pro', thinking: { type: 'enabled' }, reasoning_effort: 'max' })
    expect(c.thinking).toEqual({ type: 'disabled' })
    expect(c.reasoning_effort).toBeUndefined()
    expect(() => ctx.llm.prepareCall(call({ reasoningEffort: 'medium' }))).toThrow(/does not support reasoning effort "medium"; supported: low, high, max/)
  })
})

describe('DeepSeek transport (L-9)', () => {
  const cases: [FakeResponse, Record<string, unknown>][] = [
    [errorResponse(401, { error: { message: 'Authentication Fails' } }), { code: 'AUTH', status: 401, message: 'deepseek-official: HTTP 401: Authentication Fails' }],
    [errorResponse(403, 'forbidden'), { code: 'AUTH', status: 403 }],
    [errorResponse(413, 'too large'), { code: 'INVALID_REQUEST', status: 413 }],
    [errorResponse(402, { error: { message: 'Insufficient Balance' } }), { code: 'QUOTA', status: 402 }],
    [errorResponse(429, { error: { message: 'You exceeded your current quota' } }, { 'retry-after': '3' }), { code: 'QUOTA', status: 429, providerRetryAfterMs: 3000 }],
    [errorResponse(429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '2' }), { code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 2000 }],
    [errorResponse(400, { error: { message: "This model's maximum context length is 1048576 tokens" } }), { code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 }],
    [errorResponse(400, { error: { message: 'Invalid tools' } }), { code: 'INVALID_REQUEST', status: 400 }],
    [errorResponse(500, 'oops'), { code: 'SERVER', status: 500 }],
    [errorResponse(503, { error: { message: 'Server overloaded' } }, { 'x-request-id': 'req-9' }), { code: 'SERVER', status: 503, requestId: 'req-9' }],
    [errorResponse(404, 'no route'), { code: 'HTTP_404', status: 404 }],
  ]
  it.each(cases.map((c, i) => [i, ...c] as const))('L-9: HTTP error case %i is classified', async (_i, response, expected) => {
    const ctx = await setup()
    server.enqueue(response)
    const { chunks } = await run(ctx)
    expect(chunks).toHaveLength(1)
    expect(failureOf(chunks[0])).toMatchObject(expected)
  })

  it('L-9: Retry-After as an HTTP date becomes milliseconds from now', async () => {
    const ctx = await setup()
    server.enqueue(errorResponse(429, 'slow down', { 'retry-after': new Date(Date.now() + 60_000).toUTCString() }))
    const ms = failureOf((await run(ctx)).finish)?.providerRetryAfterMs ?? -1
    expect(ms).toBeGreaterThan(55_000)
    expect(ms).toBeLessThanOrEqual(60_000)
  })

  it('L-9: a request id header is captured on failures after a 200', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ text: 'x' }], { done: false, headers: { 'x-request-id': 'req-1' } }))
    expect(failureOf((await run(ctx)).finish)).toMatchObject({ code: 'STREAM_CLOSED', requestId: 'req-1' })
  })

  it('L-9: a fetch failure is TRANSPORT; a reset mid-stream too', async () => {
    const ctx = await setup({ baseUrl: 'http://127.0.0.1:1' })
    expect(failureOf((await run(ctx)).finish)).toMatchObject({ code: 'TRANSPORT' })
    const ctx2 = await setup()
    server.enqueue(streamResponse([{ text: 'x' }], { done: false, end: 'destroy' }))
    expect(failureOf((await run(ctx2)).finish)?.code).toMatch(/^(TRANSPORT|STREAM_CLOSED)$/)
  })

  it('L-9: an idle stall times out with TIMEOUT (configurable idle timeout)', async () => {
    const ctx = await setup({ idleTimeoutMs: 100 })
    server.enqueue(streamResponse([{ text: 'stalled' }], { done: false, end: 'hang' }))
    const { chunks, finish } = await run(ctx)
    expect(chunks.filter(c => c.type === 'text-delta')).toHaveLength(1)
    expect(finish.reason.kind).toBe('error')
    expect(failureOf(finish)).toMatchObject({ code: 'TIMEOUT' })
    expect(failureOf(finish)?.message).toMatch(/no data from the provider for 100 ms/)
  })

  it('L-9: SSE comments re-arm the idle watchdog', async () => {
    const ctx = await setup({ idleTimeoutMs: 400 })
    const steps = Array.from({ length: 6 }, () => [{ delayMs: 100 }, { comment: 'keep-alive' }]).flat()
    server.enqueue(streamResponse([{ text: 'a' }, ...steps, { text: 'b' }, { finish: 'stop' }]))
    const { finish, assembler } = await run(ctx)
    expect(finish.reason).toEqual({ kind: 'stop' })
    expect(assembler.content()).toEqual([{ type: 'text', text: 'ab' }])
  })

  it('L-9: a caller abort mid-stream ends with an aborted finish and keeps the streamed prefix', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ reasoning: 'thinking' }, { text: 'partial' }], { done: false, end: 'hang' }))
    const controller = new AbortController()
    const chunks: StreamChunk[] = []
    for await (const chunk of ctx.llm.stream(ctx.llm.prepareCall(call({ signal: controller.signal })))) {
      chunks.push(chunk)
      if (chunk.type === 'text-delta') controller.abort()
    }
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: { kind: 'aborted', failure: { code: 'ABORTED', message: 'deepseek-official: the request was cancelled' } } })
    expect(new BlockAssembler().pushAll(chunks).interruptedPrefix()).toEqual([{ type: 'reasoning', text: 'thinking' }, { type: 'text', text: 'partial' }])
  })

  it('a consumer that stops reading releases the connection', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ text: 'first' }, { text: 'second' }], { done: false, end: 'hang' }))
    for await (const chunk of ctx.llm.stream(call())) if (chunk.type === 'text-delta') break
    await server.requests[0].closed
    expect(server.requests).toHaveLength(1)
  })

  it('L-9: an already aborted signal sends no request', async () => {
    const ctx = await setup()
    const { finish } = await run(ctx, call({ signal: AbortSignal.abort() }))
    expect(finish.reason.kind).toBe('aborted')
    expect(server.requests).toHaveLength(0)
  })

  it('L-5: one call is one provider attempt (no internal retry on a retryable error)', async () => {
    const ctx = await setup()
    server.enqueue(errorResponse(503, 'busy'), streamResponse([{ text: 'never' }, { finish: 'stop' }]))
    expect(failureOf((await run(ctx)).finish)?.code).toBe('SERVER')
    expect(server.requests).toHaveLength(1)
    expect(server.pending).toBe(1)
  })
})

describe('DeepSeek credentials and config', () => {
  it('a missing key fails before any request, naming DEEPSEEK_API_KEY', async () => {
    vi.stubEnv('DEEPSEEK_API_KEY', '')
    try {
      const ctx = await setup({ apiKey: undefined, credentials: () => undefined })
      const failure = failureOf((await run(ctx)).finish)
      expect(failure?.code).toBe('MISSING_CREDENTIAL')
      expect(failure?.message).toMatch(/DEEPSEEK_API_KEY/)
      expect(server.requests).toHaveLength(0)
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('the key comes from the credentials lookup, else the environment; the base URL from DEEPSEEK_BASE_URL', async () => {
    vi.stubEnv('DEEPSEEK_API_KEY', 'sk-env')
    vi.stubEnv('DEEPSEEK_BASE_URL', server.url)
    try {
      const ctx = new Context()
      await ctx.plugin(LlmServicePlugin)
      await ctx.plugin(DeepSeekPlugin, { credentials: (name: string) => name === 'DEEPSEEK_API_KEY' ? 'sk-cred' : undefined })
      const ctx2 = new Context()
      await ctx2.plugin(LlmServicePlugin)
      await ctx2.plugin(DeepSeekPlugin, {})
      server.enqueue(streamResponse([{ text: 'a' }, { finish: 'stop' }]), streamResponse([{ text: 'b' }, { finish: 'stop' }]))
      await run(ctx)
      await run(ctx2)
      expect(server.requests.map(r => r.headers.authorization)).toEqual(['Bearer sk-cred', 'Bearer sk-env'])
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('registers both V4 models with the normal retry policy, flash first', async () => {
    const ctx = await setup()
    expect(ctx.llm.models().map(m => m.model)).toEqual(['deepseek-v4-flash', 'deepseek-v4-pro'])
    expect(ctx.llm.model(DEEPSEEK_PROVIDER, 'deepseek-v4-flash')).toMatchObject({ contextWindow: 1_048_576, thinking: true })
    expect(ctx.llm.retryMode(DEEPSEEK_PROVIDER)).toBe('normal')
  })
})

describe('fake server replay of StreamChunks', () => {
  it('chunksResponse replays what the adapter emitted (finishes, usage, errors)', async () => {
    const ctx = await setup({ idleTimeoutMs: 200 })
    const scripts: FakeResponse[] = [
      recorded(),
      streamResponse([{ text: 'partial' }, { toolCall: { id: 'c', name: 'write', arguments: '{"pa' } }, { finish: 'length', usage: { prompt_tokens: 9, completion_tokens: 9, prompt_cache_hit_tokens: 4 } }]),
      streamResponse([{ finish: 'stop', usage: { prompt_tokens: 5, completion_tokens: 0 } }]),
      streamResponse([{ reasoning: 'r' }, { text: 'cut' }], { done: false }),
      streamResponse([{ text: 'nope' }, { finish: 'content_filter' }]),
      errorResponse(429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '2' }),
      streamResponse([{ text: 'stall' }], { done: false, end: 'hang' }),
    ]
    for (const script of scripts) {
      server.enqueue(script)
      const original = (await run(ctx)).chunks
      server.enqueue(chunksResponse(original))
      const replayed = (await run(ctx)).chunks
      expect(replayed).toEqual(original)
    }
  })
})

describe('DeepSeek plugin config', () => {
  it('a bad config fails the plugin setup with a message naming the field', async () => {
    const ctx = new Context()
    await ctx.plugin(LlmServicePlugin)
    expect(() => new DeepSeekPlugin(ctx, { idleTimeoutMs: 0 })).toThrow('deepseek-official: idleTimeoutMs must be a positive number')
    expect(() => new DeepSeekPlugin(ctx, { baseUrl: 'api.deepseek.com' })).toThrow('deepseek-official: baseUrl must be an absolute URL, got "api.deepseek.com"')
    expect(() => new DeepSeekPlugin(ctx, { apiKey: 42 as never })).toThrow('deepseek-official: apiKey must be a string')
    expect(() => new DeepSeekPlugin(ctx, { retry: 'sometimes' as never })).toThrow('deepseek-official: retry must be "normal" or "always"')
  })
})
