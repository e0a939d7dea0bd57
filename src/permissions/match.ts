/**
 * Which rule decides a call (docs/security.md, "Permission rules"). Precedence is deny, then
 * ask, then allow: the first deny rule that matches refuses the call, else the first ask rule
 * makes it ask, else an allow rule lets it run without asking. A bash command is split into its
 * simple commands (./shell.ts): a deny or ask rule matches when ANY of them (or a command nested
 * in a substitution or `bash -c`) matches it; allow rules must cover EVERY one, and a command
 * with a substitution, a here-document or a redirection to a file is never allowed by a rule.
 * Paths are resolved (`..` folded, links followed where the file exists) before matching: an
 * allow needs the path as given and the real path to match, a deny either.
 */
import { realpathSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { resolvePath } from '../tools/builtin/paths.js'
import { PATH_ARGUMENT, type PermissionRule, type RuleKind } from './rules.js'
import { splitCommand, unwrapped } from './shell.js'

export interface RuleSet {
  readonly deny: readonly PermissionRule[]
  readonly ask: readonly PermissionRule[]
  readonly allow: readonly PermissionRule[]
}

export const EMPTY_RULES: RuleSet = { deny: [], ask: [], allow: [] }

export interface RuleCall {
  /** The dsh tool name. */
  readonly tool: string
  /** The call's arguments (parsed); a string is parsed as JSON, unparsable means `{}`. */
  readonly args: unknown
  /** Relative paths of the call resolve here (the session's working folder). */
  readonly cwd: string
}

export interface Verdict {
  readonly kind: RuleKind
  readonly rule: PermissionRule
}

function argsObject(args: unknown): Record<string, unknown> {
  let value = args
  if (typeof value === 'string') {
    try { value = value.trim() === '' ? {} : JSON.parse(value) } catch { value = {} }
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
}

const covers = (rule: PermissionRule, tool: string) =>
  rule.pattern.kind === 'tool-prefix' ? tool.startsWith(rule.pattern.prefix) : rule.tools.includes(tool)

/** Deny, then ask, then allow; undefined when no rule speaks to the call. */
export function evaluate(rules: RuleSet, call: RuleCall): Verdict | undefined {
  const args = argsObject(call.args)
  for (const kind of ['deny', 'ask'] as const) {
    for (const rule of rules[kind]) {
      if (covers(rule, call.tool) && matchesLoosely(rule, call.tool, args, call.cwd)) return { kind, rule }
    }
  }
  if (rules.allow.length === 0) return undefined
  const allow = rules.allow.filter(rule => covers(rule, call.tool))
  if (allow.length === 0) return undefined
  if (call.tool === 'bash' && typeof args.command === 'string') return allowCommand(allow, args.command)
  const rule = allow.find(rule => matchesStrictly(rule, call.tool, args, call.cwd))
  return rule === undefined ? undefined : { kind: 'allow', rule }
}

function startsWith(words: readonly string[], head: readonly string[], prefix: boolean): boolean {
  if (prefix ? words.length < head.length : words.length !== head.length) return false
  return head.every((word, i) => words[i] === word)
}

/** Every simple command (nested ones included) of `command`, for deny and ask rules. */
function allCommands(command: string, depth = 0): (readonly string[])[] {
  const split = splitCommand(command)
  const out: (readonly string[])[] = []
  for (const words of split.commands) {
    out.push(words)
    const bare = unwrapped(words)
    if (bare !== words && bare.length > 0) out.push(bare)
    const name = bare[0]
    if (name !== undefined && name.includes('/')) out.push([name.slice(name.lastIndexOf('/') + 1), ...bare.slice(1)])
  }
  if (depth < 4) for (const inner of split.nested) out.push(...allCommands(inner, depth + 1))
  return out
}

function matchesLoosely(rule: PermissionRule, tool: string, args: Record<string, unknown>, cwd: string): boolean {
  const pattern = rule.pattern
  switch (pattern.kind) {
    case 'any':
    case 'tool-prefix':
      return true
    case 'command':
      return typeof args.command === 'string' && allCommands(args.command).some(words => startsWith(words, pattern.words, pattern.prefix))
    case 'path':
      return pathsOf(tool, args, cwd).some(path => pattern.regex.test(path))
    case 'domain':
      return hostMatches(args.url, pattern.host, pattern.subdomains)
  }
}

function matchesStrictly(rule: PermissionRule, tool: string, args: Record<string, unknown>, cwd: string): boolean {
  const pattern = rule.pattern
  switch (pattern.kind) {
    case 'any':
    case 'tool-prefix':
      return true
    case 'command':
      return false
    case 'path': {
      // A Read rule allows the editor's view, never its changes.
      if (tool === 'str_replace_editor' && !rule.tools.includes('edit') && args.command !== 'view') return false
      const paths = pathsOf(tool, args, cwd)
      return paths.length > 0 && paths.every(path => pattern.regex.test(path))
    }
    case 'domain':
      return hostMatches(args.url, pattern.host, pattern.subdomains)
  }
}

/** A bash command is allowed when every simple command matches some allow rule and nothing is hidden from the split. */
function allowCommand(allow: readonly PermissionRule[], command: string): Verdict | undefined {
  const any = allow.find(rule => rule.pattern.kind === 'any')
  if (any !== undefined) return { kind: 'allow', rule: any }
  const split = splitCommand(command)
  if (split.dynamic || split.redirects || split.commands.length === 0) return undefined
  let first: PermissionRule | undefined
  for (const words of split.commands) {
    const rule = allow.find(rule => rule.pattern.kind === 'command' && startsWith(words, rule.pattern.words, rule.pattern.prefix))
    if (rule === undefined) return undefined
    first ??= rule
  }
  return { kind: 'allow', rule: first! }
}

/**
 * The call's path as the tool reads it (`~/` is the home folder, relative paths against the
 * call's folder, `..` folded) and where it really leads: its real path, or for a file not made
 * yet, the real path of its nearest existing folder with the rest appended (a link to a folder
 * elsewhere is judged where it leads).
 */
function pathsOf(tool: string, args: Record<string, unknown>, cwd: string): string[] {
  const key = PATH_ARGUMENT[tool]
  if (key === undefined) return []
  const given = args[key]
  const path = resolvePath(cwd, typeof given === 'string' && given !== '' ? given : '.')
  const out = [path]
  const real = realLocation(path)
  if (real !== undefined && real !== path) out.push(real)
  return out
}

function realLocation(path: string): string | undefined {
  let rest = ''
  for (let at = path; ; at = dirname(at)) {
    try {
      return join(realpathSync(at), rest)
    } catch {
      if (dirname(at) === at) return undefined
      rest = join(basename(at), rest)
    }
  }
}

function hostMatches(url: unknown, host: string, subdomains: boolean): boolean {
  if (typeof url !== 'string') return false
  let name: string
  try {
    name = new URL(url).hostname.toLowerCase().replace(/\.$/, '')
  } catch {
    return false
  }
  return subdomains ? name.endsWith(`.${host}`) : name === host
}
