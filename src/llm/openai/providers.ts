/**
 * OpenAI-compatible providers the user added in settings (`providers:` in settings.yaml, the web
 * UI's Settings → Model providers): each entry becomes an OpenAI-compatible route at start and
 * can be added, replaced or removed while dsh runs (`ctx.llmProviders`). Keys are not part of an
 * entry: it names the credential (`apiKeyEnv`, e.g. `LOCAL_VLLM_API_KEY`) that the credentials
 * lookup resolves per request.
 *
 * Model lists come from the server's `GET <baseUrl>/models` (`discoverModels`); a model's context
 * window is the server's `max_model_len` / `context_length` / `context_window` when it says,
 * else DEFAULT_CONTEXT_WINDOW.
 */
import { Service, type Context } from 'cordis'
import { LlmError } from '../errors.js'
import type { CredentialLookup } from '../deepseek/index.js'
import { OpenAiCompatibleAdapter, openAiModels, type OpenAiModelConfig } from './index.js'
import '../api.js'

export const DEFAULT_CONTEXT_WINDOW = 128_000
export const DEFAULT_MAX_TOKENS = 8192
/** Provider names: lower case, digits and dashes (they become route names and key names). */
export const PROVIDER_ID = /^[a-z][a-z0-9-]{0,39}$/

export interface ProviderModel {
  readonly model: string
  readonly contextWindow?: number
  readonly defaultMaxTokens?: number
  /** The model takes images (a user's pasted screenshot, `read_image`); default false. */
  readonly imageInput?: boolean
}

export interface ProviderEntry {
  readonly baseUrl: string
  /** The credential holding the key; none means no Authorization header. */
  readonly apiKeyEnv?: string
  readonly models: readonly (string | ProviderModel)[]
}

export interface ProvidersConfig {
  /** settings.yaml `providers`: id → entry (filled from the host). */
  readonly providers?: Readonly<Record<string, ProviderEntry>>
  readonly credentials?: CredentialLookup
}

export interface ProvidersService {
  /** The providers added through settings, by id. */
  list(): Readonly<Record<string, ProviderEntry>>
  /** Registers (or replaces) a provider's route; throws LlmError INVALID_CONFIG / DUPLICATE_ADAPTER. */
  set(id: string, entry: ProviderEntry): void
  remove(id: string): boolean
}

declare module 'cordis' {
  interface Context {
    llmProviders: ProvidersService
  }
}

/** The credential name of a provider's key: `local-vllm` → `LOCAL_VLLM_API_KEY`. */
export function providerKeyName(id: string): string {
  return `${id.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_+|_+$/g, '')}_API_KEY`
}

export function validBaseUrl(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new LlmError('INVALID_CONFIG', 'baseUrl is required (e.g. http://127.0.0.1:8000/v1)')
  let url: URL
  try { url = new URL(value.trim()) } catch { throw new LlmError('INVALID_CONFIG', `baseUrl "${value}" is not a URL`) }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new LlmError('INVALID_CONFIG', `baseUrl must be http(s), not ${url.protocol}`)
  if (url.username !== '' || url.password !== '') throw new LlmError('INVALID_CONFIG', 'baseUrl must not carry credentials: store the key as the provider\'s API key')
  if (url.search !== '' || url.hash !== '') throw new LlmError('INVALID_CONFIG', 'baseUrl must not have a query or fragment')
  return url.href.replace(/\/+$/, '')
}

function imageInputOf(model: ProviderModel): boolean {
  if (typeof model.imageInput !== 'boolean') throw new LlmError('INVALID_CONFIG', `model "${model.model}": imageInput must be true or false, got ${JSON.stringify(model.imageInput)}`)
  return model.imageInput
}

function modelConfigs(entry: ProviderEntry): OpenAiModelConfig[] {
  return entry.models.map(model => typeof model === 'string'
    ? { model, contextWindow: DEFAULT_CONTEXT_WINDOW, defaultMaxTokens: DEFAULT_MAX_TOKENS }
    : {
        model: model.model, contextWindow: model.contextWindow ?? DEFAULT_CONTEXT_WINDOW, defaultMaxTokens: model.defaultMaxTokens ?? Math.min(DEFAULT_MAX_TOKENS, model.contextWindow ?? DEFAULT_MAX_TOKENS),
        ...model.imageInput === undefined ? {} : { imageInput: imageInputOf(model) },
      })
}

export class SettingsProvidersPlugin extends Service implements ProvidersService {
  static readonly inject = ['llm']

  private readonly entries = new Map<string, { entry: ProviderEntry; dispose: () => void }>()
  /** Entries of settings.yaml that could not be registered at start, with the reason. */
  readonly problems: string[] = []

  constructor(ctx: Context, private readonly config: ProvidersConfig = {}) {
    super(ctx, 'llmProviders')
    for (const [id, entry] of Object.entries(config.providers ?? {})) {
      try {
        this.set(id, entry)
      } catch (error) {
        // One bad entry must not keep dsh from starting: it is left out and listed in `problems`.
        this.problems.push(`settings provider "${id}": ${(error as Error).message}`)
      }
    }
  }

  list(): Readonly<Record<string, ProviderEntry>> {
    return Object.fromEntries([...this.entries].map(([id, { entry }]) => [id, entry]))
  }

  set(id: string, entry: ProviderEntry): void {
    if (!PROVIDER_ID.test(id)) throw new LlmError('INVALID_CONFIG', `provider name "${id}" must be lower case letters, digits and dashes (at most 40)`)
    const baseUrl = validBaseUrl(entry?.baseUrl)
    if (!Array.isArray(entry.models)) throw new LlmError('INVALID_CONFIG', `${id}: models must be a list`)
    const config = { provider: id, baseUrl, ...entry.apiKeyEnv === undefined ? {} : { apiKeyEnv: entry.apiKeyEnv }, ...this.config.credentials === undefined ? {} : { credentials: this.config.credentials }, models: modelConfigs(entry) }
    const models = openAiModels(config)
    if (!this.entries.has(id) && this.ctx.llm.adapter(id) !== undefined) throw new LlmError('DUPLICATE_ADAPTER', `provider "${id}" already exists (a route of the profile); choose another name`)
    this.entries.get(id)?.dispose()
    const adapter = new OpenAiCompatibleAdapter(config)
    const dispose = this.ctx.effect(() => this.ctx.llm.register({ adapter, models, retry: 'normal' }), `llm-providers: ${id}`)
    this.entries.set(id, { entry: { ...entry, baseUrl }, dispose })
  }

  remove(id: string): boolean {
    const found = this.entries.get(id)
    if (found === undefined) return false
    found.dispose()
    this.entries.delete(id)
    return true
  }
}

export const MAX_DISCOVERY_BYTES = 2 * 1024 * 1024

/**
 * `GET <baseUrl>/models` of an OpenAI-compatible server: the model ids it lists (OpenAI's
 * `{data: [{id}]}`), with the context window when the server says. Bounded in time and size;
 * failures are LlmErrors with a message for the user.
 */
export async function discoverModels(baseUrl: string, apiKey: string | undefined, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<ProviderModel[]> {
  const url = `${validBaseUrl(baseUrl)}/models`
  const signals = [AbortSignal.timeout(options.timeoutMs ?? 10_000), ...options.signal ? [options.signal] : []]
  let response: Response
  try {
    response = await fetch(url, { headers: { accept: 'application/json', ...apiKey ? { authorization: `Bearer ${apiKey}` } : {} }, signal: AbortSignal.any(signals), redirect: 'error' })
  } catch (error) {
    throw new LlmError('TRANSPORT', `cannot reach ${url}: ${(error as Error).name === 'TimeoutError' ? 'no answer in time' : (error as Error).message}`)
  }
  if (response.status === 401 || response.status === 403) throw new LlmError('AUTH', `${url} refused the key (HTTP ${response.status})`)
  if (!response.ok) throw new LlmError('HTTP_ERROR', `${url} answered HTTP ${response.status}`)
  const reader = response.body?.getReader()
  const parts: Uint8Array[] = []
  let size = 0
  while (reader) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > MAX_DISCOVERY_BYTES) {
      await reader.cancel()
      throw new LlmError('INVALID_RESPONSE', `${url}: the model list is larger than ${MAX_DISCOVERY_BYTES} bytes`)
    }
    parts.push(value)
  }
  let body: any
  try { body = JSON.parse(Buffer.concat(parts).toString('utf8')) } catch { throw new LlmError('INVALID_RESPONSE', `${url} did not answer JSON`) }
  const list = Array.isArray(body?.data) ? body.data : Array.isArray(body?.models) ? body.models : undefined
  if (list === undefined) throw new LlmError('INVALID_RESPONSE', `${url} did not answer a model list ({"data": [{"id": ...}]})`)
  const models: ProviderModel[] = []
  const seen = new Set<string>()
  for (const item of list) {
    const id = typeof item === 'string' ? item : typeof item?.id === 'string' ? item.id : typeof item?.name === 'string' ? item.name : undefined
    if (id === undefined || id === '' || id.length > 200 || seen.has(id)) continue
    seen.add(id)
    const window = [item?.max_model_len, item?.context_length, item?.context_window].find(value => Number.isSafeInteger(value) && value > 0) as number | undefined
    models.push(window === undefined ? { model: id } : { model: id, contextWindow: window })
    if (models.length >= 500) break
  }
  return models.sort((a, b) => a.model.localeCompare(b.model))
}
