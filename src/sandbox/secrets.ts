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
import { realpathSync, statSync } from 'node:fs'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'

/** Under the user's home: credentials of the usual tools. */
export const DEFAULT_DENY_READ: readonly string[] = [
  '.ssh', '.aws', '.gnupg', '.config/gcloud', '.azure', '.kube', '.docker/config.json',
  '.netrc', '.npmrc', '.pypirc', '.git-credentials', '.config/gh/hosts.yml',
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
  return { deny: [...deny.values()], allow }
}

function real(path: string): string | undefined {
  try {
    return realpathSync.native(path)
  } catch {
    return undefined
  }
}

/**
 * What of `policy` exists now, by real path, sorted, without entries inside another hidden folder
 * (unless inside one of its kept paths). A missing entry is skipped: its parent shows nothing of it.
 */
export function hiddenPaths(policy: ReadPolicy): readonly HiddenPath[] {
  const found = new Map<string, { dir: boolean; rule: string }>()
  for (const { path, rule } of policy.deny) {
    const target = real(path)
    if (target === undefined || found.has(target)) continue
    let dir: boolean
    try {
      dir = statSync(target).isDirectory()
    } catch {
      continue
    }
    found.set(target, { dir, rule })
  }
  if (found.size === 0) return []
  const keeps = policy.allow.map(real).filter((path): path is string => path !== undefined)
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
  constructor(private readonly policy: ReadPolicy, private readonly hidden: readonly HiddenPath[], private readonly root?: string) {}

  /** Whether nothing is hidden at all (no rule exists and no workspace to keep `.env` files in). */
  get empty(): boolean {
    return this.policy.deny.length === 0 && this.root === undefined
  }

  denied(path: string, real?: string): string | undefined {
    const given = resolve(path)
    const target = real ?? realOf(given)
    const allowed = (candidate: string) => this.policy.allow.some(kept => isUnderOrAt(candidate, kept))
    for (const rule of this.policy.deny) {
      if (isUnderOrAt(given, rule.path) && !allowed(given)) return rule.rule
      if (isUnderOrAt(target, rule.path) && !allowed(target)) return rule.rule
    }
    for (const entry of this.hidden) {
      if (isUnderOrAt(target, entry.path) && !entry.keep.some(kept => isUnderOrAt(target, kept))) return entry.rule
    }
    if (this.root !== undefined && basename(target).startsWith('.env') && !isUnderOrAt(target, this.root) && !allowed(target)) return ENV_FILE_RULE
    return undefined
  }
}
