/**
 * The web's approval and permission methods (approval-methods.ts) and the `approvals` stream
 * event (server.ts) over real HTTP: wider grants a request offers reach the page and are accepted;
 * one it does not offer is a 400 and the request stays open; the network switch.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ApprovalPlugin } from '../approval/service.js'
import type { ApprovalScope } from '../approval/api.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { apiClient, openEventStream, startWebApi, type WebApiHarness } from '../../test-support/web-api.js'

const TOKEN = 'test-token-0123456789abcdef'

describe('web approval and permission methods', () => {
  let harness: WebApiHarness
  let home: string
  const { call, ok } = apiClient(() => harness.port, TOKEN)
  const streams: { close(): void }[] = []

  beforeEach(async () => {
    home = mkdtempSync(join(tmpdir(), 'dsh-web-approval-'))
    harness = await startWebApi({ home, token: TOKEN, plugins: [ctx => ctx.plugin(ApprovalPlugin)] })
    // Asks as the network proxy does (scoped) or as a hook does (no scopes); answers with the outcome.
    harness.ctx.tools.register({
      name: 'fetch_host', description: 'asks', parameters: { type: 'object', properties: { host: { type: 'string' }, scoped: { type: 'boolean' } } },
      async execute(args: { host: string; scoped?: boolean }, context) {
        const scopes: ApprovalScope[] | undefined = args.scoped === false ? undefined : ['session', 'always']
        const outcome = await harness.ctx.approval.request({
          session: context.session!, toolName: 'network', callId: context.callId, signal: context.signal,
          reason: `connect to ${args.host}:443 (not in sandbox.allowedHosts)`, ...scopes === undefined ? {} : { scopes },
        })
        return { content: [{ type: 'text', text: `outcome ${outcome}` }] }
      },
    })
  })

  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close()
    await harness.stop()
    rmSync(home, { recursive: true, force: true })
  })

  async function ask(scoped: boolean) {
    harness.model.push(toolCalls([{ id: 'n1', name: 'fetch_host', arguments: { host: 'registry.example.org', scoped } }]), text('done'))
    const created = await ok('sessions.create', {})
    const stream = openEventStream(harness.port, `/api/events?session=${created.id}&from=0`, TOKEN)
    streams.push(stream)
    expect(await stream.ready).toBe(200)
    await ok('prompt', { id: created.id, text: 'reach the registry' })
    const shown = await stream.waitFor(e => e.event === 'approvals' && e.data.approvals.length === 1)
    return { id: created.id as string, stream, pending: shown.data.approvals[0] }
  }

  const result = (id: string) => {
    const events = harness.ctx.sessions.get(id)!.events
    return events.filter(e => e.type === 'tool/result').map(e => (e.data as any).message.content[0].content[0].text)
  }

  it('the stream sends the pending request with its scopes; allowed-always settles it, and the list empties', async () => {
    const { id, stream, pending } = await ask(true)
    expect(pending).toMatchObject({ sessionId: id, toolName: 'network', reason: 'connect to registry.example.org:443 (not in sandbox.allowedHosts)', scopes: ['session', 'always'] })
    const bad = await call('approval.answer', { approvalId: pending.id, outcome: 'allowed-forever' })
    expect(bad.status).toBe(400)
    expect(bad.json.error.message).toBe('"outcome" must be allowed-once, allowed-session, allowed-always, rejected')
    const answeredAt = stream.events.length
    expect(await ok('approval.answer', { approvalId: pending.id, outcome: 'allowed-always' })).toEqual({ ok: true })
    await stream.waitFor(e => e.event === 'approvals' && e.data.approvals.length === 0 && stream.events.indexOf(e) >= answeredAt)
    await harness.ctx.agents.get(id)!.whenIdle()
    expect(result(id)).toEqual(['outcome allowed-always'])
    expect((await call('approval.answer', { approvalId: pending.id, outcome: 'allowed-once' })).status).toBe(404)
  })

  it('a wider grant the request does not offer is a 400 naming what it offers, and the request stays open', async () => {
    const { id, pending } = await ask(false)
    expect(pending.scopes).toBeUndefined()
    const refused = await call('approval.answer', { approvalId: pending.id, outcome: 'allowed-session' })
    expect(refused.status).toBe(400)
    expect(refused.json.error.message).toBe(`approval "${pending.id}" does not offer allowed-session (it offers allowed-once, rejected)`)
    expect(harness.ctx.approval.pending(id).map(p => p.id)).toEqual([pending.id])
    expect(await ok('approval.answer', { approvalId: pending.id, outcome: 'allowed-once' })).toEqual({ ok: true })
    await harness.ctx.agents.get(id)!.whenIdle()
    expect(result(id)).toEqual(['outcome allowed-once'])
  })

  it('permission.get shows the network mode and the choices; permission.setNetwork switches it (logged once) and refuses unknown modes', async () => {
    const created = await ok('sessions.create', {})
    expect(await ok('permission.get', { id: created.id })).toEqual({
      preset: 'workspace-write', mode: 'workspace-write', policy: 'ask', presets: ['read-only', 'workspace-write', 'danger-full-access'],
      network: 'full', networks: ['full', 'allowlist', 'none'],
    })
    expect(await ok('permission.setNetwork', { id: created.id, network: 'none' })).toMatchObject({ preset: 'workspace-write', network: 'none' })
    expect(await ok('permission.setNetwork', { id: created.id, network: 'none' })).toMatchObject({ network: 'none' })
    const events = harness.ctx.sessions.get(created.id)!.events
    expect(events.filter(e => e.type === 'sandbox/network').map(e => e.data)).toEqual([{ network: 'none' }])
    // The preset picker keeps the network mode: they are separate knobs.
    expect(await ok('permission.set', { id: created.id, preset: 'read-only' })).toMatchObject({ preset: 'read-only', network: 'none' })
    const bad = await call('permission.setNetwork', { id: created.id, network: 'open' })
    expect(bad.status).toBe(400)
    expect(bad.json.error.message).toBe('unknown network mode "open" (expected full, allowlist, none)')
    expect((await call('permission.setNetwork', { id: created.id })).status).toBe(400)
    expect((await call('permission.setNetwork', { id: 'no-such-session', network: 'none' })).status).toBe(404)
  })
})
