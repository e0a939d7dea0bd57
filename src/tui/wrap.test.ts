/**
 * The terminal app's word wrap (./wrap.ts): rows that fit, broken between words, with the space a
 * row breaks at dropped.
 */
import stringWidth from 'string-width'
import { describe, expect, it } from 'vitest'
import { wrapRows, wrapText } from './wrap.js'

describe('wrapText', () => {
  it('breaks between words and drops the space at the break, never starting a row with it', () => {
    expect(wrapText('hello world foo', 11)).toBe('hello world\nfoo')
    expect(wrapText('aaaa bbbb cccc', 9)).toBe('aaaa bbbb\ncccc')
    expect(wrapText('x   y', 1)).toBe('x\ny')
  })

  it('keeps the text\'s own line breaks and a line\'s leading indentation', () => {
    expect(wrapText('one\ntwo three four', 5)).toBe('one\ntwo\nthree\nfour')
    expect(wrapText('  indented line that wraps', 12)).toBe('  indented\nline that\nwraps')
    expect(wrapText('a\n\nb', 5)).toBe('a\n\nb')
  })

  it('cuts a word wider than a row, filling the row it starts on unless starting afresh saves a row', () => {
    expect(wrapText('averyveryverylongword', 10)).toBe('averyveryv\nerylongwor\nd')
    expect(wrapText('ab averyveryverylongword', 10)).toBe('ab averyve\nryverylong\nword')
    expect(wrapText('abcdefgh ijklmnopqrs', 10)).toBe('abcdefgh i\njklmnopqrs')
  })

  it('counts display columns: wide characters take two, emoji stay whole', () => {
    expect(wrapText('一二三四五六七八九十', 5)).toBe('一二\n三四\n五六\n七八\n九十')
    const family = '👨‍👩‍👧'
    expect(wrapText(`${family}${family}${family}`, 4)).toBe(`${family}${family}\n${family}`)
  })

  it('every row fits, and the rows cover the text in order (a row is a slice of it)', () => {
    const text = 'The quick brown fox jumps over the lazy dog, then 跑得很远 and keeps running supercalifragilistic.'
    for (let width = 1; width <= 40; width++) {
      const rows = wrapRows(text, width)
      let last = 0
      for (const [start, end] of rows) {
        expect(start).toBeGreaterThanOrEqual(last)
        expect(text.slice(last, start).trim(), `at ${width}: only spaces are dropped`).toBe('')
        expect(stringWidth(text.slice(start, end)), `at ${width}`).toBeLessThanOrEqual(Math.max(width, 2))
        last = end
      }
      expect(last).toBe(text.length)
    }
  })

  it('leaves text that fits, and text with no room, as it is', () => {
    expect(wrapText('short', 80)).toBe('short')
    expect(wrapText('', 10)).toBe('')
    expect(wrapText('no room at all', 0)).toBe('no room at all')
  })
})
