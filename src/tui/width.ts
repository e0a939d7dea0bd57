/**
 * Display width of terminal text: string-width's answer, without asking it for most text.
 * string-width splits a string into graphemes (Intl.Segmenter) and tests each against Unicode
 * property expressions (RGI emoji, default-ignorable, marks): right for any text, and the first
 * calls compile those tables. A frame of the terminal app measures every line it draws, so its
 * first frame spent ~50 ms there, though nearly all it measures is ASCII with a few `·`, `›`, `—`
 * or box-drawing characters. Text made only of characters that take one column each and never
 * join a neighbour into one grapheme is as wide as it is long; other text goes to string-width.
 * A test checks every character of the set against string-width, one by one and in mixtures.
 *
 * Ink, bundled into dist/bundle/tui-vendor.mjs, measures through this too (scripts/bundle.mjs).
 */
import stringWidth from 'string-width'

/**
 * One column each under string-width's default (East Asian ambiguous characters narrow): ASCII
 * printable, Latin-1 but the soft hyphen, Latin Extended A and B, IPA and spacing modifiers,
 * general punctuation but the zero-width and bidi controls, arrows, the bracket pieces (`⎿`), box
 * drawing, blocks, geometric shapes but the two drawn as emoji (◽◾), `✓` and `✗`, and Braille
 * (the spinner). What the app itself draws falls in it.
 */
export const ONE_COLUMN_RANGES: readonly (readonly [from: number, to: number])[] = [
  [0x20, 0x7e], [0xa0, 0xac], [0xae, 0x2ff], [0x2010, 0x2027], [0x2030, 0x205e], [0x2190, 0x21ff],
  [0x23b0, 0x23bf], [0x2500, 0x25fc], [0x2713, 0x2713], [0x2717, 0x2717], [0x2800, 0x28ff],
]

const codeUnit = (point: number) => `\\u${point.toString(16).padStart(4, '0')}`
const ONE_COLUMN = new RegExp(`^[${ONE_COLUMN_RANGES.map(([from, to]) => from === to ? codeUnit(from) : `${codeUnit(from)}-${codeUnit(to)}`).join('')}]*$`)

/** Colour and style sequences (SGR), which string-width does not count either. */
const SGR = /\x1b\[[0-9;]*m/g

export type WidthOptions = Parameters<typeof stringWidth>[1]

/** Columns `text` takes in a terminal: string-width's answer for the same text and options. */
export function displayWidth(text: string, options?: WidthOptions): number {
  // Wide ambiguous characters, or escape codes counted: string-width decides.
  if (options?.ambiguousIsNarrow !== false && options?.countAnsiEscapeCodes !== true) {
    const plain = text.includes('\x1b') ? text.replace(SGR, '') : text
    if (ONE_COLUMN.test(plain)) return plain.length
  }
  return stringWidth(text, options)
}
