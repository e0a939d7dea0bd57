/**
 * Skill discovery (SK-3): `SKILL.md` bundles in ranked roots, YAML frontmatter, duplicate names
 * resolved by root rank. Invalid frontmatter drops that skill (with a warning), never the rest.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
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
  readonly customSkillDirs?: readonly string[]
  readonly bundledSkillDir?: string
}

const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/** Nearest ancestor holding `.git`, else `cwd`. */
export function projectRoot(cwd: string): string {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir
    if (dirname(dir) === dir) return resolve(cwd)
  }
}

/** The discovery roots in rank order (lower wins a duplicate name). */
export function skillRoots(options: SkillRootsOptions): SkillRoot[] {
  const root = projectRoot(options.cwd)
  const roots: SkillRoot[] = [
    { dir: join(root, '.dsh', 'skills'), rank: 100 },
    { dir: join(root, '.agents', 'skills'), rank: 200 },
    ...(options.customSkillDirs ?? []).map(dir => ({ dir: resolve(options.cwd, dir), rank: 300 })),
  ]
  if (options.dshHome !== undefined) roots.push({ dir: join(options.dshHome, 'skills'), rank: 400, skip: ['.system'] })
  if (options.agentsHome !== undefined) roots.push({ dir: join(options.agentsHome, 'skills'), rank: 500 })
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

/** Every valid skill under `roots`, one per name (lowest rank wins), sorted by name. */
export function discoverSkills(roots: readonly SkillRoot[], warn: (message: string) => void = () => {}): Skill[] {
  const byName = new Map<string, Skill>()
  for (const root of [...roots].sort((a, b) => a.rank - b.rank)) {
    let entries: string[]
    try {
      entries = readdirSync(root.dir).sort()
    } catch {
      continue
    }
    for (const entry of entries) {
      if (root.skip?.includes(entry)) continue
      const path = join(root.dir, entry)
      let file: string | undefined
      try {
        const stat = statSync(path)
        if (stat.isDirectory()) file = existsSync(join(path, 'SKILL.md')) ? join(path, 'SKILL.md') : undefined
        else if (stat.isFile() && entry.endsWith('.md')) file = path
      } catch {
        continue
      }
      if (file === undefined) continue
      let skill: Skill
      try {
        skill = parseSkill(file, readFileSync(file, 'utf8'), root.rank)
      } catch (error) {
        warn(`skill ${file} is ignored: ${error instanceof Error ? error.message : String(error)}`)
        continue
      }
      if (!byName.has(skill.name)) byName.set(skill.name, skill)
    }
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}
