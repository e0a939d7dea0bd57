/**
 * #44.8: `web_search` against a local fake of each provider, over real HTTP: the request each
 * provider's API takes (path, headers, JSON body) and the result text its answer gives; several
 * queries merged; failures named; a key only to its own host; redirects not followed.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { ToolOutput } from '../tools/api.js'
import { createWebSearchTool, type WebSearchConfig } from './tool.js'

interface Seen { method: string; path: string; headers: IncomingMessage['headers']; body: unknown }

let server: Server
let origin: string
let seen: Seen[] = []
/** Per path: the status and JSON answer (or a function of the request body). */
let answers: Record<string, (body: any) => { status?: number; json?: unknown; raw?: string; headers?: Record<string, string>; hold?: boolean }> = {}
let closedEarly = 0
let onClosed: () => void = () => {}

beforeAll(async () => {
  server = createServer((request, response) => {
    let data = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => { data += chunk })
    request.on('end', () => {
      const url = new URL(request.url!, 'http://x')
      const body = data === '' ? undefined : JSON.parse(data)
      seen.push({ method: request.method!, path: `${url.pathname}${url.search}`, headers: request.headers, body })
      const answer = answers[url.pathname]?.(body) ?? { status: 404, json: { error: { message: `no route ${url.pathname}` } } }
      if (answer.hold === true) {
        response.on('close', () => { closedEarly += 1; onClosed() })
        return
      }
      response.writeHead(answer.status ?? 200, { 'content-type': 'application/json', ...answer.headers })
      response.end(answer.raw ?? JSON.stringify(answer.json))
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise(resolve => server.close(resolve))
})
beforeEach(() => { seen = []; answers = {}; closedEarly = 0 })

/** Routes the providers' real hosts to the fake (same path), as a local DNS would. */
const routed: typeof fetch = (input, init) => {
  const url = new URL(String(input))
  return fetch(`${origin}${url.pathname}${url.search}`, init)
}

const keys: Record<string, string> = { DEEPSEEK_API_KEY: 'sk-deep', EXA_API_KEY: 'exa-key', PERPLEXITY_API_KEY: 'pplx-key', BRAVE_TOKEN: 'brave-key' }

async function search(config: WebSearchConfig, queries: unknown): Promise<ToolOutput> {
  const tool = createWebSearchTool({ fetch: routed, credentials: name => keys[name], ...config })
  return tool.execute({ queries } as never, { callId: 'c1', cwd: process.cwd(), signal: new AbortController().signal })
}

const textOf = (output: ToolOutput) => (output.content[0] as { text: string }).text

describe('web_search providers over real HTTP (#44.8)', () => {
  it('DeepSeek: a Messages call with the web_search server tool; sources from web_search_tool_result blocks, snippets from citations', async () => {
    answers['/anthropic/v1/messages'] = () => ({
      json: {
        type: 'message', role: 'assistant',
        content: [
          { type: 'server_tool_use', id: 'srv_1', name: 'web_search', input: { query: 'cordis kernel' } },
          {
            type: 'web_search_tool_result', tool_use_id: 'srv_1', content: [
              { type: 'web_search_result', url: 'https://cordis.example/docs', title: 'Cordis docs', page_age: '2026-03-01', encrypted_content: 'x' },
              { type: 'web_search_result', url: 'https://blog.example/cordis', title: 'A post', encrypted_content: 'y' },
              { type: 'web_search_result', url: 'https://cordis.example/docs', title: 'Cordis docs again', encrypted_content: 'z' },
            ],
          },
          { type: 'text', text: 'Cordis is a plugin kernel.', citations: [{ type: 'web_search_result_location', url: 'https://cordis.example/docs', title: 'Cordis docs', cited_text: 'Cordis is a\nplugin framework.', encrypted_index: 'i' }] },
        ],
      },
    })
    const output = await search({ provider: 'deepseek' }, ['cordis kernel'])
    expect(seen).toHaveLength(1)
    expect(seen[0]!.method).toBe('POST')
    expect(seen[0]!.path).toBe('/anthropic/v1/messages')
    expect(seen[0]!.headers['x-api-key']).toBe('sk-deep')
    expect(seen[0]!.headers['anthropic-version']).toBe('2023-06-01')
    expect(seen[0]!.body).toEqual({
      model: 'deepseek-v4-flash', max_tokens: 4096,
      messages: [{ role: 'user', content: 'Perform a web search for the query: cordis kernel' }],
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }],
    })
    // The model's prose is not an answer the tool passes on: only the structured results.
    expect(textOf(output)).toBe([
      'Sources:',
      '- [Cordis docs](https://cordis.example/docs) — Cordis is a plugin framework. (2026-03-01)',
      '- [A post](https://blog.example/cordis)',
      '',
      'Cite the relevant URLs above as markdown links in your answer.',
    ].join('\n'))
    expect(output.meta).toMatchObject({ provider: 'deepseek', queries: ['cordis kernel'], truncated: false })
  })

  it('DeepSeek: an answer without a web_search_tool_result block is an error, not prose read for URLs', async () => {
    answers['/anthropic/v1/messages'] = () => ({ json: { content: [{ type: 'text', text: 'See https://made.up/' }] } })
    await expect(search({ provider: 'deepseek' }, ['x'])).rejects.toMatchObject({
      code: 'WEB_SEARCH_PROVIDER_ERROR', message: expect.stringContaining('no web_search_tool_result blocks'),
    })
  })

  it('Exa: POST /search with the key in x-api-key; the first highlight is the snippet', async () => {
    answers['/search'] = () => ({
      json: { results: [
        { url: 'https://a.example/', title: 'A', publishedDate: '2025-12-01T00:00:00.000Z', highlights: ['', 'the highlight'] },
        { url: 'https://b.example/', title: 'B', highlights: [] },
        { title: 'no url' },
      ] },
    })
    const output = await search({ provider: 'exa', maxResults: 5 }, ['agent runtimes'])
    expect(seen[0]!.path).toBe('/search')
    expect(seen[0]!.headers['x-api-key']).toBe('exa-key')
    expect(seen[0]!.body).toEqual({ query: 'agent runtimes', type: 'auto', numResults: 5, contents: { highlights: { highlightsPerUrl: 1 } } })
    expect(textOf(output)).toContain('Sources:\n- [A](https://a.example/) — the highlight (2025-12-01T00:00:00.000Z)\n- [B](https://b.example/)\n\nCite')
  })

  it('Perplexity: chat completions with a Bearer key; its answer comes first, then search_results (bare citations when those are absent)', async () => {
    answers['/chat/completions'] = (body) => body.messages[0].content === 'bare'
      ? { json: { choices: [{ message: { role: 'assistant', content: 'Short answer.' } }], citations: ['https://c.example/1'] } }
      : { json: { choices: [{ message: { role: 'assistant', content: 'Node 20 is LTS [1].' } }], search_results: [{ title: 'Node releases', url: 'https://nodejs.example/releases', date: '2026-01-02', snippet: 'Release schedule' }] } }
    const output = await search({ provider: 'perplexity', providers: { perplexity: { recency: 'week' } } }, ['node lts'])
    expect(seen[0]!.path).toBe('/chat/completions')
    expect(seen[0]!.headers.authorization).toBe('Bearer pplx-key')
    expect(seen[0]!.body).toEqual({ model: 'sonar', max_tokens: 1024, messages: [{ role: 'user', content: 'node lts' }], search_recency_filter: 'week' })
    expect(textOf(output)).toBe('Node 20 is LTS [1].\n\nSources:\n- [Node releases](https://nodejs.example/releases) — Release schedule (2026-01-02)\n\nCite the relevant URLs above as markdown links in your answer.')
    expect(textOf(await search({ provider: 'perplexity' }, ['bare']))).toContain('Short answer.\n\nSources:\n- [https://c.example/1](https://c.example/1)')
  })

  it('your own provider: a GET URL template (query encoded), a header with the key, and where the results are', async () => {
    answers['/res/v1/web/search'] = () => ({ json: { web: { results: [{ title: 'T', url: 'https://t.example/', description: 'desc', page_age: '2d' }] } } })
    const brave = {
      url: `${origin}/res/v1/web/search?q={query}&count={count}`,
      headers: { 'X-Subscription-Token': '{key}' }, apiKeyEnv: 'BRAVE_TOKEN',
      results: 'web.results', fields: { snippet: 'description', date: 'page_age' },
    }
    const output = await search({ provider: 'brave', providers: { brave }, fetch: globalThis.fetch }, ['a&b c'])
    expect(seen[0]!.method).toBe('GET')
    expect(seen[0]!.path).toBe('/res/v1/web/search?q=a%26b%20c&count=8')
    expect(seen[0]!.headers['x-subscription-token']).toBe('brave-key')
    expect(textOf(output)).toContain('- [T](https://t.example/) — desc (2d)')
  })

  it('your own provider: a POST JSON body template and an answer path; only http(s) URLs are sources', async () => {
    answers['/v1/query'] = () => ({ json: { data: { summary: 'It is.', hits: [{ link: 'https://h.example/' }, { link: 'javascript:alert(1)' }, { link: 'file:///etc/passwd' }] } } })
    const own = { url: `${origin}/v1/query`, body: { q: '{query}', n: '{count}', opts: ['{query}'] }, results: 'data.hits', fields: { url: 'link' }, answer: 'data.summary' }
    const output = await search({ provider: 'own', providers: { own }, maxResults: 3, fetch: globalThis.fetch }, ['q1'])
    expect(seen[0]!.method).toBe('POST')
    expect(seen[0]!.headers['content-type']).toBe('application/json')
    expect(seen[0]!.body).toEqual({ q: 'q1', n: '3', opts: ['q1'] })
    expect(textOf(output)).toBe('It is.\n\nSources:\n- [https://h.example/](https://h.example/)\n\nCite the relevant URLs above as markdown links in your answer.')
  })

  it('a bad description of your own provider names every problem; an unknown provider names the choices', async () => {
    await expect(search({ provider: 'mine', providers: { mine: { url: 'ftp://x', headers: { a: '{key}' } } } }, ['q'])).rejects.toThrow(
      'webSearch.providers.mine in settings.yaml: url must be an http(s) URL template; results must name where the list of results is (a dotted path, "" for the whole answer); {key} is used but apiKeyEnv does not name the variable holding it')
    await expect(search({ provider: 'nope' }, ['q'])).rejects.toThrow('unknown web search provider "nope": use deepseek, exa, perplexity, or describe it under webSearch.providers.nope in settings.yaml (url, results)')
    expect(seen).toHaveLength(0)
  })
})

describe('several queries in one call (#44.8)', () => {
  it('run once per distinct query; sources merged a rank at a time, deduplicated, cut at maxResults; answers under their query', async () => {
    answers['/chat/completions'] = (body) => {
      const q = body.messages[0].content as string
      const results = q === 'one'
        ? ['https://1a/', 'https://shared/', 'https://1c/']
        : ['https://2a/', 'https://shared/', 'https://2c/', 'https://2d/']
      return { json: { choices: [{ message: { content: `answer ${q}` } }], search_results: results.map(url => ({ url, title: url.slice(8, -1) })) } }
    }
    const output = await search({ provider: 'perplexity', maxResults: 4 }, ['one', 'two', 'one'])
    expect(seen.map(s => (s.body as { messages: { content: string }[] }).messages[0]!.content).sort()).toEqual(['one', 'two'])
    expect(textOf(output)).toBe([
      '### one', '', 'answer one', '', '### two', '', 'answer two', '',
      'Sources:', '- [1a](https://1a/)', '- [2a](https://2a/)', '- [shared](https://shared/)', '- [1c](https://1c/)', '',
      '(Showing the first 4 sources. Refine the query for more.)', '',
      'Cite the relevant URLs above as markdown links in your answer.',
    ].join('\n'))
    expect(output.meta).toMatchObject({ queries: ['one', 'two'], truncated: true, answers: 2 })
  })

  it('one failing query aborts the others, waits for them, and is the result; the provider\'s own message is kept', async () => {
    answers['/search'] = (body) => body.query === 'bad'
      ? { status: 401, json: { error: { message: 'invalid API key' } } }
      : { hold: true }
    const heldClosed = new Promise<void>(resolve => { onClosed = resolve })
    await expect(search({ provider: 'exa' }, ['slow', 'bad'])).rejects.toMatchObject({
      name: 'WebSearchError', code: 'WEB_SEARCH_PROVIDER_ERROR', message: 'Exa search failed: HTTP 401: invalid API key',
    })
    // The held request was cancelled (its connection closed), not left open.
    await heldClosed
    expect(closedEarly).toBe(1)
  })

  it('argument errors say what is wrong before anything is sent', async () => {
    await expect(search({ provider: 'exa' }, [])).rejects.toThrow('queries must contain at least one query')
    await expect(search({ provider: 'exa', maxQueries: 2 }, ['a', 'b', 'c'])).rejects.toThrow('queries must contain at most 2 queries')
    await expect(search({ provider: 'exa' }, ['a', '  '])).rejects.toThrow('each query must be a non-empty string')
    expect(seen).toHaveLength(0)
  })

  it('no results: "No results found."', async () => {
    answers['/search'] = () => ({ json: { results: [] } })
    expect(textOf(await search({ provider: 'exa' }, ['nothing']))).toBe('No results found.')
  })
})

describe('keys and hosts (#44.8)', () => {
  it('the DeepSeek key goes only to api.deepseek.com: another base URL gets nothing unless it has a key of its own', async () => {
    answers['/gw/messages'] = () => ({ json: { content: [{ type: 'web_search_tool_result', content: [] }] } })
    const gateway = { provider: 'deepseek', providers: { deepseek: { baseUrl: `${origin}/gw` } }, fetch: globalThis.fetch }
    await expect(search(gateway, ['q'])).rejects.toMatchObject({
      code: 'WEB_SEARCH_KEY_HOST', message: 'DEEPSEEK_API_KEY is sent only to api.deepseek.com, not to 127.0.0.1: nothing was sent. Give this DeepSeek endpoint a key of its own (apiKeyEnv in webSearch.providers)',
    })
    expect(seen).toHaveLength(0)
    // Your own provider cannot name it either.
    await expect(search({ provider: 'own', providers: { own: { url: `${origin}/x?k={key}`, apiKeyEnv: 'DEEPSEEK_API_KEY', results: '' } } }, ['q'])).rejects.toMatchObject({ code: 'WEB_SEARCH_KEY_HOST' })
    expect(seen).toHaveLength(0)
    keys.GATEWAY_KEY = 'gw'
    const own = { ...gateway, providers: { deepseek: { baseUrl: `${origin}/gw`, apiKeyEnv: 'GATEWAY_KEY' } } }
    expect(textOf(await search(own, ['q']))).toBe('No results found.')
    expect(seen[0]!.headers['x-api-key']).toBe('gw')
  })

  it('a missing key says which variable and where to put it', async () => {
    const tool = createWebSearchTool({ provider: 'exa', fetch: routed, credentials: () => undefined })
    await expect(tool.execute({ queries: ['q'] }, { callId: 'c', cwd: '/', signal: new AbortController().signal })).rejects.toMatchObject({
      code: 'WEB_SEARCH_UNAVAILABLE', message: 'Exa search needs EXA_API_KEY (set it in the environment or ~/.dsh/.credentials.yaml), or pick another provider with webSearch.provider in settings.yaml',
    })
    expect(seen).toHaveLength(0)
  })

  it('a redirect is not followed (the key stays with its host)', async () => {
    answers['/search'] = () => ({ status: 307, headers: { location: `${origin}/elsewhere` }, raw: '' })
    await expect(search({ provider: 'exa' }, ['q'])).rejects.toThrow(`Exa search answered with a redirect (HTTP 307 to ${origin}/elsewhere); redirects are not followed`)
    expect(seen.map(s => s.path)).toEqual(['/search'])
  })
})
