/**
 * Permission rules in Claude Code's syntax (docs/security.md, "Permission rules"): `Tool` or
 * `Tool(pattern)`, allow / ask / deny. Claude Code's tool names map onto dsh's (`Bash` -> bash,
 * `Edit` -> edit and write...), dsh's own names are taken as they are. Parsing is strict: a rule
 * that cannot mean anything is an error naming it and where it came from; a Claude Code tool dsh
 * does not have parses to a rule that matches nothing (a `.claude/settings.json` written for
 * Claude Code loads as it is).
 */
import { homedir } from 'node:os'
import { isAbsolute, join, resolve } from 'node:path'

export type RuleKind = 'allow' | 'ask' | 'deny'
export const RULE_KINDS: readonly RuleKind[] = ['deny', 'ask', 'allow']

/** What a rule's pattern is matched against. */
export type RulePattern =
  /** Any call of the tools. */
  | { readonly kind: 'any' }
  /** A bash command: its words equal `words` (exact) or begin with them (`prefix`, `cmd:*`). */
  | { readonly kind: 'command'; readonly words: readonly string[]; readonly prefix: boolean }
  /** A path argument: an absolute glob (`**` any folders, `*` and `?` within one name). */
  | { readonly kind: 'path'; readonly glob: string; readonly regex: RegExp }
  /** A URL argument's host: exactly `host`, or a subdomain of it when `subdomains`. */
  | { readonly kind: 'domain'; readonly host: string; readonly subdomains: boolean }
  /** MCP tools by name prefix (`mcp__server`, `mcp__server__*`). */
  | { readonly kind: 'tool-prefix'; readonly prefix: string }

export interface PermissionRule {
  /** The rule as written (shown to the user and logged). */
  readonly text: string
  readonly kind: RuleKind
  /** Where it came from: `user settings`, `--allow`, `.claude/settings.json`... */
  readonly source: string
  /** The dsh tools it covers; empty for a Claude Code tool dsh does not have. */
  readonly tools: readonly string[]
  readonly pattern: RulePattern
}

/** Claude Code's tool names and the dsh tools each covers. */
const CLAUDE_TOOLS: Readonly<Record<string, readonly string[]>> = {
  Bash: ['bash'],
  // str_replace_editor's view reads (a Read allow covers only that command: match.ts).
  Read: ['read', 'grep', 'glob', 'read_image', 'str_replace_editor'],
  Edit: ['edit', 'write', 'str_replace_editor'],
  MultiEdit: ['edit'],
  Write: ['write'],
  Glob: ['glob'],
  Grep: ['grep'],
  LS: ['glob'],
  WebFetch: ['web_fetch'],
  WebSearch: ['web_search'],
  TodoWrite: ['todo_write'],
  Task: ['subagent'],
  NotebookEdit: [],
  NotebookRead: [],
  KillShell: ['job_kill'],
  BashOutput: ['job_output'],
}

/** Tools whose pattern is a path, and the argument holding it (absent: the working folder). */
export const PATH_ARGUMENT: Readonly<Record<string, string>> = {
  read: 'file_path', write: 'file_path', edit: 'file_path', read_image: 'file_path', glob: 'path', grep: 'path', str_replace_editor: 'path',
}

export class RuleError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'RuleError'
  }
}

export interface ParseOptions {
  /** The project root: relative path patterns resolve against it. */
  readonly root: string
  /** The user's home folder, for `~/` patterns (default `os.homedir()`). */
  readonly home?: string
}

/** `Tool` or `Tool(pattern)` as the user wrote it; throws `RuleError` naming the rule and its source. */
export function parseRule(text: string, kind: RuleKind, source: string, options: ParseOptions): PermissionRule {
  const fail = (why: string) => new RuleError(`permission rule ${JSON.stringify(text)} (${source}): ${why}`)
  if (typeof text !== 'string') throw new RuleError(`permission rule ${JSON.stringify(text)} (${source}): a rule is a string such as "Bash(npm run test:*)"`)
  const match = /^\s*([A-Za-z][A-Za-z0-9_-]*)\s*(?:\(([\s\S]*)\))?\s*$/.exec(text)
  if (match === null) throw fail('expected Tool or Tool(pattern), e.g. Bash(git push:*), Edit(src/**), WebFetch(domain:example.com)')
  const name = match[1]!
  const spec = match[2]
  if (name.startsWith('mcp__')) {
    if (spec !== undefined) throw fail('MCP tools take no pattern: name the tool (mcp__server__tool) or the server (mcp__server)')
    const parts = name.split('__')
    if (parts.length === 2 || (parts.length === 3 && parts[2] === '*')) return { text, kind, source, tools: [], pattern: { kind: 'tool-prefix', prefix: `mcp__${parts[1]}__` } }
    return { text, kind, source, tools: [name], pattern: { kind: 'any' } }
  }
  const tools = CLAUDE_TOOLS[name] ?? (/^[a-z][a-z0-9_-]*$/.test(name) ? [name] : undefined)
  if (tools === undefined) throw fail(`unknown tool ${name} (Claude Code names: ${Object.keys(CLAUDE_TOOLS).join(', ')}; or a dsh tool name such as bash, read, edit, web_fetch)`)
  if (spec === undefined || spec.trim() === '*' || spec.trim() === '') {
    if (spec !== undefined && spec.trim() === '') throw fail('an empty pattern: write the bare tool name for every call of it')
    return { text, kind, source, tools, pattern: { kind: 'any' } }
  }
  const family = tools[0]
  if (family === 'bash') return { text, kind, source, tools, pattern: commandPattern(spec, fail) }
  if (family === 'web_fetch') {
    const domain = /^domain:\s*(\S+)$/.exec(spec.trim())
    if (domain === null) throw fail('WebFetch takes domain:HOST (e.g. WebFetch(domain:example.com), WebFetch(domain:*.example.com))')
    const host = domain[1]!.toLowerCase()
    return { text, kind, source, tools, pattern: host.startsWith('*.') ? { kind: 'domain', host: host.slice(2), subdomains: true } : { kind: 'domain', host, subdomains: false } }
  }
  if (family !== undefined && PATH_ARGUMENT[family] !== undefined) return { text, kind, source, tools, pattern: pathPattern(spec.trim(), options) }
  if (tools.length === 0) return { text, kind, source, tools, pattern: { kind: 'any' } }
  throw fail(`${name} takes no pattern: write ${name} alone for every call of it`)
}

function commandPattern(spec: string, fail: (why: string) => Error): RulePattern {
  let body = spec.trim()
  let prefix = false
  if (body.endsWith(':*')) { prefix = true; body = body.slice(0, -2) }
  else if (/\s\*$/.test(body)) { prefix = true; body = body.slice(0, -1) }
  if (body.includes('*')) throw fail('a command pattern is exact (Bash(npm run build)) or a prefix ending in :* (Bash(npm run test:*)); * elsewhere is not supported')
  const words = body.trim().split(/\s+/).filter(word => word !== '')
  if (words.length === 0) throw fail('an empty command: write Bash alone for every command')
  return { kind: 'command', words, prefix }
}

/**
 * A path pattern as an absolute glob: `//abs` is absolute, `~/x` the home folder, anything else
 * (`x`, `./x`, `/x`) is relative to the project root, as Claude Code reads a project's rules.
 */
function pathPattern(spec: string, options: ParseOptions): RulePattern {
  let glob: string
  if (spec.startsWith('//')) glob = spec.slice(1)
  else if (spec === '~' || spec.startsWith('~/')) glob = join(options.home ?? homedir(), spec.slice(1))
  else glob = join(resolve(options.root), spec.startsWith('/') ? spec.slice(1) : spec)
  // A folder pattern covers what is below it (`//` is the whole filesystem).
  if (glob.endsWith('/')) glob = `${glob}**`
  if (!isAbsolute(glob)) glob = resolve(glob)
  return { kind: 'path', glob, regex: globRegex(glob) }
}

/** `**` any run of folders, `*` and `?` within one name; a pattern also covers everything below what it names. */
export function globRegex(glob: string): RegExp {
  let out = ''
  for (let i = 0; i < glob.length; i += 1) {
    const c = glob[i]!
    if (c === '*' && glob[i + 1] === '*') {
      const slashAfter = glob[i + 2] === '/'
      out += slashAfter ? '(?:[^/]*/)*' : '.*'
      i += slashAfter ? 2 : 1
    } else if (c === '*') out += '[^/]*'
    else if (c === '?') out += '[^/]'
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${out}(?:/.*)?$`)
}
