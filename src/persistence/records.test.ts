import { describe, expect, it } from 'vitest'
import { BadRecord, decodeRecord, rowRecord, scanRecords, type StoredEventRow } from './records.js'

const row = { type: 'text-chunks', seq0: 4, time0: 10, data: { turn: 1, step: 1, index: 0, dt: [1, 1], texts: ['a', 'b', 'c'] } }

function reasonOf(value: unknown, expectedSeq: number): string {
  try {
    decodeRecord(value, expectedSeq)
  } catch (error) {
    if (error instanceof BadRecord) return `${error.reason}: ${error.message}`
    throw error
  }
  return 'decoded'
}

describe('stored records (D-5 classification)', () => {
  it('R-3: a packed row expands to its members at seq0..seq0+k-1', () => {
    expect(decodeRecord(row, 4).map((event) => [event.seq, event.time])).toEqual([[4, 10], [5, 11], [6, 12]])
  })

  it('D-5: a row at the wrong place is wrong-seq; a malformed row is invalid-envelope', () => {
    expect(reasonOf(row, 5)).toMatch(/^wrong-seq: seq0 4 where 5 was expected/)
    expect(reasonOf({ ...row, note: 1 }, 4)).toMatch(/^invalid-envelope: unknown key "note" on a text-chunks row/)
    const { time0: _time0, ...noTime } = row
    expect(reasonOf(noTime, 4)).toMatch(/^invalid-envelope: text-chunks row: time0 must be a safe integer/)
    expect(reasonOf({ ...row, data: { ...row.data, dt: [1] } }, 4)).toMatch(/^invalid-envelope: .*data\.dt must hold 2/)
  })

  it('D-5/D-6: a database row decodes from its columns to what its rendered text parses to, and a damaged row reads as its text would', () => {
    const base = { seq: 7, count: 1, type: 'tool/result', time: 1_700_000_000_123, data: '{"turn":1,"step":1,"message":{"id":"m"}}', ignorable: null, surface_op: '"append"', source_event_seqs: '[3,5]' }
    const rows: StoredEventRow[] = [
      base,
      { ...base, time: '1700000000123' },
      { ...base, type: 'x/y', ignorable: 1, surface_op: null, source_event_seqs: null },
      { ...base, ignorable: 0 },
      { ...base, type: 'text-chunks', count: 3, data: JSON.stringify(row.data), surface_op: null, source_event_seqs: null },
      { ...base, type: 'text-chunks', count: 3, data: JSON.stringify(row.data), ignorable: 1, surface_op: null, source_event_seqs: null },
      { ...base, data: '{"turn":1},"extra":2' },
      { ...base, data: '{"turn":' },
      { ...base, surface_op: '{' },
    ]
    // A whole damaged row is refused as corruption either way, with the same words.
    const outcome = (scan: () => unknown) => {
      try {
        return JSON.stringify(scan())
      } catch (error) {
        return error instanceof Error ? error.message : String(error)
      }
    }
    const viaText = (record: ReturnType<typeof rowRecord>) => scanRecords('s', [{ text: record.text, complete: true, position: record.position, bytes: record.bytes, where: record.where }], 7)
    for (const stored of rows) {
      const record = rowRecord(stored)
      let parsed: unknown
      try {
        parsed = JSON.parse(record.text)
      } catch {
        parsed = 'unparsable'
      }
      let built: unknown
      try {
        built = record.value!()
      } catch (error) {
        built = error instanceof BadRecord ? 'unparsable' : error
      }
      expect(built).toEqual(parsed)
      if (parsed !== 'unparsable') expect(Object.keys(built as object)).toEqual(Object.keys(parsed as object))
      expect(outcome(() => scanRecords('s', [record], 7))).toBe(outcome(() => viaText(record)))
    }
  })
})

