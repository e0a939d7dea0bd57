import { describe, expect, it } from 'vitest'
import { BadRecord, decodeRecord } from './records.js'

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
})
