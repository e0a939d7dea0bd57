/**
 * The trust step for project files that run code (project hooks; the same list serves any
 * other project-provided command source). A project folder is trusted when it, or an ancestor,
 * is listed in `$DSH_HOME/trusted-projects.json` (`{"projects": ["/abs/path", ...]}`) or in
 * the caller's explicit list. Nothing in a project can trust itself.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve, sep } from 'node:path'

export const TRUST_FILE = 'trusted-projects.json'

export function trustFile(home: string): string {
  return join(home, TRUST_FILE)
}

/** The trusted folders (absolute) and, when the file is malformed (it then trusts nothing), why. */
export function readTrustList(home: string): { projects: string[]; problem?: string } {
  const file = trustFile(home)
  if (!existsSync(file)) return { projects: [] }
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return { projects: [], problem: `${file} is not valid JSON: nothing in it is trusted until it is fixed` }
  }
  const projects = (json as { projects?: unknown } | null)?.projects
  if (!Array.isArray(projects)) return { projects: [], problem: `${file}: "projects" must be a list of folders: nothing in it is trusted until it is fixed` }
  return { projects: projects.filter((item): item is string => typeof item === 'string').map(path => resolve(path)) }
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
function listForChange(home: string): string[] {
  const { projects, problem } = readTrustList(home)
  if (problem !== undefined) throw new Error(`${problem}; fix or remove it first`)
  return projects
}

/** Records `dir` as trusted (idempotent). */
export function trustProject(home: string, dir: string): void {
  const projects = listForChange(home)
  const target = resolve(dir)
  if (projects.includes(target)) return
  const file = trustFile(home)
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const temp = `${file}.${process.pid}.tmp`
  writeFileSync(temp, `${JSON.stringify({ projects: [...projects, target] }, null, 2)}\n`, { mode: 0o600 })
  renameSync(temp, file)
}

/** Removes `dir` from the list (exact entry only; an ancestor's entry still covers it). True when it was listed. */
export function untrustProject(home: string, dir: string): boolean {
  const projects = listForChange(home)
  const target = resolve(dir)
  if (!projects.includes(target)) return false
  const file = trustFile(home)
  const temp = `${file}.${process.pid}.tmp`
  writeFileSync(temp, `${JSON.stringify({ projects: projects.filter(project => project !== target) }, null, 2)}\n`, { mode: 0o600 })
  renameSync(temp, file)
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
