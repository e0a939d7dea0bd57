import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { packEvents, type ChunkRow } from './chunk-rows.js'
import { PackedRun, concatEvents, eventList, slotsOf, type EventSlot } from './packed-run.js'
import { SessionsServicePlugin } from './service.js'
import { isDeepFrozen } from './snapshot.js'
import { assistantMessage, userMessage } from './testing/fixtures.js'
import type { Session } from './api.js'
import type { SessionEvent } from './types.js'

async function boot() {
  const ctx = new Context()
  let clock = 1_700_000_000_000
  await ctx.plugin(SessionsServicePlugin, { now: () => (clock += 7) })
  return ctx
}

/** A turn whose step streams reasoning, text and a tool call as delta runs (and a short run of 2). */
function streamedTurn(session: Session, turn: number): void {
  session.append('turn/start', { turn })
  session.append('step/start', { turn, step: 1 })
  session.append('user/message', userMessage(`task ${turn}`), { surfaceOp: 'append' })
  const seqs: number[] = []
  const chunk = (c: unknown) => seqs.push(session.append('assistant/chunk', { turn, step: 1, chunk: c } as never).seq)
  chunk({ type: 'block-start', index: 0, blockType: 'reasoning' })
  for (const piece of ['think', 'ing', ' hard', '']) chunk({ type: 'reasoning-delta', index: 0, text: piece })
  chunk({ type: 'block-start', index: 1, blockType: 'text' })
  for (const piece of ['a', 'b']) chunk({ type: 'text-delta', index: 1, text: piece })
  chunk({ type: 'tool-call-delta', index: 2, id: 'c1', name: 'bash', argumentsDelta: '' })
  for (const piece of ['{"com', 'mand":', '"true"}']) chunk({ type: 'tool-call-delta', index: 2, id: 'c1', argumentsDelta: piece })
  for (const piece of ['x', 'y', 'z']) chunk({ type: 'tool-call-delta', index: 3, id: 'c2', name: 'read', argumentsDelta: piece })
  session.append('assistant/message', { turn, step: 1, message: assistantMessage(`a${turn}`, 'ab') }, { surfaceOp: 'append', sourceEventSeqs: seqs })
  session.append('step/end', { turn, step: 1 })
  session.append('turn/end', { turn, reason: { kind: 'completed' } })
}

/** The slots a store's reader builds from packed lines: one slot per member, naming the run. */
function slotsFrom(events: readonly SessionEvent[]): { slots: EventSlot[]; runs: number } {
  const slots: EventSlot[] = []
  let runs = 0
  for (const line of packEvents(events)) {
    if (line.type.endsWith('-chunks')) {
      const run = PackedRun.fromRow(JSON.parse(JSON.stringify(line)) as ChunkRow)
      runs++
      for (let k = 0; k < run.length; k++) slots.push(run)
    } else {
      slots.push(JSON.parse(JSON.stringify(line)) as SessionEvent)
    }
  }
  return { slots, runs }
}

async function storedLog() {
  const ctx = await boot()
  const source = ctx.sessions.create({ id: 'src' })
  for (let turn = 1; turn <= 3; turn++) streamedTurn(source, turn)
  return { ctx, source, events: source.events.slice() }
}

describe('packed runs (a compact in-memory form of stored delta runs)', () => {
  it('R-5: a list of packed slots reads exactly the unpacked events: values, key order, frozen, array methods', async () => {
    const { events } = await storedLog()
    const { slots, runs } = slotsFrom(events)
    expect(runs).toBe(9)
    const list = eventList(slots)
    expect(list.length).toBe(events.length)
    expect(Array.isArray(list)).toBe(true)
    expect(JSON.stringify(list)).toBe(JSON.stringify(events))
    for (let seq = 0; seq < events.length; seq++) {
      expect(JSON.stringify(list[seq])).toBe(JSON.stringify(events[seq]))
      if (slots[seq] instanceof PackedRun) expect(isDeepFrozen(list[seq])).toBe(true)
    }
    expect([...list]).toEqual(events)
    expect(list.slice(5, 12)).toEqual(events.slice(5, 12))
    expect(list.filter(e => e.type === 'assistant/chunk').length).toBe(events.filter(e => e.type === 'assistant/chunk').length)
    expect(list.at(-1)).toEqual(events.at(-1))
    expect(Object.values(list)).toEqual(events)
    expect(list).toEqual(events)
  })

  it('a seek read (slots from a later seq) and a concatenation read the same events', async () => {
    const { events } = await storedLog()
    const { slots } = slotsFrom(events)
    const from = 6
    const seek = eventList(slots.slice(from), true, from)
    expect(JSON.stringify(seek)).toBe(JSON.stringify(events.slice(from)))
    const whole = eventList(slots)
    const extra = { type: 'turn/start', seq: events.length, time: 1, data: { turn: 4 } } as SessionEvent
    const joined = concatEvents(whole, [extra])
    expect(JSON.stringify(joined)).toBe(JSON.stringify([...events, extra]))
    expect(slotsOf(joined).filter(slot => slot instanceof PackedRun).length).toBeGreaterThan(0)
  })

  it('S-5/S-15: hydrate admits runs without unpacking them and gives the session an unpacked log would give', async () => {
    const { ctx, source, events } = await storedLog()
    const { slots } = slotsFrom(events)
    const packed = ctx.sessions.hydrate({ ...source.header, id: 'packed' }, eventList(slots), { adopt: 'parsed' })
    const plain = ctx.sessions.hydrate({ ...source.header, id: 'plain' }, JSON.parse(JSON.stringify(events)), { adopt: 'parsed' })
    // Kept packed: the session's slots still name the runs.
    expect(slotsOf(packed.events).filter(slot => slot instanceof PackedRun).length).toBe(3 * (4 + 3 + 3))
    expect(JSON.stringify(packed.events)).toBe(JSON.stringify(plain.events))
    expect(packed.position).toEqual(plain.position)
    expect(packed.surface()).toEqual(plain.surface())
    expect(packed.deriveMessages()).toEqual(plain.deriveMessages())
    // Appends continue after the runs, and a fork copies them as events.
    streamedTurn(packed, 4)
    expect(JSON.stringify(packed.events.slice(0, events.length))).toBe(JSON.stringify(events))
    expect(packed.events.slice(events.length).map(e => e.type)).toEqual(events.slice(0, 21).map(e => e.type))
    const child = ctx.sessions.fork('packed')
    expect(JSON.stringify(child.events.slice(0, packed.length))).toBe(JSON.stringify(packed.events))
  })

  it('S-15/S-1: a run in the wrong place is refused with the message its first member would get', async () => {
    const { ctx, source, events } = await storedLog()
    // Keep only turn/start before the first run: its members no longer name an open step.
    const firstRun = events.findIndex(e => e.type === 'assistant/chunk' && (e.data as { chunk: { type: string } }).chunk.type === 'reasoning-delta')
    const shifted = [events[0], ...events.slice(firstRun).map((e, i) => ({ ...e, seq: 1 + i }))] as SessionEvent[]
    let expected = 'accepted'
    try {
      ctx.sessions.hydrate({ ...source.header, id: 'x1' }, JSON.parse(JSON.stringify(shifted)), { adopt: 'parsed' })
    } catch (error) {
      expected = (error as Error).message
    }
    const { slots } = slotsFrom(shifted)
    expect(slots[1]).toBeInstanceOf(PackedRun)
    expect(() => ctx.sessions.hydrate({ ...source.header, id: 'x2' }, eventList(slots), { adopt: 'parsed' })).toThrow(expected)
    expect(expected).toMatch(/S-15 at seq 1: assistant\/chunk: needs an open step/)
  })

  it('S-2: with another validator for assistant/chunk, every member of a run is validated', async () => {
    const { ctx, source, events } = await storedLog()
    const { slots } = slotsFrom(events)
    const core = (ctx.sessions as unknown as SessionsServicePlugin).registry
    const checked: unknown[] = []
    const original = core.get('assistant/chunk')!
    // Replace the core definition by one that refuses the text "ing".
    ;(core as unknown as { explicit: Map<string, unknown> }).explicit.set('assistant/chunk', {
      type: 'assistant/chunk',
      validate: (data: unknown) => {
        checked.push(data)
        return (data as { chunk: { text?: string } }).chunk.text === 'ing' ? 'no "ing"' : original.validate!(data)
      },
    })
    expect(() => ctx.sessions.hydrate({ ...source.header, id: 'strict' }, eventList(slots), { adopt: 'parsed' }))
      .toThrow(/S-2 at seq 5: invalid assistant\/chunk: no "ing"/)
    expect(checked.length).toBe(3)
  })
})
