/**
 * Markdown for the terminal: `marked`'s lexer gives the block and inline tokens, drawn as Ink
 * text with bold, italics, inline code and fenced code blocks highlighted by `emphasize`
 * (highlight.js grammars, ANSI output). Only the live step is re-lexed while it streams.
 */
import { createElement as h, type ReactNode } from 'react'
import { Box, Text } from 'ink'
import { Lexer, type Token, type Tokens } from 'marked'
import { common, createEmphasize } from 'emphasize'
import { displayWidth } from './width.js'
import { c, isColorEnabled } from './theme.js'
import { wrapRows } from './wrap.js'
import { terminalSafe } from '../host/terminal-text.js'

let emphasize: ReturnType<typeof createEmphasize> | undefined

/** The highlighter with the common grammars, made at its first use (~17 ms). */
function highlighter(): ReturnType<typeof createEmphasize> {
  emphasize ??= createEmphasize(common)
  return emphasize
}

/**
 * Markdown of every block and inline kind marked knows. Its first lex compiles marked's rules
 * (~25 ms even for a one-word answer, ~40 ms for them all) and the highlighter's set-up registers
 * its grammars (~17 ms): done once the first frame is out (`warmMarkdown`), while the person
 * types, they are not on the way to the first answer's frame.
 */
export const EVERY_KIND = '# Heading\n\nSetext\n===\n\nText *em* **strong** ~~del~~ `code` [link](https://x.y) <b>html</b> \\* \n\n'
  + '- item\n- [ ] task\n\n1. one\n\n> quote\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n\n```ts\nconst x = 1\n```\n\n    indented\n\n---\n\n<div>block</div>\n'

/**
 * Compiles what drawing the first answer needs: marked's rules, then the highlighter with its
 * common grammars, then `next` (the app draws a sample turn): each in a task of its own, so a key
 * typed meanwhile waits for one part at most.
 */
export function warmMarkdown(next?: () => void): void {
  setImmediate(() => {
    new Lexer().lex(EVERY_KIND)
    setImmediate(() => {
      if (isColorEnabled()) highlighter()
      if (next !== undefined) setImmediate(next)
    })
  })
}

/** ANSI-highlighted code, or the code as it is for an unknown language or with colours off. */
export function highlightCode(code: string, lang: string | undefined): string {
  if (!isColorEnabled() || lang === undefined || lang === '') return code
  try {
    return highlighter().highlight(lang, code).value
  } catch {
    return code
  }
}

/** How a run of inline text is drawn: the props of Ink's `Text` it takes. */
interface Style {
  readonly bold?: boolean
  readonly italic?: boolean
  readonly strikethrough?: boolean
  readonly underline?: boolean
  readonly dimColor?: boolean
  readonly color?: string
}

/** A run of inline text and its style. */
interface Segment {
  readonly text: string
  readonly style: Style
}

/** Inline tokens as styled runs of text (what a cell or paragraph shows, and how). */
function segments(tokens: readonly Token[] | undefined, style: Style = {}, out: Segment[] = []): Segment[] {
  for (const token of tokens ?? []) {
    switch (token.type) {
      case 'strong': segments((token as Tokens.Strong).tokens, { ...style, bold: true }, out); break
      case 'em': segments((token as Tokens.Em).tokens, { ...style, italic: true }, out); break
      case 'del': segments((token as Tokens.Del).tokens, { ...style, strikethrough: true }, out); break
      case 'codespan': out.push({ text: decode((token as Tokens.Codespan).text), style: { ...style, color: c('cyan') } }); break
      case 'link': {
        const link = token as Tokens.Link
        segments(link.tokens, { ...style, underline: true }, out)
        if (link.text !== link.href) out.push({ text: ` (${link.href})`, style: { ...style, dimColor: true } })
        break
      }
      case 'br': out.push({ text: '\n', style }); break
      case 'text': {
        const text = token as Tokens.Text
        if (text.tokens !== undefined) segments(text.tokens, style, out)
        else out.push({ text: decode(text.text), style })
        break
      }
      case 'escape': out.push({ text: decode((token as Tokens.Escape).text), style }); break
      case 'image': out.push({ text: `[image: ${(token as Tokens.Image).text}]`, style }); break
      default: out.push({ text: decode((token as { raw: string }).raw), style })
    }
  }
  return out
}

/**
 * Styled runs wrapped to `width` columns (./wrap.ts: the space a row breaks at is dropped, so no
 * row starts with a stray space), as the children of one `Text`.
 */
function inline(runs: readonly Segment[], width: number, key: string): ReactNode[] {
  const text = runs.map(run => run.text).join('')
  const out: ReactNode[] = []
  let run = 0
  let runStart = 0
  for (const [index, [start, end]] of wrapRows(text, width).entries()) {
    if (index > 0) out.push('\n')
    while (run < runs.length && runStart + runs[run].text.length <= start) runStart += runs[run++].text.length
    for (let n = run, at = runStart; n < runs.length && at < end; at += runs[n++].text.length) {
      const piece = text.slice(Math.max(start, at), Math.min(end, at + runs[n].text.length))
      if (piece === '') continue
      const style = runs[n].style
      out.push(Object.keys(style).length === 0 ? piece : h(Text, { key: `${key}.${out.length}`, ...style }, piece))
    }
  }
  return out
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': '\'' }
function decode(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, entity => ENTITIES[entity] ?? entity)
}

function block(token: Token, key: string, width: number): ReactNode {
  switch (token.type) {
    case 'heading': {
      const heading = token as Tokens.Heading
      return h(Text, { key, bold: true, color: c('magenta') }, ...inline(segments(heading.tokens), width, key))
    }
    case 'paragraph': return h(Text, { key }, ...inline(segments((token as Tokens.Paragraph).tokens), width, key))
    case 'text': return h(Text, { key }, ...inline(segments([token]), width, key))
    case 'code': {
      const code = token as Tokens.Code
      const lang = code.lang?.split(/\s/)[0]
      return h(Box, { key, flexDirection: 'column', paddingLeft: 1, borderStyle: 'single', borderLeft: true, borderRight: false, borderTop: false, borderBottom: false, borderColor: c('gray') },
        lang ? h(Text, { dimColor: true }, lang) : null,
        h(Text, null, highlightCode(code.text.replace(/\n$/, ''), lang)))
    }
    case 'list': {
      const list = token as Tokens.List
      const start = typeof list.start === 'number' ? list.start : 1
      return h(Box, { key, flexDirection: 'column' }, ...list.items.map((item, index) => {
        const bullet = list.ordered ? `${start + index}. ` : item.task ? (item.checked ? '[x] ' : '[ ] ') : '• '
        return h(Box, { key: `${key}.${index}`, flexDirection: 'row' },
          h(Text, { color: c('gray') }, bullet),
          h(Box, { flexDirection: 'column', flexShrink: 1 }, ...item.tokens.map((child, n) => block(child, `${key}.${index}.${n}`, width - displayWidth(bullet)))))
      }))
    }
    case 'blockquote': {
      const quote = token as Tokens.Blockquote
      return h(Box, { key, flexDirection: 'column', paddingLeft: 1, borderStyle: 'single', borderLeft: true, borderRight: false, borderTop: false, borderBottom: false, borderDimColor: true },
        ...quote.tokens.map((child, n) => block(child, `${key}.${n}`, width - 2)))
    }
    case 'hr': return h(Text, { key, dimColor: true }, '───')
    case 'table': return table(token as Tokens.Table, key, width)
    case 'space': return null
    case 'html': return h(Text, { key }, (token as Tokens.HTML).text)
    default: return h(Text, { key }, (token as { raw: string }).raw)
  }
}

/** What a cell shows, as plain text: its width decides its column's. */
function plain(tokens: readonly Token[] | undefined): string {
  return segments(tokens).map(run => run.text).join('')
}

/** A column narrower than this keeps its width while there is room; a wider one gives up room down to it, at most. */
const MIN_COLUMN = 8

/**
 * Column widths that fit `room`: each column's widest cell when they all fit; otherwise the
 * widest columns are cut, to one shared width, until they do, so a column of ids or numbers keeps
 * its width while a column of prose wraps. No column is cut below `MIN_COLUMN`, or below an even
 * share of the room when that is less; only a room narrower than one cell per column overflows.
 */
export function columnWidths(natural: readonly number[], room: number): number[] {
  const sum = (widths: readonly number[]) => widths.reduce((total, width) => total + width, 0)
  if (sum(natural) <= room) return [...natural]
  const share = Math.max(1, Math.floor(room / natural.length))
  const floor = natural.map(width => Math.min(width, MIN_COLUMN, share))
  const capped = (limit: number) => natural.map((width, n) => Math.max(floor[n], Math.min(width, limit)))
  // The largest cap at which the columns fit (0 always does: the floors fit by their choice).
  let low = 0
  let high = Math.max(...natural)
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (sum(capped(middle)) <= room) low = middle
    else high = middle - 1
  }
  const widths = capped(low)
  // What rounding to the cap left goes to the widest cut columns, one cell each.
  let spare = room - sum(widths)
  const cut = natural.map((width, n) => n).filter(n => widths[n] < natural[n]).sort((a, b) => natural[b] - natural[a])
  for (const n of cut) {
    if (spare <= 0) break
    widths[n] += 1
    spare -= 1
  }
  return widths
}

/**
 * A table as a grid in `width` columns: every column as wide as its widest cell when that fits,
 * the widest columns cut and their cells wrapped when not (`columnWidths`), so the columns line
 * up. A rule splits the columns and crosses the one under the header. Right and centre alignment
 * from the delimiter row are kept.
 */
function table(token: Tokens.Table, key: string, width: number): ReactNode {
  const rows = [token.header, ...token.rows]
  const natural = token.header.map((_, n) => Math.max(1, ...rows.map(cells => Math.max(0, ...plain(cells[n]?.tokens).split('\n').map(line => displayWidth(line))))))
  const last = natural.length - 1
  // Each cell's box holds its padding and, after the first, the rule on its left.
  const edges = (n: number) => (n > 0 ? 2 : 0) + (n < last ? 1 : 0)
  const widths = columnWidths(natural, width - natural.reduce((sum, _, n) => sum + edges(n), 0)).map((inner, n) => inner + edges(n))
  const align = (n: number) => token.align[n] === 'right' ? 'flex-end' : token.align[n] === 'center' ? 'center' : 'flex-start'
  const row = (cells: readonly Tokens.TableCell[], bold: boolean, k: string) => h(Box, { key: k, flexDirection: 'row' }, ...widths.map((outer, n) =>
    h(Box, {
      key: n, width: outer, flexShrink: 0, flexDirection: 'column', alignItems: align(n), paddingRight: n < last ? 1 : 0,
      ...n > 0 ? { paddingLeft: 1, borderStyle: 'single', borderLeft: true, borderRight: false, borderTop: false, borderBottom: false, borderDimColor: true } : {},
    }, h(Text, { bold }, ...inline(segments(cells[n]?.tokens), outer - edges(n), `${k}.${n}`)))))
  const rule = h(Text, { key: `${key}.rule`, dimColor: true }, widths.map((outer, n) => n > 0 ? `┼${'─'.repeat(outer - 1)}` : '─'.repeat(outer)).join(''))
  return h(Box, { key, flexDirection: 'column' }, row(token.header, true, `${key}.h`), rule, ...token.rows.map((cells, n) => row(cells, false, `${key}.${n}`)))
}

/**
 * Markdown source drawn as a column of blocks with one blank line between them, `width` columns
 * wide (tables fit it). The source is made safe for the terminal before it is lexed (security
 * #42.6): no escape of the model's reaches the screen; the colours drawn here are the app's own.
 */
export function Markdown(props: { readonly text: string; readonly width: number }): ReactNode {
  const tokens = new Lexer().lex(terminalSafe(props.text)).filter(token => token.type !== 'space')
  return h(Box, { flexDirection: 'column', gap: 1 }, ...tokens.map((token, index) => block(token, `b${index}`, props.width)))
}
