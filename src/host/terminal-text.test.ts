/**
 * security #42.6: text from the model or a tool reaches a terminal with no control sequence left
 * active and no bidirectional control left acting, whatever it holds and however it is cut.
 */
import { describe, expect, it } from 'vitest'
import { TERMINAL_TEXT_RULES, terminalSafe, withoutSequences } from './terminal-text.js'

/** What no text that went through the sanitiser may still hold. */
const ACTIVE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/

describe('terminalSafe (security #42.6)', () => {
  it('OSC 52 (clipboard) ended by BEL shows as text, its ESC and BEL as pictures', () => {
    const payload = '\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07'
    expect(terminalSafe(`copy ${payload} done`)).toBe('copy ␛]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==␇ done')
  })

  it('OSC 0 (title) ended by BEL or by ST is inert', () => {
    expect(terminalSafe('\x1b]0;owned\x07')).toBe('␛]0;owned␇')
    expect(terminalSafe('\x1b]0;owned\x1b\\')).toBe('␛]0;owned␛\\')
    expect(terminalSafe('\x1b]2;owned\x9c')).toBe('␛]2;owned<U+009C>')
  })

  it('CSI (colours, cursor moves, erasing) and two-character escapes are inert', () => {
    expect(terminalSafe('\x1b[31mred\x1b[0m \x1b[2J\x1b[H \x1bc')).toBe('␛[31mred␛[0m ␛[2J␛[H ␛c')
  })

  it('8-bit C1 controls (CSI U+009B, OSC U+009D, DCS U+0090) are named', () => {
    expect(terminalSafe('\u009b31m \u009d0;t\u0007 \u0090q\u009c')).toBe('<U+009B>31m <U+009D>0;t␇ <U+0090>q<U+009C>')
  })

  it('DCS, APC, PM and SOS strings are inert', () => {
    expect(terminalSafe('\x1bPq#0;2;0;0;0\x1b\\ \x1b_apc\x1b\\ \x1b^pm\x1b\\ \x1bXsos\x1b\\')).toBe('␛Pq#0;2;0;0;0␛\\ ␛_apc␛\\ ␛^pm␛\\ ␛Xsos␛\\')
  })

  it('a lone ESC at the end of a chunk stays inert when the next chunk brings the rest', () => {
    const chunks = ['answer \x1b', ']0;title\x07 more', '\x1b[', '2J']
    const shown = chunks.map(terminalSafe).join('')
    expect(shown).toBe('answer ␛]0;title␇ more␛[2J')
    expect(shown).not.toMatch(ACTIVE)
  })

  it('bidirectional overrides, isolates, embeddings and marks show as <U+XXXX>', () => {
    expect(terminalSafe('file\u202Etxt.exe')).toBe('file<U+202E>txt.exe')
    expect(terminalSafe('\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069 \u200e\u200f\u061c')).toBe('<U+202A><U+202B><U+202C><U+202D> <U+2066><U+2067><U+2068><U+2069> <U+200E><U+200F><U+061C>')
  })

  it('keeps line feeds and tabs; CRLF is a line feed, a lone CR (which would overwrite the line) shows as ␍', () => {
    expect(terminalSafe('a\tb\nc\r\nd')).toBe('a\tb\nc\nd')
    expect(terminalSafe('rm -rf ~\rls')).toBe('rm -rf ~␍ls')
    expect(terminalSafe('\x00\x08\x7f')).toBe('␀␈␡')
  })

  it('plain text, emoji, CJK and other scripts come back as they are', () => {
    for (const text of ['', 'hello, world', 'naïve café — “quoted” · ✓', '一二三 日本語のテキスト', '👨‍👩‍👧 🇫🇷 ✅', 'שלום עולם مرحبا', '│ ┼ ─ ⎿']) {
      expect(terminalSafe(text)).toBe(text)
    }
  })

  it('no character the policy names survives, in any mixture', () => {
    const points = TERMINAL_TEXT_RULES.flatMap(rule => rule.ranges.flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, n) => from + n)))
    const every = points.map(point => String.fromCharCode(point)).join('x')
    expect(terminalSafe(every)).not.toMatch(ACTIVE)
    expect(withoutSequences(every)).not.toMatch(ACTIVE)
    let seed = 42
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const alphabet = ['\x1b', '[', ']', '\x07', '\\', '\x9b', '\x9c', '\x9d', 'P', '0', ';', 'm', 'a', '\r', '\n', '\u202e', '\u2066']
    for (let n = 0; n < 500; n += 1) {
      const text = Array.from({ length: 1 + Math.floor(random() * 30) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')
      expect(terminalSafe(text)).not.toMatch(ACTIVE)
      expect(withoutSequences(text)).not.toMatch(ACTIVE)
    }
  })
})

describe('withoutSequences (command output as a terminal leaves it)', () => {
  it('drops whole sequences: colours, cursor moves, titles, clipboard writes, device strings', () => {
    expect(withoutSequences('\x1b[1;32mok\x1b[0m \x1b]0;title\x07\x1b]52;c;eA==\x1b\\\x1bPq\x1b\\\x1b7\x1b(B\u009b2Jdone')).toBe('ok done')
  })

  it('a broken or unterminated sequence keeps its ESC visible, and the override is named', () => {
    expect(withoutSequences('\x1b]0;no end')).toBe('␛]0;no end')
    expect(withoutSequences('tail \x1b')).toBe('tail ␛')
    expect(withoutSequences('a\u202eb')).toBe('a<U+202E>b')
  })

  it('stays linear on text made of sequence starts', () => {
    const text = '\x1b]'.repeat(50_000) + '\u009d'.repeat(50_000)
    const started = performance.now()
    expect(withoutSequences(text)).not.toMatch(ACTIVE)
    expect(performance.now() - started).toBeLessThan(2000)
  })
})
