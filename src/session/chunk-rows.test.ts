import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MIN_RUN, packEvents, unpackLines, unpackRow, type ChunkRow, type StoredLine } from './chunk-rows.js'
import type { SessionEvent } from './types.js'

type Draft = Omit<SessionEvent, 'seq' | 'time'>

/** Assign seq 0.. and times from a start plus the given gaps. */
function seal(drafts: readonly Draft[], start = 1_700_000_000_000, gaps: readonly number[] = []): SessionEvent[] {
  let time = start
  return drafts.map((draft, seq) => {
    if (seq > 0) time += gaps[seq - 1] ?? 1
    const { type, ...rest } = draft
    return { type, seq, time, ...rest } as SessionEvent
  })
}

const text = (t: string, index = 0, turn = 1, step = 1): Draft =>
  ({ type: 'assistant/chunk', data: { turn, step, chunk: { type: 'text-delta', index, text: t } } })
const reasoning = (t: string, index = 0): Draft =>
  ({ type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'reasoning-delta', index, text: t } } })
const toolDelta = (args: string, id = 'call_1', name?: string, index = 1): Draft =>
  ({ type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: name === undefined
    ? { type: 'tool-call-delta', index, id, argumentsDelta: args }
    : { type: 'tool-call-delta', index, id, name, argumentsDelta: args } } })
const blockStart = (index = 0): Draft =>
  ({ type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'block-start', index, blockType: 'text' } } })

const rowTypes = (lines: readonly StoredLine[]): string[] => lines.map((line) => line.type)

describe('chunk rows', () => {
  it('R-1: only delta runs pack; block boundaries, usage and finish stay one event per line', () => {
    const events = seal([
      blockStart(), text('a'), text('b'), text('c'),
      { type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'usage', usage: { outputTokens: 3 } } } },
      { type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } },
      { type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } },
      { type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } },
    ])
    const lines = packEvents(events)
    expect(rowTypes(lines)).toEqual(['assistant/chunk', 'text-chunks', 'assistant/chunk', 'assistant/chunk', 'assistant/chunk', 'assistant/chunk'])
    expect(lines[0]).toBe(events[0])
  })

  it(`R-2: MIN_RUN is ${MIN_RUN}; shorter runs stay verbatim`, () => {
    expect(rowTypes(packEvents(seal([text('a'), text('b')])))).toEqual(['assistant/chunk', 'assistant/chunk'])
    expect(rowTypes(packEvents(seal([text('a'), text('b'), text('c')])))).toEqual(['text-chunks'])
  })

  it('R-2: a run breaks on kind, turn, step, index, seq gap and unsafe time gap', () => {
    const kinds = seal([text('a'), text('b'), text('c'), reasoning('d'), reasoning('e'), reasoning('f')])
    expect(rowTypes(packEvents(kinds))).toEqual(['text-chunks', 'reasoning-chunks'])
    const indexes = seal([text('a', 0), text('b', 0), text('c', 0), text('d', 1), text('e', 1), text('f', 1)])
    expect(packEvents(indexes).map((l) => (l as ChunkRow).data.index)).toEqual([0, 1])
    const steps = seal([text('a', 0, 1, 1), text('b', 0, 1, 1), text('c', 0, 1, 1), text('d', 0, 1, 2), text('e', 0, 1, 2), text('f', 0, 1, 2)])
    expect(packEvents(steps).map((l) => (l as ChunkRow).data.step)).toEqual([1, 2])
    const turns = seal([text('a', 0, 1), text('b', 0, 1), text('c', 0, 1), text('d', 0, 2), text('e', 0, 2), text('f', 0, 2)])
    expect(packEvents(turns).map((l) => (l as ChunkRow).data.turn)).toEqual([1, 2])
    // A seq gap (e.g. a batch written from the middle of a log) splits the run.
    const gap = seal([text('a'), text('b'), text('c'), text('d')]).map((e, i) => (i >= 2 ? { ...e, seq: e.seq + 5 } : e))
    expect(rowTypes(packEvents(gap))).toEqual(['assistant/chunk', 'assistant/chunk', 'assistant/chunk', 'assistant/chunk'])
    // Both times are safe integers but their gap is not.
    const far = seal([text('a'), text('b'), text('c'), text('d')], -Number.MAX_SAFE_INTEGER, [Number.MAX_SAFE_INTEGER + 11, 1, 1])
    expect(far[1].time).toBe(11)
    const farLines = packEvents(far)
    expect(rowTypes(farLines)).toEqual(['assistant/chunk', 'text-chunks'])
    expect(unpackLines(farLines)).toEqual(far)
  })

  it('R-2: tool-call runs need the same id and the same name presence and value', () => {
    const ids = seal([toolDelta('a', 'x'), toolDelta('b', 'x'), toolDelta('c', 'x'), toolDelta('d', 'y'), toolDelta('e', 'y'), toolDelta('f', 'y')])
    expect(packEvents(ids).map((l) => (l as Extract<ChunkRow, { type: 'tool-call-chunks' }>).data.id)).toEqual(['x', 'y'])
    const presence = seal([toolDelta('a', 'x', 'bash'), toolDelta('b', 'x', 'bash'), toolDelta('c', 'x', 'bash'), toolDelta('d', 'x'), toolDelta('e', 'x'), toolDelta('f', 'x')])
    const lines = packEvents(presence) as Extract<ChunkRow, { type: 'tool-call-chunks' }>[]
    expect(lines.map((l) => l.data.name)).toEqual(['bash', undefined])
    expect('name' in lines[1].data).toBe(false)
    const values = seal([toolDelta('a', 'x', 'bash'), toolDelta('b', 'x', 'bash'), toolDelta('c', 'x', 'read')])
    expect(rowTypes(packEvents(values))).toEqual(['assistant/chunk', 'assistant/chunk', 'assistant/chunk'])
  })

  it('R-3: rows carry seq0/time0 and n-1 gaps, which may be negative', () => {
    const events = seal([text('a'), text('b'), text('c'), text('d')], 1000, [5, -3, 0])
    const [row] = packEvents(events)
    expect(row).toEqual({ type: 'text-chunks', seq0: 0, time0: 1000, data: { turn: 1, step: 1, index: 0, dt: [5, -3, 0], texts: ['a', 'b', 'c', 'd'] } })
    const tool = packEvents(seal([toolDelta('{', 'c1', 'bash'), toolDelta('"', 'c1', 'bash'), toolDelta('}', 'c1', 'bash')], 7))
    expect(JSON.stringify(tool[0])).toBe('{"type":"tool-call-chunks","seq0":0,"time0":7,"data":{"turn":1,"step":1,"index":1,"dt":[1,1],"id":"c1","name":"bash","args":["{","\\"","}"]}}')
  })

  describe('R-4: only the exact whitelisted shape packs', () => {
    const variants: [string, (d: Draft) => Draft][] = [
      ['ignorable on the envelope', (d) => ({ ...d, ignorable: true })],
      ['an extra envelope field', (d) => ({ ...d, sourceEventSeqs: [0] })],
      ['an extra key in data', (d) => ({ ...d, data: { ...(d.data as object), extra: 1 } })],
      ['an extra key in the chunk', (d) => ({ ...d, data: { ...(d.data as object), chunk: { ...(d.data as { chunk: object }).chunk, extra: 1 } } })],
      ['an unknown delta type', (d) => ({ ...d, data: { ...(d.data as object), chunk: { type: 'citation-delta', index: 0, text: 'x' } } })],
      ['a non-string text', (d) => ({ ...d, data: { ...(d.data as object), chunk: { type: 'text-delta', index: 0, text: 5 } } })],
      ['a non-integer index', (d) => ({ ...d, data: { ...(d.data as object), chunk: { type: 'text-delta', index: 0.5, text: 'x' } } })],
      ['a non-integer turn', (d) => ({ ...d, data: { ...(d.data as object), turn: '1' } })],
    ]
    for (const [label, mutate] of variants) {
      it(`stores a run with ${label} verbatim`, () => {
        const events = seal([text('a'), text('b'), text('c')].map(mutate))
        const lines = packEvents(events)
        expect(lines).toHaveLength(3)
        lines.forEach((line, i) => expect(line).toBe(events[i]))
        expect(unpackLines(lines)).toEqual(events)
      })
    }

    it('a non-whitelisted member in the middle splits the run without losing it', () => {
      const events = seal([text('a'), text('b'), text('c'), { ...text('odd'), ignorable: true }, text('d'), text('e'), text('f')])
      expect(rowTypes(packEvents(events))).toEqual(['text-chunks', 'assistant/chunk', 'text-chunks'])
      expect(unpackLines(packEvents(events))).toEqual(events)
    })

    it('a tool-call delta with a non-string name stays verbatim', () => {
      const bad = { type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'tool-call-delta', index: 0, id: 'x', name: 3, argumentsDelta: '' } } } as Draft
      const events = seal([bad, bad, bad])
      expect(rowTypes(packEvents(events))).toEqual(['assistant/chunk', 'assistant/chunk', 'assistant/chunk'])
    })
  })

  it('R-6: projected lines get seq in file order (a row of k takes k seqs) and time 0 plus gaps', () => {
    const events = seal([blockStart(), text('a'), text('b'), text('c'), { type: 'step/end', data: { turn: 1, step: 1 } }], 500, [10, 4, -2, 9])
    const projected = packEvents(events, { projected: true })
    expect(projected).toEqual([
      { type: 'assistant/chunk', data: events[0].data },
      { type: 'text-chunks', data: { turn: 1, step: 1, index: 0, dt: [4, -2], texts: ['a', 'b', 'c'] } },
      { type: 'step/end', data: { turn: 1, step: 1 } },
    ])
    const read = unpackLines(projected)
    expect(read.map((e) => [e.seq, e.time])).toEqual([[0, 0], [1, 0], [2, 4], [3, 2], [4, 0]])
    expect(unpackLines(projected, { startSeq: 10 }).map((e) => e.seq)).toEqual([10, 11, 12, 13, 14])
    // Re-packing what a reader got back gives the same lines.
    expect(packEvents(read, { projected: true })).toEqual(projected)
  })

  it('a malformed row is refused with what is wrong', () => {
    const row = { type: 'text-chunks', seq0: 0, time0: 0, data: { turn: 1, step: 1, index: 0, dt: [1], texts: ['a', 'b', 'c'] } } as ChunkRow
    expect(() => unpackRow(row)).toThrow(/dt must hold 2 safe-integer gaps/)
    expect(() => unpackRow({ ...row, data: { ...row.data, dt: [1, 1], extra: 1 } } as unknown as ChunkRow)).toThrow(/unknown data key "extra"/)
    expect(() => unpackRow({ ...row, data: { ...row.data, dt: [], texts: [] } } as ChunkRow)).toThrow(/non-empty array/)
    const overflow = { ...row, time0: Number.MAX_SAFE_INTEGER, data: { ...row.data, dt: [1, 1] } } as ChunkRow
    expect(() => unpackRow(overflow)).toThrow(/safe-integer range/)
  })

  describe('R-5: pack then unpack is the identity', () => {
    const deltaDraft = fc.record({
      kind: fc.constantFrom('text-delta', 'reasoning-delta', 'tool-call-delta'),
      turn: fc.integer({ min: 1, max: 2 }),
      step: fc.integer({ min: 1, max: 2 }),
      index: fc.integer({ min: 0, max: 2 }),
      payload: fc.string({ maxLength: 4 }),
      id: fc.constantFrom('call_a', 'call_b'),
      name: fc.constantFrom(undefined, 'bash', 'read'),
    }).map(({ kind, turn, step, index, payload, id, name }): Draft => {
      if (kind !== 'tool-call-delta') return { type: 'assistant/chunk', data: { turn, step, chunk: { type: kind, index, text: payload } } }
      const chunk = name === undefined
        ? { type: kind, index, id, argumentsDelta: payload }
        : { type: kind, index, id, name, argumentsDelta: payload }
      return { type: 'assistant/chunk', data: { turn, step, chunk } }
    })
    const oddDraft = fc.oneof(
      deltaDraft.map((d) => ({ ...d, ignorable: true as const })),
      deltaDraft.map((d) => ({ ...d, data: { ...(d.data as object), note: 'x' } })),
      deltaDraft.map((d) => ({ ...d, data: { ...(d.data as object), chunk: { ...(d.data as { chunk: object }).chunk, extra: [1] } } })),
      fc.constant<Draft>({ type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'future-delta', index: 0, text: 'f' } } }),
      fc.constant<Draft>({ type: 'assistant/chunk', data: { turn: 1, step: 1, chunk: { type: 'block-end', index: 0, block: { type: 'text', text: 'x' } } } }),
      fc.constant<Draft>({ type: 'step/start', data: { turn: 1, step: 2 } }),
      fc.constant<Draft>({ type: 'custom/thing', data: { anything: [null, true] }, ignorable: true }),
    )
    // Deltas dominate, repeated in blocks so long runs actually occur.
    const drafts = fc.array(fc.oneof(
      { weight: 6, arbitrary: deltaDraft.chain((d) => fc.integer({ min: 1, max: 6 }).map((n) => Array.from({ length: n }, () => d))) },
      { weight: 6, arbitrary: deltaDraft.map((d) => [d]) },
      { weight: 2, arbitrary: oddDraft.map((d) => [d]) },
    ), { maxLength: 40 }).map((groups) => groups.flat())
    const log = fc.record({
      drafts,
      start: fc.integer({ min: -1e12, max: 1e13 }),
      gaps: fc.array(fc.integer({ min: -5000, max: 5000 }), { maxLength: 250 }),
    }).map(({ drafts, start, gaps }) => seal(drafts, start, gaps))

    it('persisted form, deep-equal and byte-equal', () => {
      fc.assert(fc.property(log, (events) => {
        const lines = packEvents(events)
        const back = unpackLines(lines)
        expect(back).toEqual(events)
        expect(back.map((e) => JSON.stringify(e))).toEqual(events.map((e) => JSON.stringify(e)))
      }), { numRuns: 300 })
    })

    it('the generator produces logs where rows of every kind occur', () => {
      const seen = new Set(fc.sample(log, { numRuns: 200, seed: 1 }).flatMap((events) => rowTypes(packEvents(events))))
      expect([...seen].filter((t) => t.endsWith('-chunks')).sort()).toEqual(['reasoning-chunks', 'text-chunks', 'tool-call-chunks'])
    })

    it('projected form: what a reader gets back re-packs to the same lines', () => {
      fc.assert(fc.property(log, (events) => {
        const projected = packEvents(events, { projected: true })
        const back = unpackLines(projected)
        expect(back.map((e) => e.seq)).toEqual(events.map((e) => e.seq))
        expect(back.map(({ seq: _s, time: _t, ...rest }) => rest)).toEqual(events.map(({ seq: _s, time: _t, ...rest }) => rest))
        expect(packEvents(back, { projected: true })).toEqual(projected)
      }), { numRuns: 300 })
    })
  })
})
