/**
 * What dsh does not take from a Claude Code setup, said once at start (docs/skills.md, "Claude
 * Code setups"; #44.3). dsh reads a Claude Code setup as it is: skills (`.claude/skills`,
 * `~/.claude/skills`), `CLAUDE.md` (the project's and `~/.claude/CLAUDE.md`) and hook files.
 * Where it differs on purpose the user is told rather than left to find out: project skills that
 * wait for the folder's trust, and the parts it does not read. Only `stat`s, plus a read of the
 * `CLAUDE.md` files that exist (for `@` imports).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { projectRoot } from './discover.js'

export interface ClaudeSetupOptions {
  readonly cwd: string
  /** `~/.claude`. */
  readonly claudeHome?: string
  readonly projectTrusted?: (dir: string) => boolean
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir).filter(name => !name.startsWith('.'))
  } catch {
    return []
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** The folders from the project root down to `cwd`. */
function chain(cwd: string): string[] {
  const root = projectRoot(cwd)
  const out: string[] = []
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    out.unshift(dir)
    if (dir === root || dirname(dir) === dir) return out
  }
}

const IMPORT = /^@[^\s@]+/m

/** The one notice line, or undefined when the setup is taken as it is. */
export function claudeSetupNotice(options: ClaudeSetupOptions): string | undefined {
  const root = projectRoot(options.cwd)
  const projectClaude = join(root, '.claude')
  const home = options.claudeHome !== undefined ? resolve(options.claudeHome) : undefined
  const parts: string[] = []
  if (home !== projectClaude && options.projectTrusted?.(root) === false) {
    const waiting = entries(join(projectClaude, 'skills')).length
    if (waiting > 0) parts.push(`${waiting} project skill${waiting === 1 ? '' : 's'} in .claude/skills wait${waiting === 1 ? 's' : ''} for this folder to be trusted (dsh trust on, or /trust on)`)
  }
  const where = (name: string) => [projectClaude, ...(home !== undefined && home !== projectClaude ? [home] : [])]
    .filter(dir => entries(join(dir, name)).length > 0)
    .map(dir => dir === home ? `~/.claude/${name}` : `.claude/${name}`)
  const commands = where('commands')
  if (commands.length > 0) parts.push(`${commands.join(' and ')} (custom commands) ${commands.length === 1 ? 'is' : 'are'} not read: a skill (.claude/skills/NAME/SKILL.md) is a /NAME command here`)
  const agents = where('agents')
  if (agents.length > 0) parts.push(`${agents.join(' and ')} (subagent definitions) ${agents.length === 1 ? 'is' : 'are'} not read`)
  const folders = chain(options.cwd)
  if (folders.some(dir => isFile(join(dir, 'CLAUDE.local.md')))) parts.push('CLAUDE.local.md is not read')
  if (folders.some(dir => isFile(join(dir, 'AGENTS.md')) && isFile(join(dir, 'CLAUDE.md')))) parts.push('a CLAUDE.md beside an AGENTS.md is not read (AGENTS.md is)')
  const claudeFiles = [...(home !== undefined ? [join(home, 'CLAUDE.md')] : []), ...folders.filter(dir => !isFile(join(dir, 'AGENTS.md'))).map(dir => join(dir, 'CLAUDE.md'))]
  if (claudeFiles.some(file => isFile(file) && IMPORT.test(readFileSync(file, 'utf8')))) parts.push('@ imports in CLAUDE.md are not followed (the file is shown as written)')
  if (parts.length === 0) return undefined
  return `dsh: from this Claude Code setup, ${parts.join('; ')} (docs/skills.md, "Claude Code setups")`
}
