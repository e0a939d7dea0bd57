import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { GoalsPlugin, type GoalChange } from './index.js'
import type { UserMessage } from '../llm/types.js'

describe('goals: the round driver (GL-1..GL-3)', () => {
  it('GL-1, GL-2: a goal runs two automatic rounds and completes; the closing step ends the run', async () => {
    let goalId = ''
    const h = await loopHarness({
      responses: [
        toolCalls([{ id: 'g1', name: 'create_goal', arguments: { objective: 'count to two', max_goal_rounds: 5 } }]),
        text('goal set'),
        text('one'),
        // Built when requested: the goal id is known by then.
        () => toolCalls([{ id: 'u1', name: 'update_goal', arguments: { goal_id: goalId, revision: 1, action: 'complete' } }]),
        text('all done: counted to two'),
      ],
      setup: async (ctx) => { await ctx.plugin(GoalsPlugin).await() },
    })
    // The id is only known once created: read it from the log before round 2's update call.
    const off = h.ctx.on('session/event', (_s, event) => { if (event.type === 'goal/change') goalId = (event.data as GoalChange).goal.id })
    h.agent.followup('count to two as a goal')
    await h.agent.whenIdle()
    off()
    const changes = h.of('goal/change').map(e => e.data as GoalChange)
    expect(changes.map(c => [c.operation, c.goal.revision, c.goal.phase])).toEqual([['create', 1, 'active'], ['complete', 2, 'complete']])
    expect(changes[1]!.roundsStarted).toBe(2)
    const rounds = h.of('user/message').map(e => e.data).filter(m => (m.source as unknown as { kind: string }).kind === 'goal')
    expect(rounds.map(m => (m.source as unknown as { round: number }).round)).toEqual([1, 2])
    expect((rounds[0]!.content[0] as { text: string }).text).toMatch(/^<goal_round>\nObjective: "count to two"\nRound: 1\/5\n/)
    const notice = h.of('user/message').map(e => e.data).find(m => (m.source as unknown as { plugin?: string }).plugin === 'tool-goal')
    expect((notice!.content[0] as { text: string }).text).toMatch(/^<goal_complete>/)
    expect(h.of('turn/start')).toHaveLength(3)
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['completed', 'completed', 'completed'])
    await h.dispose()
  })

  it('GL-2: rounds stop at the cap; GL-4: a round (not a human turn) cannot create a goal', async () => {
    const h = await loopHarness({
      responses: [
        toolCalls([{ id: 'g1', name: 'create_goal', arguments: { objective: 'loop', max_goal_rounds: 1 } }]), text('set'),
        toolCalls([{ id: 'g2', name: 'create_goal', arguments: { objective: 'another' } }]), text('round one'),
      ],
      setup: async (ctx) => { await ctx.plugin(GoalsPlugin).await() },
    })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('turn/start')).toHaveLength(2)
    const refused = h.of('tool/result')[1]!.data.message.content[0]
    expect(refused.isError).toBe(true)
    expect(h.of('goal/change')).toHaveLength(1)
    await h.dispose()
  })

  it('GL-1: a new goal starts at roundsStarted 0, whatever rounds the previous goal ran', async () => {
    const h = await loopHarness({
      responses: [
        toolCalls([{ id: 'g1', name: 'create_goal', arguments: { objective: 'first', max_goal_rounds: 1 } }]), text('set'),
        text('first round'),
        toolCalls([{ id: 'g2', name: 'create_goal', arguments: { objective: 'second', max_goal_rounds: 1 } }]), text('set again'),
        text('second round'),
      ],
      setup: async (ctx) => { await ctx.plugin(GoalsPlugin).await() },
    })
    h.agent.followup('start the first goal')
    await h.agent.whenIdle()
    h.agent.followup('start the second goal')
    await h.agent.whenIdle()
    const creates = h.of('goal/change').map(e => e.data as GoalChange).filter(c => c.operation === 'create')
    expect(creates.map(c => [c.goal.objective, c.roundsStarted])).toEqual([['first', 0], ['second', 0]])
    await h.dispose()
  })

  it('GL-2 autoRounds false (the headless composition, as goal-tools records): a goal created in the run stays armed and no round is queued after the turn', async () => {
    const h = await loopHarness({
      responses: [
        toolCalls([{ id: 'g1', name: 'create_goal', arguments: { objective: 'later', max_goal_rounds: 7 } }]),
        text('GOAL READY'),
      ],
      setup: async (ctx) => { await ctx.plugin(GoalsPlugin, { autoRounds: false }).await() },
    })
    h.agent.followup('create a goal')
    await h.agent.whenIdle()
    expect(h.of('turn/start')).toHaveLength(1)
    const result = h.of('tool/result')[0]!.data.message.content[0]
    expect(JSON.parse((result.content[0] as { text: string }).text)).toMatchObject({ goal: { phase: 'active', roundsStarted: 0, maxGoalRounds: 7 }, activation: 'armed' })
    await h.dispose()
  })

  it('GL-1 activation: a goal read back by a new plugin instance (a resumed or forked session) is "disarmed" and runs no round until a human resumes it; complete disarms it (as the recorded web run shows)', async () => {
    let goalId = ''
    let first: { dispose(): unknown } | undefined
    const h = await loopHarness({
      responses: [
        toolCalls([{ id: 'c1', name: 'create_goal', arguments: { objective: 'wait for it', max_goal_rounds: 3 } }]), text('set'),
        toolCalls([{ id: 'g1', name: 'get_goal', arguments: {} }]), text('it waits'),
        () => toolCalls([{ id: 'r1', name: 'update_goal', arguments: { goal_id: goalId, revision: 1, action: 'resume' } }]), text('resumed'),
        () => toolCalls([{ id: 'd1', name: 'update_goal', arguments: { goal_id: goalId, revision: 2, action: 'complete' } }]), text('closing'),
      ],
      setup: async (ctx) => {
        const fiber = ctx.plugin(GoalsPlugin, { autoRounds: false })
        first = fiber
        await fiber.await()
      },
    })
    const off = h.ctx.on('session/event', (_s, event) => { if (event.type === 'goal/change') goalId = (event.data as GoalChange).goal.id })
    h.agent.followup('make a goal')
    await h.agent.whenIdle()
    // A new process over the same log: a new plugin instance that did not see the goal armed.
    await first!.dispose()
    await h.ctx.plugin(GoalsPlugin).await()
    h.agent.followup('where are we?')
    await h.agent.whenIdle()
    expect(h.of('turn/start')).toHaveLength(2)
    h.agent.followup('resume the goal')
    await h.agent.whenIdle()
    off()
    const results = h.of('tool/result').map(e => JSON.parse((e.data.message.content[0] as unknown as { content: { text: string }[] }).content[0]!.text) as { goal: { phase: string }; activation: string })
    expect(results.map(r => [r.goal.phase, r.activation])).toEqual([['active', 'armed'], ['active', 'disarmed'], ['active', 'armed'], ['complete', 'disarmed']])
    // The resumed goal ran exactly one round, which completed it.
    const rounds = h.of('user/message').map(e => e.data).filter(m => (m.source as unknown as { kind: string }).kind === 'goal')
    expect(rounds).toHaveLength(1)
    expect(h.of('turn/start')).toHaveLength(4)
    await h.dispose()
  })

  it('GL-1 blocked: a round may mark its goal blocked only after blockedAfterConsecutiveRounds (3) rounds; then no round follows', async () => {
    let goalId = ''
    const h = await loopHarness({
      responses: [
        toolCalls([{ id: 'c1', name: 'create_goal', arguments: { objective: 'needs a key', max_goal_rounds: 9 } }]), text('set'),
        () => toolCalls([{ id: 'b1', name: 'update_goal', arguments: { goal_id: goalId, revision: 1, action: 'blocked', blocked_reason: 'no key' } }]), text('not yet'),
        text('trying again'),
        () => toolCalls([{ id: 'b2', name: 'update_goal', arguments: { goal_id: goalId, revision: 1, action: 'blocked', blocked_reason: 'no key' } }]), text('blocked now'),
      ],
      setup: async (ctx) => { await ctx.plugin(GoalsPlugin).await() },
    })
    const off = h.ctx.on('session/event', (_s, event) => { if (event.type === 'goal/change') goalId = (event.data as GoalChange).goal.id })
    h.agent.followup('work on it')
    await h.agent.whenIdle()
    off()
    const results = h.of('tool/result').map(e => e.data.message.content[0] as unknown as { isError?: boolean; content: { text: string }[] })
    expect(results[1]?.isError).toBe(true)
    // The original's text and code (deepseek-harness tool-goal): the rounds the goal has started.
    expect(results[1]!.content[0]!.text).toBe('Error: blocked requires at least 3 consecutive goal rounds; current round is 1')
    expect((h.of('tool/result')[1]!.data as { error?: { code: string } }).error?.code).toBe('GOAL_TOOL_BLOCK_THRESHOLD')
    expect(results[2]?.isError).not.toBe(true)
    const changes = h.of('goal/change').map(e => e.data as GoalChange)
    expect(changes.map(c => c.operation)).toEqual(['create', 'blocked'])
    expect(changes[1]!.goal).toMatchObject({ phase: 'blocked', blockedReason: 'no key' })
    expect(changes[1]!.roundsStarted).toBe(3)
    expect(h.of('turn/start')).toHaveLength(4)
    await h.dispose()
  })

  it('GL-1 activation: a fork the user made of a session with an armed goal, and a copy loaded from its log, start no round until a human resumes the goal there (GL-4: not in a subagent)', async () => {
    let goalId = ''
    const h = await loopHarness({
      responses: [
        toolCalls([{ id: 'c1', name: 'create_goal', arguments: { objective: 'two rounds', max_goal_rounds: 2 } }]), text('set'),
        text('round one'), text('round two'),
        // The fork: a human turn runs no round; a human asking to continue rearms the goal.
        text('hello from the fork'),
        () => toolCalls([{ id: 'r1', name: 'update_goal', arguments: { goal_id: goalId, revision: 1, action: 'resume' } }]), text('resumed'),
        text('fork round one'), text('fork round two'),
        // The loaded copy: no round either.
        text('hello from the copy'),
        // A subagent's copy (GL-4): resume is refused there.
        () => toolCalls([{ id: 'r2', name: 'update_goal', arguments: { goal_id: goalId, revision: 1, action: 'resume' } }]), text('refused'),
      ],
      setup: async (ctx) => { await ctx.plugin(GoalsPlugin).await() },
    })
    const off = h.ctx.on('session/event', (_s, event) => { if (event.type === 'goal/change') goalId = (event.data as GoalChange).goal.id })
    h.agent.followup('work on it as a goal')
    await h.agent.whenIdle()
    expect(h.of('turn/start')).toHaveLength(3)
    // Right after the turn that created the goal, before its first round was queued.
    const boundary = h.of('turn/end')[0]!.seq
    const roundsOf = (events: readonly { type: string; data: unknown }[]) => events.filter(e => e.type === 'user/message' && ((e.data as UserMessage).source as { kind: string }).kind === 'goal').length
    const turnsOf = (events: readonly { type: string }[]) => events.filter(e => e.type === 'turn/start').length

    const fork = h.ctx.agents.create({ sessionId: h.ctx.sessions.fork(h.session.id, boundary).id })
    fork.followup('hello')
    await fork.whenIdle()
    expect([turnsOf(fork.session.events), roundsOf(fork.session.events)]).toEqual([2, 0])
    fork.followup('please continue')
    await fork.whenIdle()
    expect([turnsOf(fork.session.events), roundsOf(fork.session.events)]).toEqual([5, 2])

    const copy = h.ctx.sessions.hydrate({ ...h.session.header, id: 'loaded-copy' }, h.session.events.slice(0, boundary + 1))
    const loaded = h.ctx.agents.create({ sessionId: copy.id })
    loaded.followup('hello')
    await loaded.whenIdle()
    expect([turnsOf(loaded.session.events), roundsOf(loaded.session.events)]).toEqual([2, 0])

    const delegated = h.ctx.sessions.hydrate({ ...h.session.header, id: 'subagent-copy', parentSession: h.session.id, origin: 'subagent', delegationDepth: 1 }, h.session.events.slice(0, boundary + 1))
    const child = h.ctx.agents.create({ sessionId: delegated.id })
    child.followup('please continue')
    await child.whenIdle()
    const refused = child.session.events.filter(e => e.type === 'tool/result').at(-1)!.data as { error?: { code: string } }
    expect(refused.error?.code).toBe('GOAL_NOT_ALLOWED')
    expect([turnsOf(child.session.events), roundsOf(child.session.events)]).toEqual([2, 0])
    off()
    await fork.dispose()
    await loaded.dispose()
    await child.dispose()
    await h.dispose()
  })
})

describe('the goal section of the system prompt', () => {
  it('Y-1: with the goals row loaded the prompt says when goals fit, naming the configured blocked threshold; unloaded, it is gone', async () => {
    const { Context } = await import('cordis')
    const { SystemPromptPlugin } = await import('../prompt/index.js')
    const { SessionsServicePlugin } = await import('../session/index.js')
    const { ToolsPlugin } = await import('../tools/index.js')
    const { goalSection } = await import('./index.js')
    const ctx = new Context()
    await Promise.all([ctx.plugin(SystemPromptPlugin), ctx.plugin(SessionsServicePlugin), ctx.plugin(ToolsPlugin)].map(fiber => fiber.await()))
    const goals = ctx.plugin(GoalsPlugin, { blockedAfterConsecutiveRounds: 4 })
    await goals.await()
    const { system } = await ctx.systemPrompt.assemble()
    expect(system).toContain(goalSection(4))
    expect(goalSection(4)).toContain('4 or more goal rounds in a row')
    expect(goalSection(4)).toContain('update_goal action resume')
    await goals.dispose()
    expect((await ctx.systemPrompt.assemble()).system).not.toContain('Goal tools')
  })
})
