/**
 * The network knob (security #40.1): `sandbox/network` folds from the log like `sandbox/mode`,
 * resets after `session/imported`, shows in the runtime context only when it is not `full`, and
 * passes to delegated children. Wider grants (`allowed-session`, `allowed-always`) count only
 * when the request offered them.
 */
import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import type { Tool } from '../tools/api.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { ApprovalPlugin } from './service.js'
import { networkPolicyText } from './texts.js'

const harness = (network?: 'full' | 'allowlist' | 'none', responses = [text('one'), text('two')]) => loopHarness({
  responses,
  cwd: '/srv/project',
  setup: async (ctx) => {
    await ctx.plugin(SystemPromptPlugin).await()
    await ctx.plugin(ApprovalPlugin, network === undefined ? {} : { network }).await()
  },
})

const snapshots = (h: Awaited<ReturnType<typeof harness>>) => h.of('user/message')
  .map(e => (e.data as unknown as { content: { text: string }[] }).content[0]!.text)
  .filter(t => t.startsWith('Current runtime context.'))

async function turn(h: Awaited<ReturnType<typeof harness>>, prompt: string): Promise<void> {
  h.agent.followup([{ type: 'text', text: prompt }])
  await h.agent.whenIdle()
}

describe('the network knob (security #40.1)', () => {
  it('folds from sandbox/network, appends only on change, validates, and resets after session/imported', async () => {
    const h = await harness('allowlist')
    const { approval } = h.ctx
    expect(approval.network(h.session)).toBe('allowlist')
    expect(approval.defaults().network).toBe('allowlist')
    expect(approval.setNetwork(h.session, 'allowlist')).toBe(false)
    expect(approval.setNetwork(h.session, 'none')).toBe(true)
    expect(h.session.events.at(-1)).toMatchObject({ type: 'sandbox/network', data: { network: 'none' } })
    expect(approval.network(h.session)).toBe('none')
    expect(() => approval.setNetwork(h.session, 'open' as never)).toThrow('unknown network mode "open"')
    expect(() => h.session.append('sandbox/network', { network: 'open' })).toThrow('network must be full, allowlist or none')
    h.session.append('session/imported', { from: { id: 'elsewhere' } })
    expect(approval.network(h.session)).toBe('allowlist')
    await h.dispose()
  })

  it('the ApprovalPlugin alone defaults to full, and full adds no runtime-context section (recorded prompts stay byte-equal)', async () => {
    const h = await harness()
    expect(h.ctx.approval.network(h.session)).toBe('full')
    expect(networkPolicyText('full')).toBeUndefined()
    await turn(h, 'first')
    h.ctx.approval.setNetwork(h.session, 'none')
    await turn(h, 'second')
    const [first, second] = snapshots(h)
    expect(first).not.toContain('network policy')
    expect(second).toContain(networkPolicyText('none')!)
    await h.dispose()
  })

  it('allowlist shows its section; a delegated child inherits the parent\'s explicit network', async () => {
    const h = await harness('allowlist', [text('one')])
    await turn(h, 'first')
    expect(snapshots(h)[0]).toContain(networkPolicyText('allowlist')!)
    h.ctx.approval.setNetwork(h.session, 'none')
    const child = h.ctx.sessions.create({ parentSession: h.session.id, delegationDepth: 1 })
    h.ctx.approval.delegate(h.session, child)
    expect(child.events.find(e => e.type === 'sandbox/network')?.data).toEqual({ network: 'none', source: 'delegation' })
    expect(h.ctx.approval.network(child)).toBe('none')
    const copy = h.ctx.sessions.create({})
    h.ctx.approval.adoptKnobs(h.session, copy)
    expect(h.ctx.approval.network(copy)).toBe('none')
    await h.dispose()
  })

  it('allowed-session and allowed-always grant only when the request offered that scope; otherwise unavailable', async () => {
    const outcomes: string[] = []
    const asker: Tool = {
      name: 'asker',
      description: 'asks three times',
      parameters: { type: 'object', properties: {} },
      execute: async (_args, context) => {
        const session = context.session as never
        const ask = (scopes?: ('session' | 'always')[]) => h.ctx.approval.request({ session, toolName: 'network', callId: context.callId, reason: 'example.org:443', ...(scopes ? { scopes } : {}) })
        outcomes.push(await ask(), await ask(['session', 'always']), await ask(['always']))
        return { content: [{ type: 'text', text: 'asked' }] }
      },
    }
    const h = await loopHarness({
      responses: [toolCalls([{ id: 'c1', name: 'asker' }]), text('done')],
      tools: [asker],
      setup: async (ctx) => { await ctx.plugin(ApprovalPlugin, { network: 'allowlist' }).await() },
    })
    const answers: string[] = ['allowed-session', 'allowed-session', 'allowed-always']
    h.ctx.approval.answerer(() => answers.shift() as never)
    const offered: unknown[] = []
    h.ctx.on('approval/pending', (request) => { offered.push(request.scopes) })
    await turn(h as never, 'go')
    expect(outcomes).toEqual(['unavailable', 'allowed-session', 'allowed-always'])
    expect(offered).toEqual([undefined, ['session', 'always'], ['always']])
    expect(h.of('approval/decided').map(e => (e.data as { outcome: string }).outcome)).toEqual(outcomes)
    await h.dispose()
  })
})
