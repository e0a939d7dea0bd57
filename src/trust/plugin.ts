/**
 * Project trust as one step (docs/security.md, "Project trust"). A project folder can bring files
 * that run code on the user's machine: hook files (`.claude/settings.json`,
 * `.claude/settings.local.json`, `.codex/hooks.json`) and `.mcp.json` servers. None of them runs
 * until the user trusts the folder; trusting records the folder in
 * `$DSH_HOME/trusted-projects.json` (hooks) and pins `.mcp.json` by its SHA-256 in settings (MCP;
 * a changed file asks again).
 *
 * The same functions serve `dsh trust`, the `/trust` command (this plugin, every surface) and the
 * terminal app's question at start.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Context } from 'cordis'
import type { CommandOutcome } from '../commands/api.js'
import { readSettings, writeSettings, type Settings } from '../config/home.js'
import type { McpServerStatus, McpService } from '../mcp/api.js'
import { PROJECT_FILE, pinProjectServers, projectFilePinned, unpinProjectServers, type SettingsStore } from '../mcp/plugin.js'
import { pinnedAsIs, PROJECT_HOOK_FILES, readTrustList, USER_HOOK_FILES, trustedBy, trustProject, untrustProject } from './index.js'
import '../commands/api.js'
import '../mcp/api.js'

/** What a project folder would run, and what of it is trusted. */
export interface ProjectTrustStatus {
  readonly folder: string
  /** The trusted-projects entry that covers the folder (itself or an ancestor). */
  readonly trustedBy?: string
  /**
   * Project hook files that hold hooks: path relative to the folder, the events they hook, and
   * `changed` when the folder is trusted but the file is new or changed since (it waits for trust).
   */
  readonly hookFiles: readonly { readonly path: string; readonly events: readonly string[]; readonly changed?: true }[]
  /** The folder's `.mcp.json`: its servers (name and what runs) and whether it is pinned as it is now. */
  readonly mcp?: { readonly servers: readonly { readonly name: string; readonly runs: string }[]; readonly pinned: boolean }
  /** The trust list cannot be read (so it trusts nothing): why. */
  readonly problem?: string
  /** Skills in the folder's `.claude/skills` (Claude Code's; they count once the folder is trusted), when there are any. */
  readonly claudeSkills?: number
}

/** Parsed JSON, or undefined when the text is not JSON (or the file cannot be read). */
function parseJson(text: string | (() => string)): unknown {
  try {
    return JSON.parse(typeof text === 'string' ? text : text())
  } catch {
    return undefined
  }
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
}

/** What `command args` or `url` a server entry runs, for the user to judge (cut at 120 characters). */
function serverRuns(entry: unknown): string {
  const server = record(entry) ?? {}
  const runs = typeof server.command === 'string'
    ? [server.command, ...Array.isArray(server.args) ? server.args.filter((arg): arg is string => typeof arg === 'string') : []].join(' ')
    : typeof server.url === 'string' ? server.url : '(no command)'
  return runs.length > 120 ? `${runs.slice(0, 119)}…` : runs
}

/**
 * `userHome`: the user's home folder, whose `.claude/settings.json` and `.codex/hooks.json` are the
 * user's own files (loaded without trust), not a project's, when dsh starts there.
 */
export function projectTrustStatus(folder: string, home: string, settings: Settings = readSettings(home), userHome = homedir()): ProjectTrustStatus {
  const root = resolve(folder)
  const hookFiles: { path: string; events: string[]; changed?: true }[] = []
  const own = new Set(USER_HOOK_FILES.map(path => join(resolve(userHome), path)))
  const list = readTrustList(home)
  const { projects, problem } = list
  const by = trustedBy(root, projects)
  for (const file of PROJECT_HOOK_FILES) {
    const path = join(root, file.path)
    if (own.has(path) || !existsSync(path)) continue
    let bytes: Buffer
    try {
      bytes = readFileSync(path)
    } catch {
      continue
    }
    const json = parseJson(bytes.toString('utf8'))
    const hooks = record(record(json)?.hooks)
    const changed = by !== undefined && !pinnedAsIs(list, path, bytes) ? { changed: true as const } : {}
    if (json === undefined) hookFiles.push({ path: file.path, events: ['(not valid JSON)'], ...changed })
    else if (hooks !== undefined && Object.keys(hooks).length > 0) hookFiles.push({ path: file.path, events: Object.keys(hooks), ...changed })
  }
  let mcp: ProjectTrustStatus['mcp']
  const mcpPath = join(root, PROJECT_FILE)
  if (existsSync(mcpPath)) {
    const text = readFileSync(mcpPath, 'utf8')
    const servers = record(record(parseJson(text))?.mcpServers) ?? {}
    mcp = { servers: Object.entries(servers).map(([name, entry]) => ({ name, runs: serverRuns(entry) })), pinned: projectFilePinned(settings, root, text) }
  }
  // Started in the home folder, ~/.claude/skills is the user's own, not the project's.
  const skillsDir = join(root, '.claude', 'skills')
  const claudeSkills = skillsDir === join(resolve(userHome), '.claude', 'skills') ? 0 : skillEntries(skillsDir)
  return { folder: root, ...by === undefined ? {} : { trustedBy: by }, hookFiles, ...mcp === undefined ? {} : { mcp }, ...problem === undefined ? {} : { problem }, ...claudeSkills > 0 ? { claudeSkills } : {} }
}

function skillEntries(dir: string): number {
  try {
    return readdirSync(dir).filter(name => !name.startsWith('.')).length
  } catch {
    return 0
  }
}

/** The line about the folder's `.claude/skills`, when it has any. */
function skillsLine(status: ProjectTrustStatus): string | undefined {
  if (status.claudeSkills === undefined) return undefined
  const count = `${status.claudeSkills} skill${status.claudeSkills === 1 ? '' : 's'}`
  return status.trustedBy === undefined ? `Its .claude/skills (${count}) count once the folder is trusted.` : `Its .claude/skills (${count}) are in use.`
}

/** True when the folder brings code that would not run now: hooks of an untrusted folder, or unpinned servers. */
export function needsTrust(status: ProjectTrustStatus): boolean {
  return (status.hookFiles.length > 0 && (status.trustedBy === undefined || status.hookFiles.some(file => file.changed === true))) || (status.mcp !== undefined && status.mcp.servers.length > 0 && !status.mcp.pinned)
}

/** The lines that say what the folder runs: one per hook file and per server. */
export function describeProjectCode(status: ProjectTrustStatus): string[] {
  const lines: string[] = []
  for (const file of status.hookFiles) lines.push(`hooks   ${file.path} (${file.events.join(', ')})${file.changed === true ? ': new or changed since the folder was trusted' : ''}`)
  for (const server of status.mcp?.servers ?? []) lines.push(`MCP     ${server.name}: ${server.runs}`)
  return lines
}

/**
 * For a surface where nobody is asked at start (an editor over ACP): what the folder would run and
 * how to let it, or undefined when nothing waits for trust.
 */
export function trustNotice(status: ProjectTrustStatus): string | undefined {
  if (!needsTrust(status)) return undefined
  return [
    `${status.folder} brings code that runs with your user's rights once the folder is trusted; until then none of it runs:`,
    ...describeProjectCode(status).map(line => `  ${line}`),
    ...status.problem === undefined ? [] : [`Warning: ${status.problem}.`],
    'Type /trust on to trust the folder and start it (/trust shows what it runs).',
  ].join('\n')
}

/** `/trust` and `dsh trust` without an argument: the folder, whether it is trusted, what it runs. */
export function formatTrustStatus(status: ProjectTrustStatus, how: { readonly on: string; readonly off: string } = { on: '`/trust on` (or `dsh trust on` in the folder)', off: '`/trust off` (or `dsh trust off`)' }): string {
  const code = describeProjectCode(status)
  const lines: string[] = status.problem === undefined ? [] : [`Warning: ${status.problem}.`]
  if (status.trustedBy === undefined) lines.push(`${status.folder} is not trusted.`)
  else if (status.trustedBy === status.folder) lines.push(`${status.folder} is trusted.`)
  else lines.push(`${status.folder} is trusted (through ${status.trustedBy}).`)
  const skills = skillsLine(status)
  if (code.length === 0) {
    lines.push('It has no project files that run code (hooks, .mcp.json).')
    if (skills !== undefined) lines.push(skills, ...status.trustedBy === undefined ? [`Trust it with ${how.on}.`] : [])
    return lines.join('\n')
  }
  lines.push(`Project files that run code, with your user's rights${needsTrust(status) ? ', once trusted' : ''}:`, ...code.map(line => `  ${line}`))
  if (status.trustedBy !== undefined && status.hookFiles.some(file => file.changed === true)) {
    lines.push('A hook file is new or changed since the folder was trusted: its hooks wait for trust again.')
  }
  if (status.mcp !== undefined && status.mcp.servers.length > 0 && !status.mcp.pinned && status.trustedBy !== undefined) {
    lines.push(`${PROJECT_FILE} is new or changed since the folder was trusted: its servers wait for trust again.`)
  }
  if (skills !== undefined) lines.push(skills)
  lines.push(needsTrust(status) ? `Trust it with ${how.on}.` : `Revoke with ${how.off}.`)
  return lines.join('\n')
}

export function settingsStore(home: string): SettingsStore {
  return { read: () => readSettings(home), write: (settings: Settings) => writeSettings(home, settings) }
}

/**
 * Trusts `folder`: records it for hooks and pins its `.mcp.json`. With a live MCP service whose
 * project is this folder, its servers start now (and this waits for their first connect); hook
 * files load before the next step of every agent.
 */
export async function trustFolder(folder: string, home: string, mcp?: Pick<McpService, 'trustProject'>): Promise<ProjectTrustStatus> {
  trustProject(home, folder)
  if (existsSync(join(resolve(folder), PROJECT_FILE))) {
    if (mcp !== undefined) await mcp.trustProject()
    else pinProjectServers(settingsStore(home), folder)
  }
  return projectTrustStatus(folder, home)
}

/** Revokes `folder`: its own entry and its pin (an ancestor's entry still covers it). Takes effect at the next start. */
export function revokeFolder(folder: string, home: string): { readonly folder: boolean; readonly mcp: boolean } {
  return { folder: untrustProject(home, folder), mcp: unpinProjectServers(settingsStore(home), folder) }
}

/**
 * What trusting did. `servers`, from a live MCP service, adds each project server's state (a
 * server that failed to start says why).
 */
export function formatTrusted(status: ProjectTrustStatus, servers?: readonly McpServerStatus[]): string {
  const code = describeProjectCode(status)
  if (code.length === 0) return `Trusted ${status.folder}. It has no project files that run code yet.`
  const lines = [`Trusted ${status.folder}:`]
  for (const file of status.hookFiles) lines.push(`  hooks   ${file.path} (${file.events.join(', ')}): from the next step`)
  for (const server of status.mcp?.servers ?? []) {
    const live = servers?.find(candidate => candidate.name === server.name && candidate.source === 'project')
    const state = live === undefined ? 'from the next start'
      : live.state === 'connected' ? `connected, ${live.tools.length} tool${live.tools.length === 1 ? '' : 's'}`
      : `${live.state}${live.error !== undefined ? `: ${live.error}` : ''}`
    lines.push(`  MCP     ${server.name}: ${state}`)
  }
  return lines.join('\n')
}

export function formatRevoked(folder: string, outcome: { folder: boolean; mcp: boolean }, status: ProjectTrustStatus): string {
  if (!outcome.folder && !outcome.mcp) {
    return status.trustedBy !== undefined
      ? `${resolve(folder)} is trusted through ${status.trustedBy}; revoke that folder instead.`
      : `${resolve(folder)} was not trusted.`
  }
  const still = status.trustedBy !== undefined ? ` It is still trusted through ${status.trustedBy}.` : ''
  return `Revoked trust in ${resolve(folder)}.${still} What already runs stops at the next start.`
}

/** The grammar `/trust` and `dsh trust` share. */
export type TrustAction = 'status' | 'on' | 'off'

export function parseTrustAction(args: string): TrustAction | Error {
  const word = args.trim()
  if (word === '' || word === 'status') return 'status'
  if (word === 'on' || word === 'off') return word
  return new Error(`unknown argument "${word}": use /trust, /trust on or /trust off`)
}

export interface ProjectTrustConfig {
  /** The folder dsh was started in: where hooks and `.mcp.json` were looked for. */
  readonly cwd?: string
  /** `$DSH_HOME`. */
  readonly dshHome?: string
}

/** The `project-trust` row: the `/trust [on|off]` command. */
export const ProjectTrustPlugin = {
  name: 'project-trust',
  apply(ctx: Context, config: ProjectTrustConfig = {}) {
    const folder = resolve(config.cwd ?? process.cwd())
    const home = config.dshHome
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'trust',
        description: 'Whether this folder is trusted to run its hooks and .mcp.json servers; on trusts it, off revokes',
        argumentHint: '[on|off]',
        async run({ args }): Promise<CommandOutcome> {
          if (home === undefined) return { kind: 'error', text: '/trust needs a dsh home folder.' }
          const action = parseTrustAction(args)
          if (action instanceof Error) return { kind: 'error', text: action.message }
          if (action === 'status') return { kind: 'success', text: formatTrustStatus(projectTrustStatus(folder, home)) }
          if (action === 'off') {
            const outcome = revokeFolder(folder, home)
            return { kind: 'success', text: formatRevoked(folder, outcome, projectTrustStatus(folder, home)) }
          }
          const mcp = ctx.get('mcp') as McpService | undefined
          const status = await trustFolder(folder, home, mcp)
          return { kind: 'success', text: formatTrusted(status, mcp?.servers()) }
        },
      })
    })
  },
}
