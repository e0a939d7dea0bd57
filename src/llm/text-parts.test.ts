import { describe, expect, it } from 'vitest'
import { TextParts } from './text-parts.js'

describe('TextParts', () => {
  it('L-3: joins any number of pieces in order, across runs, and keeps appending after a read', () => {
    const parts = new TextParts()
    let expected = ''
    expect(parts.toString()).toBe('')
    for (let i = 0; i < 1000; i++) {
      const piece = i % 7 === 0 ? '' : `p${i},`
      parts.append(piece)
      expected += piece
      // Reads at assorted points, including right on a run boundary.
      if (i % 97 === 0 || i === 127 || i === 128) expect(parts.toString()).toBe(expected)
    }
    expect(parts.toString()).toBe(expected)
    expect(parts.toString()).toBe(expected)
    parts.append('end')
    expect(parts.toString()).toBe(`${expected}end`)
  })

  it('a piece that is not a string (an untyped adapter) reads as `+=` would have read it', () => {
    const parts = new TextParts()
    parts.append('a')
    parts.append(undefined as unknown as string)
    parts.append(7 as unknown as string)
    expect(parts.toString()).toBe('aundefined7')
  })
})
