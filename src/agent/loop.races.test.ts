/**
 * Races and failures around the driver: one driver at a time, no claimed input lost, and the
 * wake latch limited to wakes that arrived after an abort.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { hang, text, type ScriptedResponse } from '../../test-support/scripted-model.js'
import type { UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'

function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>(r => { resolve = r })
  return { promise, resolve }
}

const textOf = (message: UserMessage) => (message.content[0] as { text: string }).text
const entered = (h: LoopHarness) => h.of('user/message').map(e => textOf(e.data as UserMessage))
const pending = (h: LoopHarness) => h.agent.inbox.nextTurn.length + h.agent.inbox.nextStep.length > 0
const queued = (h: LoopHarness) => ({ turn: h.agent.inbox.nextTurn.map(textOf), step: h.agent.inbox.nextStep.map(textOf) })

/** turn/start and turn/end strictly alternate and number up from 1. */
function assertTurnsWellFormed(events: readonly SessionEvent[]): void {
  let open: number | undefined
  let last = 0
  for (const event of events) {
    if (event.type === 'turn/start') {
      expect(open, `turn/start at seq ${event.seq} while turn ${open} is open`).toBeUndefined()
      open = (event.data as { turn: number }).turn
      expect(open).toBe(last + 1)
    } else if (event.type === 'turn/end') {
      expect((event.data as { turn: number }).turn).toBe(open)
      last = open!
      open = undefined
    }
  }
  expect(open, 'the log ends inside an open turn').toBeUndefined()
}

describe('one driver at a time (A-9)', () => {
  it('A-9: a status listener that sends input when idle is announced does not start a second driver beside a latched replay', async () => {
    const ready = deferred()
    const h = await loopHarness({ responses: [hang([], () => ready.resolve()), text('a'), text('b'), text('c')] })
    let sent = false
    h.ctx.on('agent/status', (_agent, status) => {
      if (status === 'idle' && !sent) { sent = true; h.agent.followup('from listener') }
    })
    h.agent.followup('first')
    await ready.promise
    h.agent.cancel()
    h.agent.followup('after cancel')
    await h.agent.whenIdle()
    // whenIdle may settle while a listener-started turn runs; wait until nothing is pending.
    while (h.agent.status !== 'idle' || pending(h)) await h.agent.whenIdle()
    assertTurnsWellFormed(h.session.events)
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['aborted', 'completed', 'completed'])
    expect(entered(h)).toEqual(['first', 'after cancel', 'from listener'])
    // The agent still works.
    h.agent.followup('later')
    await h.agent.whenIdle()
    expect(h.of('turn/end').at(-1)!.data.reason.kind).toBe('completed')
  })

  it('A-9: whatever status listeners do (send, cancel) at any announcement, turns never overlap and the agent keeps working', async () => {
    type Action = 'none' | 'followup' | 'steer' | 'cancel' | 'cancel-keep'
    const action = fc.constantFrom<Action>('none', 'followup', 'steer', 'cancel', 'cancel-keep')
    await fc.assert(fc.asyncProperty(fc.array(fc.record({ on: fc.constantFrom('idle', 'running'), act: action }), { minLength: 1, maxLength: 6 }), fc.boolean(), async (plan, latch) => {
      const ready = deferred()
      const hangOnFirst = hang([], () => ready.resolve())
      // The prompt 'first' hangs until cancelled (a listener may cancel before it reaches the model).
      const reply: ScriptedResponse = (request, signal) => {
        const lastUser = [...request.messages].reverse().find(m => m.role === 'user')
        const said = lastUser?.content[0]?.type === 'text' ? lastUser.content[0].text : ''
        return said === 'first' && typeof hangOnFirst === 'function' ? hangOnFirst(request, signal) : text('ok')
      }
      const h = await loopHarness({ responses: Array.from({ length: 20 }, () => reply) })
      const steps = [...plan]
      h.ctx.on('agent/status', (_agent, status) => {
        const next = steps[0]
        if (next === undefined || next.on !== status) return
        steps.shift()
        if (next.act === 'followup') h.agent.followup(`listener ${status}`)
        else if (next.act === 'steer') h.agent.steer(`listener steer ${status}`)
        else if (next.act === 'cancel') h.agent.cancel()
        else if (next.act === 'cancel-keep') h.agent.cancel({ keepInbox: true })
      })
      h.agent.followup('first')
      // A listener may cancel before the model is ever asked.
      await Promise.race([ready.promise, h.agent.whenIdle()])
      h.agent.cancel()
      if (latch) h.agent.followup('latched')
      for (let i = 0; i < 10 && (h.agent.status !== 'idle' || pending(h)); i++) {
        await h.agent.whenIdle()
        if (pending(h)) h.agent.followup('drain')
      }
      await h.agent.whenIdle()
      assertTurnsWellFormed(h.session.events)
      h.agent.followup('still alive')
      await h.agent.whenIdle()
      assertTurnsWellFormed(h.session.events)
      expect(h.of('turn/end').at(-1)!.data.reason.kind).not.toBe('error')
      await h.dispose()
    }), { numRuns: 40, timeout: 3000 })
  })
})

describe('claimed input is never lost (A-3)', () => {
  it('A-3: when agent/pre-step throws, the claimed input goes back to its lists, the error names the hook, and the loop waits for the next wake', async () => {
    const h = await loopHarness({ responses: [text('one'), text('two')] })
    let fail = true
    h.ctx.on('agent/pre-step', async (_payload, next) => {
      if (fail) { fail = false; throw new Error('') }
      return next()
    })
    h.agent.inject('steered first')
    h.agent.followup('first')
    await h.agent.whenIdle()
    const reason = h.of('turn/end')[0]!.data.reason
    expect(reason).toMatchObject({ kind: 'error', error: { code: 'PRE_STEP_FAILED' } })
    const message = (reason as { error: { message: string } }).error.message
    expect(message).toMatch(/^agent\/pre-step failed: /)
    expect(message).not.toMatch(/:\s*$/)
    expect(queued(h)).toEqual({ step: ['steered first'], turn: ['first'] })
    expect(h.of('turn/start')).toHaveLength(1)
    h.agent.followup('second')
    await h.agent.whenIdle()
    expect(entered(h)).toEqual(['steered first', 'first', 'second'])
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['error', 'completed', 'completed'])
  })

  it('A-3: whatever agent/pre-step or prompt assembly throws, nothing claimed is lost and the error message says what failed', async () => {
    const thrown = fc.oneof(
      fc.string().map(m => new Error(m)),
      fc.string().map(m => new TypeError(m)),
      fc.string(), fc.constant(undefined), fc.constant(null), fc.integer(), fc.object(),
    )
    await fc.assert(fc.asyncProperty(thrown, fc.constantFrom('agent/pre-step', 'system-prompt/assemble'), fc.integer({ min: 1, max: 3 }), async (value, where, times) => {
      const { SystemPromptPlugin } = await import('../prompt/index.js')
      const h = await loopHarness({
        responses: Array.from({ length: 4 }, () => text('ok')),
        setup: async (ctx) => { await ctx.plugin(SystemPromptPlugin).await() },
      })
      let failures = times
      h.ctx.on(where as 'agent/pre-step', async (_payload: unknown, next: () => Promise<never>) => {
        if (failures > 0) { failures--; throw value }
        return next()
      })
      h.agent.followup('keep me')
      for (let i = 0; i < times; i++) {
        await h.agent.whenIdle()
        const reason = h.of('turn/end').at(-1)!.data.reason as { kind: string; error: { code: string; message: string } }
        expect(reason.kind).toBe('error')
        expect(reason.error.code).toBe('PRE_STEP_FAILED')
        expect(reason.error.message).toMatch(where === 'agent/pre-step' ? /^agent\/pre-step failed: \S/ : /^system prompt assembly failed: \S/)
        expect(queued(h).turn).toEqual(['keep me', ...Array.from({ length: i }, (_, j) => `retry ${j}`)])
        expect(h.of('turn/start')).toHaveLength(i + 1)
        h.agent.followup(`retry ${i}`)
      }
      await h.agent.whenIdle()
      while (pending(h)) { h.agent.followup('drain'); await h.agent.whenIdle() }
      expect(entered(h).filter(t => !t.startsWith('Current runtime context'))[0]).toBe('keep me')
      await h.dispose()
    }), { numRuns: 30 })
  })
})

describe('the wake latch (A-9)', () => {
  it('A-9: a follow-up queued before cancel({keepInbox:true}) stays queued; it does not run at once', async () => {
    const ready = deferred()
    const h = await loopHarness({ responses: [hang([], () => ready.resolve()), text('later')] })
    h.agent.followup('first')
    await ready.promise
    h.agent.followup('queued before the cancel')
    h.agent.cancel({ keepInbox: true })
    await h.agent.whenIdle()
    expect(h.of('turn/start')).toHaveLength(1)
    expect(queued(h).turn).toEqual(['queued before the cancel'])
    expect(h.agent.status).toBe('idle')
  })

  it('A-9: a wake after the abort is latched and replayed; the kept input before it runs first, in order', async () => {
    const ready = deferred()
    const h = await loopHarness({ responses: [hang([], () => ready.resolve()), text('a'), text('b')] })
    h.agent.followup('first')
    await ready.promise
    h.agent.followup('kept')
    h.agent.cancel({ keepInbox: true })
    h.agent.followup('after the abort')
    await h.agent.whenIdle()
    expect(entered(h)).toEqual(['first', 'kept', 'after the abort'])
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['aborted', 'completed', 'completed'])
  })

  it('A-9: a latched wake whose own message is gone is not replayed for input kept from before the abort', async () => {
    const ready = deferred()
    const h = await loopHarness({ responses: [hang([], () => ready.resolve()), text('a')] })
    h.agent.followup('first')
    await ready.promise
    h.agent.followup('kept')
    h.agent.cancel({ keepInbox: true })
    h.agent.followup('withdrawn')
    const loop = (h.agent as unknown as { loop: { inbox: { splice(t: string, s: number, n: number, i: unknown[]): unknown } } }).loop
    loop.inbox.splice('next-turn', 1, 1, [])
    await h.agent.whenIdle()
    expect(h.of('turn/start')).toHaveLength(1)
    expect(queued(h).turn).toEqual(['kept'])
  })

  it('A-9: cancel({keepInbox:true}) returns claimed input to the list each message came from', async () => {
    const gate = deferred()
    const inPreStep = deferred()
    const h = await loopHarness({ responses: [] })
    h.ctx.on('agent/pre-step', async (_payload, next) => { inPreStep.resolve(); await gate.promise; return next() })
    h.agent.inject('steer')
    h.agent.followup('turn input')
    await inPreStep.promise
    expect(queued(h)).toEqual({ step: [], turn: [] })
    h.agent.cancel({ keepInbox: true })
    gate.resolve()
    await h.agent.whenIdle()
    expect(queued(h)).toEqual({ step: ['steer'], turn: ['turn input'] })
    expect(h.of('turn/end')[0]!.data.reason.kind).toBe('aborted')
  })
})

describe('disposal waits for the loops (A-9)', () => {
  it('A-9: unloading ctx.agents resolves only after every loop drained: the log ends with turn/end aborted {disposed}', async () => {
    const { Context } = await import('cordis')
    const { AgentsServicePlugin, LoopInvariantPlugin, ReactLoopPlugin } = await import('./index.js')
    const { LlmServicePlugin } = await import('../llm/index.js')
    const { SessionsServicePlugin } = await import('../session/index.js')
    const { ToolsPlugin, defineTool } = await import('../tools/index.js')
    const { ScriptedModel, SCRIPTED_MODEL, SCRIPTED_PROVIDER, toolCalls } = await import('../../test-support/scripted-model.js')
    const { z } = await import('zod')
    const ctx = new Context()
    for (const fiber of [ctx.plugin(SessionsServicePlugin), ctx.plugin(LlmServicePlugin), ctx.plugin(ToolsPlugin), ctx.plugin(ReactLoopPlugin), ctx.plugin(LoopInvariantPlugin)]) await fiber.await()
    const agents = ctx.plugin(AgentsServicePlugin, { loop: { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL } })
    await agents.await()
    new ScriptedModel([toolCalls([{ id: 'c1', name: 'slow' }])]).register(ctx)
    const started = deferred()
    ctx.tools.register(defineTool({
      name: 'slow', description: 'stops slowly when signalled', schema: z.object({}),
      async execute(_args, context) {
        started.resolve()
        await new Promise<void>(resolve => context.signal.addEventListener('abort', () => resolve(), { once: true }))
        // Cleanup takes a few turns of the event loop.
        for (let i = 0; i < 20; i++) await new Promise<void>(resolve => setImmediate(resolve))
        return { content: [{ type: 'text', text: 'stopped' }] }
      },
    }))
    const agent = ctx.agents.create({ cwd: process.cwd() })
    const session = agent.session
    agent.followup('go')
    await started.promise
    await agents.dispose()
    const last = session.events.at(-1)!
    expect(last.type).toBe('turn/end')
    expect((last.data as { reason: unknown }).reason).toEqual({ kind: 'aborted', reason: { kind: 'disposed' } })
  })
})
