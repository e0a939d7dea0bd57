/**
 * Skill discovery (SK-3): `SKILL.md` bundles in ranked roots, YAML frontmatter, duplicate names
 * resolved by root rank. Invalid frontmatter drops that skill (with a warning), never the rest.
 */
import { existsSync, readdirSync, readFileSync, statSync, type BigIntStats } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { loadYaml } from '../config/yaml.js'

export interface Skill {
  readonly name: string
  readonly description: string
  readonly whenToUse?: string
  /** Absolute folder the skill's relative paths resolve against. */
  readonly dir: string
  /** The markdown file (re-read at every load). */
  readonly file: string
  /** `disable-model-invocation: true` hides it from the catalog and the `skill` tool. */
  readonly modelInvocable: boolean
  /** `user-invocable: false` removes its `/name` command. */
  readonly userInvocable: boolean
  readonly rank: number
}

export interface SkillRoot {
  readonly dir: string
  readonly rank: number
  /** Entry names to skip (`.system` under `$DSH_HOME/skills`). */
  readonly skip?: readonly string[]
}

export interface SkillRootsOptions {
  readonly cwd: string
  readonly dshHome?: string
  /** Folder holding the user's `skills` shared across agents (`~/.agents`). */
  readonly agentsHome?: string
  /** Claude Code's home (`~/.claude`): its `skills` are the user's too (#44.3). */
  readonly claudeHome?: string
  readonly customSkillDirs?: readonly string[]
  readonly bundledSkillDir?: string
  /**
   * Whether a project folder is trusted (`dsh trust`): a project's `.claude/skills` is Claude
   * Code content of the project and counts only in a trusted folder, as its hook files (#44.3).
   * Absent: every root counts (an embedding without the trust step).
   */
  readonly projectTrusted?: (dir: string) => boolean
}

const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/** Nearest ancestor holding `.git`, else `cwd`. */
export function projectRoot(cwd: string): string {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir
    if (dirname(dir) === dir) return resolve(cwd)
  }
}

/**
 * Whether the project's `.claude/skills` counts: in a trusted folder, or when there is no trust
 * step. Started in the home folder, `~/.claude/skills` is the user's root (rank 550), not a project's.
 */
export function claudeProjectSkills(root: string, options: Pick<SkillRootsOptions, 'claudeHome' | 'projectTrusted'>): boolean {
  if (options.claudeHome !== undefined && resolve(options.claudeHome) === join(root, '.claude')) return false
  return options.projectTrusted?.(root) ?? true
}

/** The discovery roots in rank order (lower wins a duplicate name). */
export function skillRoots(options: SkillRootsOptions): SkillRoot[] {
  const root = projectRoot(options.cwd)
  const roots: SkillRoot[] = [
    { dir: join(root, '.dsh', 'skills'), rank: 100 },
    { dir: join(root, '.agents', 'skills'), rank: 200 },
    // A Claude Code project's skills, as it keeps them (in a trusted folder).
    ...(claudeProjectSkills(root, options) ? [{ dir: join(root, '.claude', 'skills'), rank: 250 }] : []),
    ...(options.customSkillDirs ?? []).map(dir => ({ dir: resolve(options.cwd, dir), rank: 300 })),
  ]
  if (options.dshHome !== undefined) roots.push({ dir: join(options.dshHome, 'skills'), rank: 400, skip: ['.system'] })
  if (options.agentsHome !== undefined) roots.push({ dir: join(options.agentsHome, 'skills'), rank: 500 })
  if (options.claudeHome !== undefined) roots.push({ dir: join(options.claudeHome, 'skills'), rank: 550 })
  if (options.bundledSkillDir !== undefined) roots.push({ dir: resolve(options.bundledSkillDir), rank: 600 })
  return roots
}

const TRUE = new Set(['true', 'yes', 'on', '1'])
const FALSE = new Set(['false', 'no', 'off', '0'])

function flag(value: unknown, key: string, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback
  if (typeof value === 'boolean') return value
  const text = String(value).trim().toLowerCase()
  if (TRUE.has(text)) return true
  if (FALSE.has(text)) return false
  throw new Error(`${key} must be true or false, got ${JSON.stringify(value)}`)
}

/** Splits `---\nyaml\n---\nbody`; throws when there is no frontmatter. */
export function splitFrontmatter(text: string): { meta: Record<string, unknown>; body: string } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text.replace(/^\uFEFF/, ''))
  if (match === null) throw new Error('no YAML frontmatter (--- ... ---) at the top')
  const meta = loadYaml().parse(match[1]!) as unknown
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) throw new Error('the frontmatter must be a YAML mapping')
  return { meta: meta as Record<string, unknown>, body: text.replace(/^\uFEFF/, '').slice(match[0].length) }
}

/** Parses one skill file; throws naming the problem. */
export function parseSkill(file: string, text: string, rank: number): Skill {
  const { meta } = splitFrontmatter(text)
  const name = meta.name
  if (typeof name !== 'string' || !NAME.test(name)) throw new Error(`name must be kebab-case (${NAME}), got ${JSON.stringify(name)}`)
  if (typeof meta.description !== 'string' || meta.description.trim() === '') throw new Error('description is required')
  if (meta.whenToUse !== undefined && typeof meta.whenToUse !== 'string') throw new Error('whenToUse must be a string')
  return {
    name,
    description: meta.description.trim(),
    ...(typeof meta.whenToUse === 'string' ? { whenToUse: meta.whenToUse } : {}),
    dir: dirname(file),
    file,
    modelInvocable: !flag(meta['disable-model-invocation'], 'disable-model-invocation', false),
    userInvocable: flag(meta['user-invocable'], 'user-invocable', true),
    rank,
  }
}

/** The body of a skill file now (SK-2: read at every load). */
export function readSkillBody(skill: Skill): string {
  return splitFrontmatter(readFileSync(skill.file, 'utf8')).body.trim()
}

/**
 * What discovery read from disk, kept while a `stat` of the same path says it cannot have
 * changed: a folder listing while the folder's inode, mtime and ctime stay the same (adding,
 * removing or renaming an entry changes the folder's mtime), a parsed skill file while its
 * inode, size, mtime and ctime stay the same. Anything changed within the last `RACY_MS` is
 * never kept (timestamps are coarse: two changes inside one clock tick can leave the same
 * mtime), so the result is always what a fresh read would give. Stats of missing paths do not
 * throw, so a step with no skill folders costs a few `stat`s instead of throwing `readdir`s.
 */
export class SkillDiscoveryCache {
  /** @param now the clock the racy window is judged by (tests move it forward). */
  constructor(readonly now: () => number = Date.now) {}
  readonly folders = new Map<string, { readonly signature: string; readonly entries: readonly string[] }>()
  readonly entries = new Map<string, { readonly signature: string; readonly file: string | undefined }>()
  readonly files = new Map<string, { readonly signature: string; readonly parsed: { readonly skill: Skill } | { readonly error: string } }>()
}

/** Changes within this long are never cached (coarse file-system timestamps, see above). */
const RACY_MS = 2_000

/** A stat's identity and change times; undefined when the path is missing or unreadable. */
function statOf(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true, throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

function signatureOf(info: BigIntStats, now: number): string | undefined {
  // Recent changes are not trusted (see SkillDiscoveryCache).
  const newest = info.mtimeMs > info.ctimeMs ? info.mtimeMs : info.ctimeMs
  if (Number(newest) > now - RACY_MS) return undefined
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`
}

/** The sorted entry names of `dir`, or undefined when it cannot be listed. */
function listFolder(dir: string, cache: SkillDiscoveryCache | undefined): readonly string[] | undefined {
  const read = (): string[] | undefined => {
    try {
      return readdirSync(dir).sort()
    } catch {
      return undefined
    }
  }
  if (cache === undefined) return read()
  const info = statOf(dir)
  if (info === undefined) return undefined
  const signature = signatureOf(info, cache.now())
  const known = cache.folders.get(dir)
  if (signature !== undefined && known?.signature === signature) return known.entries
  const entries = read()
  if (entries === undefined) {
    cache.folders.delete(dir)
    return undefined
  }
  if (signature !== undefined) cache.folders.set(dir, { signature, entries })
  else cache.folders.delete(dir)
  return entries
}

/** The skill file an entry of a root stands for: `<dir>/SKILL.md`, or a flat `*.md` file. */
function entryFile(path: string, entry: string, cache: SkillDiscoveryCache | undefined): string | undefined {
  const info = statOf(path)
  if (info === undefined) return undefined
  const fileOf = (): string | undefined => info.isDirectory() ? (existsSync(join(path, 'SKILL.md')) ? join(path, 'SKILL.md') : undefined)
    : info.isFile() && entry.endsWith('.md') ? path : undefined
  if (cache === undefined) return fileOf()
  const signature = signatureOf(info, cache.now())
  const known = cache.entries.get(path)
  if (signature !== undefined && known?.signature === signature) return known.file
  const file = fileOf()
  if (signature !== undefined) cache.entries.set(path, { signature, file })
  else cache.entries.delete(path)
  return file
}

function parseFile(file: string, rank: number, cache: SkillDiscoveryCache | undefined): { readonly skill: Skill } | { readonly error: string } {
  const read = (): { readonly skill: Skill } | { readonly error: string } => {
    try {
      return { skill: parseSkill(file, readFileSync(file, 'utf8'), rank) }
    } catch (error) {
      return { error: error instanceof Error ? error.message : String(error) }
    }
  }
  if (cache === undefined) return read()
  const info = statOf(file)
  const signature = info === undefined ? undefined : signatureOf(info, cache.now())
  const known = cache.files.get(file)
  if (signature !== undefined && known?.signature === signature && (!('skill' in known.parsed) || known.parsed.skill.rank === rank)) return known.parsed
  const parsed = read()
  if (signature !== undefined) cache.files.set(file, { signature, parsed })
  else cache.files.delete(file)
  return parsed
}

/**
 * Every valid skill under `roots`, one per name (lowest rank wins), sorted by name. With a
 * `cache`, folders and files unchanged since the last call are not read again (same result).
 */
export function discoverSkills(roots: readonly SkillRoot[], warn: (message: string) => void = () => {}, cache?: SkillDiscoveryCache): Skill[] {
  const byName = new Map<string, Skill>()
  for (const root of [...roots].sort((a, b) => a.rank - b.rank)) {
    const entries = listFolder(root.dir, cache)
    if (entries === undefined) continue
    for (const entry of entries) {
      if (root.skip?.includes(entry)) continue
      const file = entryFile(join(root.dir, entry), entry, cache)
      if (file === undefined) continue
      const parsed = parseFile(file, root.rank, cache)
      if ('error' in parsed) {
        warn(`skill ${file} is ignored: ${parsed.error}`)
        continue
      }
      if (!byName.has(parsed.skill.name)) byName.set(parsed.skill.name, parsed.skill)
    }
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}
