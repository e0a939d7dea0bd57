/**
 * #44.8 in whole processes: `web_search` is offered once settings.yaml names a provider (and not
 * before: the row then loads nothing), its key comes from the credentials file, and a headless
 * run's call reaches the provider under the deployment's network mode.
 */
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

let model: FakeDeepSeek
let search: Server
let origin: string
let received: { path: string; key: string | undefined }[] = []
beforeAll(async () => {
  search = createServer((request, response) => {
    received.push({ path: request.url ?? '', key: request.headers['x-api-key'] as string | undefined })
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify({ items: [{ link: 'https://dsh.example/guide', name: 'The guide', text: 'How to start' }] }))
  })
  await new Promise<void>(resolve => search.listen(0, '127.0.0.1', resolve))
  origin = `http://127.0.0.1:${(search.address() as { port: number }).port}`
})
afterAll(async () => { await new Promise(resolve => search.close(resolve)) })
beforeEach(async () => { model = await FakeDeepSeek.start(); received = [] })
afterEach(async () => { await model.close() })

const usage = { prompt_tokens: 100, completion_tokens: 5 }

async function task(settings: string | undefined, args: readonly string[]) {
  const { home, cwd } = tempHome()
  if (settings !== undefined) writeFileSync(join(home, 'settings.yaml'), settings)
  writeFileSync(join(home, '.credentials.yaml'), 'MY_SEARCH_KEY: from-credentials\n', { mode: 0o600 })
  model.enqueue(
    streamResponse([{ toolCall: { id: 'w1', name: 'web_search', arguments: JSON.stringify({ queries: ['dsh guide'] }) } }, { finish: 'tool_calls', usage }]),
    streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]),
  )
  const result = await runDsh(['--profile', 'headless', ...args, 'go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_NETWORK: undefined, DSH_WEB_SEARCH_PROVIDER: undefined } })
  const tools = ((model.requests[0]?.body?.tools ?? []) as { function: { name: string } }[]).map(tool => tool.function.name)
  const toolResult = (model.requests[1]?.body?.messages as { role: string; content: string }[] | undefined)?.find(m => m.role === 'tool')?.content ?? ''
  return { result, tools, toolResult }
}

const settings = (provider: string) => `webSearch:
  provider: ${provider}
  providers:
    mine:
      url: "${origin}/find?q={query}"
      headers: { X-Api-Key: "{key}" }
      apiKeyEnv: MY_SEARCH_KEY
      results: items
      fields: { url: link, title: name, snippet: text }
`

describe('web_search in whole processes (#44.8)', () => {
  it('not offered while no provider is chosen', async () => {
    const { result, tools, toolResult } = await task(undefined, ['--network', 'full'])
    expect(result.code).toBe(0)
    expect(tools).toContain('bash')
    expect(tools).not.toContain('web_search')
    expect(toolResult).toContain('web_search')
    expect(received).toEqual([])
  })

  it('a provider of your own in settings.yaml: offered, its key from the credentials file, the results in the tool result', async () => {
    const { result, tools, toolResult } = await task(settings('mine'), ['--network', 'full'])
    expect(result.code, result.stderr).toBe(0)
    expect(tools).toContain('web_search')
    expect(received).toEqual([{ path: '/find?q=dsh%20guide', key: 'from-credentials' }])
    expect(toolResult).toBe('Sources:\n- [The guide](https://dsh.example/guide) — How to start\n\nCite the relevant URLs above as markdown links in your answer.')
  })

  it('a bad webSearch setting stops the start with one line naming it, before any request', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, 'settings.yaml'), 'webSearch:\n  maxResults: zero\n')
    const before = model.requests.length
    const result = await runDsh(['--profile', 'headless', 'go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k' } })
    expect(result.code).toBe(1)
    expect(result.stderr).toBe('dsh: webSearch.maxResults in settings.yaml must be a positive integer, not "zero"\n')
    expect(model.requests.length).toBe(before)
  })

  it('under the default network mode (allowlist) the host\'s loopback is refused: nothing reaches the service', async () => {
    const { result, toolResult } = await task(settings('mine'), [])
    expect(result.code, result.stderr).toBe(0)
    expect(received).toEqual([])
    expect(toolResult).toMatch(/^Error: "mine" search was not sent: /)
  })
})
