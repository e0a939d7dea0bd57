/**
 * Every shipped model route runs the shared adapter conformance suite (./adapter.conformance.ts)
 * against a local fake of its wire protocol over real HTTP: DeepSeek and the chat-completions
 * presets against the chat-completions fake, Anthropic against the Messages fake.
 */
import { Context } from 'cordis'
import { afterAll, beforeAll } from 'vitest'
import { apiError, FakeAnthropic, messagesStream } from '../../test-support/fake-anthropic.js'
import { errorResponse, FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { describeAdapterConformance, type Scenario } from './adapter.conformance.js'
import { DeepSeekPlugin } from './deepseek/index.js'
import { ProviderPresetsPlugin } from './presets/index.js'
import { LlmServicePlugin } from './service.js'

let chat: FakeDeepSeek
let messages: FakeAnthropic
const KEYS = ['DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'DEEPSEEK_BASE_URL'] as const
const saved: Record<string, string | undefined> = {}
beforeAll(async () => {
  for (const name of KEYS) { saved[name] = process.env[name]; delete process.env[name] }
  ;[chat, messages] = await Promise.all([FakeDeepSeek.start(), FakeAnthropic.start()])
})
afterAll(async () => {
  for (const name of KEYS) if (saved[name] !== undefined) process.env[name] = saved[name]
  await Promise.all([chat.close(), messages.close()])
})

/** The chat-completions wire's answer to each scenario. */
function chatResponse(scenario: Scenario) {
  switch (scenario.kind) {
    case 'text': return streamResponse([{ text: scenario.text }, { finish: 'stop', usage: { prompt_tokens: scenario.inputTokens, completion_tokens: scenario.outputTokens } }], { chunkBytes: 5 })
    case 'reasoning-then-text': return streamResponse([{ reasoning: scenario.reasoning }, { text: scenario.text }, { finish: 'stop' }])
    case 'tool-call': return streamResponse([
      { toolCall: { index: 0, id: scenario.id, name: scenario.name, arguments: scenario.pieces[0] } },
      ...scenario.pieces.slice(1).map(piece => ({ toolCall: { index: 0, arguments: piece } })),
      { finish: 'tool_calls' },
    ])
    case 'max-tokens': return streamResponse([{ text: scenario.text }, { finish: 'length' }])
    case 'empty': return streamResponse([{ finish: 'stop' }])
    case 'rate-limited': return errorResponse(429, { error: { message: 'Rate limit reached' } }, { 'retry-after': String(scenario.retryAfterSeconds) })
    case 'overloaded': return errorResponse(503, { error: { message: 'Server overloaded' } })
    case 'bad-key': return errorResponse(401, { error: { message: 'Incorrect API key provided' } })
    case 'context-overflow': return errorResponse(400, { error: { message: 'This model\'s maximum context length is 128000 tokens' } })
    case 'truncated': return streamResponse([{ text: scenario.text }], { done: false })
    case 'malformed': return streamResponse([{ raw: 'data: {oops\n\n' }])
    case 'stall': return streamResponse([{ text: scenario.text }], { done: false, end: 'hang' })
  }
}

/** The Messages wire's answer to each scenario. */
function messagesResponse(scenario: Scenario) {
  switch (scenario.kind) {
    case 'text': return messagesStream([{ text: scenario.text }, { stop: 'end_turn', usage: { output_tokens: scenario.outputTokens } }], { start: { input_tokens: scenario.inputTokens }, chunkBytes: 5 })
    case 'reasoning-then-text': return messagesStream([{ thinking: scenario.reasoning, signature: 'sig' }, { text: scenario.text }, { stop: 'end_turn' }])
    case 'tool-call': return messagesStream([{ toolUse: { id: scenario.id, name: scenario.name, json: scenario.pieces } }, { stop: 'tool_use' }])
    case 'max-tokens': return messagesStream([{ text: scenario.text }, { stop: 'max_tokens' }])
    case 'empty': return messagesStream([{ stop: 'end_turn' }])
    case 'rate-limited': return apiError(429, 'rate_limit_error', 'Rate limited', { 'retry-after': String(scenario.retryAfterSeconds) })
    case 'overloaded': return apiError(529, 'overloaded_error', 'Overloaded')
    case 'bad-key': return apiError(401, 'authentication_error', 'invalid x-api-key')
    case 'context-overflow': return apiError(400, 'invalid_request_error', 'prompt is too long: 201000 tokens > 200000 maximum')
    case 'truncated': return messagesStream([{ text: scenario.text }])
    case 'malformed': return messagesStream([{ raw: 'event: content_block_delta\ndata: {oops\n\n' }])
    case 'stall': return messagesStream([{ text: scenario.text }, { delayMs: scenario.ms }, { stop: 'end_turn' }])
  }
}

async function withLlm(): Promise<Context> {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin)
  return ctx
}

describeAdapterConformance({
  name: 'deepseek-official',
  route: { provider: 'deepseek-official', model: 'deepseek-v4-flash' },
  async setup({ key, idleTimeoutMs }) {
    const ctx = await withLlm()
    await ctx.plugin(DeepSeekPlugin, { baseUrl: chat.url, credentials: () => key ? 'sk-ds' : undefined, ...idleTimeoutMs !== undefined ? { idleTimeoutMs } : {} })
    return ctx
  },
  respond: scenario => { chat.enqueue(chatResponse(scenario)) },
  requests: () => chat.requests.length,
})

/** A preset's route, registered as `--model` would register it. */
function presetHarness(name: string, route: { provider: string; model: string }, values: (key: boolean) => Record<string, string>, wire: 'chat' | 'messages', keyless = false) {
  describeAdapterConformance({
    name, route, keyless,
    async setup({ key, idleTimeoutMs }) {
      const ctx = await withLlm()
      const env = values(key)
      await ctx.plugin(ProviderPresetsPlugin, { credentials: (variable: string) => env[variable], variable: (variable: string) => env[variable], ...idleTimeoutMs !== undefined ? { idleTimeoutMs } : {} })
      ctx.llmPresets.resolve(`${route.provider}/${route.model}`)
      return ctx
    },
    respond: scenario => { if (wire === 'chat') chat.enqueue(chatResponse(scenario)); else messages.enqueue(messagesResponse(scenario)) },
    requests: () => wire === 'chat' ? chat.requests.length : messages.requests.length,
  })
}

presetHarness('openai preset', { provider: 'openai', model: 'gpt-5' }, key => ({ OPENAI_BASE_URL: `${chat.url}/v1`, ...key ? { OPENAI_API_KEY: 'sk-openai' } : {} }), 'chat')
presetHarness('ollama preset', { provider: 'ollama', model: 'llama3.2' }, () => ({ OLLAMA_HOST: chat.url }), 'chat', true)
presetHarness('anthropic preset', { provider: 'anthropic', model: 'claude-sonnet-4-5' }, key => ({ ANTHROPIC_BASE_URL: messages.url, ...key ? { ANTHROPIC_API_KEY: 'sk-ant' } : {} }), 'messages')
