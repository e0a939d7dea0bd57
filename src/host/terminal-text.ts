/**
 * Text from the model, a tool, a project file or a stored session, made safe to write to a
 * terminal (security #42.6). A terminal acts on control characters: ESC and the 8-bit C1
 * controls start sequences that set the window title (OSC 0/2), fill the clipboard (OSC 52),
 * move the cursor or rewrite what is on screen, and a bidirectional override shows text in
 * another order than it has. Every terminal surface (the terminal app, headless text output, the
 * approval box) passes untrusted text through here before styling it; `--output json` and
 * `stream-json` keep the exact text, escaped by JSON.
 *
 * The policy is `TERMINAL_TEXT_RULES`: what each kind of character becomes. Nothing is hidden:
 * a control character shows as a visible stand-in, so the payload of a sequence stays readable
 * but inert (its introducer is gone, so no part of it is active, however the text was cut into
 * chunks). Only `withoutSequences`, for command output shown as a terminal would leave it,
 * drops whole sequences first.
 */

/** One row of the policy: a set of characters and what each shows as. */
export interface TerminalTextRule {
  readonly what: string
  /** Inclusive code point ranges. */
  readonly ranges: readonly (readonly [from: number, to: number])[]
  readonly shown: (point: number) => string
}

const hex = (point: number) => point.toString(16).toUpperCase().padStart(4, '0')
/** `<U+202E>`: a character that has no picture of its own, named. */
const named = (point: number) => `<U+${hex(point)}>`
/** The Control Pictures block: U+2400 + the code, ␛ for ESC, ␇ for BEL, ␍ for CR. */
const picture = (point: number) => String.fromCharCode(0x2400 + point)

/**
 * What is kept as it is: line feed and tab, and every printable character (emoji, CJK, marks).
 * A carriage return before a line feed is dropped (CRLF is a line break); anything else below
 * is replaced.
 */
export const TERMINAL_TEXT_RULES: readonly TerminalTextRule[] = [
  // NUL to US but tab and line feed, ESC (0x1b) and BEL (0x07) among them: ␀ … ␛ … ␟; a lone CR is ␍.
  { what: 'C0 controls', ranges: [[0x00, 0x08], [0x0b, 0x1f]], shown: picture },
  { what: 'DEL', ranges: [[0x7f, 0x7f]], shown: () => '\u2421' },
  // 8-bit controls, CSI (U+009B), OSC (U+009D), DCS (U+0090) and ST (U+009C) among them.
  { what: 'C1 controls', ranges: [[0x80, 0x9f]], shown: named },
  // Embeddings and overrides (LRE RLE PDF LRO RLO), isolates (LRI RLI FSI PDI), marks (LRM RLM ALM).
  { what: 'bidirectional controls', ranges: [[0x202a, 0x202e], [0x2066, 0x2069], [0x200e, 0x200f], [0x061c, 0x061c]], shown: named },
]

const SHOWN = new Map<string, string>()
const unit = (point: number) => `\\u${hex(point)}`
for (const rule of TERMINAL_TEXT_RULES) {
  for (const [from, to] of rule.ranges) for (let point = from; point <= to; point += 1) SHOWN.set(String.fromCharCode(point), rule.shown(point))
}
const CLASS = `[${TERMINAL_TEXT_RULES.flatMap(rule => rule.ranges.map(([from, to]) => from === to ? unit(from) : `${unit(from)}-${unit(to)}`)).join('')}]`

/** Characters `terminalSafe` replaces, and CRLF; one pass over the text. */
const UNSAFE = new RegExp(`\\r\\n|${CLASS}`, 'g')

const show = (match: string) => match === '\r\n' ? '\n' : SHOWN.get(match)!

/**
 * `text` with every control character but line feed and tab, and every bidirectional control,
 * replaced by a visible stand-in (`TERMINAL_TEXT_RULES`): `\x1b]0;title\x07` shows as
 * `␛]0;title␇`, U+202E as `<U+202E>`. Text without them comes back as it is.
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, show)
}

/** Whole escape sequences, 7-bit and 8-bit: what a terminal acts on and does not show. */
const SEQUENCE = [
  // CSI: colours, cursor moves, erasing (ESC [ or U+009B, parameters, intermediates, final).
  '(?:\\x1b\\[|\\x9b)[0-?]*[ -/]*[@-~]',
  // OSC: title, clipboard, hyperlinks; ended by BEL or ST (ESC \ or U+009C).
  '(?:\\x1b\\]|\\x9d)[^\\x00-\\x1f\\x7f-\\x9f]*(?:\\x07|\\x1b\\\\|\\x9c)',
  // DCS, SOS, PM, APC strings, ended by ST.
  '(?:\\x1b[PX^_]|[\\x90\\x98\\x9e\\x9f])[^\\x00-\\x1f\\x7f-\\x9f]*(?:\\x1b\\\\|\\x9c)',
  // Other escapes: ESC, any intermediates, a final (ESC 7, ESC c, ESC ( B ...), not one that starts the above.
  '\\x1b[ -/]*[0-OQ-WYZ\\\\`-~]',
].join('|')

const OUTPUT = new RegExp(`${SEQUENCE}|\\r\\n|${CLASS}`, 'g')

/**
 * Command output as a terminal would leave it: whole escape sequences (colours, cursor moves,
 * titles, clipboard writes, device strings) dropped, then what remains made safe as by
 * `terminalSafe` (an unterminated or broken sequence shows with its ␛).
 */
export function withoutSequences(text: string): string {
  return text.replace(OUTPUT, match => match.length === 1 || match === '\r\n' ? show(match) : '')
}
