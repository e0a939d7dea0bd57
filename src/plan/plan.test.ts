import { describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { ApprovalPlugin } from '../approval/service.js'
import type { ApprovalAnswer } from '../approval/api.js'
import { CommandsPlugin } from '../commands/index.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { PlanModePlugin, PLAN_POLICY_TEXT, EXIT_PLAN_MODE_DESCRIPTION } from './index.js'

const PLAN = '# Plan\n\n1. read\n2. change'

async function harness(responses: Parameters<typeof loopHarness>[0] extends infer O ? O extends { responses?: infer R } ? R : never : never, answer?: ApprovalAnswer): Promise<LoopHarness> {
  return loopHarness({
    responses,
    setup: async (ctx) => {
      await ctx.plugin(SystemPromptPlugin).await()
      await ctx.plugin(ApprovalPlugin).await()
      await ctx.plugin(CommandsPlugin).await()
      await ctx.plugin(PlanModePlugin).await()
      if (answer !== undefined) ctx.approval.answerer(() => answer)
    },
  })
}

const modes = (h: LoopHarness) => h.of('plan/mode').map(e => (e.data as { active: boolean }).active)
const resultOf = (h: LoopHarness, index: number) => {
  const message = h.of('tool/result')[index]!.data.message as unknown as { content: [{ content: { text: string }[]; isError?: boolean }] }
  return { text: message.content[0].content.map(b => b.text).join(''), isError: message.content[0].isError === true }
}
const policyOf = async (h: LoopHarness) => {
  const assembly = await h.ctx.systemPrompt.assemble(h.agent.scope)
  return assembly.system.includes(PLAN_POLICY_TEXT)
}

describe('plan mode (PM-1, PM-2)', () => {
  it('PM-1: /plan turns it on (plan/mode), plan:policy renders iff active, /plan off turns it off; exit_plan_mode is always in the schema', async () => {
    const h = await harness([])
    const schema = async () => (await h.ctx.systemPrompt.assemble(h.agent.scope)).tools.map(t => t.name)
    expect(await schema()).toContain('exit_plan_mode')
    expect(await policyOf(h)).toBe(false)
    expect(await h.ctx.commands.execute(h.agent, '/plan')).toEqual({ kind: 'success', text: 'Plan mode on.' })
    expect(modes(h)).toEqual([true])
    expect(await policyOf(h)).toBe(true)
    expect(await schema()).toContain('exit_plan_mode')
    // Already on: nothing appended.
    await h.ctx.commands.execute(h.agent, '/plan')
    expect(modes(h)).toEqual([true])
    expect(await h.ctx.commands.execute(h.agent, '/plan off')).toEqual({ kind: 'success', text: 'Plan mode off.' })
    expect(modes(h)).toEqual([true, false])
    expect(await policyOf(h)).toBe(false)
    expect(h.ctx.tools.get('exit_plan_mode')?.description).toBe(EXIT_PLAN_MODE_DESCRIPTION)
    await h.dispose()
  })

  it('PM-1: /plan with a message turns plan mode on and queues the message as the next prompt', async () => {
    const h = await harness([text('planning')])
    const outcome = await h.ctx.commands.execute(h.agent, '/plan refactor the parser')
    expect(outcome?.kind).toBe('prompt')
    await h.agent.whenIdle()
    expect(modes(h)).toEqual([true])
    const first = h.of('user/message').find(e => (e.data.source as { kind: string }).kind === 'user')!
    expect((first.data.content[0] as { text: string }).text).toBe('refactor the parser')
    await h.dispose()
  })

  it('exit_plan_mode outside plan mode fails and asks nobody', async () => {
    const h = await harness([toolCalls([{ id: 'x1', name: 'exit_plan_mode', arguments: { plan: PLAN } }]), text('ok')], 'allowed-once')
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(resultOf(h, 0)).toEqual({ text: 'Error: not in plan mode', isError: true })
    expect(h.of('approval/asked')).toHaveLength(0)
    await h.dispose()
  })

  it('exit_plan_mode rejects a plan without a heading', async () => {
    const h = await harness([toolCalls([{ id: 'x1', name: 'exit_plan_mode', arguments: { plan: 'just do it' } }]), text('ok')], 'allowed-once')
    await h.ctx.commands.execute(h.agent, '/plan')
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(resultOf(h, 0)).toEqual({ text: 'Error: the plan must start with a markdown heading (#)', isError: true })
    await h.dispose()
  })

  it('PM-2: an approved plan ({approved:true}) leaves plan mode at the next accepted pre-step, with one notice', async () => {
    const h = await harness([
      toolCalls([{ id: 'x1', name: 'exit_plan_mode', arguments: { plan: PLAN } }]),
      text('carrying out the plan'),
    ], 'allowed-once')
    await h.ctx.commands.execute(h.agent, '/plan')
    h.agent.followup('make a plan')
    let modeAtResult: boolean[] | undefined
    const off = h.ctx.on('session/event', (_s, event) => { if (event.type === 'tool/result') modeAtResult = modes(h) })
    await h.agent.whenIdle()
    off()
    expect(resultOf(h, 0)).toEqual({ text: '{"approved":true}', isError: false })
    // Not mid-batch: still on when the result is logged.
    expect(modeAtResult).toEqual([true])
    expect(modes(h)).toEqual([true, false])
    const asked = h.of('approval/asked')[0]!.data as { toolName: string; reason: string }
    expect(asked).toMatchObject({ toolName: 'exit_plan_mode', reason: PLAN })
    const types = h.types()
    const flip = types.lastIndexOf('plan/mode')
    expect(flip).toBeGreaterThan(types.indexOf('tool/result'))
    const notices = h.of('user/message').filter(e => (e.data.source as { plugin?: string }).plugin === 'plan')
    expect(notices).toHaveLength(1)
    expect((notices[0]!.data.content[0] as { text: string }).text).toMatch(/^Plan mode is off/)
    expect(await policyOf(h)).toBe(false)
    await h.dispose()
  })

  it('PM-2: keep planning (rejected) is a failed call carrying the feedback; plan mode stays on', async () => {
    const h = await harness([
      toolCalls([{ id: 'x1', name: 'exit_plan_mode', arguments: { plan: PLAN } }]),
      text('planning more'),
    ], 'rejected')
    await h.ctx.commands.execute(h.agent, '/plan')
    h.agent.followup('make a plan')
    await h.agent.whenIdle()
    expect(resultOf(h, 0)).toEqual({ text: 'Error: the user wants you to keep planning; plan mode is still on. Refine the plan and present it again with exit_plan_mode.', isError: true })
    expect(modes(h)).toEqual([true])
    expect(await policyOf(h)).toBe(true)
    await h.dispose()
  })

  it('PM-2: /plan during a running turn is applied at the next pre-step', async () => {
    let h!: LoopHarness
    h = await harness([
      () => { h.ctx.planMode.select(h.session, true); return toolCalls([{ id: 'x1', name: 'exit_plan_mode', arguments: { plan: PLAN } }]) },
      text('ok'),
    ])
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(modes(h)).toEqual([true])
    const types = h.types()
    // Appended after the first step's result, before the second step's model call ended.
    expect(types.indexOf('plan/mode')).toBeGreaterThan(types.indexOf('turn/start'))
    // The call ran while still out of plan mode.
    expect(resultOf(h, 0).text).toBe('Error: not in plan mode')
    await h.dispose()
  })
})
