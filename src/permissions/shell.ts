/**
 * A bash command line split into its simple commands, for permission rules
 * (docs/security.md, "Permission rules"). Not a shell: it reads the text the way bash would
 * split it into commands and words (quotes, escapes, `;`, `&`, `|`, `&&`, `||`, newlines,
 * subshell parentheses, comments) and flags what it cannot see through: command and process
 * substitution, here-documents, unterminated quotes (`dynamic`) and redirections to files
 * (`redirects`). Allow rules use it strictly (every part must match, nothing dynamic); deny and
 * ask rules loosely (any part, nested commands included, matches).
 */

export interface ShellCommand {
  /** Each simple command's words, unquoted, shell keywords (`if`, `then`, `do`...) dropped. */
  readonly commands: readonly (readonly string[])[]
  /** Text run by the command that the split cannot vouch for: `$(...)`, backticks, `<(...)`, a here-document, a broken quote. */
  readonly dynamic: boolean
  /** A redirection reads or writes a file (anything but a descriptor or /dev/null). */
  readonly redirects: boolean
  /** Command texts nested inside: substitutions and the argument of `bash -c`, `sh -c`, `eval`. */
  readonly nested: readonly string[]
}

const KEYWORDS = new Set(['if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', 'case', 'esac', '!', '{', '}', 'function', 'select', '[[', ']]', 'coproc'])
const SEPARATORS = new Set([';', '&', '|', '\n', '(', ')'])

/** The text up to the `)` that closes a `$(` / `<(` opened before `start`; returns the inner text and the index after `)`. */
function closing(text: string, start: number): { inner: string; end: number; closed: boolean } {
  let depth = 1
  let quote: '"' | "'" | undefined
  for (let i = start; i < text.length; i += 1) {
    const c = text[i]!
    if (quote === "'") { if (c === "'") quote = undefined; continue }
    if (c === '\\') { i += 1; continue }
    if (quote === '"') { if (c === '"') quote = undefined; continue }
    if (c === '"' || c === "'") quote = c
    else if (c === '(') depth += 1
    else if (c === ')') {
      depth -= 1
      if (depth === 0) return { inner: text.slice(start, i), end: i + 1, closed: true }
    }
  }
  return { inner: text.slice(start), end: text.length, closed: false }
}

function backtick(text: string, start: number): { inner: string; end: number; closed: boolean } {
  for (let i = start; i < text.length; i += 1) {
    if (text[i] === '\\') { i += 1; continue }
    if (text[i] === '`') return { inner: text.slice(start, i), end: i + 1, closed: true }
  }
  return { inner: text.slice(start), end: text.length, closed: false }
}

export function splitCommand(text: string): ShellCommand {
  const commands: string[][] = []
  const nested: string[] = []
  let dynamic = false
  let redirects = false
  let words: string[] = []
  let word = ''
  let inWord = false
  /** Some of the word was quoted (a quoted `{` is a word, not a group). */
  let quoted = false
  /** The redirection operator whose target the next word is. */
  let pendingOp: string | undefined
  const endWord = () => {
    if (inWord) {
      if (pendingOp !== undefined) {
        // A redirection's target, read as bash reads a word (quotes and all).
        const duplicate = pendingOp.endsWith('&') && /^(\d+|-)$/.test(word)
        if (!duplicate && word !== '/dev/null' && !pendingOp.startsWith('<<')) redirects = true
        pendingOp = undefined
      } else if (!quoted && (word === '{' || word === '}')) {
        // A group's braces end the command before them: `function f { body; }` is two commands.
        word = ''
        inWord = false
        endCommand()
        return
      } else words.push(word)
    }
    word = ''
    inWord = false
    quoted = false
  }
  const endCommand = () => {
    endWord()
    // An operator with no target before the end of its command: bash refuses it; so do allow rules.
    if (pendingOp !== undefined) { dynamic = true; pendingOp = undefined }
    const kept = dropKeywords(words)
    if (kept.length > 0) commands.push(kept)
    words = []
  }
  const substitution = (found: { inner: string; closed: boolean }) => {
    dynamic = true
    nested.push(found.inner)
    if (!found.closed) dynamic = true
    word += '\u0000'
    inWord = true
  }
  // A redirection operator at `i` (after optional digits already in `word`): returns the index after its target.
  const redirection = (i: number): number => {
    if (/^\d+$/.test(word)) { word = ''; inWord = false }
    endWord()
    let op = text[i]!
    let j = i + 1
    while (j < text.length && (text[j] === '>' || text[j] === '<' || text[j] === '&' || text[j] === '|')) op += text[j++]
    if (op.startsWith('<<') && op !== '<<<') { dynamic = true }
    if (text[j] === '(' && (op === '<' || op === '>')) {
      // A process substitution is part of a word: what follows it (a `#` too) continues the word.
      const found = closing(text, j + 1)
      substitution(found)
      return found.end
    }
    // The target is the next word, read by the loop below with its quotes.
    pendingOp = op
    return j
  }
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!
    if (c === "'") {
      const end = text.indexOf("'", i + 1)
      if (end < 0) { dynamic = true; word += text.slice(i + 1); inWord = true; break }
      word += text.slice(i + 1, end)
      inWord = true
      quoted = true
      i = end
    } else if (c === '"') {
      inWord = true
      quoted = true
      let j = i + 1
      for (; j < text.length && text[j] !== '"'; j += 1) {
        const d = text[j]!
        if (d === '\\' && j + 1 < text.length && '"\\$`\n'.includes(text[j + 1]!)) {
          if (text[j + 1] !== '\n') word += text[j + 1]
          j += 1
        } else if (d === '$' && text[j + 1] === '(') {
          const found = closing(text, j + 2)
          substitution(found)
          j = found.end - 1
        } else if (d === '`') {
          const found = backtick(text, j + 1)
          substitution(found)
          j = found.end - 1
        } else word += d
      }
      if (j >= text.length) dynamic = true
      i = j
    } else if (c === '\\') {
      if (text[i + 1] === '\n') { i += 1; continue }
      if (i + 1 < text.length) { word += text[i + 1]; inWord = true; quoted = true }
      i += 1
    } else if (c === '$' && text[i + 1] === "'") {
      // ANSI-C quoting ($'...'): its text, escapes read as bash reads the common ones.
      let j = i + 2
      for (; j < text.length && text[j] !== "'"; j += 1) {
        if (text[j] === '\\' && j + 1 < text.length) {
          const escaped = ansiEscape(text, j + 1)
          word += escaped.text
          j = escaped.end - 1
        } else word += text[j]
      }
      if (j >= text.length) dynamic = true
      inWord = true
      quoted = true
      i = j
    } else if (c === '$' && text[i + 1] === '(') {
      const found = closing(text, i + 2)
      substitution(found)
      i = found.end - 1
    } else if (c === '`') {
      const found = backtick(text, i + 1)
      substitution(found)
      i = found.end - 1
    } else if (c === '>' || c === '<' || (c === '&' && text[i + 1] === '>')) {
      i = redirection(i) - 1
    } else if (c === '#' && !inWord) {
      const end = text.indexOf('\n', i)
      i = end < 0 ? text.length : end - 1
    } else if (SEPARATORS.has(c)) {
      endCommand()
    } else if (c === ' ' || c === '\t' || c === '\r') {
      endWord()
    } else {
      word += c
      inWord = true
    }
  }
  endCommand()
  for (const command of commands) {
    const inner = innerScript(command)
    if (inner !== undefined) nested.push(inner)
  }
  return { commands, dynamic, redirects, nested }
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', v: '\v' }

/** The character of the `$'...'` escape whose letter is at `at` (after the backslash), and the index after it. */
function ansiEscape(text: string, at: number): { text: string; end: number } {
  const c = text[at]!
  const code = (digits: RegExp, base: number, max: number) => {
    let end = at + 1
    while (end < text.length && end - at - 1 < max && digits.test(text[end]!)) end += 1
    const value = text.slice(at + 1, end)
    const point = parseInt(value, base)
    return value === '' ? { text: c, end: at + 1 } : { text: point <= 0x10ffff ? String.fromCodePoint(point) : '\ufffd', end }
  }
  if (c === 'x') return code(/[0-9a-fA-F]/, 16, 2)
  if (c === 'u') return code(/[0-9a-fA-F]/, 16, 4)
  if (c === 'U') return code(/[0-9a-fA-F]/, 16, 8)
  if (/[0-7]/.test(c)) {
    let end = at
    while (end < text.length && end - at < 3 && /[0-7]/.test(text[end]!)) end += 1
    return { text: String.fromCodePoint(parseInt(text.slice(at, end), 8)), end }
  }
  return { text: SIMPLE_ESCAPES[c] ?? c, end: at + 1 }
}

function dropKeywords(words: readonly string[]): string[] {
  let start = 0
  while (start < words.length && KEYWORDS.has(words[start]!)) start += 1
  return words.slice(start)
}

const SHELLS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh'])

/** The script of `bash -c SCRIPT` (any shell, any wrapper before it) or `eval WORDS`. */
function innerScript(words: readonly string[]): string | undefined {
  // `env -S 'cmd args'` splits its value into a command line.
  for (let i = 0; i + 1 < words.length && basename(words[0] ?? '') === 'env'; i += 1) {
    if (words[i] === '-S' || words[i] === '--split-string') return words[i + 1]
  }
  const bare = unwrapped(words)
  const name = basename(bare[0] ?? '')
  if (name === 'eval') return bare.slice(1).join(' ')
  if (SHELLS.has(name)) {
    const at = bare.findIndex((word, index) => index > 0 && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(word))
    // The script is the first word after `-c` that is not an option (`bash -c -e 'cmd'`).
    let script = at + 1
    while (at > 0 && script < bare.length && /^[-+]/.test(bare[script]!)) script += bare[script] === '-o' || bare[script] === '+o' ? 2 : 1
    if (at > 0 && bare[script] !== undefined) return bare[script]
  }
  return undefined
}

const basename = (word: string) => word.slice(word.lastIndexOf('/') + 1)

/** Wrappers that run the rest of their words as a command; their options are skipped. */
const WRAPPERS = new Set(['env', 'command', 'builtin', 'exec', 'nohup', 'time', 'nice', 'sudo', 'doas', 'xargs', 'timeout', 'stdbuf', 'setsid', 'chronic', 'ionice'])
/** Wrapper options that take a value as the next word. */
const VALUED: Readonly<Record<string, ReadonlySet<string>>> = {
  nice: new Set(['-n']), sudo: new Set(['-u', '-g', '-C', '-D']), xargs: new Set(['-n', '-I', '-L', '-P', '-d', '-E', '-s']),
  env: new Set(['-u', '-C', '-S']), ionice: new Set(['-c', '-n']), timeout: new Set(['-s', '-k', '--signal', '--kill-after']),
  exec: new Set(['-a']), doas: new Set(['-u', '-C']),
}

/**
 * The command under its variable assignments (`A=1 cmd`) and wrappers (`env`, `sudo`, `nohup`,
 * `timeout 5`...): what runs. Used by deny and ask rules only; an allow rule matches the words
 * as written.
 */
export function unwrapped(words: readonly string[]): readonly string[] {
  let rest = words
  for (;;) {
    let i = 0
    while (i < rest.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[i]!)) i += 1
    rest = rest.slice(i)
    const name = basename(rest[0] ?? '')
    if (!WRAPPERS.has(name)) return rest
    let j = 1
    const valued = VALUED[name]
    while (j < rest.length && (rest[j]!.startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(rest[j]!))) {
      if (valued?.has(rest[j]!) === true) j += 1
      j += 1
    }
    // `timeout DURATION cmd`: the duration is not the command.
    if (name === 'timeout' && j < rest.length && /^\d/.test(rest[j]!)) j += 1
    if (j >= rest.length) return rest
    rest = rest.slice(j)
  }
}
