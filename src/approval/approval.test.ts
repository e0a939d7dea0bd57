import { describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import type { Tool } from '../tools/api.js'
import type { ApprovalAnswer, ApprovalOutcome, PendingApproval } from './api.js'
import { ApprovalPlugin, type ApprovalConfig } from './service.js'
import { approvalPolicyText, sandboxPolicyText } from './texts.js'

function probe(ran: string[]): Tool {
  return {
    name: 'probe',
    description: 'records that it ran',
    parameters: { type: 'object', properties: {} },
    execute: (_args, context) => { ran.push(context.callId); return { content: [{ type: 'text', text: 'ran' }] } },
  }
}

/** A harness whose `probe` tool always needs approval (a pre-execute `ask`). */
async function asking(config: ApprovalConfig = {}, ran: string[] = []): Promise<LoopHarness> {
  return loopHarness({
    responses: [toolCalls([{ id: 'c1', name: 'probe' }]), text('done')],
    tools: [probe(ran)],
    setup: async (ctx) => {
      await ctx.plugin(ApprovalPlugin, config).await()
      ctx.on('tools/pre-execute', async (execution, next) => execution.name === 'probe' ? { kind: 'ask', reason: 'probe needs a yes' } : next())
    },
  })
}

const resultText = (h: LoopHarness) => {
  const message = h.of('tool/result')[0]!.data.message as unknown as { content: [{ content: { text: string }[] }] }
  return message.content[0].content.map(block => block.text).join('')
}

const outcomes = (h: LoopHarness) => h.of('approval/decided').map(e => (e.data as { outcome: string }).outcome)

async function turn(h: LoopHarness, prompt = 'go'): Promise<void> {
  h.agent.followup([{ type: 'text', text: prompt }])
  await h.agent.whenIdle()
}

describe('ctx.approval requests', () => {
  it('AP-2/AP-3: asked then decided with the same fresh id; allowed-once runs the call', async () => {
    const ran: string[] = []
    const h = await asking({}, ran)
    const seen: PendingApproval[] = []
    h.ctx.approval.answerer((request) => { seen.push(request); return 'allowed-once' })
    await turn(h)
    const asked = h.of('approval/asked') as unknown as { data: { id: string } }[]
    const decided = h.of('approval/decided') as unknown as { data: unknown }[]
    expect(asked).toHaveLength(1)
    expect(asked[0]!.data).toEqual({ id: asked[0]!.data.id, toolName: 'probe', callId: 'c1', reason: 'probe needs a yes' })
    expect(decided.map(e => e.data)).toEqual([{ id: asked[0]!.data.id, outcome: 'allowed-once' }])
    expect(h.types().indexOf('approval/asked')).toBeGreaterThan(h.types().indexOf('tool/call'))
    expect(h.types().indexOf('approval/decided')).toBeLessThan(h.types().indexOf('tool/result'))
    expect(seen.map(r => [r.sessionId, r.callId, r.arguments])).toEqual([[h.session.id, 'c1', '{}']])
    expect(ran).toEqual(['c1'])
    await h.dispose()
  })

  it('AP-3: no answerer, a throwing one and a malformed answer all fail closed as unavailable', async () => {
    const answers: (() => ApprovalAnswer | undefined)[] = [
      () => undefined,
      () => { throw new Error('ui crashed') },
      () => 'yes please' as ApprovalAnswer,
    ]
    for (const answer of answers) {
      const ran: string[] = []
      const h = await asking({}, ran)
      h.ctx.approval.answerer(answer)
      await turn(h)
      expect(outcomes(h)).toEqual(['unavailable'])
      expect(resultText(h)).toBe('Error: tool "probe" requires approval, but no approval channel is available')
      expect(ran).toEqual([])
      await h.dispose()
    }
  })

  it('AP-1: policy never rejects without asking anyone, still logged', async () => {
    const ran: string[] = []
    const h = await asking({ policy: 'never' }, ran)
    let called = 0
    h.ctx.approval.answerer(() => { called++; return 'allowed-once' })
    await turn(h)
    expect(called).toBe(0)
    expect(outcomes(h)).toEqual(['rejected'])
    expect(resultText(h)).toBe('Error: the user rejected tool "probe"')
    expect(ran).toEqual([])
    await h.dispose()
  })

  it('AP-3: a turn cancel while the answer is pending decides cancelled and the call does not run', async () => {
    const ran: string[] = []
    const h = await asking({}, ran)
    let asked!: () => void
    const askedPromise = new Promise<void>(resolve => { asked = resolve })
    h.ctx.approval.answerer((_request, signal) => { asked(); return new Promise(resolve => signal.addEventListener('abort', () => resolve(undefined))) })
    h.agent.followup([{ type: 'text', text: 'go' }])
    await askedPromise
    expect(h.ctx.approval.pending(h.session.id)).toHaveLength(1)
    h.agent.cancel()
    await h.agent.whenIdle()
    expect(outcomes(h)).toEqual(['cancelled'])
    expect(h.ctx.approval.pending()).toEqual([])
    expect(ran).toEqual([])
    await h.dispose()
  })

  it('AP-2: asking outside an open turn throws before anything is logged', async () => {
    const h = await asking()
    const before = h.session.length
    await expect(h.ctx.approval.request({ session: h.session, toolName: 'x', callId: 'c', reason: 'r' })).rejects.toThrow('outside an open turn')
    expect(h.session.length).toBe(before)
    await h.dispose()
  })

  it('the first answerer that claims a request wins; the disposer removes an answerer', async () => {
    const h = await asking()
    const order: string[] = []
    const offA = h.ctx.approval.answerer(() => { order.push('a'); return undefined })
    h.ctx.approval.answerer(() => { order.push('b'); return 'rejected' as ApprovalOutcome as ApprovalAnswer })
    offA()
    await turn(h)
    expect(order).toEqual(['b'])
    expect(outcomes(h)).toEqual(['rejected'])
    await h.dispose()
  })
})

describe('permission knobs', () => {
  it('AP-5: a preset appends permission/preset then only the knobs that change; re-selecting appends nothing', async () => {
    const h = await asking()
    const { approval } = h.ctx
    expect([approval.mode(h.session), approval.policy(h.session), approval.preset(h.session)]).toEqual(['workspace-write', 'ask', 'workspace-write'])
    expect(approval.selectPreset(h.session, 'read-only')).toBe(true)
    expect(h.session.events.slice(-2).map(e => [e.type, e.data])).toEqual([['permission/preset', { preset: 'read-only' }], ['sandbox/mode', { mode: 'read-only' }]])
    const length = h.session.length
    expect(approval.selectPreset(h.session, 'read-only')).toBe(false)
    expect(h.session.length).toBe(length)
    approval.selectPreset(h.session, 'danger-full-access')
    expect(h.session.events.slice(-3).map(e => e.type)).toEqual(['permission/preset', 'sandbox/mode', 'approval/policy'])
    expect(approval.preset(h.session)).toBe('danger-full-access')
    approval.setPolicy(h.session, 'ask')
    expect(approval.preset(h.session)).toBe('custom')
    expect(() => approval.selectPreset(h.session, 'yolo' as never)).toThrow('unknown permission preset "yolo"')
    expect(() => h.session.append('sandbox/mode', { mode: 'wide-open' })).toThrow('mode must be read-only, workspace-write or danger-full-access')
    await h.dispose()
  })

  it('AP-6: the runtime context carries both sections, byte-exact, and a knob change makes the next step carry a new snapshot', async () => {
    const h = await loopHarness({
      responses: [text('one'), text('two')],
      cwd: '/srv/project',
      setup: async (ctx) => {
        await ctx.plugin(SystemPromptPlugin).await()
        await ctx.plugin(ApprovalPlugin).await()
      },
    })
    await turn(h, 'first')
    h.ctx.approval.selectPreset(h.session, 'danger-full-access')
    await turn(h, 'second')
    const snapshots = h.of('user/message').map(e => (e.data as unknown as { content: { text: string }[] }).content[0]!.text).filter(t => t.startsWith('Current runtime context.'))
    expect(snapshots).toHaveLength(2)
    expect(snapshots[0]).toContain(sandboxPolicyText('workspace-write', '/srv/project'))
    expect(sandboxPolicyText('workspace-write', '/srv/project')).toBe('Current DSH file policy: workspace-write. Any available operation enforced by the DSH file sandbox may modify files under the session workspace: "/srv/project". Some platform temporary areas may also be writable.')
    expect(snapshots[0]).toContain(approvalPolicyText('ask'))
    expect(snapshots[1]).toContain(sandboxPolicyText('danger-full-access', '/srv/project'))
    expect(snapshots[1]).toContain('Approval prompts are disabled in this session')
    await h.dispose()
  })

  it('SB-7: a child inherits an explicit parent mode with source delegation and runs with policy never', async () => {
    const h = await asking()
    h.ctx.approval.setMode(h.session, 'read-only')
    const child = h.ctx.sessions.create({ parentSession: h.session.id, delegationDepth: 1 })
    h.ctx.approval.delegate(h.session, child)
    expect(child.events.map(e => [e.type, e.data])).toEqual([
      ['sandbox/mode', { mode: 'read-only', source: 'delegation' }],
      ['approval/policy', { policy: 'never', source: 'delegation' }],
    ])
    expect(h.ctx.approval.policy(child)).toBe('never')
    // A parent on the deployment default passes no mode: the child uses the default too.
    const plain = await asking()
    const other = plain.ctx.sessions.create({ parentSession: plain.session.id, delegationDepth: 1 })
    plain.ctx.approval.delegate(plain.session, other)
    expect(other.events.map(e => e.type)).toEqual(['approval/policy'])
    await h.dispose()
    await plain.dispose()
  })

  it('SB-7: an agent on a subagent child is delegated; one on a fork the user made (S-14) keeps the knobs of its log', async () => {
    const h = await loopHarness({
      responses: [text('one')],
      setup: async (ctx) => {
        await ctx.plugin(SystemPromptPlugin).await()
        await ctx.plugin(ApprovalPlugin).await()
      },
    })
    await turn(h, 'first')
    // The session runs on the deployment's defaults: its log sets no knob.
    const fork = h.ctx.sessions.fork(h.session.id)
    await h.ctx.agents.create({ sessionId: fork.id })
    expect(h.ctx.approval.preset(fork)).toBe(h.ctx.approval.preset(h.session))
    expect(h.ctx.approval.policy(fork)).toBe('ask')
    expect(fork.events.slice(fork.header.seedLength!).map(e => e.type)).toEqual(['session/end-seed'])
    const child = h.ctx.sessions.create({ parentSession: h.session.id, origin: 'subagent', delegationDepth: 1 })
    await h.ctx.agents.create({ sessionId: child.id })
    expect(h.ctx.approval.policy(child)).toBe('never')
    await h.dispose()
  })
})
