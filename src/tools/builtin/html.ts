/**
 * A small HTML to markdown-ish text converter for `web_fetch`: headings, paragraphs, links,
 * lists, code, emphasis and tables become readable text; script, style and other non-content
 * elements are dropped. It is a tolerant scanner, not a parser: malformed markup degrades to
 * plain text and never throws.
 */

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', copy: '©', reg: '®', trade: '™',
  mdash: '—', ndash: '–', hellip: '…', laquo: '«', raquo: '»', ldquo: '“', rdquo: '”',
  lsquo: '‘', rsquo: '’', middot: '·', bull: '•', times: '×', deg: '°', euro: '€', pound: '£',
}

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g, (whole, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10)
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return NAMED_ENTITIES[body.toLowerCase()] ?? whole
  })
}

/** Elements whose content is never text for a reader. */
const SKIPPED = new Set(['script', 'style', 'noscript', 'template', 'svg', 'math', 'head', 'iframe', 'object', 'canvas', 'select', 'button'])
const BLOCKS = new Set([
  'p', 'div', 'section', 'article', 'main', 'header', 'footer', 'nav', 'aside', 'blockquote', 'figure',
  'figcaption', 'form', 'fieldset', 'table', 'ul', 'ol', 'dl', 'address', 'details', 'summary', 'body', 'html',
])

const TAG = /<!--[\s\S]*?-->|<![^>]*>|<\?[^>]*>|<(\/?)([a-zA-Z][a-zA-Z0-9:-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g

function attribute(attrs: string, name: string): string | undefined {
  const match = new RegExp(`(?:^|\\s)${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'>]+))`, 'i').exec(attrs)
  if (!match) return undefined
  return decodeEntities(match[1] ?? match[2] ?? match[3] ?? '')
}

function resolveUrl(href: string, base: string | undefined): string | undefined {
  if (href === '' || /^\s*javascript:/i.test(href)) return undefined
  try {
    return base ? new URL(href, base).href : new URL(href).href
  } catch {
    return href
  }
}

// Private-use markers survive whitespace clean-up and are replaced at the end.
const INDENT = '\uE000'
const PRE = '\uE001'

export interface HtmlConversion {
  readonly title?: string
  readonly text: string
}

export function htmlToMarkdown(html: string, baseUrl?: string): HtmlConversion {
  const titleMatch = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)
  const title = titleMatch ? decodeEntities(titleMatch[1]).replace(/\s+/g, ' ').trim() || undefined : undefined
  const out: string[] = []
  const preBlocks: string[] = []
  const lists: { ordered: boolean; next: number }[] = []
  const links: (string | undefined)[] = []
  let pre: string[] | undefined
  let preDepth = 0
  let last = 0

  const text = (raw: string) => {
    if (raw.length === 0) return
    const decoded = decodeEntities(raw)
    if (pre) pre.push(decoded)
    else out.push(decoded.replace(/\s+/g, ' '))
  }

  TAG.lastIndex = 0
  for (let match = TAG.exec(html); match; match = TAG.exec(html)) {
    text(html.slice(last, match.index))
    last = TAG.lastIndex
    const [, slash, rawName, attrs] = match
    if (rawName === undefined) continue // comment, doctype, processing instruction
    const name = rawName.toLowerCase()
    const closing = slash === '/'
    if (!closing && SKIPPED.has(name)) {
      const end = html.toLowerCase().indexOf(`</${name}`, last)
      if (end === -1) { last = html.length; break }
      const close = html.indexOf('>', end)
      last = TAG.lastIndex = close === -1 ? html.length : close + 1
      continue
    }
    if (pre && name !== 'pre') {
      if (name === 'br') pre.push('\n')
      continue
    }
    switch (name) {
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6':
        out.push(closing ? '\n\n' : `\n\n${'#'.repeat(Number(name[1]))} `)
        break
      case 'br':
        out.push('\n')
        break
      case 'hr':
        out.push('\n\n---\n\n')
        break
      case 'ul': case 'ol':
        if (closing) lists.pop()
        else lists.push({ ordered: name === 'ol', next: Number(attribute(attrs, 'start') ?? 1) || 1 })
        // A nested list continues its item (each li starts its own line); only the outermost is a paragraph.
        if (lists.length === (closing ? 0 : 1)) out.push('\n\n')
        break
      case 'li':
        if (!closing) {
          const list = lists[lists.length - 1]
          const depth = Math.max(lists.length - 1, 0)
          const marker = list?.ordered ? `${list.next++}. ` : '- '
          out.push(`\n${INDENT.repeat(depth * 2)}${marker}`)
        }
        break
      case 'dt':
        if (!closing) out.push('\n')
        break
      case 'dd':
        if (!closing) out.push(`\n${INDENT.repeat(2)}`)
        break
      case 'tr':
        if (!closing) out.push('\n')
        break
      case 'td': case 'th':
        if (closing) out.push(' | ')
        break
      case 'pre':
        if (!closing) {
          if (preDepth++ === 0) pre = []
        } else if (preDepth > 0 && --preDepth === 0 && pre) {
          preBlocks.push(pre.join('').replace(/^\n/, '').replace(/\s+$/, ''))
          out.push(`\n\n${PRE}${preBlocks.length - 1}${PRE}\n\n`)
          pre = undefined
        }
        break
      case 'code': case 'kbd': case 'samp': case 'tt':
        out.push('`')
        break
      case 'strong': case 'b':
        out.push('**')
        break
      case 'em': case 'i':
        out.push('_')
        break
      case 'a':
        if (!closing) {
          const href = resolveUrl(attribute(attrs, 'href') ?? '', baseUrl)
          links.push(href)
          if (href) out.push('[')
        } else {
          const href = links.pop()
          if (href) out.push(`](${href})`)
        }
        break
      case 'img': {
        const alt = attribute(attrs, 'alt')
        const src = resolveUrl(attribute(attrs, 'src') ?? '', baseUrl)
        if (alt) out.push(src ? `![${alt}](${src})` : alt)
        break
      }
      default:
        if (BLOCKS.has(name)) out.push('\n\n')
    }
  }
  text(html.slice(last))
  if (pre) preBlocks.push(pre.join('')), out.push(`\n\n${PRE}${preBlocks.length - 1}${PRE}\n\n`)

  const body = out.join('')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n[ \t]+/g, '\n')
    .replace(/\[\s+/g, '[')
    .replace(/\s+\]\(/g, '](')
    .replace(/\n{3,}/g, '\n\n')
    .replace(/ {2,}/g, ' ')
    .trim()
    .replace(new RegExp(INDENT, 'g'), ' ')
    .replace(new RegExp(`${PRE}(\\d+)${PRE}`, 'g'), (_, i: string) => `\`\`\`\n${preBlocks[Number(i)]}\n\`\`\``)
  return title === undefined ? { text: body } : { title, text: body }
}
