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
