/**
 * The providers dsh knows out of the box (docs/llm.md, "Provider presets"): where each one is,
 * which variable holds its key and base URL, the models it lists and their prices. Data only:
 * no adapter is imported here, so reading the catalogue costs nothing at start-up; an adapter's
 * module loads when a model of its provider is first used (./index.ts).
 *
 * Prices are USD per million tokens as the providers list them when this was written; settings
 * `model.prices` overrides any of them (a provider's price changes; yours is the one that applies).
 */
import type { ReasoningEffort } from '../types.js'

/** USD per million tokens; `cacheRead` and `cacheWrite` default to `input` (as settings `model.prices` reads them). */
export interface ModelPrice {
  readonly input: number
  readonly output: number
  readonly cacheRead?: number
  readonly cacheWrite?: number
}

export type PresetWire = 'anthropic' | 'openai'

export interface PresetModel {
  readonly model: string
  readonly contextWindow: number
  readonly defaultMaxTokens: number
  readonly reasoningEfforts?: readonly ReasoningEffort[]
  readonly imageInput?: boolean
  readonly thinking?: boolean
  readonly price?: ModelPrice
}

export interface ProviderPreset {
  /** The route's provider name, the part before `/` in `--model openai/gpt-5`. */
  readonly id: string
  readonly label: string
  readonly wire: PresetWire
  /** Default endpoint base (chat completions: up to `/v1`; Anthropic: the host, `/v1/messages` follows). */
  readonly baseUrl: string
  /** The variable that moves the endpoint (a project's `.env` may set it only when trusted). */
  readonly baseUrlEnv?: string
  /** The key's variable; none for local servers (no key is sent). */
  readonly keyEnv?: string
  readonly models: readonly PresetModel[]
  /**
   * Any model name is accepted (a gateway or a local server serves what it has), with these
   * limits when the model is not listed.
   */
  readonly anyModel?: { readonly contextWindow: number; readonly defaultMaxTokens: number }
  /** Chat completions: the output limit's field (OpenAI's reasoning models take only `max_completion_tokens`). */
  readonly maxTokensField?: 'max_tokens' | 'max_completion_tokens'
  /** Extra request headers. */
  readonly headers?: Readonly<Record<string, string>>
  /** A server on the user's machine: no key, and the endpoint is the user's own. */
  readonly local?: boolean
}

const EFFORTS: readonly ReasoningEffort[] = ['low', 'medium', 'high']
const price = (input: number, output: number, cacheRead?: number, cacheWrite?: number): ModelPrice => ({
  input, output, ...cacheRead !== undefined ? { cacheRead } : {}, ...cacheWrite !== undefined ? { cacheWrite } : {},
})

/** OpenAI's chat-completions models (all take images). */
const OPENAI_MODELS: readonly PresetModel[] = [
  { model: 'gpt-5.1', contextWindow: 400_000, defaultMaxTokens: 128_000, reasoningEfforts: EFFORTS, imageInput: true, price: price(1.25, 10, 0.125) },
  { model: 'gpt-5', contextWindow: 400_000, defaultMaxTokens: 128_000, reasoningEfforts: EFFORTS, imageInput: true, price: price(1.25, 10, 0.125) },
  { model: 'gpt-5-mini', contextWindow: 400_000, defaultMaxTokens: 128_000, reasoningEfforts: EFFORTS, imageInput: true, price: price(0.25, 2, 0.025) },
  { model: 'gpt-5-nano', contextWindow: 400_000, defaultMaxTokens: 128_000, reasoningEfforts: EFFORTS, imageInput: true, price: price(0.05, 0.4, 0.005) },
  { model: 'gpt-4.1', contextWindow: 1_047_576, defaultMaxTokens: 32_768, imageInput: true, price: price(2, 8, 0.5) },
  { model: 'gpt-4.1-mini', contextWindow: 1_047_576, defaultMaxTokens: 32_768, imageInput: true, price: price(0.4, 1.6, 0.1) },
  { model: 'gpt-4o', contextWindow: 128_000, defaultMaxTokens: 16_384, imageInput: true, price: price(2.5, 10, 1.25) },
  { model: 'gpt-4o-mini', contextWindow: 128_000, defaultMaxTokens: 16_384, imageInput: true, price: price(0.15, 0.6, 0.075) },
  { model: 'o3', contextWindow: 200_000, defaultMaxTokens: 100_000, reasoningEfforts: EFFORTS, imageInput: true, price: price(2, 8, 0.5) },
  { model: 'o4-mini', contextWindow: 200_000, defaultMaxTokens: 100_000, reasoningEfforts: EFFORTS, imageInput: true, price: price(1.1, 4.4, 0.275) },
]

/**
 * Anthropic's models by their API aliases: 200K context, images, extended thinking on by default
 * (the effort picks its budget, `medium` without one; a call with `thinking: false` turns it off). Cache reads cost a tenth of input, 5-minute cache
 * writes 1.25 times input.
 */
const ANTHROPIC_MODELS: readonly PresetModel[] = [
  { model: 'claude-opus-4-5', contextWindow: 200_000, defaultMaxTokens: 32_000, reasoningEfforts: EFFORTS, imageInput: true, thinking: true, price: price(5, 25, 0.5, 6.25) },
  { model: 'claude-sonnet-4-5', contextWindow: 200_000, defaultMaxTokens: 32_000, reasoningEfforts: EFFORTS, imageInput: true, thinking: true, price: price(3, 15, 0.3, 3.75) },
  { model: 'claude-haiku-4-5', contextWindow: 200_000, defaultMaxTokens: 32_000, reasoningEfforts: EFFORTS, imageInput: true, thinking: true, price: price(1, 5, 0.1, 1.25) },
  { model: 'claude-opus-4-1', contextWindow: 200_000, defaultMaxTokens: 32_000, reasoningEfforts: EFFORTS, imageInput: true, thinking: true, price: price(15, 75, 1.5, 18.75) },
  { model: 'claude-sonnet-4-0', contextWindow: 200_000, defaultMaxTokens: 32_000, reasoningEfforts: EFFORTS, imageInput: true, thinking: true, price: price(3, 15, 0.3, 3.75) },
]

const LOCAL_LIMITS = { contextWindow: 32_768, defaultMaxTokens: 8192 }

export const PROVIDER_PRESETS: readonly ProviderPreset[] = [
  { id: 'openai', label: 'OpenAI', wire: 'openai', baseUrl: 'https://api.openai.com/v1', baseUrlEnv: 'OPENAI_BASE_URL', keyEnv: 'OPENAI_API_KEY', models: OPENAI_MODELS, maxTokensField: 'max_completion_tokens' },
  { id: 'anthropic', label: 'Anthropic', wire: 'anthropic', baseUrl: 'https://api.anthropic.com', baseUrlEnv: 'ANTHROPIC_BASE_URL', keyEnv: 'ANTHROPIC_API_KEY', models: ANTHROPIC_MODELS },
  {
    id: 'openrouter', label: 'OpenRouter', wire: 'openai', baseUrl: 'https://openrouter.ai/api/v1', baseUrlEnv: 'OPENROUTER_BASE_URL', keyEnv: 'OPENROUTER_API_KEY', models: [],
    anyModel: { contextWindow: 128_000, defaultMaxTokens: 16_384 }, headers: { 'x-title': 'dsh' },
  },
  { id: 'ollama', label: 'Ollama', wire: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', baseUrlEnv: 'OLLAMA_HOST', models: [], anyModel: LOCAL_LIMITS, local: true },
  { id: 'vllm', label: 'vLLM', wire: 'openai', baseUrl: 'http://127.0.0.1:8000/v1', baseUrlEnv: 'VLLM_BASE_URL', models: [], anyModel: LOCAL_LIMITS, local: true },
  { id: 'llamacpp', label: 'llama.cpp server', wire: 'openai', baseUrl: 'http://127.0.0.1:8080/v1', baseUrlEnv: 'LLAMACPP_BASE_URL', models: [], anyModel: LOCAL_LIMITS, local: true },
]

/** DeepSeek's own prices (its adapter is the shipped default, ../deepseek). */
const DEEPSEEK_PRICES: Readonly<Record<string, ModelPrice>> = {
  'deepseek-official/deepseek-v4-flash': price(0.14, 0.28, 0.0028),
  'deepseek-official/deepseek-v4-pro': price(1.74, 3.48, 0.0145),
}

/** Every shipped price, keyed `provider/model` (the more specific key of `model.prices`). */
export function shippedPrices(): Record<string, ModelPrice> {
  const out: Record<string, ModelPrice> = { ...DEEPSEEK_PRICES }
  for (const preset of PROVIDER_PRESETS) for (const model of preset.models) if (model.price !== undefined) out[`${preset.id}/${model.model}`] = model.price
  return out
}

export function presetById(id: string): ProviderPreset | undefined {
  return PROVIDER_PRESETS.find(preset => preset.id === id)
}

/**
 * `OLLAMA_HOST` as Ollama reads it (`host` or `host:port`, port 11434 by default; or a URL, whose
 * scheme gives the default port) -> the OpenAI-compatible base (`.../v1`). Other base variables are
 * URLs already.
 */
export function presetBaseUrl(preset: ProviderPreset, value: string | undefined): string {
  if (value === undefined || value.trim() === '') return preset.baseUrl
  const trimmed = value.trim().replace(/\/+$/, '')
  if (preset.id !== 'ollama') return trimmed
  const schemed = /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)
  const url = new URL(schemed ? trimmed : `http://${trimmed}`)
  if (!schemed && url.port === '' && !/^[^/]*:\d+/.test(trimmed)) url.port = '11434'
  // 0.0.0.0 is where a server listens, not where a client connects.
  if (url.hostname === '0.0.0.0') url.hostname = '127.0.0.1'
  const path = url.pathname.replace(/\/+$/, '')
  return `${url.origin}${path.endsWith('/v1') ? path : `${path}/v1`}`
}
