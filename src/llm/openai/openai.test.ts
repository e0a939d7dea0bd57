import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { FakeDeepSeek, sseEvent, streamResponse } from '../../../test-support/fake-deepseek.js'
import { BlockAssembler } from '../assembler.js'
import { LlmServicePlugin } from '../service.js'
import type { LlmCallOptions, Message, StreamChunk } from '../types.js'
import { OpenAiCompatiblePlugin, openAiModels, type OpenAiCompatibleConfig } from './index.js'

let server: FakeDeepSeek
beforeEach(async () => { server = await FakeDeepSeek.start() })
afterEach(async () => { await server.close() })

const models = [{ model: 'qwen3', contextWindow: 32_768, defaultMaxTokens: 4096, reasoningEfforts: ['low' as const, 'high' as const] }]

async function setup(config: Partial<OpenAiCompatibleConfig> = {}) {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin)
  await ctx.plugin(OpenAiCompatiblePlugin, { provider: 'local-vllm', baseUrl: `${server.url}/v1`, models, ...config })
  return ctx
}

const call = (extra: Partial<LlmCallOptions> = {}): LlmCallOptions => ({
  provider: 'local-vllm', model: 'qwen3', messages: [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }], ...extra,
})

async function run(ctx: Context, options: LlmCallOptions = call()) {
  const chunks: StreamChunk[] = []
  for await (const chunk of ctx.llm.stream(ctx.llm.prepareCall(options))) chunks.push(chunk)
  return chunks
}

describe('OpenAI-compatible adapter', () => {
  it('registers its models under its own provider and posts to <baseUrl>/chat/completions', async () => {
    const ctx = await setup()
    expect(ctx.llm.model('local-vllm', 'qwen3')).toEqual({ provider: 'local-vllm', model: 'qwen3', contextWindow: 32_768, defaultMaxTokens: 4096, reasoningEfforts: ['low', 'high'], imageInput: false })
    server.enqueue(streamResponse([{ text: 'hello' }, { finish: 'stop' }]))
    const chunks = await run(ctx)
    expect(new BlockAssembler().pushAll(chunks).content()).toEqual([{ type: 'text', text: 'hello' }])
    expect(server.requests[0].path).toBe('/v1/chat/completions')
    expect(server.requests[0].headers.authorization).toBeUndefined()
  })

  it('L-6: sends no DeepSeek-only fields (no thinking switch, no reasoning_content)', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop' }]))
    const history: Message[] = [
      ...call().messages,
      { id: 'a', role: 'assistant', source: { kind: 'model', provider: 'local-vllm', model: 'qwen3' }, content: [{ type: 'reasoning', text: 'hidden' }, { type: 'text', text: 'shown' }] },
      { id: 'u2', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'more' }] },
    ]
    await run(ctx, call({ messages: history, reasoningEffort: 'high', thinking: true }))
    const body = server.requests[0].body
    expect(body.thinking).toBeUndefined()
    expect(body.reasoning_effort).toBe('high')
    expect(body.messages[1]).toEqual({ role: 'assistant', content: 'shown' })
    expect(body.max_tokens).toBe(4096)
  })

  it('reads the `reasoning` delta field and maps stop-with-tool-calls to tool-calls', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([
      { raw: sseEvent({ choices: [{ index: 0, delta: { reasoning: 'think' } }] }) },
      { toolCall: { index: 0, id: 'x1', name: 'ls', arguments: '{}' } },
      { finish: 'stop' },
    ]))
    const chunks = await run(ctx)
    expect(new BlockAssembler().pushAll(chunks).content()).toEqual([
      { type: 'reasoning', text: 'think' },
      { type: 'tool-call', id: 'x1', name: 'ls', arguments: '{}' },
    ])
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: { kind: 'tool-calls' } })
  })

  it('a missing tool-call id from the server becomes call-<index>', async () => {
    const ctx = await setup()
    server.enqueue(streamResponse([{ toolCall: { index: 0, name: 'ls', arguments: '{}' } }, { finish: 'tool_calls' }]))
    const chunks = await run(ctx)
    expect(chunks.find(c => c.type === 'block-end')).toEqual({ type: 'block-end', index: 0, block: { type: 'tool-call', id: 'call-0', name: 'ls', arguments: '{}' } })
  })

  it('uses apiKey, or apiKeyEnv via the credentials lookup then the environment; a missing variable is MISSING_CREDENTIAL naming it', async () => {
    vi.stubEnv('GATEWAY_KEY', 'gw-secret')
    vi.stubEnv('ABSENT_KEY', '')
    try {
      server.enqueue(...['a', 'b', 'c'].map(text => streamResponse([{ text }, { finish: 'stop' }])))
      await run(await setup({ apiKey: 'direct', headers: { 'x-tenant': 't1' } }))
      await run(await setup({ apiKeyEnv: 'GATEWAY_KEY' }))
      await run(await setup({ apiKeyEnv: 'GATEWAY_KEY', credentials: name => name === 'GATEWAY_KEY' ? 'from-store' : undefined }))
      expect(server.requests.map(r => r.headers.authorization)).toEqual(['Bearer direct', 'Bearer gw-secret', 'Bearer from-store'])
      expect(server.requests[0].headers['x-tenant']).toBe('t1')
      const chunks = await run(await setup({ apiKeyEnv: 'ABSENT_KEY', credentials: () => undefined }))
      expect(chunks).toEqual([{ type: 'finish', reason: { kind: 'error', failure: expect.objectContaining({ code: 'MISSING_CREDENTIAL', message: expect.stringContaining('ABSENT_KEY') }) } }])
      expect(server.requests).toHaveLength(3)
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('rejects a bad config with a message naming the field', () => {
    const base = { provider: 'p', baseUrl: 'http://127.0.0.1:1/v1', models }
    expect(() => openAiModels({ ...base, models: [] })).toThrow('p: models must list at least one')
    expect(() => openAiModels({ ...base, models: [{ model: 'm', contextWindow: 0, defaultMaxTokens: 1 }] })).toThrow('p: models[0].contextWindow must be a positive integer, got 0')
    expect(() => openAiModels({ ...base, baseUrl: 'not a url' })).toThrow('p: baseUrl must be an absolute URL')
    expect(() => openAiModels({ ...base, idleTimeoutMs: -1 })).toThrow('p: idleTimeoutMs must be a positive number')
    expect(() => openAiModels({ ...base, models: [{ model: 'm', contextWindow: 1, defaultMaxTokens: 1, reasoningEfforts: ['huge' as never] }] })).toThrow('unknown effort "huge"')
    expect(() => openAiModels({ ...base, provider: '' })).toThrow('provider must be a non-empty string')
  })
})
