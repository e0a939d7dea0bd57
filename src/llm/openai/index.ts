/**
 * An adapter for OpenAI-compatible chat-completions servers (vLLM, llama.cpp, Ollama, gateways).
 * Same transport and translation as DeepSeek (../openai-stream.ts, ../openai-wire.ts); the only
 * difference is the dialect: no DeepSeek-only fields on the wire.
 */
import type { Context } from 'cordis'
import type { RetryMode } from '../api.js'
import { warmConnection } from '../connections.js'
import { LlmError } from '../errors.js'
import { streamChatCompletion, validateTransportConfig } from '../openai-stream.js'
import { encodeRequestBody, inlineAttachments, type WireDialect } from '../openai-wire.js'
import type { KeyUseConsent } from '../key-use.js'
import { requestHold } from '../request-hold.js'
import type { CredentialLookup } from '../deepseek/index.js'
import type { LlmAdapter, LlmCallOptions, ModelInfo, ReasoningEffort, StreamChunk } from '../types.js'

export interface OpenAiModelConfig {
  model: string
  contextWindow: number
  defaultMaxTokens: number
  /** Efforts the server accepts as `reasoning_effort`; empty (default) means none is sent. */
  reasoningEfforts?: ReasoningEffort[]
  imageInput?: boolean
}

export interface OpenAiCompatibleConfig {
  /** The provider route this adapter owns, e.g. `local-vllm`. */
  provider: string
  /** Base URL up to and including the API version, e.g. `http://127.0.0.1:8000/v1`. */
  baseUrl: string
  apiKey?: string
  /** Variable holding the key; without apiKey and apiKeyEnv no key is sent. */
  apiKeyEnv?: string
  /** Resolves apiKeyEnv (e.g. the config seam's credential layers) before the environment. */
  credentials?: CredentialLookup
  models: OpenAiModelConfig[]
  /** Extra request headers (gateways). */
  headers?: Record<string, string>
  /**
   * The output limit's field: `max_tokens` (default) or `max_completion_tokens` (OpenAI's own API,
   * whose reasoning models refuse `max_tokens`).
   */
  maxTokensField?: 'max_tokens' | 'max_completion_tokens'
  idleTimeoutMs?: number
  retry?: RetryMode
}

const EFFORTS: readonly ReasoningEffort[] = ['low', 'medium', 'high', 'max']

const effort = (options: LlmCallOptions) => options.reasoningEffort === undefined ? {} : { reasoning_effort: options.reasoningEffort }

const OPENAI_DIALECT: WireDialect = {
  sendReasoningContent: false,
  requestFields: effort,
}

/** The limit as `max_completion_tokens` (an undefined `max_tokens` leaves the body). */
const COMPLETION_TOKENS_DIALECT: WireDialect = {
  sendReasoningContent: false,
  requestFields: (options: LlmCallOptions) => ({
    ...options.maxTokens === undefined ? {} : { max_tokens: undefined, max_completion_tokens: options.maxTokens },
    ...effort(options),
  }),
}

export class OpenAiCompatibleAdapter implements LlmAdapter {
  readonly provider: string
  /** The transport waits for the request's hold itself, after building the request. */
  readonly awaitsRequestHold = true

  private readonly dialect: WireDialect

  /** `consent`: a stored key's first use with an endpoint another layer chose is asked or said (../key-use.ts). */
  constructor(private readonly config: OpenAiCompatibleConfig, private readonly consent?: KeyUseConsent) {
    this.provider = config.provider
    this.dialect = config.maxTokensField === 'max_completion_tokens' ? COMPLETION_TOKENS_DIALECT : OPENAI_DIALECT
  }

  /** Opens the endpoint's connection ahead of the next call (LlmAdapter.warm). */
  warm(): void {
    warmConnection(`${this.config.baseUrl.replace(/\/+$/, '')}/chat/completions`)
  }

  /** The transport's own stream, built at the first `next()` (no generator level per chunk here). */
  stream(options: LlmCallOptions): AsyncGenerator<StreamChunk> {
    return streamChatCompletion(async () => {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream', ...this.config.headers }
      if (this.config.apiKeyEnv !== undefined) await this.consent?.check(this.config.baseUrl, options, this.provider)
      const apiKey = await this.apiKey()
      if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`
      return {
        url: `${this.config.baseUrl.replace(/\/+$/, '')}/chat/completions`,
        headers,
        body: encodeRequestBody(await inlineAttachments(options), this.dialect),
        signal: options.signal,
        hold: requestHold(options),
        idleTimeoutMs: this.config.idleTimeoutMs,
        label: this.provider,
      }
    })
  }

  private async apiKey(): Promise<string | undefined> {
    if (this.config.apiKey !== undefined) return this.config.apiKey
    if (this.config.apiKeyEnv === undefined) return undefined
    const key = await this.config.credentials?.(this.config.apiKeyEnv) ?? process.env[this.config.apiKeyEnv]
    if (key === undefined || key === '') {
      throw new LlmError('MISSING_CREDENTIAL', `${this.provider}: no API key; set ${this.config.apiKeyEnv} in the environment or pass apiKey in the plugin config`)
    }
    return key
  }
}

/** Checks the config and derives the catalogue entries; errors name the bad field. */
export function openAiModels(config: OpenAiCompatibleConfig): ModelInfo[] {
  const label = typeof config?.provider === 'string' && config.provider !== '' ? config.provider : 'openai-compatible'
  const fail = (detail: string) => { throw new LlmError('INVALID_CONFIG', `${label}: ${detail}`) }
  if (typeof config?.provider !== 'string' || config.provider === '') fail('provider must be a non-empty string')
  if (typeof config.baseUrl !== 'string') fail('baseUrl is required (e.g. http://127.0.0.1:8000/v1)')
  validateTransportConfig(label, config)
  if (config.apiKeyEnv !== undefined && (typeof config.apiKeyEnv !== 'string' || config.apiKeyEnv === '')) fail('apiKeyEnv must be a variable name')
  if (config.apiKey !== undefined && typeof config.apiKey !== 'string') fail('apiKey must be a string')
  if (config.credentials !== undefined && typeof config.credentials !== 'function') fail('credentials must be a function (name) => secret')
  if (config.maxTokensField !== undefined && config.maxTokensField !== 'max_tokens' && config.maxTokensField !== 'max_completion_tokens') fail('maxTokensField must be max_tokens or max_completion_tokens')
  if (!Array.isArray(config.models) || config.models.length === 0) fail('models must list at least one {model, contextWindow, defaultMaxTokens}')
  return config.models.map((m, i) => {
    const where = `models[${i}]`
    if (typeof m?.model !== 'string' || m.model === '') fail(`${where}.model must be a non-empty string`)
    for (const field of ['contextWindow', 'defaultMaxTokens'] as const) {
      if (!Number.isSafeInteger(m[field]) || m[field] <= 0) fail(`${where}.${field} must be a positive integer, got ${JSON.stringify(m[field])}`)
    }
    for (const effort of m.reasoningEfforts ?? []) {
      if (!EFFORTS.includes(effort)) fail(`${where}.reasoningEfforts: unknown effort ${JSON.stringify(effort)} (known: ${EFFORTS.join(', ')})`)
    }
    return Object.freeze({
      provider: config.provider,
      model: m.model,
      contextWindow: m.contextWindow,
      defaultMaxTokens: m.defaultMaxTokens,
      reasoningEfforts: Object.freeze([...m.reasoningEfforts ?? []]),
      imageInput: m.imageInput ?? false,
    })
  })
}

/** Registers one OpenAI-compatible route; load it once per server with its own `provider`. */
export class OpenAiCompatiblePlugin {
  static readonly inject = ['llm']

  constructor(ctx: Context, config: OpenAiCompatibleConfig) {
    const models = openAiModels(config)
    const adapter = new OpenAiCompatibleAdapter(config)
    ctx.effect(() => ctx.llm.register({ adapter, models, retry: config.retry ?? 'normal' }))
  }
}
