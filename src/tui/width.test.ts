import fc from 'fast-check'
import stringWidth from 'string-width'
import { describe, expect, it } from 'vitest'
import { displayWidth, ONE_COLUMN_RANGES } from './width.js'

/** The characters displayWidth counts itself. */
const counted = ONE_COLUMN_RANGES.flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, i) => String.fromCodePoint(from + i)))

describe('display width (the terminal app and the Ink it bundles)', () => {
  it('every character it counts itself is one column for string-width too', () => {
    const disagree = counted.filter(ch => stringWidth(ch) !== 1).map(ch => `U+${ch.codePointAt(0)!.toString(16)}`)
    expect(disagree).toEqual([])
  })

  it('agrees with string-width on any mixture: counted characters, others (emoji, CJK, marks, controls, tabs), colour codes', () => {
    const others = ['😀', '👩‍💻', '漢', 'ｱ', 'e\u0301', '\u0301', '\u200b', '\u00ad', '\t', '\n', '\u2028', '◽', '◾', '✅', '⌚', '©\ufe0f', '▶\ufe0f', '1\u20e3', '\x1b]8;;x\x07', '\x9b1m']
    const piece = fc.oneof(
      fc.constantFrom(...counted),
      fc.constantFrom(...others),
      fc.constantFrom('\x1b[31m', '\x1b[0m', '\x1b[1;2;38;5;200m', '\x1b[m'),
    )
    fc.assert(fc.property(fc.array(piece, { maxLength: 40 }), fc.constantFrom(undefined, {}, { ambiguousIsNarrow: false }, { countAnsiEscapeCodes: true }), (pieces, options) => {
      const text = pieces.join('')
      expect(displayWidth(text, options)).toBe(stringWidth(text, options))
    }), { numRuns: 3000 })
  })

  it('text of counted characters is as wide as it is long, colour codes left out', () => {
    const line = 'dsh · deepseek › ╭──╮ “quoted” — ok…'
    expect(displayWidth(line)).toBe(line.length)
    expect(stringWidth(line)).toBe(line.length)
    expect(displayWidth('\x1b[36m╭──╮\x1b[39m')).toBe(4)
    expect(displayWidth('漢字')).toBe(4)
  })
})
