/**
 * Protected paths: what no confined command and no confined `write`/`edit` may change, even
 * inside a writable root, because changing it runs code outside the sandbox later (docs/security.md,
 * "Protected paths"). One list serves both enforcers:
 *
 * - the write fence (`./fence.ts`) refuses a target whose path, relative to the writable root
 *   holding it, matches a rule at any depth (`sub/.git/hooks/x`, a `.claude` folder not yet made);
 * - the bubblewrap runner (`./runner.ts`) mounts what exists of them read-only in the folders of
 *   the writable root a bounded scan finds (`protectedMounts`, `./protected-scan.ts`), and the
 *   kernel's settings in every confined mode.
 *
 * Only `danger-full-access`, or an approved escalation to it, lifts them.
 */
import { lstatSync, readFileSync, realpathSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { ProtectedScan, type ScanLimits } from './protected-scan.js'
import { hiddenKey, type HiddenPath } from './secrets.js'

/** Why a path is protected, in the words the model and the user see. */
export type ProtectedKind = 'agent configuration' | 'git configuration and hooks' | 'dsh home'

export interface ProtectedMatch {
  /** The path as matched, relative to its writable root (absolute for extra paths). */
  readonly path: string
  readonly kind: ProtectedKind
}

/** Folders and files of agent configuration: hooks, MCP servers, settings, skills. */
const AGENT_CONFIG = new Set(['.claude', '.codex', '.dsh'])
const MCP_FILE = '.mcp.json'
/** Inside a `.git` folder: what git reads and runs code from (core.fsmonitor, aliases, hooks, attributes' filters). */
const GIT_CODE_DIRS = new Set(['hooks', 'info'])
const GIT_CONFIG_FILES = new Set(['config', 'config.worktree'])

/**
 * Kernel files that root could write in a confined command even with every capability dropped
 * (they are checked by owner, not by capability): made read-only in every confined mode after
 * `/proc` is mounted. `/sys` is covered by the read-only bind of `/`.
 */
export const KERNEL_READ_ONLY: readonly string[] = ['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/fs', '/proc/pressure']

function isUnderOrAt(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep)
}

/** The rule a path's segments (relative to a writable root) match, if any. */
export function protectedSegments(segments: readonly string[]): ProtectedKind | undefined {
  for (let i = 0; i < segments.length; i++) {
    const name = segments[i]!
    if (AGENT_CONFIG.has(name)) return 'agent configuration'
    if (name === MCP_FILE && i === segments.length - 1) return 'agent configuration'
    if (name === '.git') {
      // A `.git` file names the repository git uses: writing one points git at other config.
      if (i === segments.length - 1) return 'git configuration and hooks'
      const rest = segments.slice(i + 1)
      if (rest.some(part => GIT_CODE_DIRS.has(part))) return 'git configuration and hooks'
      if (GIT_CONFIG_FILES.has(rest[rest.length - 1]!)) return 'git configuration and hooks'
    }
  }
  return undefined
}

/**
 * Whether the real path `target` is protected: below one of `roots` by the rules above, or at or
 * below one of `extra` (absolute real paths such as dsh's home).
 */
export function protectedTarget(target: string, roots: readonly string[], extra: readonly string[] = []): ProtectedMatch | undefined {
  for (const path of extra) if (isUnderOrAt(target, path)) return { path: target, kind: 'dsh home' }
  for (const root of roots) {
    if (!isUnderOrAt(target, root)) continue
    const rel = relative(root, target)
    if (rel === '') continue
    const kind = protectedSegments(rel.split(sep))
    if (kind !== undefined) return { path: rel, kind }
  }
  return undefined
}

/** What a runner mounts for the protected paths of one writable root. */
export interface ProtectedMounts {
  /** Mounted read-only over themselves. */
  readonly readOnly: readonly string[]
  /**
   * Mounted writable over themselves before the read-only ones inside them: a mount point cannot
   * be renamed or removed, so `mv .git elsewhere && git init` cannot swap in another repository.
   */
  readonly pinned: readonly string[]
  /** Secrets hidden from the command in every confined mode (`./secrets.ts`), mounted after the rest. */
  readonly hidden?: readonly HiddenPath[]
  /**
   * Folders dsh made for this one command and lets it write in every confined mode (a product
   * subagent's private state folder, docs/subagents.md): never a path of the user's.
   */
  readonly writable?: readonly string[]
}

function real(path: string): string | undefined {
  try {
    return realpathSync.native(path)
  } catch {
    return undefined
  }
}

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

function isFolder(path: string): boolean {
  try {
    return lstatSync(path).isDirectory()
  } catch {
    return false
  }
}

/** The git folders a `.git` entry stands for: itself, or the `gitdir:` a `.git` file names, and its common folder. */
function gitFolders(entry: string): string[] {
  let folder: string | undefined
  try {
    const info = lstatSync(entry)
    if (info.isDirectory()) folder = entry
    else if (info.isFile()) {
      const line = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(entry, 'utf8').slice(0, 4096))?.[1]
      if (line !== undefined) folder = isAbsolute(line) ? line : resolve(dirname(entry), line)
    }
  } catch {
    return []
  }
  if (folder === undefined) return []
  const folders = [folder]
  try {
    const common = readFileSync(join(folder, 'commondir'), 'utf8').trim()
    if (common !== '') folders.push(isAbsolute(common) ? common : resolve(folder, common))
  } catch {
    // No common folder: an ordinary repository.
  }
  return folders
}

/** The names that make a folder's protected paths worth a look (`./protected-scan.ts`). */
const PROTECTED_NAMES: ReadonlySet<string> = new Set([...AGENT_CONFIG, MCP_FILE, '.git'])

/** A scan of the folders holding protected names, with its cache (one per sandbox service). */
export function protectedScan(limits?: ScanLimits): ProtectedScan {
  return new ProtectedScan(PROTECTED_NAMES, limits)
}

/**
 * The protected paths that exist now in writable root `root` (a real path), as real paths inside
 * it: those of every folder the bounded scan finds holding a protected name (`./protected-scan.ts`),
 * the top and the folders below it alike, and their repositories' git folders; plus `extra` paths
 * that lie inside it. A folder below the top that holds one is pinned with the folders between it
 * and the top, so neither it nor a folder above it can be renamed away and replaced by a planted
 * one. Paths outside the root are read-only already. Computed for every confined command, so a
 * `.git` or `.claude` made by one command is protected from the next.
 */
export function protectedMounts(root: string, extra: readonly string[] = [], scan: ProtectedScan = protectedScan()): ProtectedMounts {
  const readOnly = new Set<string>()
  const pinned = new Set<string>()
  const inside = (path: string | undefined): path is string => path !== undefined && path !== root && isUnderOrAt(path, root)
  const extraInside = extra.map(real).filter(inside)
  // An extra path is read-only whole: nothing in it needs a look.
  const { folders } = scan.scan(root, folder => extraInside.some(path => isUnderOrAt(folder, path)))
  for (const folder of folders) {
    for (let at = folder; inside(at); at = dirname(at)) pinned.add(at)
    folderMounts(folder, inside, readOnly, pinned)
  }
  for (const path of extraInside) readOnly.add(path)
  return { readOnly: [...readOnly].sort(), pinned: [...pinned].sort() }
}

/** The protected paths of one folder: its agent configuration, its `.git` and the git folders it names. */
function folderMounts(folder: string, inside: (path: string | undefined) => path is string, readOnly: Set<string>, pinned: Set<string>): void {
  for (const name of [...AGENT_CONFIG, MCP_FILE]) {
    const path = real(join(folder, name))
    if (inside(path)) readOnly.add(path)
  }
  const git = join(folder, '.git')
  if (!exists(git)) return
  const entry = real(git)
  // A `.git` folder stays writable (git writes objects and refs in it), pinned so it cannot be
  // renamed away; a `.git` file names the repository git uses, and git itself never rewrites it.
  if (inside(entry)) (isFolder(entry) ? pinned : readOnly).add(entry)
  for (const gitFolder of gitFolders(git)) {
    const base = real(gitFolder)
    if (base === undefined) continue
    if (inside(base) && base !== entry) pinned.add(base)
    for (const name of [...GIT_CONFIG_FILES, ...GIT_CODE_DIRS]) {
      const path = real(join(base, name))
      if (inside(path)) readOnly.add(path)
    }
  }
}

/** A stable key of a mount set (shell hosts are kept per set). */
export function mountsKey(mounts: ProtectedMounts): string {
  return `${mounts.pinned.join('\0')}\u0001${mounts.readOnly.join('\0')}${mounts.hidden === undefined || mounts.hidden.length === 0 ? '' : `\u0001${hiddenKey(mounts.hidden)}`}`
}
