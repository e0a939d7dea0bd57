/**
 * #44.8: `web_search` obeys the session's network mode as `web_fetch` does (docs/security.md,
 * "Network"): `none` sends nothing; `allowlist` sends through the session's gate (a listed host
 * gets the provider's POST, an unlisted one is asked for and refused when declined, each
 * connection a `sandbox/connection` event); `full` goes direct.
 */
import { createServer, type Server } from 'node:http'
import { networkInterfaces } from 'node:os'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import type { ApprovalAnswer } from '../approval/api.js'
import { ApprovalPlugin } from '../approval/service.js'
import type { NetworkMode } from '../sandbox/modes.js'
import { SandboxPlugin } from '../sandbox/service.js'
import { WebSearchPlugin } from './index.js'

const own = Object.values(networkInterfaces()).flat().find(address => address?.family === 'IPv4' && !address.internal)?.address
if (own === undefined) console.warn('skipping the web_search allowlist case: this machine has no non-loopback IPv4 address')

let server: Server
let port: number
let received: { host: string; body: unknown; key: string | undefined }[] = []
beforeAll(async () => {
  server = createServer((request, response) => {
    let data = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => { data += chunk })
    request.on('end', () => {
      const body = JSON.parse(data) as { query: string }
      received.push({ host: request.headers.host ?? '', body, key: request.headers['x-api-key'] as string | undefined })
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ results: [{ url: `https://found.example/${encodeURIComponent(body.query)}`, title: `found ${body.query}`, highlights: ['hit'] }] }))
    })
  })
  await new Promise<void>(resolve => server.listen(0, '0.0.0.0', resolve))
  port = (server.address() as { port: number }).port
})
afterAll(async () => { await new Promise(resolve => server.close(resolve)) })
beforeEach(() => { received = [] })

const resolve = async (host: string) => {
  if (host.endsWith('.test') && own !== undefined) return [{ address: own, family: 4 as const }]
  throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' })
}

/** One `web_search` call through the whole tool pipeline, to a provider of your own at `base`. */
async function searchAt(network: NetworkMode, base: string, answers: ApprovalAnswer[] = []): Promise<{ h: LoopHarness; results: { text: string; isError: boolean }[] }> {
  const h = await loopHarness({
    responses: [toolCalls([{ id: 's0', name: 'web_search', arguments: JSON.stringify({ queries: ['query 0'] }) }]), text('done')],
    setup: async (ctx) => {
      await ctx.plugin(ApprovalPlugin, { network }).await()
      await ctx.plugin(SandboxPlugin, { allowedHosts: [`search.test:${port}`], resolve }).await()
      const provider = { url: `${base}/search`, body: { query: '{query}' }, headers: { 'x-api-key': '{key}' }, apiKeyEnv: 'FAKE_SEARCH_KEY', results: 'results', fields: { snippet: 'highlights.0' } }
      await ctx.plugin(WebSearchPlugin, { provider: 'fake', providers: { fake: provider }, credentials: name => name === 'FAKE_SEARCH_KEY' ? 'k1' : undefined }).await()
    },
  })
  h.ctx.approval.answerer(() => answers.shift() ?? 'rejected')
  h.agent.followup([{ type: 'text', text: 'go' }])
  await h.agent.whenIdle()
  const results = h.of('tool/result').map((e) => {
    const message = e.data.message as unknown as { content: { content: { text: string }[]; isError?: boolean }[] }
    return { text: message.content[0]!.content.map(b => b.text).join(''), isError: message.content[0]!.isError === true }
  })
  return { h, results }
}

describe('web_search under the network modes (#44.8)', () => {
  it('full sends directly; none sends nothing and says how to allow it', async () => {
    const full = await searchAt('full', `http://127.0.0.1:${port}`)
    expect(full.results[0]!.isError).toBe(false)
    expect(full.results[0]!.text).toContain('- [found query 0](https://found.example/query%200) — hit')
    expect(received).toEqual([{ host: `127.0.0.1:${port}`, body: { query: 'query 0' }, key: 'k1' }])
    await full.h.dispose()
    received = []
    const none = await searchAt('none', `http://127.0.0.1:${port}`)
    expect(none.results[0]!.isError).toBe(true)
    expect(none.results[0]!.text).toBe(`Error: the network is off for this session (network mode none): nothing was sent to 127.0.0.1:${port}. The user can allow it with /network or --network`)
    expect(received).toEqual([])
    await none.h.dispose()
  })

  it.skipIf(own === undefined)('allowlist: a listed provider host gets the POST through the gate; an unlisted one is asked for, and declined sends nothing', async () => {
    const listed = await searchAt('allowlist', `http://search.test:${port}`)
    expect(listed.results[0]!.isError).toBe(false)
    expect(listed.results[0]!.text).toContain('- [found query 0](https://found.example/query%200) — hit')
    expect(received).toEqual([{ host: `search.test:${port}`, body: { query: 'query 0' }, key: 'k1' }])
    expect(listed.h.of('sandbox/connection').map(e => (e.data as { host: string; outcome: string }).outcome)).toEqual(['allowed'])
    await listed.h.dispose()
    received = []
    const unlisted = await searchAt('allowlist', `http://elsewhere.test:${port}`, ['rejected'])
    expect(unlisted.results[0]!.isError).toBe(true)
    expect(unlisted.results[0]!.text).toContain('search was not sent')
    expect(received).toEqual([])
    expect(unlisted.h.of('approval/asked').map(e => (e.data as { reason: string }).reason)).toEqual([`connect to elsewhere.test:${port} (not in sandbox.allowedHosts)`])
    expect(unlisted.h.of('sandbox/connection').map(e => { const c = e.data as { host: string; outcome: string; callId?: string }; return [c.host, c.outcome, c.callId] })).toEqual([['elsewhere.test', 'refused', 's0']])
    await unlisted.h.dispose()
  })
})
