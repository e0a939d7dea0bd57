/**
 * The shipped search providers (docs/web-search.md): DeepSeek (a Messages call with its
 * server-side search tool; the results are the structured `web_search_tool_result` blocks,
 * never URLs read out of prose), Exa (`POST /search`) and Perplexity (`POST /chat/completions`,
 * which also writes an answer). Keys are read by name at each search (environment, then the
 * credentials file), and a shipped provider's key goes only to that provider's host.
 */
import { isRecord, text, WebSearchError, WebSearchErrorCode, type ProviderRequest, type SearchProvider, type SearchResult, type SearchSource } from './api.js'

/** Settings of a shipped provider (`webSearch.providers.<id>`); each reads only its own keys. */
export interface ShippedProviderConfig {
  readonly baseUrl?: string
  /** The variable holding the key (default the provider's usual one). */
  readonly apiKeyEnv?: string
  readonly model?: string
  readonly maxTokens?: number
  /** DeepSeek: searches the model may run for one query. */
  readonly maxUses?: number
  /** Exa: `auto`, `keyword`, `neural`. */
  readonly type?: string
  /** Perplexity: `day`, `week`, `month`, `year`. */
  readonly recency?: string
}

/** A key name (or its value) for a variable: environment, then the credentials file. */
export type KeyLookup = (name: string) => string | undefined

/**
 * The usual key of each shipped provider and the one host it may be sent to: a base URL from
 * elsewhere (a setting, a gateway) cannot take the DeepSeek key with it. A gateway takes a key of
 * its own (`apiKeyEnv`).
 */
export const KEY_HOSTS: Readonly<Record<string, string>> = Object.freeze({
  DEEPSEEK_API_KEY: 'api.deepseek.com',
  EXA_API_KEY: 'api.exa.ai',
  PERPLEXITY_API_KEY: 'api.perplexity.ai',
})

/** The key `name` names, for a request to `url`: refused when it is pinned to another host, or missing. */
export function keyFor(name: string, url: string, lookup: KeyLookup, label: string): string {
  const pinned = KEY_HOSTS[name]
  const host = new URL(url).hostname.toLowerCase()
  if (pinned !== undefined && host !== pinned) {
    throw new WebSearchError(`${name} is sent only to ${pinned}, not to ${host}: nothing was sent. Give this ${label} endpoint a key of its own (apiKeyEnv in webSearch.providers)`, WebSearchErrorCode.keyHost)
  }
  const key = lookup(name)
  if (key === undefined || key === '') {
    throw new WebSearchError(`${label} search needs ${name} (set it in the environment or ~/.dsh/.credentials.yaml), or pick another provider with webSearch.provider in settings.yaml`, WebSearchErrorCode.unavailable)
  }
  return key
}

function endpoint(base: string, path: string, label: string): string {
  try {
    const url = new URL(base)
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('not http(s)')
    return `${url.href.replace(/\/+$/, '')}${path}`
  } catch {
    throw new WebSearchError(`the ${label} search base URL ${JSON.stringify(base)} is not an http(s) URL`, WebSearchErrorCode.unavailable)
  }
}

function positive(value: number | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback
  if (!Number.isInteger(value) || value < 1) throw new WebSearchError(`${what} must be a positive integer, not ${JSON.stringify(value)}`, WebSearchErrorCode.unavailable)
  return value
}

function wrongShape(label: string, detail: string): WebSearchError {
  return new WebSearchError(`${label} returned an unexpected response body: ${detail}`, WebSearchErrorCode.provider)
}

const json = { 'content-type': 'application/json', accept: 'application/json' }

/** DeepSeek's Anthropic-compatible Messages API with the server-side `web_search` tool. */
export function deepseekProvider(config: ShippedProviderConfig, lookup: KeyLookup): SearchProvider {
  const label = 'DeepSeek'
  const url = endpoint(config.baseUrl ?? 'https://api.deepseek.com/anthropic/v1', '/messages', label)
  const maxTokens = positive(config.maxTokens, 4096, 'webSearch.providers.deepseek.maxTokens')
  const maxUses = positive(config.maxUses, 5, 'webSearch.providers.deepseek.maxUses')
  return {
    id: 'deepseek', label,
    request(query) {
      const key = keyFor(config.apiKeyEnv ?? 'DEEPSEEK_API_KEY', url, lookup, label)
      return {
        url, method: 'POST',
        headers: { ...json, 'x-api-key': key, 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: config.model ?? 'deepseek-v4-flash',
          max_tokens: maxTokens,
          messages: [{ role: 'user', content: `Perform a web search for the query: ${query}` }],
          tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: maxUses }],
        }),
      }
    },
    parse(body) {
      if (!isRecord(body) || !Array.isArray(body.content)) throw wrongShape(label, 'no content blocks')
      const sources = new Map<string, { url: string; title?: string; publishedAt?: string; snippet?: string }>()
      const snippets = new Map<string, string>()
      let searched = false
      for (const block of body.content) {
        if (!isRecord(block)) continue
        if (block.type === 'web_search_tool_result') {
          searched = true
          if (isRecord(block.content)) {
            throw new WebSearchError(`DeepSeek's web search failed: ${text(block.content.error_code) ?? 'unknown error'}`, WebSearchErrorCode.provider)
          }
          for (const item of Array.isArray(block.content) ? block.content : []) {
            const link = isRecord(item) ? text(item.url) : undefined
            if (link === undefined || sources.has(link)) continue
            const title = text(item.title)
            const publishedAt = text(item.page_age)
            sources.set(link, { url: link, ...(title ? { title } : {}), ...(publishedAt ? { publishedAt } : {}) })
          }
        } else if (block.type === 'text' && Array.isArray(block.citations)) {
          for (const citation of block.citations) {
            const link = isRecord(citation) ? text(citation.url) : undefined
            const cited = link !== undefined ? text(citation.cited_text) : undefined
            if (link !== undefined && cited !== undefined && !snippets.has(link)) snippets.set(link, cited)
          }
        }
      }
      if (!searched) throw new WebSearchError('DeepSeek returned no web_search_tool_result blocks: the request did not run its web search', WebSearchErrorCode.provider)
      return { sources: [...sources.values()].map(source => snippets.has(source.url) ? { ...source, snippet: snippets.get(source.url)! } : source) }
    },
  }
}

/** Exa's search endpoint, with one highlight per result as its snippet. */
export function exaProvider(config: ShippedProviderConfig, lookup: KeyLookup): SearchProvider {
  const label = 'Exa'
  const url = endpoint(config.baseUrl ?? 'https://api.exa.ai', '/search', label)
  return {
    id: 'exa', label,
    request(query, maxResults): ProviderRequest {
      const key = keyFor(config.apiKeyEnv ?? 'EXA_API_KEY', url, lookup, label)
      return {
        url, method: 'POST', headers: { ...json, 'x-api-key': key },
        body: JSON.stringify({ query, type: config.type ?? 'auto', numResults: maxResults, contents: { highlights: { highlightsPerUrl: 1 } } }),
      }
    },
    parse(body) {
      if (!isRecord(body) || !Array.isArray(body.results)) throw wrongShape(label, 'no results list')
      const sources: SearchSource[] = []
      for (const item of body.results) {
        const link = isRecord(item) ? text(item.url) : undefined
        if (link === undefined) continue
        const title = text(item.title)
        const snippet = Array.isArray(item.highlights) ? (item.highlights as unknown[]).map(text).find(one => one !== undefined) : undefined
        const publishedAt = text(item.publishedDate)
        sources.push({ url: link, ...(title ? { title } : {}), ...(snippet ? { snippet } : {}), ...(publishedAt ? { publishedAt } : {}) })
      }
      return { sources }
    },
  }
}

/** Perplexity's chat completions: a written answer and its search results (or bare citations). */
export function perplexityProvider(config: ShippedProviderConfig, lookup: KeyLookup): SearchProvider {
  const label = 'Perplexity'
  const url = endpoint(config.baseUrl ?? 'https://api.perplexity.ai', '/chat/completions', label)
  const maxTokens = positive(config.maxTokens, 1024, 'webSearch.providers.perplexity.maxTokens')
  return {
    id: 'perplexity', label,
    request(query): ProviderRequest {
      const key = keyFor(config.apiKeyEnv ?? 'PERPLEXITY_API_KEY', url, lookup, label)
      return {
        url, method: 'POST', headers: { ...json, authorization: `Bearer ${key}` },
        body: JSON.stringify({
          model: config.model ?? 'sonar', max_tokens: maxTokens,
          messages: [{ role: 'user', content: query }],
          ...(config.recency !== undefined ? { search_recency_filter: config.recency } : {}),
        }),
      }
    },
    parse(body): SearchResult {
      if (!isRecord(body) || !Array.isArray(body.choices)) throw wrongShape(label, 'no choices')
      const first: unknown = body.choices[0]
      const answer = isRecord(first) && isRecord(first.message) ? text(first.message.content) : undefined
      const sources: SearchSource[] = []
      if (Array.isArray(body.search_results)) {
        for (const item of body.search_results) {
          const link = isRecord(item) ? text(item.url) : undefined
          if (link === undefined) continue
          const title = text(item.title)
          const snippet = text(item.snippet)
          const publishedAt = text(item.date)
          sources.push({ url: link, ...(title ? { title } : {}), ...(snippet ? { snippet } : {}), ...(publishedAt ? { publishedAt } : {}) })
        }
      } else if (Array.isArray(body.citations)) {
        for (const link of body.citations.map(text)) if (link !== undefined) sources.push({ url: link })
      }
      return { ...(answer !== undefined ? { answer } : {}), sources }
    },
  }
}
