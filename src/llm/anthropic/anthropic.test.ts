/**
 * The Anthropic Messages adapter against a local fake of the API over real HTTP
 * (test-support/fake-anthropic.ts), which refuses what the API refuses.
 */
import { Context } from 'cordis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { apiError, FakeAnthropic, messagesStream, type ScriptedResponse } from '../../../test-support/fake-anthropic.js'
import { BlockAssembler } from '../assembler.js'
import { LlmServicePlugin } from '../service.js'
import type { AssistantMessage, LlmCallOptions, LlmFailure, Message, StreamChunk } from '../types.js'
import { AnthropicPlugin, type AnthropicConfig } from './index.js'

let server: FakeAnthropic
beforeAll(async () => { server = await FakeAnthropic.start() })
afterAll(async () => { await server.close() })
afterEach(() => { server.discardPending() })

async function setup(config: AnthropicConfig = {}) {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin)
  await ctx.plugin(AnthropicPlugin, { baseUrl: server.url, apiKey: 'sk-ant-test', ...config })
  return ctx
}

const user = (text: string, id = 'u'): Message => ({ id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })
const call = (extra: Partial<LlmCallOptions> = {}): LlmCallOptions => ({ provider: 'anthropic', model: 'claude-sonnet-4-5', messages: [user('hi')], ...extra })

async function run(ctx: Context, options: LlmCallOptions = call()) {
  const chunks: StreamChunk[] = []
  for await (const chunk of ctx.llm.stream(ctx.llm.prepareCall(options))) chunks.push(chunk)
  const finish = chunks.at(-1) as Extract<StreamChunk, { type: 'finish' }>
  const failure = finish.reason.kind === 'error' || finish.reason.kind === 'aborted' ? finish.reason.failure : undefined
  return { chunks, finish, failure: failure as LlmFailure | undefined, assembler: new BlockAssembler().pushAll(chunks) }
}

async function answer(response: ScriptedResponse, options?: LlmCallOptions, config?: AnthropicConfig) {
  const ctx = await setup(config)
  server.enqueue(response)
  const before = server.requests.length
  const result = await run(ctx, options)
  return { ...result, request: server.requests[before] }
}

describe('Anthropic Messages adapter over HTTP', () => {
  it('registers the preset models and streams text with the key, version and endpoint the API wants', async () => {
    const ctx = await setup()
    expect(ctx.llm.model('anthropic', 'claude-sonnet-4-5')).toMatchObject({ contextWindow: 200_000, imageInput: true, thinking: true })
    server.enqueue(messagesStream([{ text: 'Hel' }, { stop: 'end_turn', usage: { output_tokens: 7 } }], { start: { input_tokens: 12, cache_read_input_tokens: 100, cache_creation_input_tokens: 40 }, chunkBytes: 7 }))
    const before = server.requests.length
    const { assembler, finish, chunks } = await run(ctx, call({ thinking: false }))
    const request = server.requests[before]
    expect(request.path).toBe('/v1/messages')
    expect(request.headers['x-api-key']).toBe('sk-ant-test')
    expect(request.headers['anthropic-version']).toBe('2023-06-01')
    expect(request.headers.authorization).toBeUndefined()
    expect(request.body).toMatchObject({ model: 'claude-sonnet-4-5', max_tokens: 32_000, stream: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }] })
    expect(request.body.thinking).toBeUndefined()
    expect(assembler.content()).toEqual([{ type: 'text', text: 'Hel' }])
    expect(finish.reason).toEqual({ kind: 'stop' })
    // L-2: disjoint counts; input_tokens already excludes cache reads and writes.
    expect(chunks.find(c => c.type === 'usage')).toEqual({ type: 'usage', usage: { inputTokens: 12, outputTokens: 7, cacheReadTokens: 100, cacheWriteTokens: 40 } })
  })

  it('streams a tool call from input_json_delta pieces; every delta names the call (R-2) and the finish is tool-calls', async () => {
    const { assembler, finish, chunks } = await answer(messagesStream([{ text: 'Let me look.' }, { toolUse: { id: 'toolu_1', name: 'read', json: ['{"pa', 'th":"a.', 'txt"}'] } }, { stop: 'tool_use' }]))
    expect(assembler.content()).toEqual([{ type: 'text', text: 'Let me look.' }, { type: 'tool-call', id: 'toolu_1', name: 'read', arguments: '{"path":"a.txt"}' }])
    expect(finish.reason).toEqual({ kind: 'tool-calls' })
    const deltas = chunks.filter(c => c.type === 'tool-call-delta')
    expect(deltas.every(d => d.type === 'tool-call-delta' && d.id === 'toolu_1' && d.name === 'read')).toBe(true)
  })

  it('a tool call without input arguments becomes "{}"', async () => {
    const { assembler } = await answer(messagesStream([{ toolUse: { id: 'toolu_2', name: 'list_agents', json: [] } }, { stop: 'tool_use' }]))
    expect(assembler.content()).toEqual([{ type: 'tool-call', id: 'toolu_2', name: 'list_agents', arguments: '{}' }])
  })

  it('thinking: on by default with the medium budget, an effort picks its own; the signed block streams as reasoning and keeps its signature', async () => {
    const plain = await answer(messagesStream([{ text: 'k' }, { stop: 'end_turn' }]))
    expect(plain.request.body.thinking).toEqual({ type: 'enabled', budget_tokens: 10_000 })
    const { assembler, request } = await answer(messagesStream([{ thinking: 'weigh it', signature: 'sig-abc' }, { text: 'done' }, { stop: 'end_turn' }]), call({ reasoningEffort: 'low' }))
    expect(request.body.thinking).toEqual({ type: 'enabled', budget_tokens: 4000 })
    expect(assembler.content()).toEqual([{ type: 'reasoning', text: 'weigh it', signature: 'sig-abc' }, { type: 'text', text: 'done' }])
  })

  it('thinking and signatures round-trip: a tool-use turn sends its signed and redacted thinking back first, unchanged', async () => {
    const ctx = await setup()
    server.enqueue(messagesStream([{ thinking: 'plan', signature: 'sig-1' }, { redacted: 'opaque==' }, { toolUse: { id: 'toolu_9', name: 'bash', json: ['{"command":"ls"}'] } }, { stop: 'tool_use' }]))
    const first = await run(ctx, call({ thinking: true }))
    const assistant: AssistantMessage = first.assembler.message({ provider: 'anthropic', model: 'claude-sonnet-4-5' }, { id: 'a1' })
    const result: Message = { id: 'r1', role: 'user', source: { kind: 'tool', callId: 'toolu_9' }, content: [{ type: 'tool-result', toolCallId: 'toolu_9', content: [{ type: 'text', text: 'a.txt' }], isError: false }] }
    server.enqueue(messagesStream([{ thinking: '', signature: 'sig-2' }, { text: 'one file' }, { stop: 'end_turn' }]))
    const before = server.requests.length
    const second = await run(ctx, call({ thinking: true, messages: [user('hi'), assistant, result] }))
    expect(second.failure).toBeUndefined()
    const sent = server.requests[before].body.messages
    expect(sent[1]).toEqual({ role: 'assistant', content: [
      { type: 'thinking', thinking: 'plan', signature: 'sig-1' },
      { type: 'redacted_thinking', data: 'opaque==' },
      { type: 'tool_use', id: 'toolu_9', name: 'bash', input: { command: 'ls' } },
    ] })
    expect(sent[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: [{ type: 'text', text: 'a.txt' }], cache_control: { type: 'ephemeral' } }] })
    // A signature alone (the text withheld) is still a reasoning block that goes back.
    expect(second.assembler.content()[0]).toEqual({ type: 'reasoning', text: '', signature: 'sig-2' })
  })

  it('prompt caching: breakpoints on the system prompt, the last tool and the last two user turns (never more than four)', async () => {
    const tools = ['a', 'b', 'c'].map(name => ({ name, description: `tool ${name}`, parameters: { type: 'object', properties: {} } }))
    const history: Message[] = [user('one', 'u1'), { id: 'a1', role: 'assistant', source: { kind: 'model', provider: 'anthropic', model: 'claude-sonnet-4-5' }, content: [{ type: 'text', text: 'ok' }] }, user('two', 'u2'),
      { id: 'a2', role: 'assistant', source: { kind: 'model', provider: 'anthropic', model: 'claude-sonnet-4-5' }, content: [{ type: 'text', text: 'ok' }] }, user('three', 'u3')]
    const { request, failure } = await answer(messagesStream([{ text: 'k' }, { stop: 'end_turn' }]), call({ system: 'You are dsh.', tools, messages: history }))
    expect(failure).toBeUndefined()
    const body = request.body
    expect(body.system).toEqual([{ type: 'text', text: 'You are dsh.', cache_control: { type: 'ephemeral' } }])
    expect(body.tools.map((t: any) => t.cache_control !== undefined)).toEqual([false, false, true])
    expect(body.tools[0]).toEqual({ name: 'a', description: 'tool a', input_schema: { type: 'object', properties: {} } })
    const marked = body.messages.map((m: any) => m.content.some((b: any) => b.cache_control !== undefined))
    expect(marked).toEqual([false, false, true, false, true])
    const off = await answer(messagesStream([{ text: 'k' }, { stop: 'end_turn' }]), call({ system: 'You are dsh.', tools, messages: history }), { promptCaching: false })
    expect(JSON.stringify(off.request.body)).not.toContain('cache_control')
  })

  it('images: a user image and an image a tool returned go as base64 image blocks', async () => {
    const png = Buffer.from('fake-png').toString('base64')
    const messages: Message[] = [
      { id: 'u', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'what is this?' }, { type: 'image', data: png, mimeType: 'image/png' }] },
      { id: 'a', role: 'assistant', source: { kind: 'model', provider: 'anthropic', model: 'claude-sonnet-4-5' }, content: [{ type: 'tool-call', id: 'call:1', name: 'read_image', arguments: '{"path":"x.png"}' }] },
      { id: 'r', role: 'user', source: { kind: 'tool', callId: 'call:1' }, content: [{ type: 'tool-result', toolCallId: 'call:1', content: [{ type: 'image', data: png, mimeType: 'image/png' }], isError: true }] },
    ]
    const { request, failure } = await answer(messagesStream([{ text: 'a cat' }, { stop: 'end_turn' }]), call({ messages }))
    expect(failure).toBeUndefined()
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } }
    expect(request.body.messages[0].content[1]).toEqual({ ...image, cache_control: { type: 'ephemeral' } })
    // Another provider's tool id is mapped to one the API accepts, in the call and in its result.
    expect(request.body.messages[1].content[0].id).toBe('call_1')
    expect(request.body.messages[2].content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'call_1', is_error: true, content: [image] })
  })

  it('neighbouring user messages become one turn with the tool results first; reasoning without a signature is not sent', async () => {
    const messages: Message[] = [
      user('go'),
      { id: 'a', role: 'assistant', source: { kind: 'model', provider: 'deepseek-official', model: 'x' }, content: [{ type: 'reasoning', text: 'unsigned' }, { type: 'tool-call', id: 't1', name: 'bash', arguments: '{}' }, { type: 'tool-call', id: 't2', name: 'bash', arguments: 'not json' }] },
      { id: 'r1', role: 'user', source: { kind: 'tool', callId: 't1' }, content: [{ type: 'tool-result', toolCallId: 't1', content: [], isError: false }] },
      user('and also this', 'steer'),
      { id: 'r2', role: 'user', source: { kind: 'tool', callId: 't2' }, content: [{ type: 'tool-result', toolCallId: 't2', content: [{ type: 'text', text: 'bad args' }], isError: true }] },
    ]
    const { request, failure } = await answer(messagesStream([{ text: 'ok' }, { stop: 'end_turn' }]), call({ messages }))
    expect(failure).toBeUndefined()
    expect(request.body.messages).toHaveLength(3)
    expect(request.body.messages[1].content.map((b: any) => b.type)).toEqual(['tool_use', 'tool_use'])
    expect(request.body.messages[1].content[1].input).toEqual({})
    expect(request.body.messages[2].content.map((b: any) => b.type)).toEqual(['tool_result', 'tool_result', 'text'])
    expect(request.body.messages[2].content[0].content).toBe('(no output)')
    // That loop began without thinking (another model's turn): this request goes without it.
    expect(request.body.thinking).toBeUndefined()
  })

  it('with thinking on, temperature is left out and the budget stays below max_tokens', async () => {
    const { request, failure } = await answer(messagesStream([{ text: 'k' }, { stop: 'end_turn' }]), call({ thinking: true, reasoningEffort: 'high', maxTokens: 20_000, temperature: 0.2 }))
    expect(failure).toBeUndefined()
    expect(request.body.thinking).toEqual({ type: 'enabled', budget_tokens: 19_999 })
    expect(request.body.temperature).toBeUndefined()
  })
})

describe('Anthropic errors and retry semantics (L-9, L-10)', () => {
  const cases: [string, ScriptedResponse, Partial<LlmFailure>][] = [
    ['429 with retry-after', apiError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', { 'retry-after': '7', 'request-id': 'req_42' }), { code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 7000, requestId: 'req_42' }],
    ['529 overloaded', apiError(529, 'overloaded_error', 'Overloaded'), { code: 'SERVER', status: 529, message: 'anthropic: HTTP 529: Overloaded' }],
    ['500 api_error', apiError(500, 'api_error', 'Internal server error'), { code: 'SERVER', status: 500 }],
    ['401 bad key', apiError(401, 'authentication_error', 'invalid x-api-key'), { code: 'AUTH', status: 401 }],
    ['400 prompt too long', apiError(400, 'invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum'), { code: 'CONTEXT_WINDOW_EXCEEDED', status: 400 }],
    ['400 low credit', apiError(400, 'invalid_request_error', 'Your credit balance is too low to access the Anthropic API.'), { code: 'QUOTA', status: 400 }],
    ['413 request too large', apiError(413, 'request_too_large', 'Request exceeds the maximum allowed number of bytes.'), { code: 'INVALID_REQUEST', status: 413 }],
    ['overloaded error event mid-stream', messagesStream([{ text: 'par' }, { error: { type: 'overloaded_error', message: 'Overloaded' } }]), { code: 'SERVER', status: 529, message: 'provider error in stream: Overloaded (overloaded_error)' }],
    ['rate limit error event mid-stream', messagesStream([{ error: { type: 'rate_limit_error', message: 'slow down' } }]), { code: 'RATE_LIMIT' }],
    ['EOF before message_stop', messagesStream([{ text: 'cut' }]), { code: 'STREAM_CLOSED', message: 'anthropic: the stream ended before message_stop; the truncated response cannot be trusted' }],
    ['data that is not JSON', messagesStream([{ raw: 'event: content_block_delta\ndata: {oops\n\n' }]), { code: 'MALFORMED_RESPONSE' }],
    ['refusal', messagesStream([{ text: 'no' }, { stop: 'refusal' }]), { code: 'REFUSAL' }],
    ['empty message', messagesStream([{ stop: 'end_turn' }]), { code: 'EMPTY_RESPONSE' }],
    ['context window reached', messagesStream([{ text: 'a' }, { stop: 'model_context_window_exceeded' }]), { code: 'CONTEXT_WINDOW_EXCEEDED' }],
  ]
  it.each(cases)('%s', async (_name, response, expected) => {
    const { failure } = await answer(response)
    expect(failure).toMatchObject(expected)
  })

  it('max_tokens is a max-tokens finish; pings are ignored', async () => {
    const { finish, assembler } = await answer(messagesStream([{ ping: true }, { text: 'long' }, { ping: true }, { stop: 'max_tokens' }]))
    expect(finish.reason).toEqual({ kind: 'max-tokens' })
    expect(assembler.content()).toEqual([{ type: 'text', text: 'long' }])
  })

  it('a missing key fails before any request, naming ANTHROPIC_API_KEY', async () => {
    const saved = process.env.ANTHROPIC_API_KEY
    delete process.env.ANTHROPIC_API_KEY
    try {
      const ctx = new Context()
      await ctx.plugin(LlmServicePlugin)
      await ctx.plugin(AnthropicPlugin, { baseUrl: server.url, credentials: () => undefined })
      expect(ctx.llm.adapter('anthropic')?.readiness?.()).toMatch(/^ANTHROPIC_API_KEY is not set/)
      expect(ctx.llm.adapter('anthropic')?.missingCredential?.()).toBe('ANTHROPIC_API_KEY')
      const before = server.requests.length
      const { failure } = await run(ctx)
      expect(failure).toMatchObject({ code: 'MISSING_CREDENTIAL' })
      expect(failure?.message).toContain('ANTHROPIC_API_KEY')
      expect(server.requests.length).toBe(before)
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved
    }
  })

  it('the caller\'s abort ends the attempt as aborted', async () => {
    const ctx = await setup()
    server.enqueue(messagesStream([{ text: 'slow' }, { delayMs: 5_000 }, { stop: 'end_turn' }]))
    const controller = new AbortController()
    const chunks: StreamChunk[] = []
    for await (const chunk of ctx.llm.stream(ctx.llm.prepareCall(call({ signal: controller.signal })))) {
      chunks.push(chunk)
      if (chunk.type === 'text-delta') controller.abort()
    }
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', reason: { kind: 'aborted' } })
  })

  it('a bad config names the field', async () => {
    const ctx = new Context()
    await ctx.plugin(LlmServicePlugin)
    expect(() => new AnthropicPlugin(ctx, { promptCaching: 'yes' as never })).toThrow(/promptCaching must be true or false/)
    expect(() => new AnthropicPlugin(ctx, { models: [{ model: 'm', contextWindow: 0, defaultMaxTokens: 1 }] })).toThrow(/models\[0\]\.contextWindow/)
  })
})
