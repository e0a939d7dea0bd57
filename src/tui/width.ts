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
const ONE_COLUMN = /^[\x20-\x7e\u00a0-\u00ac\u00ae-\u02ff\u2010-\u2027\u2030-\u205e\u2190-\u21ff\u23b0-\u23bf\u2500-\u25fc\u2713\u2717\u2800-\u28ff]*$/

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
