/**
 * Secret reads (docs/security.md, "Secret reads"): the deny-read list that confined commands and
 * the `read`/`grep`/`glob` tools cannot see, under `read-only` and `workspace-write`.
 *
 * - `readPolicy(...)`: the list, from the defaults (credentials under the user's home, dsh's home)
 *   and the `sandbox.denyRead` / `sandbox.allowRead` settings; validated once, when the sandbox
 *   plugin starts.
 * - `hiddenPaths(policy)`: what of it exists now, as real paths (symlinks resolved), with the
 *   readable exceptions inside each (dsh's spill folder and skills). A few `realpath`s: computed
 *   for every confined command, so a secret made since the last one is hidden from the next.
 * - `hiddenArgs(hidden)`: the bubblewrap arguments that cover them (an empty read-only tmpfs on a
 *   folder, `/dev/null` on a file), placed after the binds that would show them.
 * - `ReadCheck`: the tools' side, the same list checked on the path as given and the real path
 *   it reaches, plus `.env*` files outside the workspace (refused by name).
 */
import { lstatSync, realpathSync, statSync, type Stats } from 'node:fs'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'

/**
 * Under the user's home: credentials of the usual tools, and the logins of other coding agents
 * (Codex, Claude Code, opencode, GitHub Copilot), whose settings stay readable.
 */
export const DEFAULT_DENY_READ: readonly string[] = [
  '.ssh', '.aws', '.gnupg', '.config/gcloud', '.azure', '.kube', '.docker/config.json',
  '.netrc', '.npmrc', '.pypirc', '.git-credentials', '.config/gh/hosts.yml',
  '.codex/auth.json', '.claude/.credentials.json', '.local/share/opencode/auth.json',
  '.config/github-copilot/apps.json', '.config/github-copilot/hosts.json',
]

/** Under dsh's home: what the tools must read (spilled tool output, skills' own files). */
export const DSH_HOME_READABLE: readonly string[] = ['tool-output', 'skills']

/** The rule the tools name for `.env*` files outside the workspace. */
export const ENV_FILE_RULE = '.env files outside the workspace'

export interface ReadRule {
  /** Absolute, as configured (`~` expanded, `..` resolved). */
  readonly path: string
  /** As the user sees it: `~/.ssh`, or the absolute path. */
  readonly rule: string
}

export interface ReadPolicy {
  /** The user's home (absolute), where most entries lie. */
  readonly home: string
  readonly deny: readonly ReadRule[]
  /** Absolute paths readable inside a denied entry; also lift the `.env` rule at and below them. */
  readonly allow: readonly string[]
}

export interface HiddenPath {
  /** Real path. */
  readonly path: string
  readonly dir: boolean
  readonly rule: string
  /** Real paths inside `path` that stay readable (bound back read-only). */
  readonly keep: readonly string[]
}

function isUnderOrAt(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep)
}

function expand(entry: string, home: string): string {
  if (entry === '~') return resolve(home)
  if (entry.startsWith('~/')) return resolve(home, entry.slice(2))
  return resolve(entry)
}

function shown(path: string, home: string): string {
  const rel = relative(home, path)
  if (rel === '') return '~'
  return rel.startsWith('..') || rel.startsWith(sep) ? path : `~/${rel.split(sep).join('/')}`
}

function entries(value: unknown, key: string): readonly string[] {
  if (value === undefined) return []
  const bad = (what: string) => new TypeError(`sandbox: config.${key} must be a list of absolute or ~/ paths, ${what}`)
  if (!Array.isArray(value)) throw bad(`got ${JSON.stringify(value)}`)
  for (const entry of value) {
    if (typeof entry !== 'string' || !(entry === '~' || entry.startsWith('~/') || entry.startsWith('/'))) throw bad(`got the entry ${JSON.stringify(entry)}`)
    if (key === 'denyRead' && resolve(entry) === '/') throw bad('and / would hide everything')
  }
  return value as readonly string[]
}

/**
 * The deny-read list: the defaults under `home`, dsh's home, and `denyRead`; minus every entry at
 * or below an `allowRead` entry. An `allowRead` entry inside a denied one stays readable there.
 * Throws a TypeError for a value that is not a list of absolute or `~/` paths.
 */
export function readPolicy(options: { home: string; dshHome: string; denyRead?: unknown; allowRead?: unknown }): ReadPolicy {
  const { home } = options
  const denyRead = entries(options.denyRead, 'denyRead')
  const allowRead = entries(options.allowRead, 'allowRead').map(entry => expand(entry, home))
  const deny = new Map<string, ReadRule>()
  const add = (path: string) => { if (!deny.has(path)) deny.set(path, { path, rule: shown(path, home) }) }
  for (const entry of DEFAULT_DENY_READ) add(join(resolve(home), entry))
  add(resolve(options.dshHome))
  for (const entry of denyRead) add(expand(entry, home))
  for (const path of deny.keys()) if (allowRead.some(allowed => isUnderOrAt(path, allowed))) deny.delete(path)
  const allow = [...new Set([...DSH_HOME_READABLE.map(name => join(resolve(options.dshHome), name)), ...allowRead])]
  return { home: resolve(home), deny: [...deny.values()], allow }
}

/**
 * The real path of `path` when it exists. A `stat` first: most entries do not exist, and a failing
 * `realpath` costs an exception (three times a `stat`).
 */
function real(path: string): string | undefined {
  try {
    return statSync(path, { throwIfNoEntry: false }) === undefined ? undefined : realpathSync.native(path)
  } catch {
    return undefined
  }
}

function info(path: string, follow: boolean): Stats | undefined {
  try {
    return (follow ? statSync : lstatSync)(path, { throwIfNoEntry: false })
  } catch {
    // ENOTDIR and the like: nothing there.
    return undefined
  }
}

interface Found {
  readonly real: string
  readonly dir: boolean
}

/**
 * Real paths for one computation, without a cache that could go stale: below the home, one
 * `lstat` per path component from the home's real path on (shared parents such as `~/.config`
 * once), and a `realpath` only past a symlink; elsewhere `stat` and `realpath`.
 */
class RealPaths {
  private readonly seen = new Map<string, Found | null>()
  private readonly below: string
  constructor(private readonly home: string) {
    this.below = home.endsWith(sep) ? home : home + sep
  }

  of(path: string): Found | undefined {
    const known = this.seen.get(path)
    if (known !== undefined) return known ?? undefined
    const found = this.find(path)
    this.seen.set(path, found ?? null)
    return found
  }

  private find(path: string): Found | undefined {
    // All paths here are absolute and resolved: string operations, no path.relative.
    if (!path.startsWith(this.below)) return this.slow(path)
    const cut = path.lastIndexOf(sep)
    const parent = this.of(cut <= 0 ? sep : path.slice(0, cut))
    if (parent === undefined || !parent.dir) return undefined
    const candidate = `${parent.real.endsWith(sep) ? parent.real : parent.real + sep}${path.slice(cut + 1)}`
    const entry = info(candidate, false)
    if (entry === undefined) return undefined
    return entry.isSymbolicLink() ? this.slow(candidate) : { real: candidate, dir: entry.isDirectory() }
  }

  private slow(path: string): Found | undefined {
    const entry = info(path, true)
    if (entry === undefined) return undefined
    try {
      return { real: realpathSync.native(path), dir: entry.isDirectory() }
    } catch {
      return undefined
    }
  }
}

/**
 * What of `policy` exists now, by real path, sorted, without entries inside another hidden folder
 * (unless inside one of its kept paths). A missing entry is skipped: its parent shows nothing of it.
 */
export function hiddenPaths(policy: ReadPolicy): readonly HiddenPath[] {
  const paths = new RealPaths(policy.home)
  const found = new Map<string, { dir: boolean; rule: string }>()
  for (const { path, rule } of policy.deny) {
    const entry = paths.of(path)
    if (entry !== undefined && !found.has(entry.real)) found.set(entry.real, { dir: entry.dir, rule })
  }
  if (found.size === 0) return []
  const keeps = policy.allow.map(path => paths.of(path)?.real).filter((path): path is string => path !== undefined)
  const sorted = [...found].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const hidden: HiddenPath[] = []
  for (const [path, { dir, rule }] of sorted) {
    const outer = hidden.find(other => other.dir && isUnderOrAt(path, other.path))
    if (outer !== undefined && !outer.keep.some(kept => isUnderOrAt(path, kept))) continue
    const keep = dir ? keeps.filter(kept => kept !== path && isUnderOrAt(kept, path)) : []
    hidden.push({ path, dir, rule, keep })
  }
  return hidden
}

/** A stable key of a hidden set (shell hosts are kept per set). */
export function hiddenKey(hidden: readonly HiddenPath[]): string {
  return hidden.map(entry => `${entry.dir ? 'd' : 'f'}${entry.path}${entry.keep.map(kept => `\u0002${kept}`).join('')}`).join('\0')
}

/**
 * bubblewrap arguments hiding `hidden`: a folder gets an empty tmpfs (its kept paths bound back
 * read-only), then is remounted read-only once everything inside is in place, so nothing can be
 * written or created in it; a file gets `/dev/null` bound read-only over it (reads fail: the bind
 * is `nodev`). Mount points cannot be renamed or removed. `skip`: paths the sandbox does not show
 * anyway (under a private /tmp).
 */
export function hiddenArgs(hidden: readonly HiddenPath[] | undefined, skip?: (path: string) => boolean): string[] {
  if (hidden === undefined || hidden.length === 0) return []
  const args: string[] = []
  const folders: string[] = []
  for (const entry of hidden) {
    if (skip?.(entry.path) === true) continue
    if (!entry.dir) {
      args.push('--ro-bind', '/dev/null', entry.path)
      continue
    }
    args.push('--tmpfs', entry.path)
    for (const kept of entry.keep) args.push('--ro-bind-try', kept, kept)
    folders.push(entry.path)
  }
  for (const folder of folders) args.push('--remount-ro', folder)
  return args
}

/** The real path `path` reaches: its deepest existing ancestor's real path and the rest. */
export function realOf(path: string): string {
  let current = resolve(path)
  const rest: string[] = []
  for (;;) {
    const found = real(current)
    if (found !== undefined) return rest.length === 0 ? found : join(found, ...rest.reverse())
    const parent = dirname(current)
    if (parent === current) return resolve(path)
    rest.push(basename(current))
    current = parent
  }
}

/**
 * The tools' check, made once per call (`hidden` is what exists now). `denied(path)` gives the
 * rule `path` falls under, by the path as given (`..` resolved) and by the real path it reaches
 * (`real`, when the caller knows it, e.g. from an open descriptor), or undefined when it may be
 * read. `root`: the workspace (a real path), where `.env*` files are readable.
 */
export class ReadCheck {
  private readonly deny: readonly { readonly path: string; readonly below: string; readonly rule: string }[]
  private readonly allow: readonly { readonly path: string; readonly below: string }[]
  private readonly masks: readonly { readonly path: string; readonly below: string; readonly rule: string; readonly keep: readonly { readonly path: string; readonly below: string }[] }[]
  private readonly root: { readonly path: string; readonly below: string } | undefined

  constructor(policy: ReadPolicy, hidden: readonly HiddenPath[], root?: string) {
    // Prefixes made once: a search checks every file it reads.
    this.deny = policy.deny.map(rule => ({ ...prefix(rule.path), rule: rule.rule }))
    this.allow = policy.allow.map(prefix)
    this.masks = hidden.map(entry => ({ ...prefix(entry.path), rule: entry.rule, keep: entry.keep.map(prefix) }))
    this.root = root === undefined ? undefined : prefix(root)
  }

  denied(path: string, real?: string): string | undefined {
    const given = resolve(path)
    const target = real ?? realOf(given)
    for (const rule of this.deny) {
      if (at(given, rule) && !this.allowed(given)) return rule.rule
      if (at(target, rule) && !this.allowed(target)) return rule.rule
    }
    for (const mask of this.masks) {
      if (at(target, mask) && !mask.keep.some(kept => at(target, kept))) return mask.rule
    }
    if (this.root !== undefined && basename(target).startsWith('.env') && !at(target, this.root) && !this.allowed(target)) return ENV_FILE_RULE
    return undefined
  }

  private allowed(path: string): boolean {
    return this.allow.some(kept => at(path, kept))
  }
}

function prefix(path: string): { path: string; below: string } {
  return { path, below: path.endsWith(sep) ? path : path + sep }
}

function at(path: string, root: { path: string; below: string }): boolean {
  return path === root.path || path.startsWith(root.below)
}
