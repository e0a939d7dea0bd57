import { Context } from 'cordis'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { UserMessage } from '../llm/types.js'
import { SessionsServicePlugin } from '../session/index.js'
import { Inbox, InboxError, type InboxClaim } from './inbox.js'

const msg = (text: string): UserMessage => ({ id: text, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } })

async function session() {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin).await()
  return ctx.sessions.create({})
}

describe('inbox (A-1, A-2)', () => {
  it('A-1: the splice is appended before the live list changes, and an append veto leaves the lists untouched', async () => {
    const s = await session()
    const inbox = Inbox.fromLog(s)
    const seenLength: number[] = []
    const original = s.append.bind(s)
    ;(s as { append: typeof s.append }).append = ((type: string, data: unknown, options?: object) => {
      seenLength.push(inbox.nextTurn.length)
      if ((data as { inserted: UserMessage[] }).inserted[0]?.id === 'vetoed') throw new Error('veto')
      return original(type, data, options)
    }) as typeof s.append
    inbox.push('next-turn', msg('a'))
    expect(seenLength).toEqual([0])
    expect(() => inbox.push('next-turn', msg('vetoed'))).toThrow('veto')
    expect(inbox.nextTurn.map(m => m.id)).toEqual(['a'])
  })

  const ids = (claim: InboxClaim) => ({ step: claim.step.map(m => m.id), turn: claim.turn.map(m => m.id) })

  it('A-3: claimFrom takes all of next-step and, at a turn boundary, only the first next-turn message, each by its list', async () => {
    const s = await session()
    const inbox = Inbox.fromLog(s)
    inbox.push('next-turn', msg('t1'))
    inbox.push('next-turn', msg('t2'))
    inbox.push('next-step', msg('s1'))
    inbox.push('next-step', msg('s2'))
    expect(ids(inbox.claimFrom('next-step'))).toEqual({ step: ['s1', 's2'], turn: [] })
    inbox.push('next-step', msg('s3'))
    expect(ids(inbox.claimFrom('next-turn'))).toEqual({ step: ['s3'], turn: ['t1'] })
    expect(inbox.nextTurn.map(m => m.id)).toEqual(['t2'])
    expect(inbox.nextStep).toEqual([])
    expect(Inbox.fromLog(s).nextTurn.map(m => m.id)).toEqual(['t2'])
    // An empty inbox claims nothing and logs nothing.
    const length = s.events.length
    expect(ids(inbox.claimFrom('next-step'))).toEqual({ step: [], turn: [] })
    expect(s.events.length).toBe(length)
  })

  it('A-3: unclaim puts each claimed message back at the front of the list it came from, in the log too', async () => {
    const s = await session()
    const inbox = Inbox.fromLog(s)
    inbox.push('next-turn', msg('t1'))
    inbox.push('next-turn', msg('t2'))
    inbox.push('next-step', msg('s1'))
    const claim = inbox.claimFrom('next-turn')
    inbox.push('next-step', msg('s2'))
    inbox.unclaim(claim)
    expect(inbox.nextTurn.map(m => m.id)).toEqual(['t1', 't2'])
    expect(inbox.nextStep.map(m => m.id)).toEqual(['s1', 's2'])
    const rebuilt = Inbox.fromLog(s)
    expect(rebuilt.nextTurn).toEqual(inbox.nextTurn)
    expect(rebuilt.nextStep).toEqual(inbox.nextStep)
  })

  it('bad splices are refused with a message naming the list; a corrupt log names the seq', async () => {
    const s = await session()
    const inbox = Inbox.fromLog(s)
    expect(() => inbox.splice('next-turn', 2, 0, [msg('x')])).toThrow(InboxError)
    expect(() => inbox.splice('next-step', 0, 1, [])).toThrow(/cannot remove 1 message\(s\) at 0 from next-step \(length 0\)/)
    s.append('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] })
    expect(() => Inbox.fromLog(s)).toThrow(/seq 0: splice of 1 at 0 does not fit next-turn \(length 0\)/)
  })

  it('A-9: clear empties both lists through splices marked canceled', async () => {
    const s = await session()
    const inbox = Inbox.fromLog(s)
    inbox.push('next-turn', msg('t'))
    inbox.push('next-step', msg('s'))
    inbox.clear()
    expect(inbox.hasPending).toBe(false)
    expect(s.events.slice(-2).map(e => e.data)).toEqual([
      { target: 'next-step', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' },
      { target: 'next-turn', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' },
    ])
  })
})

describe('inbox property (A-1)', () => {
  it('A-1: after any sequence of sends, claims and clears, folding the log rebuilds exactly the live lists', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), target: fc.constantFrom('next-turn' as const, 'next-step' as const) }),
      fc.record({ kind: fc.constant('claim' as const), target: fc.constantFrom('next-turn' as const, 'next-step' as const) }),
      fc.record({ kind: fc.constant('clear' as const) }),
      fc.record({ kind: fc.constant('remove' as const), target: fc.constantFrom('next-turn' as const, 'next-step' as const), at: fc.nat(5) }),
    )
    await fc.assert(fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
      const s = await session()
      const inbox = Inbox.fromLog(s)
      let n = 0
      for (const o of ops) {
        if (o.kind === 'push') inbox.push(o.target, msg(`m${n++}`))
        else if (o.kind === 'claim') inbox.claimFrom(o.target)
        else if (o.kind === 'clear') inbox.clear()
        else {
          const list = o.target === 'next-turn' ? inbox.nextTurn : inbox.nextStep
          if (o.at < list.length) inbox.splice(o.target, o.at, 1, [])
        }
        const rebuilt = Inbox.fromLog(s)
        expect(rebuilt.nextTurn).toEqual(inbox.nextTurn)
        expect(rebuilt.nextStep).toEqual(inbox.nextStep)
      }
    }), { numRuns: 100 })
  })
})
