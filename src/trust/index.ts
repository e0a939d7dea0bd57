/**
 * The trust step for project files that run code (project hooks; the same list serves any
 * other project-provided command source). A project folder is trusted when it, or an ancestor,
 * is listed in `$DSH_HOME/trusted-projects.json` (`{"projects": ["/abs/path", ...], "pins":
 * {"/abs/file": "<sha256>"}}`) or in the caller's explicit list. Trust is pinned by content:
 * trusting a folder records the SHA-256 of each hook file it has, and a hook file that is new or
 * changed since waits for trust again (the model, or a `git pull`, can write a hook file; only
 * the user trusts one). Nothing in a project can trust itself.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve, sep } from 'node:path'

export const TRUST_FILE = 'trusted-projects.json'

export function trustFile(home: string): string {
  return join(home, TRUST_FILE)
}

export interface TrustList {
  /** Trusted folders (absolute). */
  readonly projects: string[]
  /** Hook files pinned as trusted: absolute path to the SHA-256 (hex) of the content trusted. */
  readonly pins: Readonly<Record<string, string>>
  /** The file is malformed (it then trusts nothing): why. */
  readonly problem?: string
}

/** The SHA-256 (hex) a pin records. */
export function contentHash(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex')
}

/** The trusted folders (absolute), the pinned files and, when the file is malformed (it then trusts nothing), why. */
export function readTrustList(home: string): TrustList {
  const file = trustFile(home)
  if (!existsSync(file)) return { projects: [], pins: {} }
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return { projects: [], pins: {}, problem: `${file} is not valid JSON: nothing in it is trusted until it is fixed` }
  }
  const { projects, pins } = (json ?? {}) as { projects?: unknown; pins?: unknown }
  if (!Array.isArray(projects)) return { projects: [], pins: {}, problem: `${file}: "projects" must be a list of folders: nothing in it is trusted until it is fixed` }
  const kept: Record<string, string> = {}
  if (typeof pins === 'object' && pins !== null && !Array.isArray(pins)) {
    for (const [path, hash] of Object.entries(pins)) if (typeof hash === 'string') kept[resolve(path)] = hash
  }
  return { projects: projects.filter((item): item is string => typeof item === 'string').map(path => resolve(path)), pins: kept }
}

/** Whether `text`, read from hook file `path`, is the content pinned when its folder was trusted. */
export function pinnedAsIs(list: Pick<TrustList, 'pins'>, path: string, text: string | Uint8Array): boolean {
  return list.pins[resolve(path)] === contentHash(text)
}

/** The project hook files `dir` has now (absolute paths). */
export function projectHookPaths(dir: string): string[] {
  return PROJECT_HOOK_FILES.map(file => join(resolve(dir), file.path)).filter(path => existsSync(path))
}

/** The trusted folders recorded under `home` (absolute paths); a malformed file trusts nothing. */
export function readTrustedProjects(home: string): string[] {
  return readTrustList(home).projects
}

/** Why the trust list cannot be read (then it trusts nothing), or undefined when it is fine or absent. */
export function trustListProblem(home: string): string | undefined {
  return readTrustList(home).problem
}

/** The list, for a change: a malformed file is refused rather than overwritten (it may hold folders the user typed). */
function listForChange(home: string): TrustList {
  const list = readTrustList(home)
  if (list.problem !== undefined) throw new Error(`${list.problem}; fix or remove it first`)
  return list
}

function writeTrustList(home: string, projects: readonly string[], pins: Readonly<Record<string, string>>): void {
  const file = trustFile(home)
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const temp = `${file}.${process.pid}.tmp`
  writeFileSync(temp, `${JSON.stringify({ projects, ...Object.keys(pins).length > 0 ? { pins } : {} }, null, 2)}\n`, { mode: 0o600 })
  renameSync(temp, file)
}

function inside(path: string, dir: string): boolean {
  return path.startsWith(dir.endsWith(sep) ? dir : dir + sep)
}

/**
 * Records `dir` as trusted and pins its hook files as they are now (`files`: absolute paths,
 * default the project hook files `dir` has). Trusting again re-pins: that is how a changed hook
 * file is trusted as it is now.
 */
export function trustProject(home: string, dir: string, files: readonly string[] = projectHookPaths(dir)): void {
  const { projects, pins } = listForChange(home)
  const target = resolve(dir)
  const next: Record<string, string> = { ...pins }
  for (const path of files) {
    try {
      next[resolve(path)] = contentHash(readFileSync(path))
    } catch {
      delete next[resolve(path)]
    }
  }
  writeTrustList(home, projects.includes(target) ? projects : [...projects, target], next)
}

/** Removes `dir` from the list (exact entry only; an ancestor's entry still covers it) with the pins of its files. True when it was listed. */
export function untrustProject(home: string, dir: string): boolean {
  const { projects, pins } = listForChange(home)
  const target = resolve(dir)
  if (!projects.includes(target)) return false
  const kept = Object.fromEntries(Object.entries(pins).filter(([path]) => !inside(path, target)))
  writeTrustList(home, projects.filter(project => project !== target), kept)
  return true
}

/** The trusted entry that covers `dir` (itself or an ancestor), if any. */
export function trustedBy(dir: string, trusted: readonly string[]): string | undefined {
  return trusted.find(root => isTrusted(dir, [root]))
}

/**
 * The project files that hold hooks (commands run at the agent's interception points), relative
 * to the project folder, in load order. `.mcp.json` is the other file that runs code; the MCP
 * plugin pins it by content hash.
 */
export const PROJECT_HOOK_FILES: readonly { readonly dialect: 'claude-code' | 'codex'; readonly path: string }[] = [
  { dialect: 'claude-code', path: join('.claude', 'settings.json') },
  { dialect: 'claude-code', path: join('.claude', 'settings.local.json') },
  { dialect: 'codex', path: join('.codex', 'hooks.json') },
]

/** The user's own hook files, relative to the home folder: they need no trust. */
export const USER_HOOK_FILES: readonly string[] = [join('.claude', 'settings.json'), join('.codex', 'hooks.json')]

/** Whether `dir` is, or lies inside, one of `trusted`. */
export function isTrusted(dir: string, trusted: readonly string[]): boolean {
  const target = resolve(dir)
  return trusted.some(root => {
    const base = resolve(root)
    return target === base || target.startsWith(base.endsWith(sep) ? base : base + sep) || (dirname(base) === base && target.startsWith(base))
  })
}

/**
 * Whether a folder is trusted now, for a caller that asks at every step (a project's
 * `.claude/skills`): the list is read again only when its file changed (one `stat` per call;
 * never kept while the file is younger than 2 s, since two writes in one timestamp tick can leave
 * the same stat).
 */
export function trustChecker(home: string): (dir: string) => boolean {
  let stamp: string | undefined
  let trusted: string[] = []
  return (dir) => {
    let now = 'absent'
    try {
      const stats = statSync(trustFile(home))
      now = Date.now() - stats.mtimeMs < 2_000 ? 'fresh' : `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`
    } catch {
      // No list: nothing is trusted.
    }
    if (now !== stamp || now === 'fresh') {
      trusted = readTrustedProjects(home)
      stamp = now
    }
    return isTrusted(dir, trusted)
  }
}
