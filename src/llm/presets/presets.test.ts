/**
 * Provider presets: routes by `provider/model` or an unambiguous bare name, registered on first
 * use, each wire protocol against its local fake server over real HTTP.
 */
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeAnthropic, messagesStream } from '../../../test-support/fake-anthropic.js'
import { FakeDeepSeek, streamResponse } from '../../../test-support/fake-deepseek.js'
import { BlockAssembler } from '../assembler.js'
import type { KeyUseGate } from '../key-use.js'
import { OpenAiCompatiblePlugin } from '../openai/index.js'
import { LlmServicePlugin } from '../service.js'
import type { LlmCallOptions, StreamChunk } from '../types.js'
import { presetBaseUrl, presetById, ProviderPresetsPlugin, shippedPrices, type PresetsConfig } from './index.js'

let chat: FakeDeepSeek
let anthropic: FakeAnthropic
beforeAll(async () => { [chat, anthropic] = await Promise.all([FakeDeepSeek.start(), FakeAnthropic.start()]) })
afterAll(async () => { await Promise.all([chat.close(), anthropic.close()]) })

async function setup(values: Record<string, string> = {}, config: Partial<PresetsConfig> = {}) {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin)
  await ctx.plugin(ProviderPresetsPlugin, { credentials: (name: string) => values[name], variable: (name: string) => values[name], ...config })
  return ctx
}

async function run(ctx: Context, route: { provider: string; model: string }, extra: Partial<LlmCallOptions> = {}) {
  const chunks: StreamChunk[] = []
  const options = ctx.llm.prepareCall({ ...route, messages: [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }], ...extra })
  for await (const chunk of ctx.llm.stream(options)) chunks.push(chunk)
  return { chunks, content: new BlockAssembler().pushAll(chunks).content(), finish: chunks.at(-1) }
}

describe('provider presets', () => {
  it('nothing is registered until a preset model is asked for', async () => {
    const ctx = await setup()
    expect(ctx.llm.models()).toEqual([])
    expect(ctx.llm.adapter('openai')).toBeUndefined()
  })

  it('resolves provider/model and bare names one preset lists; a bare name no preset lists is not theirs', async () => {
    const ctx = await setup()
    expect(ctx.llmPresets.resolve('openai/gpt-5')).toEqual({ provider: 'openai', model: 'gpt-5' })
    expect(ctx.llm.model('openai', 'gpt-5')).toMatchObject({ contextWindow: 400_000, defaultMaxTokens: 128_000, reasoningEfforts: ['low', 'medium', 'high'], imageInput: true })
    expect(ctx.llmPresets.resolve('claude-sonnet-4-5')).toEqual({ provider: 'anthropic', model: 'claude-sonnet-4-5' })
    expect(ctx.llmPresets.resolve('gpt-4o-mini')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' })
    expect(ctx.llmPresets.resolve('llama3.2')).toBeUndefined()
    expect(ctx.llmPresets.resolve('nosuch/model')).toBeUndefined()
    expect(ctx.llmPresets.hint()).toBe('presets: openai/<model>, anthropic/<model>, openrouter/<model>, ollama/<model>, vllm/<model>, llamacpp/<model> (docs/llm.md)')
  })

  it('a gateway or a local server takes any model name, each added to its route', async () => {
    const ctx = await setup()
    expect(ctx.llmPresets.resolve('ollama/llama3.2')).toEqual({ provider: 'ollama', model: 'llama3.2' })
    expect(ctx.llmPresets.resolve('ollama/qwen3:8b')).toEqual({ provider: 'ollama', model: 'qwen3:8b' })
    expect(ctx.llm.models().filter(info => info.provider === 'ollama').map(info => info.model)).toEqual(['llama3.2', 'qwen3:8b'])
    expect(ctx.llmPresets.resolve('openrouter/anthropic/claude-sonnet-4.5')).toEqual({ provider: 'openrouter', model: 'anthropic/claude-sonnet-4.5' })
    // A model newer than the catalogue: accepted with the provider's usual limits.
    expect(ctx.llmPresets.resolve('openai/gpt-6')).toEqual({ provider: 'openai', model: 'gpt-6' })
    expect(ctx.llm.model('openai', 'gpt-6')).toMatchObject({ contextWindow: 128_000 })
    expect(ctx.llm.model('openai', 'gpt-5')).toBeDefined()
  })

  it('a route the profile or the settings already hold under that name stays theirs', async () => {
    const ctx = await setup()
    await ctx.plugin(OpenAiCompatiblePlugin, { provider: 'openai', baseUrl: `${chat.url}/v1`, models: [{ model: 'mine', contextWindow: 1000, defaultMaxTokens: 100 }] })
    expect(ctx.llmPresets.resolve('openai/gpt-5')).toBeUndefined()
    expect(ctx.llm.models().map(info => info.model)).toEqual(['mine'])
  })

  it('a missing key names the provider\'s variable; local servers need none', async () => {
    const ctx = await setup()
    ctx.llmPresets.resolve('anthropic/claude-haiku-4-5')
    ctx.llmPresets.resolve('openrouter/x')
    ctx.llmPresets.resolve('ollama/llama3.2')
    expect(ctx.llm.adapter('anthropic')?.readiness?.()).toBe('ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=<your Anthropic key>, or store it in $DSH_HOME/.credentials.yaml')
    expect(ctx.llm.adapter('openrouter')?.missingCredential?.()).toBe('OPENROUTER_API_KEY')
    expect(ctx.llm.adapter('ollama')?.readiness?.()).toBeUndefined()
  })

  it('openai: chat completions at OPENAI_BASE_URL with the Bearer key and max_completion_tokens', async () => {
    const ctx = await setup({ OPENAI_API_KEY: 'sk-openai', OPENAI_BASE_URL: `${chat.url}/v1` })
    const route = ctx.llmPresets.resolve('gpt-5')!
    chat.enqueue(streamResponse([{ text: 'hello from gpt' }, { finish: 'stop', usage: { prompt_tokens: 3, completion_tokens: 2 } }]))
    const before = chat.requests.length
    const { content } = await run(ctx, route, { reasoningEffort: 'high' })
    expect(content).toEqual([{ type: 'text', text: 'hello from gpt' }])
    const request = chat.requests[before]
    expect(request.path).toBe('/v1/chat/completions')
    expect(request.headers.authorization).toBe('Bearer sk-openai')
    expect(request.body).toMatchObject({ model: 'gpt-5', max_completion_tokens: 128_000, reasoning_effort: 'high' })
    expect(request.body.max_tokens).toBeUndefined()
  })

  it('ollama: OLLAMA_HOST as host:port, no key sent; openrouter with its key and title header', async () => {
    const port = new URL(chat.url).port
    const ctx = await setup({ OLLAMA_HOST: `127.0.0.1:${port}`, OPENROUTER_API_KEY: 'sk-or', OPENROUTER_BASE_URL: `${chat.url}/api/v1` })
    chat.enqueue(streamResponse([{ reasoning: 'thinking locally' }, { text: 'local answer' }, { finish: 'stop' }]))
    let before = chat.requests.length
    const local = await run(ctx, ctx.llmPresets.resolve('ollama/llama3.2')!)
    expect(local.content).toEqual([{ type: 'reasoning', text: 'thinking locally' }, { type: 'text', text: 'local answer' }])
    expect(chat.requests[before].path).toBe('/v1/chat/completions')
    expect(chat.requests[before].headers.authorization).toBeUndefined()
    expect(chat.requests[before].body).toMatchObject({ model: 'llama3.2', max_tokens: 8192 })
    chat.enqueue(streamResponse([{ text: 'routed' }, { finish: 'stop' }]))
    before = chat.requests.length
    await run(ctx, ctx.llmPresets.resolve('openrouter/anthropic/claude-sonnet-4.5')!)
    expect(chat.requests[before].path).toBe('/api/v1/chat/completions')
    expect(chat.requests[before].headers).toMatchObject({ authorization: 'Bearer sk-or', 'x-title': 'dsh' })
    expect(chat.requests[before].body.model).toBe('anthropic/claude-sonnet-4.5')
  })

  it('anthropic: the native Messages adapter at ANTHROPIC_BASE_URL, loaded at the first request', async () => {
    const ctx = await setup({ ANTHROPIC_API_KEY: 'sk-ant', ANTHROPIC_BASE_URL: anthropic.url })
    anthropic.enqueue(messagesStream([{ thinking: 'hmm', signature: 's1' }, { text: 'Bonjour' }, { stop: 'end_turn' }]))
    const before = anthropic.requests.length
    const { content } = await run(ctx, ctx.llmPresets.resolve('anthropic/claude-sonnet-4-5')!)
    expect(content).toEqual([{ type: 'reasoning', text: 'hmm', signature: 's1' }, { type: 'text', text: 'Bonjour' }])
    expect(anthropic.requests[before].headers['x-api-key']).toBe('sk-ant')
  })

  it('a base URL variable with a stored key goes through the first-use gate; refused, nothing is sent', async () => {
    const asked: string[] = []
    const gate: KeyUseGate = { firstUse: endpoint => ({ keyName: 'ANTHROPIC_API_KEY', endpoint, chosenBy: 'ANTHROPIC_BASE_URL from /repo/.env' }), allowed: () => {} }
    const ctx = await setup({ ANTHROPIC_API_KEY: 'sk-ant', ANTHROPIC_BASE_URL: anthropic.url }, { keyUse: (key, url) => { asked.push(`${key} ${url}`); return gate } })
    ctx.on('llm/key-first-use', () => 'refuse')
    const before = anthropic.requests.length
    const { finish } = await run(ctx, ctx.llmPresets.resolve('anthropic/claude-sonnet-4-5')!)
    expect(asked).toEqual(['ANTHROPIC_API_KEY ANTHROPIC_BASE_URL'])
    expect(finish).toMatchObject({ type: 'finish', reason: { kind: 'error', failure: { code: 'KEY_NOT_SENT' } } })
    expect(anthropic.requests.length).toBe(before)
  })

  it('a base URL that is not a URL fails the request naming the variable', async () => {
    const ctx = await setup({ OPENAI_API_KEY: 'k', OPENAI_BASE_URL: 'not a url' })
    const { finish } = await run(ctx, ctx.llmPresets.resolve('openai/gpt-5')!)
    expect(finish).toMatchObject({ reason: { kind: 'error', failure: { code: 'INVALID_CONFIG', message: 'openai: OPENAI_BASE_URL is not a URL: "not a url"' } } })
  })

  it('OLLAMA_HOST is read as Ollama reads it', () => {
    const ollama = presetById('ollama')!
    expect(presetBaseUrl(ollama, undefined)).toBe('http://127.0.0.1:11434/v1')
    expect(presetBaseUrl(ollama, '0.0.0.0')).toBe('http://127.0.0.1:11434/v1')
    expect(presetBaseUrl(ollama, 'gpu-box:9000')).toBe('http://gpu-box:9000/v1')
    expect(presetBaseUrl(ollama, 'https://ollama.example.com/')).toBe('https://ollama.example.com/v1')
    expect(presetBaseUrl(ollama, 'http://10.0.0.5:11434/v1')).toBe('http://10.0.0.5:11434/v1')
    expect(presetBaseUrl(presetById('openai')!, 'https://proxy.example.com/v1/')).toBe('https://proxy.example.com/v1')
  })

  it('ships a price for every listed model and for DeepSeek\'s', () => {
    const prices = shippedPrices()
    expect(prices['openai/gpt-5']).toEqual({ input: 1.25, output: 10, cacheRead: 0.125 })
    expect(prices['anthropic/claude-sonnet-4-5']).toEqual({ input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 })
    expect(prices['deepseek-official/deepseek-v4-flash']).toMatchObject({ input: 0.14, output: 0.28 })
    for (const preset of ['openai', 'anthropic']) for (const model of presetById(preset)!.models) expect(prices[`${preset}/${model.model}`], model.model).toBeDefined()
  })
})
