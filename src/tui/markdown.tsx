/**
 * Markdown for the terminal: `marked`'s lexer gives the block and inline tokens, drawn as Ink
 * text with bold, italics, inline code and fenced code blocks highlighted by `emphasize`
 * (highlight.js grammars, ANSI output). Only the live step is re-lexed while it streams.
 */
import { createElement as h, type ReactNode } from 'react'
import { Box, Text } from 'ink'
import { Lexer, type Token, type Tokens } from 'marked'
import { common, createEmphasize } from 'emphasize'
import stringWidth from 'string-width'
import { c, isColorEnabled } from './theme.js'

let emphasize: ReturnType<typeof createEmphasize> | undefined

/** ANSI-highlighted code, or the code as it is for an unknown language or with colours off. */
export function highlightCode(code: string, lang: string | undefined): string {
  if (!isColorEnabled() || lang === undefined || lang === '') return code
  emphasize ??= createEmphasize(common)
  try {
    return emphasize.highlight(lang, code).value
  } catch {
    return code
  }
}

function inline(tokens: readonly Token[] | undefined, key = 'i'): ReactNode[] {
  return (tokens ?? []).map((token, index) => {
    const k = `${key}.${index}`
    switch (token.type) {
      case 'strong': return h(Text, { key: k, bold: true }, ...inline((token as Tokens.Strong).tokens, k))
      case 'em': return h(Text, { key: k, italic: true }, ...inline((token as Tokens.Em).tokens, k))
      case 'del': return h(Text, { key: k, strikethrough: true }, ...inline((token as Tokens.Del).tokens, k))
      case 'codespan': return h(Text, { key: k, color: c('cyan') }, decode((token as Tokens.Codespan).text))
      case 'link': {
        const link = token as Tokens.Link
        const label = inline(link.tokens, k)
        return h(Text, { key: k, underline: true }, ...label, link.text === link.href ? '' : h(Text, { dimColor: true, underline: false }, ` (${link.href})`))
      }
      case 'br': return '\n'
      case 'text': {
        const text = token as Tokens.Text
        return text.tokens !== undefined ? h(Text, { key: k }, ...inline(text.tokens, k)) : decode(text.text)
      }
      case 'escape': return decode((token as Tokens.Escape).text)
      case 'image': return `[image: ${(token as Tokens.Image).text}]`
      default: return decode((token as { raw: string }).raw)
    }
  })
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': '\'' }
function decode(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, entity => ENTITIES[entity] ?? entity)
}

function block(token: Token, key: string, width: number): ReactNode {
  switch (token.type) {
    case 'heading': {
      const heading = token as Tokens.Heading
      return h(Text, { key, bold: true, color: c('magenta') }, ...inline(heading.tokens, key))
    }
    case 'paragraph': return h(Text, { key }, ...inline((token as Tokens.Paragraph).tokens, key))
    case 'text': {
      const text = token as Tokens.Text
      return h(Text, { key }, ...text.tokens !== undefined ? inline(text.tokens, key) : [decode(text.text)])
    }
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
          h(Box, { flexDirection: 'column', flexShrink: 1 }, ...item.tokens.map((child, n) => block(child, `${key}.${index}.${n}`, width - stringWidth(bullet)))))
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
  return (tokens ?? []).map(token => {
    switch (token.type) {
      case 'strong': case 'em': case 'del': return plain((token as Tokens.Strong).tokens)
      case 'codespan': return decode((token as Tokens.Codespan).text)
      case 'link': {
        const link = token as Tokens.Link
        return link.text === link.href ? plain(link.tokens) : `${plain(link.tokens)} (${link.href})`
      }
      case 'br': return '\n'
      case 'text': {
        const text = token as Tokens.Text
        return text.tokens !== undefined ? plain(text.tokens) : decode(text.text)
      }
      case 'escape': return decode((token as Tokens.Escape).text)
      case 'image': return `[image: ${(token as Tokens.Image).text}]`
      default: return decode((token as { raw: string }).raw)
    }
  }).join('')
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
  const natural = token.header.map((_, n) => Math.max(1, ...rows.map(cells => Math.max(0, ...plain(cells[n]?.tokens).split('\n').map(line => stringWidth(line))))))
  const last = natural.length - 1
  // Each cell's box holds its padding and, after the first, the rule on its left.
  const edges = (n: number) => (n > 0 ? 2 : 0) + (n < last ? 1 : 0)
  const widths = columnWidths(natural, width - natural.reduce((sum, _, n) => sum + edges(n), 0)).map((inner, n) => inner + edges(n))
  const align = (n: number) => token.align[n] === 'right' ? 'flex-end' : token.align[n] === 'center' ? 'center' : 'flex-start'
  const row = (cells: readonly Tokens.TableCell[], bold: boolean, k: string) => h(Box, { key: k, flexDirection: 'row' }, ...widths.map((outer, n) =>
    h(Box, {
      key: n, width: outer, flexShrink: 0, flexDirection: 'column', alignItems: align(n), paddingRight: n < last ? 1 : 0,
      ...n > 0 ? { paddingLeft: 1, borderStyle: 'single', borderLeft: true, borderRight: false, borderTop: false, borderBottom: false, borderDimColor: true } : {},
    }, h(Text, { bold }, ...inline(cells[n]?.tokens, `${k}.${n}`)))))
  const rule = h(Text, { key: `${key}.rule`, dimColor: true }, widths.map((outer, n) => n > 0 ? `┼${'─'.repeat(outer - 1)}` : '─'.repeat(outer)).join(''))
  return h(Box, { key, flexDirection: 'column' }, row(token.header, true, `${key}.h`), rule, ...token.rows.map((cells, n) => row(cells, false, `${key}.${n}`)))
}

/** Markdown source drawn as a column of blocks with one blank line between them, `width` columns wide (tables fit it). */
export function Markdown(props: { readonly text: string; readonly width: number }): ReactNode {
  const tokens = new Lexer().lex(props.text).filter(token => token.type !== 'space')
  return h(Box, { flexDirection: 'column', gap: 1 }, ...tokens.map((token, index) => block(token, `b${index}`, props.width)))
}
