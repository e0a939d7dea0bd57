/**
 * The vocabulary of `web_search` (docs/web-search.md): one query goes to one provider, which
 * answers with sources (a URL each, the rest optional) and, for providers that write one, an
 * answer. A provider only builds its request and reads its response; sending (the session's
 * network mode, the gate, the timeout) is the tool's, so every provider obeys the same policy.
 */
import { ToolError } from '../tools/errors.js'

export interface SearchSource {
  readonly url: string
  readonly title?: string
  readonly snippet?: string
  readonly publishedAt?: string
}

export interface SearchResult {
  /** A provider's own written answer (Perplexity), when it gives one. */
  readonly answer?: string
  readonly sources: readonly SearchSource[]
}

/** One HTTP request a provider wants sent. */
export interface ProviderRequest {
  readonly url: string
  readonly method: 'GET' | 'POST'
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
}

export interface SearchProvider {
  /** The name settings and results use: `deepseek`, `exa`, `perplexity` or the user's own. */
  readonly id: string
  /** What the failures say: `DeepSeek`, `Exa`, ... */
  readonly label: string
  /** The request for one query; `maxResults` is a hint (the tool cuts the list anyway). */
  request(query: string, maxResults: number): ProviderRequest
  /** The sources (and answer) of a 2xx response's parsed JSON body; throws `WebSearchError` on a wrong shape. */
  parse(body: unknown): SearchResult
}

export const WebSearchErrorCode = {
  /** No provider configured, an unknown one, or one whose key is missing. */
  unavailable: 'WEB_SEARCH_UNAVAILABLE',
  /** The provider answered with an error, a redirect or a body of the wrong shape. */
  provider: 'WEB_SEARCH_PROVIDER_ERROR',
  /** The session's network mode or the gate did not let the request out. */
  network: 'WEB_SEARCH_NETWORK_REFUSED',
  /** A key may go only to its own provider's host. */
  keyHost: 'WEB_SEARCH_KEY_HOST',
  timeout: 'TIMEOUT',
  aborted: 'ABORTED',
} as const

export class WebSearchError extends ToolError {
  override name = 'WebSearchError'
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A non-empty trimmed string, or undefined. */
export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}
