/**
 * A search provider the user describes in settings.yaml (docs/web-search.md, "Your own
 * provider"): a URL template, optional headers and JSON body, and where the results sit in the
 * JSON answer. `{query}`, `{count}` and `{key}` are filled in (URL-encoded inside the URL).
 */
import { isRecord, text, WebSearchError, WebSearchErrorCode, type ProviderRequest, type SearchProvider, type SearchSource } from './api.js'
import { keyFor, type KeyLookup } from './providers.js'

export interface CustomProviderConfig {
  /** e.g. `https://api.search.brave.com/res/v1/web/search?q={query}&count={count}`. */
  readonly url: string
  readonly method?: 'GET' | 'POST'
  readonly headers?: Readonly<Record<string, string>>
  /** A JSON value sent as the body (POST); its strings are templates too. */
  readonly body?: unknown
  /** The variable holding the key `{key}` stands for. */
  readonly apiKeyEnv?: string
  /** Dotted path to the list of results in the answer (`web.results`; empty: the answer itself). */
  readonly results: string
  /** Dotted paths inside one result (defaults: url, title, snippet, date). */
  readonly fields?: { readonly url?: string; readonly title?: string; readonly snippet?: string; readonly date?: string }
  /** Dotted path to a written answer, when the service gives one. */
  readonly answer?: string
}

function at(value: unknown, path: string): unknown {
  if (path === '') return value
  let current = value
  for (const part of path.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(part)) current = current[Number(part)]
    else if (isRecord(current)) current = current[part]
    else return undefined
  }
  return current
}

/** Checks a `webSearch.providers.<id>` entry that is not a shipped provider; names what is wrong. */
export function checkCustomProvider(id: string, value: unknown): CustomProviderConfig {
  const where = `webSearch.providers.${id} in settings.yaml`
  if (!isRecord(value)) throw new WebSearchError(`${where} must be a mapping with url and results`, WebSearchErrorCode.unavailable)
  const problems: string[] = []
  if (typeof value.url !== 'string' || !/^https?:\/\//i.test(value.url)) problems.push('url must be an http(s) URL template')
  if (typeof value.results !== 'string') problems.push('results must name where the list of results is (a dotted path, "" for the whole answer)')
  if (value.method !== undefined && value.method !== 'GET' && value.method !== 'POST') problems.push('method must be GET or POST')
  if (value.headers !== undefined && (!isRecord(value.headers) || Object.values(value.headers).some(one => typeof one !== 'string'))) problems.push('headers must map names to strings')
  if (value.apiKeyEnv !== undefined && (typeof value.apiKeyEnv !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(value.apiKeyEnv))) problems.push('apiKeyEnv must be a variable name')
  if (value.fields !== undefined && (!isRecord(value.fields) || Object.values(value.fields).some(one => typeof one !== 'string'))) problems.push('fields must map url, title, snippet, date to dotted paths')
  if (value.answer !== undefined && typeof value.answer !== 'string') problems.push('answer must be a dotted path')
  const uses = JSON.stringify([value.url, value.headers ?? {}, value.body ?? null])
  if (uses.includes('{key}') && value.apiKeyEnv === undefined) problems.push('{key} is used but apiKeyEnv does not name the variable holding it')
  if (problems.length > 0) throw new WebSearchError(`${where}: ${problems.join('; ')}`, WebSearchErrorCode.unavailable)
  return value as unknown as CustomProviderConfig
}

export function customProvider(id: string, config: CustomProviderConfig, lookup: KeyLookup): SearchProvider {
  const label = `the "${id}"`
  const fields = { url: 'url', title: 'title', snippet: 'snippet', date: 'date', ...config.fields }
  return {
    id, label: `"${id}"`,
    request(query, maxResults): ProviderRequest {
      const uses = JSON.stringify([config.url, config.headers ?? {}, config.body ?? null]).includes('{key}')
      const key = uses ? keyFor(config.apiKeyEnv!, config.url.replace(/\{[a-z]+\}/g, 'x'), lookup, label) : ''
      const values: Record<string, string> = { query, count: String(maxResults), key }
      const fill = (template: string, encode: (value: string) => string) => template.replace(/\{(query|count|key)\}/g, (_, name: string) => encode(values[name]!))
      const deep = (value: unknown): unknown => typeof value === 'string' ? fill(value, same => same)
        : Array.isArray(value) ? value.map(deep)
        : isRecord(value) ? Object.fromEntries(Object.entries(value).map(([name, one]) => [name, deep(one)])) : value
      const headers: Record<string, string> = { accept: 'application/json' }
      for (const [name, one] of Object.entries(config.headers ?? {})) headers[name.toLowerCase()] = fill(one, same => same)
      const method = config.method ?? (config.body !== undefined ? 'POST' : 'GET')
      if (config.body !== undefined) headers['content-type'] ??= 'application/json'
      return {
        url: fill(config.url, encodeURIComponent), method, headers,
        ...(config.body !== undefined ? { body: JSON.stringify(deep(config.body)) } : {}),
      }
    },
    parse(body) {
      const list = at(body, config.results)
      if (!Array.isArray(list)) throw new WebSearchError(`"${id}" returned no list at ${JSON.stringify(config.results)} (webSearch.providers.${id}.results)`, WebSearchErrorCode.provider)
      const sources: SearchSource[] = []
      for (const item of list) {
        const link = text(at(item, fields.url))
        if (link === undefined) continue
        const title = text(at(item, fields.title))
        const snippet = text(at(item, fields.snippet))
        const publishedAt = text(at(item, fields.date))
        sources.push({ url: link, ...(title ? { title } : {}), ...(snippet ? { snippet } : {}), ...(publishedAt ? { publishedAt } : {}) })
      }
      const answer = config.answer !== undefined ? text(at(body, config.answer)) : undefined
      return { ...(answer !== undefined ? { answer } : {}), sources }
    },
  }
}
