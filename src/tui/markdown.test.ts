/**
 * Markdown as the terminal app draws it, rendered to a string at a given width.
 */
import { createElement as h } from 'react'
import { renderToString } from 'ink'
import stringWidth from 'string-width'
import { describe, expect, it } from 'vitest'
import { Lexer, type Token } from 'marked'
import { columnWidths, EVERY_KIND, Markdown } from './markdown.js'

const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '')
const draw = (text: string, width: number) => plain(renderToString(h(Markdown, { text, width }), { columns: width })).split('\n')

/** The display columns at which `│` or `┼` stands on a line. */
function rules(line: string): number[] {
  const at: number[] = []
  let column = 0
  for (const char of line) {
    if (char === '│' || char === '┼') at.push(column)
    column += stringWidth(char)
  }
  return at
}

const TABLE = [
  '| file | lines | notes |',
  '|---|---:|---|',
  '| src/agent/loop.ts | 812 | the default loop, with a long note that has to wrap in a narrow terminal |',
  '| src/llm/deepseek.ts | 33 | 适配器 and **bold** |',
  '| x | 1 | `code` |',
].join('\n')

describe('tables', () => {
  it('columns line up on every line, at a width that fits the table and at one that does not', () => {
    for (const width of [120, 60, 40]) {
      const lines = draw(TABLE, width).filter(line => line.trim() !== '')
      const expected = rules(lines[0])
      expect(expected).toHaveLength(2)
      for (const line of lines) {
        expect(rules(line), `at ${width}: ${line}`).toEqual(expected)
        expect(stringWidth(line)).toBeLessThanOrEqual(width)
      }
      // The rule under the header crosses the column rules.
      expect(lines[1]).toMatch(/^─+┼─+┼─+$/)
    }
  })

  it('a table that fits keeps each cell on one line; numbers right-aligned as the delimiter row says', () => {
    const lines = draw(TABLE, 120)
    expect(lines.filter(line => line.trim() !== '')).toHaveLength(5)
    const [, second] = rules(lines[0])
    const numbers = lines.slice(2, 5).map(line => line.slice(0, second).trimEnd())
    // Right-aligned: the last digit of each number stands in the same column, one before the pad.
    expect(new Set(numbers.map(cell => stringWidth(cell))).size).toBe(1)
    expect(lines[3]).toContain('适配器 and bold')
  })

  it('in a narrow terminal the prose column wraps and the short columns keep their width', () => {
    const lines = draw(TABLE, 60)
    const [first, second] = rules(lines[0])
    // "src/llm/deepseek.ts" (19) and "lines" (5) keep their widths, plus padding.
    expect(first).toBe(20)
    expect(second - first).toBe(8)
    const notes = lines.slice(2).filter(line => line.trim() !== '').map(line => line.split('│')[2].trim())
    expect(notes.length).toBeGreaterThan(3)
    expect(notes.join(' ')).toContain('the default loop, with a long note that has to wrap in a narrow terminal')
  })
})

describe('columnWidths', () => {
  it('keeps natural widths that fit and cuts the widest columns first, to one shared width', () => {
    expect(columnWidths([5, 10, 20], 40)).toEqual([5, 10, 20])
    expect(columnWidths([5, 30, 40], 45)).toEqual([5, 20, 20])
    expect(columnWidths([5, 30, 40], 46)).toEqual([5, 20, 21])
    expect(columnWidths([19, 5, 60], 40)).toEqual([17, 5, 18])
  })

  it('never cuts below 8 cells, or an even share of the room when that is less; the widths fill the room', () => {
    expect(columnWidths([30, 30, 30], 24)).toEqual([8, 8, 8])
    expect(columnWidths([30, 3, 30], 12)).toEqual([5, 3, 4])
    expect(columnWidths([30, 30], 1)).toEqual([1, 1])
    for (const [natural, room] of [[[12, 50, 7, 33], 60], [[100, 100, 100], 61], [[9, 9, 9, 9], 30]] as const) {
      const widths = columnWidths(natural, room)
      expect(widths.reduce((sum, width) => sum + width, 0)).toBe(room)
      widths.forEach((width, n) => expect(width).toBeLessThanOrEqual(natural[n]))
    }
  })
})

describe('wrapped prose', () => {
  // Each word ends at a row's edge at one of these widths, where a wrap used to start the next row
  // with the space after it (a stray indent).
  const PROSE = 'aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk'

  it('no row starts with the space it broke at: paragraphs, list items, quotes, headings and table cells', () => {
    // Each block with what stands before its text on every row.
    const blocks: [string, RegExp][] = [
      [PROSE, /^/],
      [`# ${PROSE}`, /^/],
      [`- ${PROSE}`, /^(• |  )/],
      [`> ${PROSE}`, /^│ /],
    ]
    for (const width of [9, 14, 19, 24, 29]) {
      for (const [text, prefix] of blocks) {
        for (const line of draw(text, width)) {
          expect(stringWidth(line), `at ${width}: "${line}"`).toBeLessThanOrEqual(width)
          expect(line, `at ${width}`).toMatch(prefix)
          expect(line.replace(prefix, ''), `at ${width}: "${line}"`).not.toMatch(/^ /)
        }
      }
      // A table's first column, where a row of it holds text.
      for (const line of draw(`| a | b |\n|---|---|\n| ${PROSE} | x |`, width + 6)) {
        const first = line.split(/[│┼]/)[0]
        if (first.trim() !== '' && !/^─+$/.test(first)) expect(first, `at ${width + 6}: "${line}"`).not.toMatch(/^ /)
      }
    }
  })

  it('wrapping keeps every word and the styles: bold and code spans across a break, a long word cut to the width', () => {
    const lines = draw('one **two three** `four five` six averyveryverylongword', 9)
    // The long word starts after "six" (3 rows either way), as a terminal wraps it.
    expect(lines).toEqual(['one two', 'three', 'four five', 'six avery', 'veryveryl', 'ongword'])
    const styled = renderToString(h(Markdown, { text: 'one **two three** four', width: 9 }), { columns: 9 })
    expect(styled.split('\n').map(plain)).toEqual(['one two', 'three', 'four'])
  })
})

describe('the warm-up sample (compiled once the first frame is out)', () => {
  it('holds every block and inline kind marked lexes, so no rule is left to compile at the first answer', () => {
    const kinds = new Set<string>()
    const walk = (tokens: readonly Token[]) => {
      for (const token of tokens) {
        kinds.add(token.type)
        if ('tokens' in token && token.tokens !== undefined) walk(token.tokens)
        if (token.type === 'list') for (const item of token.items) walk([item])
        if (token.type === 'table') for (const cell of [...token.header, ...token.rows.flat()]) walk(cell.tokens)
      }
    }
    walk(new Lexer().lex(EVERY_KIND))
    expect([...kinds].sort()).toEqual(['blockquote', 'checkbox', 'code', 'codespan', 'del', 'em', 'escape', 'heading', 'hr', 'html', 'link', 'list', 'list_item', 'paragraph', 'space', 'strong', 'table', 'text'])
  })
})

describe('the model\'s escapes in an answer (security #42.6)', () => {
  it('OSC 0, OSC 52, CSI and U+202E show as text in prose, code spans and code blocks; no ESC of theirs reaches the terminal', () => {
    const answer = 'Done.\x1b]0;pwned\x07 `x\x1b]52;c;eA==\x07` file\u202Etxt\n\n```sh\necho \x1b[2J\u009b31m\n```'
    const out = renderToString(h(Markdown, { text: answer, width: 80 }), { columns: 80 })
    // What is left of ESC in the output starts the app's own colours (SGR) only.
    expect(out.replace(/\x1b\[[0-9;]*m/g, '')).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/)
    const shown = plain(out)
    expect(shown).toContain('Done.␛]0;pwned␇')
    expect(shown).toContain('x␛]52;c;eA==␇')
    expect(shown).toContain('file<U+202E>txt')
    expect(shown).toContain('echo ␛[2J<U+009B>31m')
  })
})
