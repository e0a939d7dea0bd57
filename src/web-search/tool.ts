/**
 * `web_search` (docs/web-search.md): 1..maxQueries queries, each sent to the configured provider
 * under the session's network mode, run together; their sources merged one rank at a time
 * (deduplicated by URL, cut at maxResults), answers under a `### <query>` heading when there are
 * several. One failure aborts the other searches, waits for them, and is the result.
 */
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import type { JsonSchema } from '../tools/json-schema.js'
import type { Sandboxing } from '../tools/builtin/sandboxing.js'
import { withSpill } from '../tools/builtin/spill.js'
import { WebSearchError, WebSearchErrorCode, type SearchProvider, type SearchResult, type SearchSource } from './api.js'
import { checkCustomProvider, customProvider } from './custom.js'
import { deepseekProvider, exaProvider, perplexityProvider, type KeyLookup, type ShippedProviderConfig } from './providers.js'
import { send } from './send.js'

export interface WebSearchConfig {
  /** `deepseek` (default), `exa`, `perplexity`, or a name under `providers`. */
  readonly provider?: string
  /** Per-provider settings: a shipped provider's knobs, or the whole description of your own. */
  readonly providers?: Readonly<Record<string, unknown>>
  readonly maxResults?: number
  readonly maxQueries?: number
  /** For the whole call. */
  readonly timeoutMs?: number
  /** Reads a key by variable name (the command line: environment, then the credentials file). */
  readonly credentials?: KeyLookup
  /** The HTTP client when the network is direct; a test may route requests to a local server. */
  readonly fetch?: typeof globalThis.fetch
}

export const WEB_SEARCH_DEFAULTS = { provider: 'deepseek', maxResults: 8, maxQueries: 4, timeoutMs: 60_000 } as const

export const SHIPPED_PROVIDERS = ['deepseek', 'exa', 'perplexity'] as const

export interface WebSearchArgs {
  readonly queries: readonly string[]
}

const SHIPPED: Record<string, (config: ShippedProviderConfig, lookup: KeyLookup) => SearchProvider> = {
  deepseek: deepseekProvider, exa: exaProvider, perplexity: perplexityProvider,
}

/** The configured provider, built for this call (keys are read at each search). */
export function resolveProvider(config: WebSearchConfig): SearchProvider {
  const id = config.provider ?? WEB_SEARCH_DEFAULTS.provider
  const lookup = config.credentials ?? ((name: string) => process.env[name])
  const own = config.providers?.[id]
  const shipped = SHIPPED[id]
  if (shipped !== undefined) return shipped((own ?? {}) as ShippedProviderConfig, lookup)
  if (own === undefined) {
    throw new WebSearchError(`unknown web search provider "${id}": use ${SHIPPED_PROVIDERS.join(', ')}, or describe it under webSearch.providers.${id} in settings.yaml (url, results)`, WebSearchErrorCode.unavailable)
  }
  return customProvider(id, checkCustomProvider(id, own), lookup)
}

function oneLine(value: string): string {
  return value.replace(/\s+/g, ' ').trim()
}

function sourceLine(source: SearchSource): string {
  const title = oneLine(source.title ?? source.url).replace(/[[\]]/g, match => `\\${match}`)
  const snippet = source.snippet !== undefined ? ` — ${oneLine(source.snippet)}` : ''
  const date = source.publishedAt !== undefined ? ` (${oneLine(source.publishedAt)})` : ''
  return `- [${title}](${source.url})${snippet}${date}`
}

const WEB_URL = /^https?:\/\/[^\s]+$/i

/**
 * Round-robin over the queries' lists (rank 1 of each, then rank 2...), first URL wins. Only
 * http(s) URLs are sources: a `javascript:` or `file:` "result" is dropped, never shown as a link.
 */
function merge(lists: readonly (readonly SearchSource[])[]): SearchSource[] {
  const seen = new Set<string>()
  const out: SearchSource[] = []
  const usable = lists.map(list => list.filter(source => WEB_URL.test(source.url)))
  const longest = Math.max(0, ...usable.map(list => list.length))
  for (let rank = 0; rank < longest; rank += 1) {
    for (const list of usable) {
      const source = list[rank]
      if (source === undefined || seen.has(source.url)) continue
      seen.add(source.url)
      out.push(source)
    }
  }
  return out
}

/** The result text (the original's wording) for the queries' results, in query order. */
export function formatResults(queries: readonly string[], results: readonly SearchResult[], maxResults: number): { text: string; sources: SearchSource[]; truncated: boolean } {
  const parts: string[] = []
  results.forEach((result, i) => {
    if (result.answer === undefined) return
    parts.push(queries.length > 1 ? `### ${queries[i]}\n\n${result.answer}` : result.answer)
  })
  const all = merge(results.map(result => result.sources))
  const sources = all.slice(0, maxResults)
  const truncated = all.length > sources.length
  if (parts.length === 0 && sources.length === 0) return { text: 'No results found.', sources, truncated }
  if (sources.length > 0) {
    parts.push(`Sources:\n${sources.map(sourceLine).join('\n')}`)
    if (truncated) parts.push(`(Showing the first ${sources.length} sources. Refine the query for more.)`)
  }
  parts.push('Cite the relevant URLs above as markdown links in your answer.')
  return { text: parts.join('\n\n'), sources, truncated }
}

function checkQueries(args: WebSearchArgs, maxQueries: number): string[] {
  const queries = args.queries
  if (queries.length === 0) throw new WebSearchError('queries must contain at least one query', 'INVALID_ARGUMENTS')
  if (queries.length > maxQueries) throw new WebSearchError(`queries must contain at most ${maxQueries} ${maxQueries === 1 ? 'query' : 'queries'}`, 'INVALID_ARGUMENTS')
  if (queries.some(query => query.trim() === '')) throw new WebSearchError('each query must be a non-empty string', 'INVALID_ARGUMENTS')
  return [...new Set(queries.map(query => query.trim()))]
}

/** Runs every query; the first failure aborts the rest, which settle before it is thrown. */
async function searchAll(provider: SearchProvider, queries: readonly string[], maxResults: number, context: ToolContext, options: { sandboxing?: Sandboxing; fetch?: typeof globalThis.fetch; timeoutMs: number }): Promise<SearchResult[]> {
  const batch = new AbortController()
  const timeout = AbortSignal.timeout(options.timeoutMs)
  const signal = AbortSignal.any([context.signal, timeout, batch.signal])
  let failure: unknown
  const settled = await Promise.allSettled(queries.map(async (query) => {
    try {
      const request = provider.request(query, maxResults)
      return provider.parse(await send(provider, request, context, { ...options, signal }))
    } catch (error) {
      if (failure === undefined) {
        failure = timeout.aborted && !context.signal.aborted ? new WebSearchError(`web search timed out after ${options.timeoutMs} ms`, WebSearchErrorCode.timeout) : error
        batch.abort()
      }
      throw error
    }
  }))
  if (failure !== undefined) throw failure
  return settled.map(one => (one as PromiseFulfilledResult<SearchResult>).value)
}

export function createWebSearchTool(config: WebSearchConfig = {}, sandboxing?: Sandboxing): Tool<WebSearchArgs> {
  const maxResults = config.maxResults ?? WEB_SEARCH_DEFAULTS.maxResults
  const maxQueries = config.maxQueries ?? WEB_SEARCH_DEFAULTS.maxQueries
  const timeoutMs = config.timeoutMs ?? WEB_SEARCH_DEFAULTS.timeoutMs
  const parameters = {
    type: 'object',
    properties: {
      queries: { type: 'array', items: { type: 'string' }, description: `Search queries, 1 to ${maxQueries}; one item for a single search. Their results are merged.` },
    },
    required: ['queries'],
  } as const satisfies JsonSchema
  return {
    name: 'web_search',
    description: `Search the web for current information. Give 1 to ${maxQueries} queries in the queries array; they run together. Returns source titles, URLs and snippets, and a summary answer when the search service writes one.`,
    parameters,
    timeoutMs: timeoutMs + 5_000,
    isConcurrencySafe: () => true,
    execute: withSpill('web_search', async (args, context): Promise<ToolOutput> => {
      const queries = checkQueries(args, maxQueries)
      const provider = resolveProvider(config)
      const results = await searchAll(provider, queries, maxResults, context, { ...(sandboxing ? { sandboxing } : {}), ...(config.fetch ? { fetch: config.fetch } : {}), timeoutMs })
      const { text, sources, truncated } = formatResults(queries, results, maxResults)
      return {
        content: [{ type: 'text', text }],
        meta: {
          provider: provider.id, queries,
          sources: sources.map(source => ({ ...source })),
          answers: results.filter(result => result.answer !== undefined).length,
          truncated,
        },
      }
    }),
  }
}
