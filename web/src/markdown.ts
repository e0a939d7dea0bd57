/**
 * Markdown for assistant text: marked with raw HTML escaped (model output is untrusted), links
 * limited to http(s)/mailto, and a small keyword highlighter for fenced code.
 */
import { Marked } from 'marked'

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, char => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!)
}

const KEYWORDS = new Set(('abstract as async await break case catch class const continue def default defer del delete do elif else enum except export extends false final finally fn for from func function go if impl implements import in instanceof interface is lambda let loop match mod module mut new nil none null of package pass private protected pub public raise return self static struct super switch this throw throws trait true try type typeof undefined unsafe use val var void while with yield').split(' '))
const SHELL = new Set('if then else elif fi for while until do done case esac in function return local export cd ls cat echo printf grep rg sed awk git npm npx node pnpm yarn cargo go python pip make mkdir rm cp mv sudo apt curl wget chmod touch find xargs tar docker'.split(' '))

const TOKEN = /(\/\/[^\n]*|#(?![{[])[^\n]*|\/\*[\s\S]*?\*\/|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?\b|\b[A-Za-z_$][\w$]*\b)/g

/** Token-level colouring: comments, strings, numbers, keywords, types; everything else plain. */
export function highlight(code: string, language = ''): string {
  const lang = language.toLowerCase()
  const hashComments = /^(sh|bash|zsh|shell|console|py|python|rb|ruby|yaml|yml|toml|make|dockerfile|r|perl|ini|conf)$/.test(lang)
  const shell = /^(sh|bash|zsh|shell|console)$/.test(lang)
  let out = ''
  let last = 0
  for (const match of code.matchAll(TOKEN)) {
    const token = match[0]
    const index = match.index ?? 0
    out += escapeHtml(code.slice(last, index))
    last = index + token.length
    let cls = ''
    if (token.startsWith('//') || token.startsWith('/*')) cls = hashComments ? '' : 'c'
    else if (token.startsWith('#')) cls = hashComments ? 'c' : ''
    else if (/^["'`]/.test(token)) cls = 's'
    else if (/^\d/.test(token)) cls = 'n'
    else if (shell ? SHELL.has(token) : KEYWORDS.has(token)) cls = 'k'
    else if (/^[A-Z][a-z]\w*$/.test(token)) cls = 't'
    out += cls ? `<span class="hl-${cls}">${escapeHtml(token)}</span>` : escapeHtml(token)
  }
  return out + escapeHtml(code.slice(last))
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html({ text }) {
      return escapeHtml(text)
    },
    code({ text, lang }) {
      const language = (lang ?? '').split(/\s/)[0]
      const label = language ? `<span class="code-lang">${escapeHtml(language)}</span>` : ''
      return `<div class="code-block">${label}<button class="copy-code" type="button" data-copy-code>Copy</button><pre><code>${highlight(text, language)}</code></pre></div>`
    },
    link({ href, title, tokens }) {
      const inner = this.parser.parseInline(tokens)
      if (!/^(https?:|mailto:)/i.test(href)) return inner
      return `<a href="${escapeHtml(href)}" target="_blank" rel="noreferrer noopener"${title ? ` title="${escapeHtml(title)}"` : ''}>${inner}</a>`
    },
    // A cell of prose (several words, long) gets room to wrap in when the table is wider than the
    // answer and scrolls: without it, every column shrinks to its longest word, one word a line.
    tablecell(token) {
      const tag = token.header ? 'th' : 'td'
      const align = token.align ? ` align="${token.align}"` : ''
      const prose = token.text.length > 30 && /\s\S+\s/.test(token.text) ? ' class="prose"' : ''
      return `<${tag}${align}${prose}>${this.parser.parseInline(token.tokens)}</${tag}>\n`
    },
    image({ href, text }) {
      return /^https?:/i.test(href) ? `<a href="${escapeHtml(href)}" target="_blank" rel="noreferrer noopener">${escapeHtml(text || href)}</a>` : escapeHtml(text)
    },
  },
})

export function renderMarkdown(text: string): string {
  return marked.parse(text, { async: false }) as string
}
