/**
 * The DeepSeek adapter: provider route `deepseek-official`, the official chat-completions API.
 *
 * Thinking and effort on the wire (see docs/llm.md): `thinking: {type: enabled|disabled}` is sent
 * on every request (the API's own default is enabled); `reasoning_effort` is sent only while
 * thinking is on, with the effort passed through (`low`, `high`, `max`).
 */
import type { Context } from 'cordis'
import type { RetryMode } from '../api.js'
import { warmConnection } from '../connections.js'
import { LlmError } from '../errors.js'
import { streamChatCompletion, validateTransportConfig } from '../openai-stream.js'
import { askSurfaces, KeyUseConsent, type KeyUseGate } from '../key-use.js'
import { encodeRequestBody, inlineAttachments, type WireDialect } from '../openai-wire.js'
import { requestHold } from '../request-hold.js'
import type { LlmAdapter, LlmCallOptions, ModelInfo, StreamChunk } from '../types.js'

export const DEEPSEEK_PROVIDER = 'deepseek-official'
export const DEEPSEEK_DEFAULT_MODEL = 'deepseek-v4-flash'
export const DEEPSEEK_DEFAULT_BASE_URL = 'https://api.deepseek.com'
export const DEEPSEEK_API_KEY_ENV = 'DEEPSEEK_API_KEY'

/** Both V4 models: 1M-token context, text input only, thinking on by default. */
export const DEEPSEEK_MODELS: readonly ModelInfo[] = Object.freeze([
  { provider: DEEPSEEK_PROVIDER, model: DEEPSEEK_DEFAULT_MODEL, contextWindow: 1_048_576, defaultMaxTokens: 256_000, reasoningEfforts: ['low', 'high', 'max'], imageInput: false, thinking: true },
  { provider: DEEPSEEK_PROVIDER, model: 'deepseek-v4-pro', contextWindow: 1_048_576, defaultMaxTokens: 256_000, reasoningEfforts: ['low', 'high', 'max'], imageInput: false, thinking: true },
].map(m => Object.freeze(m)) as ModelInfo[])

/** Resolves a secret by variable name (e.g. the config seam's credential layers). */
export type CredentialLookup = (name: string) => string | undefined | Promise<string | undefined>

export interface DeepSeekConfig {
  /** Default: `$DEEPSEEK_BASE_URL`, else https://api.deepseek.com. */
  baseUrl?: string
  /** Default: `credentials('DEEPSEEK_API_KEY')`, else `$DEEPSEEK_API_KEY`, read per request. */
  apiKey?: string
  credentials?: CredentialLookup
  /** Idle watchdog per pending read (L-9); default 300 000 ms. */
  idleTimeoutMs?: number
  /** Retry policy registered with the route (L-10); default `normal`. */
  retry?: RetryMode
  /**
   * A stored key's first use with the endpoint is asked or said before the request leaves
   * (`../key-use.ts`); the launcher sets it when another layer chose the endpoint.
   */
  keyUse?: KeyUseGate
}

export const DEEPSEEK_DIALECT: WireDialect = {
  sendReasoningContent: true,
  requestFields(options: LlmCallOptions) {
    const thinking = options.thinking ?? true
    return {
      thinking: { type: thinking ? 'enabled' : 'disabled' },
      ...thinking && options.reasoningEffort !== undefined ? { reasoning_effort: options.reasoningEffort } : {},
    }
  },
}

export class DeepSeekAdapter implements LlmAdapter {
  readonly provider = DEEPSEEK_PROVIDER
  /** The transport waits for the request's hold itself, after building the request. */
  readonly awaitsRequestHold = true

  constructor(private readonly config: DeepSeekConfig = {}, private readonly consent?: KeyUseConsent) {}

  /** A missing key is reported before any work starts (the headless CLI checks this). */
  readiness(): string | undefined {
    if (this.config.apiKey) return undefined
    const stored = this.config.credentials?.(DEEPSEEK_API_KEY_ENV)
    // An asynchronous credential store cannot be asked here; the request will say if it is empty.
    if (stored instanceof Promise || (typeof stored === 'string' && stored !== '')) return undefined
    if (process.env[DEEPSEEK_API_KEY_ENV]) return undefined
    return `${DEEPSEEK_API_KEY_ENV} is not set: export ${DEEPSEEK_API_KEY_ENV}=<your key>, or store it in $DSH_HOME/.credentials.yaml`
  }

  missingCredential(): string | undefined {
    return this.readiness() === undefined ? undefined : DEEPSEEK_API_KEY_ENV
  }

  /** Opens the endpoint's connection ahead of the next call (LlmAdapter.warm). */
  warm(): void {
    warmConnection(this.url())
  }

  /** The transport's own stream, built at the first `next()` (no generator level per chunk here). */
  stream(options: LlmCallOptions): AsyncGenerator<StreamChunk> {
    return streamChatCompletion(async () => {
      await this.consent?.check(this.baseUrl(), options, DEEPSEEK_PROVIDER)
      const apiKey = await this.apiKey()
      return {
        url: this.url(),
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: `Bearer ${apiKey}` },
        body: encodeRequestBody(await inlineAttachments(options), DEEPSEEK_DIALECT),
        signal: options.signal,
        hold: requestHold(options),
        idleTimeoutMs: this.config.idleTimeoutMs,
        label: DEEPSEEK_PROVIDER,
      }
    })
  }

  private baseUrl(): string {
    return this.config.baseUrl ?? process.env.DEEPSEEK_BASE_URL ?? DEEPSEEK_DEFAULT_BASE_URL
  }

  private url(): string {
    return `${this.baseUrl().replace(/\/+$/, '')}/chat/completions`
  }

  private async apiKey(): Promise<string> {
    const key = this.config.apiKey ?? await this.config.credentials?.(DEEPSEEK_API_KEY_ENV) ?? process.env[DEEPSEEK_API_KEY_ENV]
    if (key === undefined || key === '') {
      throw new LlmError('MISSING_CREDENTIAL', `${DEEPSEEK_PROVIDER}: no API key; set ${DEEPSEEK_API_KEY_ENV} in the environment (or store it as a credential), or pass apiKey in the plugin config`)
    }
    return key
  }
}

/** Registers the DeepSeek route and its models with `ctx.llm` for the plugin's lifetime. */
export class DeepSeekPlugin {
  static readonly inject = ['llm']

  constructor(ctx: Context, config: DeepSeekConfig = {}) {
    validateTransportConfig(DEEPSEEK_PROVIDER, config ?? {})
    if (config?.apiKey !== undefined && typeof config.apiKey !== 'string') {
      throw new LlmError('INVALID_CONFIG', `${DEEPSEEK_PROVIDER}: apiKey must be a string`)
    }
    if (config?.credentials !== undefined && typeof config.credentials !== 'function') {
      throw new LlmError('INVALID_CONFIG', `${DEEPSEEK_PROVIDER}: credentials must be a function (name) => secret`)
    }
    if (config?.keyUse !== undefined && (typeof config.keyUse.firstUse !== 'function' || typeof config.keyUse.allowed !== 'function')) {
      throw new LlmError('INVALID_CONFIG', `${DEEPSEEK_PROVIDER}: keyUse must be {firstUse, allowed}`)
    }
    const adapter = new DeepSeekAdapter(config ?? {}, config?.keyUse === undefined ? undefined : new KeyUseConsent(config.keyUse, askSurfaces(ctx)))
    ctx.effect(() => ctx.llm.register({ adapter, models: DEEPSEEK_MODELS, retry: config?.retry ?? 'normal' }))
  }
}
