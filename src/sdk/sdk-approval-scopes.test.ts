/**
 * Wider approval grants through the SDK, real processes (`node bin/dsh.js --profile sdk`) against
 * the fake DeepSeek server: `approval/request` carries the request's `scopes`, and the client's
 * `onApproval` may answer `allowed-session` / `allowed-always` for them; naming a scope the request
 * does not offer fails closed and the server says so on stderr.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { askNetworkPatch } from '../../test-support/patches.js'
import { tempHome } from '../../test-support/run-dsh.js'
import { DshClient, type ApprovalAnswer, type ApprovalRequestParams } from './client.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const fetchHost = (id: string, args: Record<string, unknown>) => streamResponse([{ toolCall: { id, name: 'fetch_host', arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])

async function start(answers: ApprovalAnswer[], seen: ApprovalRequestParams[]) {
  const { home, cwd } = tempHome()
  return DshClient.start({
    cwd, patches: [askNetworkPatch()],
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined },
    onApproval: request => { seen.push(request); return answers.shift()! },
  })
}

const results = (events: readonly { type: string; data: unknown }[]) => events.filter(e => e.type === 'tool/result')
  .map(e => (e.data as { message: { content: { content: { text: string }[] }[] } }).message.content[0]!.content[0]!.text)

describe('SDK approvals with scopes', () => {
  it('approval/request carries scopes; allowed-session and allowed-always answer them', async () => {
    const seen: ApprovalRequestParams[] = []
    const client = await start(['allowed-session', 'allowed-always'], seen)
    try {
      server.enqueue(fetchHost('n1', { host: 'registry.example.org' }), fetchHost('n2', { host: 'pypi.example.org' }), streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
      const result = await client.run('reach two hosts')
      expect(seen).toEqual([
        expect.objectContaining({ toolName: 'network', callId: 'n1', reason: 'connect to registry.example.org:443 (not in sandbox.allowedHosts)', scopes: ['session', 'always'] }),
        expect.objectContaining({ callId: 'n2', scopes: ['session', 'always'] }),
      ])
      expect(result.events.filter(e => e.type === 'approval/decided').map(e => (e.data as { outcome: string }).outcome)).toEqual(['allowed-session', 'allowed-always'])
      expect(results(result.events)).toEqual(['network approval: allowed-session', 'network approval: allowed-always'])
    } finally {
      await client.close()
    }
  })

  it('a request without scopes has no scopes field; answering it allowed-session fails closed and is said on stderr', async () => {
    const seen: ApprovalRequestParams[] = []
    const client = await start(['allowed-session'], seen)
    try {
      server.enqueue(fetchHost('n3', { host: 'plain.example.org', scoped: false }), streamResponse([{ text: 'no' }, { finish: 'stop', usage }]))
      const result = await client.run('reach a host')
      expect(seen).toHaveLength(1)
      expect('scopes' in seen[0]!).toBe(false)
      expect(result.events.filter(e => e.type === 'approval/decided').map(e => (e.data as { outcome: string }).outcome)).toEqual(['unavailable'])
      expect(results(result.events)).toEqual(['network approval: unavailable'])
      // stderr is its own pipe: polled, not assumed to be in by the time the turn's frames are.
      const id = (result.events.find(e => e.type === 'approval/asked')!.data as { id: string }).id
      await expect.poll(() => client.stderr).toContain(`the client answered approval/request ${id} with allowed-session, which it does not offer (scopes: []); it fails closed`)
    } finally {
      await client.close()
    }
  })
})
