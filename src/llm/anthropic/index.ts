/**
 * The Anthropic adapter: the native Messages API (`POST <base>/v1/messages`, streamed SSE), written
 * for dsh (no SDK). Request shape in ./wire.ts, stream translation in ./stream.ts; the POST, the
 * idle watchdog and the HTTP error classes are the shared transport's (../openai-stream.ts):
 * 429 RATE_LIMIT and 529 overloaded (SERVER) are retried by the retry policy with the provider's
 * `retry-after`, an `error` event after the 200 fails the attempt with its type's code.
 */
import type { Context } from 'cordis'
import type { RetryMode } from '../api.js'
import { warmConnection } from '../connections.js'
import { LlmError } from '../errors.js'
import { askSurfaces, KeyUseConsent, type KeyUseGate } from '../key-use.js'
import { streamSse, validateTransportConfig } from '../openai-stream.js'
import { inlineAttachments } from '../openai-wire.js'
import { requestHold } from '../request-hold.js'
import type { CredentialLookup } from '../deepseek/index.js'
import { presetById } from '../presets/catalog.js'
import type { LlmAdapter, LlmCallOptions, ModelInfo, ReasoningEffort, StreamChunk } from '../types.js'
import { MessagesTranslator } from './stream.js'
import { buildMessagesBody } from './wire.js'

export const ANTHROPIC_PROVIDER = 'anthropic'
export const ANTHROPIC_API_KEY_ENV = 'ANTHROPIC_API_KEY'
export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com'
export const ANTHROPIC_VERSION = '2023-06-01'

export interface AnthropicModelConfig {
  model: string
  contextWindow: number
  defaultMaxTokens: number
  reasoningEfforts?: ReasoningEffort[]
  imageInput?: boolean
  thinking?: boolean
}

export interface AnthropicConfig {
  /** The route's provider name (default `anthropic`). */
  provider?: string
  /** Default: `$ANTHROPIC_BASE_URL`, else https://api.anthropic.com (the path `/v1/messages` follows). */
  baseUrl?: string
  apiKey?: string
  /** Variable holding the key (default ANTHROPIC_API_KEY), resolved by `credentials`, then the environment. */
  apiKeyEnv?: string
  credentials?: CredentialLookup
  /** Default: the preset's models (./presets/catalog.ts). */
  models?: AnthropicModelConfig[]
  /** `cache_control` breakpoints on the system prompt, tools and the last user turns (default true). */
  promptCaching?: boolean
  idleTimeoutMs?: number
  retry?: RetryMode
  /** A stored key's first use with an endpoint another layer chose is asked or said (../key-use.ts). */
  keyUse?: KeyUseGate
}

export class AnthropicAdapter implements LlmAdapter {
  readonly provider: string
  readonly awaitsRequestHold = true
  private readonly keyEnv: string

  /** `maxTokensOf`: the model's default output limit, for a call that did not go through `prepareCall`. */
  constructor(private readonly config: AnthropicConfig = {}, private readonly maxTokensOf: (model: string) => number | undefined = () => undefined, private readonly consent?: KeyUseConsent) {
    this.provider = config.provider ?? ANTHROPIC_PROVIDER
    this.keyEnv = config.apiKeyEnv ?? ANTHROPIC_API_KEY_ENV
  }

  readiness(): string | undefined {
    if (this.config.apiKey) return undefined
    const stored = this.config.credentials?.(this.keyEnv)
    if (stored instanceof Promise || (typeof stored === 'string' && stored !== '')) return undefined
    if (process.env[this.keyEnv]) return undefined
    return `${this.keyEnv} is not set: export ${this.keyEnv}=<your key>, or store it in $DSH_HOME/.credentials.yaml`
  }

  missingCredential(): string | undefined {
    return this.readiness() === undefined ? undefined : this.keyEnv
  }

  warm(): void {
    warmConnection(this.url())
  }

  stream(options: LlmCallOptions): AsyncGenerator<StreamChunk> {
    return streamSse(async () => {
      await this.consent?.check(this.baseUrl(), options, this.provider)
      const apiKey = await this.apiKey()
      const maxTokens = options.maxTokens ?? this.maxTokensOf(options.model) ?? 8192
      return {
        url: this.url(),
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': apiKey, 'anthropic-version': ANTHROPIC_VERSION },
        body: buildMessagesBody(await inlineAttachments(options), maxTokens, { promptCaching: this.config.promptCaching }),
        signal: options.signal,
        hold: requestHold(options),
        idleTimeoutMs: this.config.idleTimeoutMs,
        label: this.provider,
      }
    }, () => new MessagesTranslator())
  }

  private baseUrl(): string {
    return (this.config.baseUrl ?? process.env.ANTHROPIC_BASE_URL ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, '')
  }

  private url(): string {
    // A base that already ends in /v1 (as some gateways are written) gets no second one.
    const base = this.baseUrl()
    return base.endsWith('/v1') ? `${base}/messages` : `${base}/v1/messages`
  }

  private async apiKey(): Promise<string> {
    const key = this.config.apiKey ?? await this.config.credentials?.(this.keyEnv) ?? process.env[this.keyEnv]
    if (key === undefined || key === '') {
      throw new LlmError('MISSING_CREDENTIAL', `${this.provider}: no API key; set ${this.keyEnv} in the environment (or store it as a credential)`)
    }
    return key
  }
}

/** The catalogue entries of a config (the preset's models by default); errors name the field. */
export function anthropicModels(config: AnthropicConfig): ModelInfo[] {
  const provider = config.provider ?? ANTHROPIC_PROVIDER
  const fail = (detail: string) => { throw new LlmError('INVALID_CONFIG', `${provider}: ${detail}`) }
  const listed = config.models ?? presetById(ANTHROPIC_PROVIDER)!.models.map(({ price: _price, ...model }) => ({ ...model, reasoningEfforts: [...model.reasoningEfforts ?? []] }))
  if (!Array.isArray(listed) || listed.length === 0) fail('models must list at least one {model, contextWindow, defaultMaxTokens}')
  return listed.map((m, i) => {
    if (typeof m?.model !== 'string' || m.model === '') fail(`models[${i}].model must be a non-empty string`)
    for (const field of ['contextWindow', 'defaultMaxTokens'] as const) {
      if (!Number.isSafeInteger(m[field]) || m[field] <= 0) fail(`models[${i}].${field} must be a positive integer, got ${JSON.stringify(m[field])}`)
    }
    return Object.freeze({
      provider, model: m.model, contextWindow: m.contextWindow, defaultMaxTokens: m.defaultMaxTokens,
      reasoningEfforts: Object.freeze([...m.reasoningEfforts ?? []]), imageInput: m.imageInput ?? true, thinking: m.thinking ?? true,
    })
  })
}

/** Registers the Anthropic route and its models for the plugin's lifetime. */
export class AnthropicPlugin {
  static readonly inject = ['llm']

  constructor(ctx: Context, config: AnthropicConfig = {}) {
    const label = config?.provider ?? ANTHROPIC_PROVIDER
    validateTransportConfig(label, config ?? {})
    if (config?.apiKey !== undefined && typeof config.apiKey !== 'string') throw new LlmError('INVALID_CONFIG', `${label}: apiKey must be a string`)
    if (config?.credentials !== undefined && typeof config.credentials !== 'function') throw new LlmError('INVALID_CONFIG', `${label}: credentials must be a function (name) => secret`)
    if (config?.promptCaching !== undefined && typeof config.promptCaching !== 'boolean') throw new LlmError('INVALID_CONFIG', `${label}: promptCaching must be true or false`)
    const models = anthropicModels(config ?? {})
    const consent = config?.keyUse === undefined ? undefined : new KeyUseConsent(config.keyUse, askSurfaces(ctx))
    const adapter = new AnthropicAdapter(config ?? {}, model => models.find(info => info.model === model)?.defaultMaxTokens, consent)
    ctx.effect(() => ctx.llm.register({ adapter, models, retry: config?.retry ?? 'normal' }))
  }
}
