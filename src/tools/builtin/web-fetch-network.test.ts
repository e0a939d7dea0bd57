/**
 * security #40.4: `web_fetch` obeys the session's network mode. Under `allowlist` it goes through
 * the session's gate (the same rules, questions and `sandbox/connection` events as confined
 * commands); under `none` it fetches nothing; under `full` it fetches directly, as before.
 */
import { createServer, type Server } from 'node:http'
import { networkInterfaces } from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../../test-support/agent-harness.js'
import { text, toolCalls } from '../../../test-support/scripted-model.js'
import type { ApprovalAnswer } from '../../approval/api.js'
import { ApprovalPlugin } from '../../approval/service.js'
import type { NetworkMode } from '../../sandbox/modes.js'
import { SandboxPlugin } from '../../sandbox/service.js'
import { WebFetchToolPlugin } from './web-fetch.js'

const own = Object.values(networkInterfaces()).flat().find(address => address?.family === 'IPv4' && !address.internal)?.address
if (own === undefined) console.warn('skipping the web_fetch allowlist cases: this machine has no non-loopback IPv4 address')

let server: Server
let port: number
beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url === '/hop') response.writeHead(302, { location: `http://elsewhere.test:${port}/landed` }).end()
    else response.writeHead(200, { 'content-type': 'text/plain' }).end(`page ${request.url} for ${request.headers.host}`)
  })
  await new Promise<void>(resolve => server.listen(0, '0.0.0.0', resolve))
  port = (server.address() as { port: number }).port
})
afterAll(async () => { await new Promise(resolve => server.close(resolve)) })

const resolve = async (host: string) => {
  if (host === 'loopy.test') return [{ address: '127.0.0.1', family: 4 as const }]
  if (host.endsWith('.test') && own !== undefined) return [{ address: own, family: 4 as const }]
  throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' })
}

async function fetchAll(network: NetworkMode, urls: readonly string[], answers: ApprovalAnswer[] = []): Promise<{ h: LoopHarness; results: { text: string; isError: boolean }[] }> {
  const h = await loopHarness({
    responses: [...urls.map((url, i) => toolCalls([{ id: `f${i}`, name: 'web_fetch', arguments: JSON.stringify({ url }) }])), text('done')],
    setup: async (ctx) => {
      await ctx.plugin(ApprovalPlugin, { network }).await()
      await ctx.plugin(SandboxPlugin, { allowedHosts: [`docs.test:${port}`, `loopy.test:${port}`], resolve }).await()
      await ctx.plugin(WebFetchToolPlugin).await()
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

describe('web_fetch under the network modes (security #40.4)', () => {
  it('full fetches directly (loopback included, as before); none fetches nothing and says how to allow it', async () => {
    const full = await fetchAll('full', [`http://127.0.0.1:${port}/direct`])
    expect(full.results[0]!.text).toContain('page /direct')
    await full.h.dispose()
    const none = await fetchAll('none', [`http://127.0.0.1:${port}/none`])
    expect(none.results[0]!.isError).toBe(true)
    expect(none.results[0]!.text).toContain('the network is off for this session (network mode none)')
    await none.h.dispose()
  })

  it.skipIf(own === undefined)('allowlist: a listed host is fetched through the gate, loopback is refused, an unlisted one is asked for, and redirects are checked hop by hop', async () => {
    const { h, results } = await fetchAll('allowlist', [
      `http://docs.test:${port}/guide`,
      `http://loopy.test:${port}/secret`,
      `http://127.0.0.1:${port}/direct`,
      `http://docs.test:${port}/hop`,
    ], ['rejected', 'allowed-once'])
    expect(results[0]!.text).toContain(`page /guide for docs.test:${port}`)
    expect(results[1]!.isError).toBe(true)
    expect(results[1]!.text).toContain('loopback')
    // An IP literal is a host like any other: not listed, asked, rejected.
    expect(results[2]!.isError).toBe(true)
    expect(results[2]!.text).toContain('was not fetched')
    // The redirect leaves the list: the user is asked for the new host, and allowing it lands.
    expect(results[3]!.text).toContain(`page /landed for elsewhere.test:${port}`)
    const seen = h.of('sandbox/connection').map(e => e.data as { host: string; outcome: string; reason?: string; callId?: string })
    expect(seen.map(c => [c.host, c.outcome, c.reason ?? null, c.callId])).toEqual([
      ['docs.test', 'allowed', null, 'f0'],
      ['loopy.test', 'refused', 'loopback', 'f1'],
      ['127.0.0.1', 'refused', 'declined', 'f2'],
      ['docs.test', 'allowed', null, 'f3'],
      ['elsewhere.test', 'allowed', null, 'f3'],
    ])
    expect(h.of('approval/asked').map(e => (e.data as { reason: string }).reason)).toEqual([
      `connect to 127.0.0.1:${port} (not in sandbox.allowedHosts)`,
      `connect to elsewhere.test:${port} (not in sandbox.allowedHosts)`,
    ])
    await h.dispose()
  })
})
