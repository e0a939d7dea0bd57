/**
 * Markdown for the terminal: `marked`'s lexer gives the block and inline tokens, drawn as Ink
 * text with bold, italics, inline code and fenced code blocks highlighted by `emphasize`
 * (highlight.js grammars, ANSI output). Only the live step is re-lexed while it streams.
 */
import { createElement as h, type ReactNode } from 'react'
import { Box, Text } from 'ink'
import { Lexer, type Token, type Tokens } from 'marked'
import { common, createEmphasize } from 'emphasize'
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

function block(token: Token, key: string): ReactNode {
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
          h(Box, { flexDirection: 'column', flexShrink: 1 }, ...item.tokens.map((child, n) => block(child, `${key}.${index}.${n}`))))
      }))
    }
    case 'blockquote': {
      const quote = token as Tokens.Blockquote
      return h(Box, { key, flexDirection: 'column', paddingLeft: 1, borderStyle: 'single', borderLeft: true, borderRight: false, borderTop: false, borderBottom: false, borderDimColor: true },
        ...quote.tokens.map((child, n) => block(child, `${key}.${n}`)))
    }
    case 'hr': return h(Text, { key, dimColor: true }, '───')
    case 'table': {
      const table = token as Tokens.Table
      const row = (cells: readonly Tokens.TableCell[], bold: boolean, k: string) =>
        h(Text, { key: k, bold }, ...cells.flatMap((cell, n) => [n > 0 ? h(Text, { key: `s${n}`, dimColor: true }, ' │ ') : '', h(Text, { key: `c${n}` }, ...inline(cell.tokens, `${k}.${n}`))]))
      return h(Box, { key, flexDirection: 'column' }, row(table.header, true, `${key}.h`), ...table.rows.map((cells, n) => row(cells, false, `${key}.${n}`)))
    }
    case 'space': return null
    case 'html': return h(Text, { key }, (token as Tokens.HTML).text)
    default: return h(Text, { key }, (token as { raw: string }).raw)
  }
}

/** Markdown source drawn as a column of blocks with one blank line between them. */
export function Markdown(props: { readonly text: string }): ReactNode {
  const tokens = new Lexer().lex(props.text).filter(token => token.type !== 'space')
  return h(Box, { flexDirection: 'column', gap: 1 }, ...tokens.map((token, index) => block(token, `b${index}`)))
}
