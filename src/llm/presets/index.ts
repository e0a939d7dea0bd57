/**
 * Provider presets as routes (`ctx.llmPresets`, docs/llm.md "Provider presets"): `openai/gpt-5`,
 * `anthropic/claude-sonnet-4-5`, `openrouter/<any model>`, `ollama/<any model>`, ... A preset's
 * route is registered the first time a model of it is asked for (`resolve`), and its adapter's
 * module is imported at that route's first request: a run that uses none of them loads and
 * registers nothing. A route the profile or the user's settings already hold under the same
 * provider name is theirs, never replaced.
 *
 * Keys come from each provider's usual variable through the credentials lookup (the host's layers:
 * environment, `.credentials.yaml`, ...); local servers get none. A base URL variable
 * (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `OLLAMA_HOST`) moves the endpoint; when the key is a
 * stored one, its first use with an endpoint another layer chose is asked or said (../key-use.ts).
 */
import { Service, type Context } from 'cordis'
import { LlmError } from '../errors.js'
import { askSurfaces, KeyUseConsent, type KeyUseGate } from '../key-use.js'
import { validateTransportConfig } from '../openai-stream.js'
import type { CredentialLookup } from '../deepseek/index.js'
import type { LlmAdapter, LlmCallOptions, ModelInfo, StreamChunk } from '../types.js'
import { presetBaseUrl, PROVIDER_PRESETS, type PresetModel, type ProviderPreset } from './catalog.js'
import '../api.js'

export * from './catalog.js'

export interface PresetsConfig {
  /** Resolves a key variable (the host's layers), before the process environment. */
  readonly credentials?: CredentialLookup
  /** Reads a base URL variable; default the process environment. */
  readonly variable?: (name: string) => string | undefined
  /** The first-use gate for a preset's stored key sent to a base URL a variable chose. */
  readonly keyUse?: (keyEnv: string, urlEnv: string) => KeyUseGate | undefined
  /** Idle watchdog of every preset's requests (L-9); default the transport's 300 000 ms. */
  readonly idleTimeoutMs?: number
}

export type Route = { provider: string; model: string }

export interface PresetsService {
  readonly presets: readonly ProviderPreset[]
  /**
   * The route of `provider/model` when `provider` is a preset (registered now if it was not), or
   * of a bare model name exactly one preset lists; undefined when no preset owns the name.
   * Throws `AMBIGUOUS_MODEL` when several presets list a bare name.
   */
  resolve(name: string): Route | undefined
  /** One line naming the presets and how to choose one, for "unknown model" messages. */
  hint(): string
}

declare module 'cordis' {
  interface Context {
    llmPresets: PresetsService
  }
}

/** Limits of a model a preset does not list (it may be newer than this catalogue). */
const UNLISTED: Readonly<Record<string, { contextWindow: number; defaultMaxTokens: number }>> = {
  openai: { contextWindow: 128_000, defaultMaxTokens: 16_384 },
  anthropic: { contextWindow: 200_000, defaultMaxTokens: 32_000 },
}

function modelInfo(preset: ProviderPreset, model: PresetModel): ModelInfo {
  return Object.freeze({
    provider: preset.id, model: model.model, contextWindow: model.contextWindow, defaultMaxTokens: model.defaultMaxTokens,
    reasoningEfforts: Object.freeze([...model.reasoningEfforts ?? []]), imageInput: model.imageInput ?? false,
    ...model.thinking !== undefined ? { thinking: model.thinking } : {},
  })
}

/**
 * A preset's adapter before its module is loaded: it knows the key (for `readiness`) and imports
 * the real adapter at the first request or warm-up, then hands every call to it.
 */
class PresetAdapter implements LlmAdapter {
  readonly provider: string
  readonly awaitsRequestHold = true
  private loaded?: Promise<LlmAdapter>

  constructor(private readonly preset: ProviderPreset, private readonly build: () => Promise<LlmAdapter>, private readonly key: () => string | undefined | Promise<string | undefined>) {
    this.provider = preset.id
  }

  readiness(): string | undefined {
    const env = this.preset.keyEnv
    if (env === undefined) return undefined
    const key = this.key()
    // An asynchronous credential store cannot be asked here; the request will say if it is empty.
    if (key instanceof Promise || (typeof key === 'string' && key !== '')) return undefined
    return `${env} is not set: export ${env}=<your ${this.preset.label} key>, or store it in $DSH_HOME/.credentials.yaml`
  }

  missingCredential(): string | undefined {
    return this.readiness() === undefined ? undefined : this.preset.keyEnv
  }

  warm(model: string): void {
    this.adapter().then(adapter => adapter.warm?.(model), () => {})
  }

  stream(options: LlmCallOptions): AsyncGenerator<StreamChunk> {
    let inner: Promise<AsyncGenerator<StreamChunk>> | undefined
    const open = () => inner ??= this.adapter().then(adapter => adapter.stream(options) as AsyncGenerator<StreamChunk>)
    const stream: AsyncGenerator<StreamChunk> = {
      next: async () => (await open()).next(),
      return: async value => inner === undefined ? { value, done: true } : (await inner).return(value),
      throw: async error => (await open()).throw(error),
      [Symbol.asyncIterator]: () => stream,
    }
    return stream
  }

  private adapter(): Promise<LlmAdapter> {
    this.loaded ??= this.build()
    return this.loaded
  }
}

export class ProviderPresetsPlugin extends Service implements PresetsService {
  static readonly inject = ['llm']

  readonly presets = PROVIDER_PRESETS
  /** Registered presets: their models so far and the registration's disposer. */
  private readonly routes = new Map<string, { adapter: PresetAdapter; models: ModelInfo[]; dispose: () => void }>()

  constructor(ctx: Context, private readonly config: PresetsConfig = {}) {
    super(ctx, 'llmPresets')
    validateTransportConfig('llm-presets', { idleTimeoutMs: config?.idleTimeoutMs })
  }

  hint(): string {
    return `presets: ${this.presets.map(preset => `${preset.id}/<model>`).join(', ')} (docs/llm.md)`
  }

  resolve(name: string): Route | undefined {
    const slash = name.indexOf('/')
    if (slash > 0) {
      const preset = this.presets.find(candidate => candidate.id === name.slice(0, slash))
      const model = name.slice(slash + 1)
      if (preset === undefined || model === '') return undefined
      return this.route(preset, model)
    }
    const owners = this.presets.filter(preset => preset.models.some(model => model.model === name))
    if (owners.length === 0) return undefined
    if (owners.length > 1) throw new LlmError('AMBIGUOUS_MODEL', `model "${name}" is offered by ${owners.map(preset => preset.id).join(' and ')}: choose one as ${owners.map(preset => `${preset.id}/${name}`).join(' or ')}`)
    return this.route(owners[0]!, name)
  }

  private route(preset: ProviderPreset, model: string): Route | undefined {
    const known = this.routes.get(preset.id)
    if (known === undefined && this.ctx.llm.adapter(preset.id) !== undefined) return undefined // the profile's or the user's own route
    if (known?.models.some(info => info.model === model)) return { provider: preset.id, model }
    const listed = preset.models.find(entry => entry.model === model)
    const limits = preset.anyModel ?? UNLISTED[preset.id] ?? { contextWindow: 128_000, defaultMaxTokens: 8192 }
    const base = known?.models ?? preset.models.map(entry => modelInfo(preset, entry))
    const models = base.some(info => info.model === model) ? base : [...base, modelInfo(preset, listed ?? { model, ...limits })]
    const adapter = known?.adapter ?? this.adapter(preset)
    known?.dispose()
    const dispose = this.ctx.effect(() => this.ctx.llm.register({ adapter, models, retry: 'normal' }), `llm-presets: ${preset.id}`)
    this.routes.set(preset.id, { adapter, models, dispose })
    return { provider: preset.id, model }
  }

  private adapter(preset: ProviderPreset): PresetAdapter {
    const variable = this.config.variable ?? ((name: string) => process.env[name])
    const keyEnv = preset.keyEnv
    const key = () => keyEnv === undefined ? undefined : this.config.credentials?.(keyEnv) ?? process.env[keyEnv]
    const credentials = async (name: string) => await this.config.credentials?.(name) ?? process.env[name]
    const idle = this.config.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: this.config.idleTimeoutMs }
    return new PresetAdapter(preset, async () => {
      const chosen = preset.baseUrlEnv === undefined ? undefined : variable(preset.baseUrlEnv)
      let baseUrl: string
      try {
        baseUrl = presetBaseUrl(preset, chosen)
        new URL(baseUrl)
      } catch {
        throw new LlmError('INVALID_CONFIG', `${preset.id}: ${preset.baseUrlEnv} is not a URL: ${JSON.stringify(chosen)}`)
      }
      // A stored key sent to an endpoint a variable chose: asked or said on its first use.
      const gate = chosen !== undefined && keyEnv !== undefined && preset.baseUrlEnv !== undefined ? this.config.keyUse?.(keyEnv, preset.baseUrlEnv) : undefined
      const consent = gate === undefined ? undefined : new KeyUseConsent(gate, askSurfaces(this.ctx))
      if (preset.wire === 'anthropic') {
        const { AnthropicAdapter } = await import('../anthropic/index.js')
        const maxTokensOf = (model: string) => this.routes.get(preset.id)?.models.find(info => info.model === model)?.defaultMaxTokens
        return new AnthropicAdapter({ provider: preset.id, baseUrl, ...keyEnv !== undefined ? { apiKeyEnv: keyEnv } : {}, credentials, ...idle }, maxTokensOf, consent)
      }
      const { OpenAiCompatibleAdapter } = await import('../openai/index.js')
      return new OpenAiCompatibleAdapter({
        provider: preset.id, baseUrl, models: [], credentials, ...idle,
        ...keyEnv !== undefined ? { apiKeyEnv: keyEnv } : {},
        ...preset.headers !== undefined ? { headers: { ...preset.headers } } : {},
        ...preset.maxTokensField !== undefined ? { maxTokensField: preset.maxTokensField } : {},
      }, consent)
    }, key)
  }
}
