/**
 * Skills (docs/skills.md, SK-1..SK-4): `SKILL.md` instruction bundles found on disk, advertised
 * to the model as a catalog message, loaded on demand with the `skill` tool, and invocable by
 * the user as `/name` through the command registry. Skill folders are looked at on every step and
 * every load, so an edit applies at once (no restart, no watcher to leak); what did not change
 * since the last look (by `stat`) is not read again (`SkillDiscoveryCache`).
 */
import { homedir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { Agent, PreStepDecision, PreStepPayload } from '../agent/api.js'
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import type { Tool } from '../tools/api.js'
import type { CommandsService, SlashCommand } from '../commands/api.js'
import { claudeSetupNotice } from './claude-setup.js'
import { discoverSkills, readSkillBody, SkillDiscoveryCache, skillRoots, type Skill, type SkillRootsOptions } from './discover.js'
import type { ToolsService } from '../tools/api.js'
import { serviceLookup, untraced } from '../kernel/index.js'
import '../agent/api.js'
import '../tools/api.js'

const USER_MESSAGE: ReadonlySet<string> = new Set(['user/message'])

export * from './discover.js'

export interface SkillsConfig {
  /** Fallback cwd for agents whose session names none. */
  readonly cwd?: string
  readonly dshHome?: string
  /** `~/.claude` by default: Claude Code's user skills (each `skills/NAME/SKILL.md`). */
  readonly claudeHome?: string
  /** `~/.agents` by default. */
  readonly agentsHome?: string
  readonly customSkillDirs?: readonly string[]
  /** Also `DSH_BUNDLED_SKILL_DIR`. */
  readonly bundledSkillDir?: string
  readonly catalogDescriptionMaxLength?: number
  /** Whether a project folder is trusted: a project's `.claude/skills` counts only then (absent: always). */
  readonly projectTrusted?: (dir: string) => boolean
  /** One line at start naming what dsh does not take from the launch folder's Claude Code setup (default true). */
  readonly setupNotice?: boolean
}

export const SKILL_CATALOG_KIND = 'skill-catalog'

const INTRO = 'A skill is a reusable set of task-specific instructions. The following skills are available in this session:'
const GUIDANCE = [
  'When the user names a skill, or the task plainly matches a skill\'s description, call the `skill` tool with that exact name before acting, load every skill that applies, and then follow its full instructions. The list above holds summaries only: do not act on a skill until it is loaded.',
  'The user can also invoke a skill directly; its <skill_content> block then appears in the conversation. Follow it without loading the same skill again.',
].join('\n')

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

export interface CatalogEntry { readonly name: string; readonly description: string }

/** SK-1: the model-invocable skills, sorted by name, descriptions escaped and capped. */
export function catalogEntries(skills: readonly Skill[], maxLength = 500): CatalogEntry[] {
  return skills.filter(skill => skill.modelInvocable).map(skill => {
    const description = skill.description.length > maxLength ? `${skill.description.slice(0, maxLength)}…` : skill.description
    return { name: skill.name, description }
  })
}

export function renderCatalog(entries: readonly CatalogEntry[]): string {
  const lines = entries.map(entry => `- \`${entry.name}\`: ${escapeXml(entry.description)}`)
  return `<system-reminder>\n${INTRO}\n\n<available_skills>\n${lines.join('\n')}\n</available_skills>\n\n${GUIDANCE}\n</system-reminder>`
}

/** The `<skill_content>` block the `skill` tool returns and `/name` injects. */
export function renderSkillContent(skill: Skill): string {
  return [
    `<skill_content name="${skill.name}">`,
    '<skill_resources>',
    `Base directory for this skill: ${skill.dir}`,
    'Relative paths in these instructions are relative to that directory. Open referenced files only when you need them.',
    '</skill_resources>',
    '',
    '<skill_instructions>',
    readSkillBody(skill),
    '</skill_instructions>',
    '</skill_content>',
  ].join('\n')
}

function catalogMessage(entries: readonly CatalogEntry[]): UserMessage {
  return {
    id: randomUUID(),
    role: 'user',
    content: [{ type: 'text', text: renderCatalog(entries) }],
    source: { kind: SKILL_CATALOG_KIND, form: 'catalog', entries: entries.map(entry => ({ ...entry })) } as unknown as UserMessage['source'],
  }
}

interface SessionCatalog {
  /** Events already scanned for an earlier catalog (resumed logs). */
  scanned: number
  /** JSON of the entries last injected, or undefined when none was. */
  last: string | undefined
}

export class SkillsPlugin {
  static readonly inject = ['tools']

  private readonly catalogs = new WeakMap<Session, SessionCatalog>()
  /** Per agent: the `/name` commands currently registered, keyed by their signature. */
  private readonly commands = new WeakMap<object, { key: string; dispose: () => void }>()
  private readonly maxDescription: number
  private readonly discovery = new SkillDiscoveryCache()
  /** Untraced (docs/kernel.md, "Hot paths"): the plugin injects `tools`, so a new one reloads it. */
  private readonly tools: ToolsService
  private readonly commandsPresent: () => CommandsService | undefined

  constructor(private readonly ctx: Context, private readonly config: SkillsConfig = {}) {
    this.maxDescription = config.catalogDescriptionMaxLength ?? 500
    this.tools = untraced(ctx.tools)
    this.commandsPresent = serviceLookup(ctx, 'commands') as () => CommandsService | undefined
    ctx.effect(() => ctx.tools.register(this.tool()))
    if (config.setupNotice !== false) this.notice()
    ctx.on('agent/pre-step', (payload, next) => this.preStep(payload, next))
    ctx.on('agent/created', (agent) => { this.syncCommands(agent) })
    ctx.on('agent/disposed', (agent) => { this.commands.get(agent.scope)?.dispose(); this.commands.delete(agent.scope) })
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'skills',
        description: 'List the skills available in this session',
        run: ({ agent }) => {
          const skills = this.skills(agent.session.header.cwd)
          if (skills.length === 0) return { kind: 'success', text: 'No skills found.' }
          const lines = skills.map(skill => `${skill.name} — ${skill.description}${skill.modelInvocable ? '' : ' (user only)'}${skill.userInvocable ? '' : ' (model only)'}`)
          return { kind: 'success', text: `Skills:\n${lines.join('\n')}` }
        },
      })
      for (const agent of inner.get('agents')?.list() ?? []) this.syncCommands(agent)
    })
  }

  /** Said once at start: the host's stderr when there is one, else the logger. */
  private notice(): void {
    const line = claudeSetupNotice({
      cwd: this.config.cwd ?? process.cwd(),
      claudeHome: this.config.claudeHome ?? join(homedir(), '.claude'),
      ...(this.config.projectTrusted !== undefined ? { projectTrusted: this.config.projectTrusted } : {}),
    })
    if (line === undefined) return
    const host = this.ctx.get('host') as { stderr?: NodeJS.WritableStream } | undefined
    if (host?.stderr !== undefined) host.stderr.write(`${line}\n`)
    else this.ctx.logger('skills').info(line)
  }

  /** The skills visible from `cwd` now. */
  skills(cwd: string | undefined): Skill[] {
    const options: SkillRootsOptions = {
      cwd: cwd ?? this.config.cwd ?? process.cwd(),
      ...(this.config.dshHome !== undefined ? { dshHome: this.config.dshHome } : {}),
      agentsHome: this.config.agentsHome ?? join(homedir(), '.agents'),
      claudeHome: this.config.claudeHome ?? join(homedir(), '.claude'),
      ...(this.config.customSkillDirs !== undefined ? { customSkillDirs: this.config.customSkillDirs } : {}),
      ...(this.config.projectTrusted !== undefined ? { projectTrusted: this.config.projectTrusted } : {}),
      ...((this.config.bundledSkillDir ?? process.env.DSH_BUNDLED_SKILL_DIR) ? { bundledSkillDir: this.config.bundledSkillDir ?? process.env.DSH_BUNDLED_SKILL_DIR } : {}),
    }
    return discoverSkills(skillRoots(options), message => this.ctx.logger('skills').warn(message), this.discovery)
  }

  private tool(): Tool<{ name: string }> {
    return {
      name: 'skill',
      description: 'Load the full instructions of an available skill (listed in the skills catalog) by its exact name. Call it before acting on a task a skill covers.',
      parameters: {
        type: 'object',
        properties: { name: { type: 'string', description: 'The skill name, exactly as listed.' } },
        required: ['name'],
        additionalProperties: false,
      },
      timeoutMs: 10_000,
      execute: ({ name }, context) => {
        if (!/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(name)) return failure(`invalid skill name "${name}"`, 'INVALID_SKILL_NAME')
        const skill = this.skills(context.cwd).find(candidate => candidate.name === name)
        if (skill === undefined) return failure(`skill "${name}" is unknown or no longer available`, 'SKILL_NOT_FOUND')
        if (!skill.modelInvocable) return failure(`skill "${name}" is not available for model invocation`, 'SKILL_NOT_MODEL_INVOCABLE')
        return { content: [{ type: 'text', text: renderSkillContent(skill) }] }
      },
    }
  }

  /** SK-1, SK-4: a catalog before the first request, and a full replacement when it changes. */
  private async preStep(payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> {
    const decision = await next()
    const skills = this.skills(payload.session.header.cwd)
    this.syncCommands(payload.agent, skills)
    if (decision.kind !== 'enter') return decision
    if (this.tools.get('skill', payload.agent.scope) === undefined) return decision
    const entries = catalogEntries(skills, this.maxDescription)
    const state = this.state(payload.session)
    const key = JSON.stringify(entries)
    if (key === state.last || (state.last === undefined && entries.length === 0)) return decision
    // a first step that enters nothing makes no request; the catalog waits for one that does.
    if (decision.messages.length === 0) return decision
    state.last = key
    return { kind: 'enter', messages: [...decision.messages, catalogMessage(entries)] }
  }

  /** The last catalog this session's log carries (read once per session, then kept current). */
  private state(session: Session): SessionCatalog {
    let state = this.catalogs.get(session)
    if (state === undefined) this.catalogs.set(session, state = { scanned: 0, last: undefined })
    const found = state
    found.scanned = scanEvents(session.events, found.scanned, USER_MESSAGE, (event) => {
      const source = (event.data as UserMessage).source as { kind: string; entries?: unknown }
      if (source.kind === SKILL_CATALOG_KIND && Array.isArray(source.entries)) found.last = JSON.stringify(source.entries)
    })
    return found
  }

  /** One `/name` command per user-invocable skill of the agent's folder, kept in step with the disk. */
  private syncCommands(agent: Agent, skills: readonly Skill[] = this.skills(agent.session.header.cwd)): void {
    if (this.commandsPresent() === undefined) return
    const invocable = skills.filter(skill => skill.userInvocable)
    const key = JSON.stringify(invocable.map(skill => [skill.name, skill.description, skill.file]))
    const current = this.commands.get(agent.scope)
    if (current?.key === key) return
    // Traced: registrations made through it are effects of this plugin's fiber (K-6).
    const commands = this.ctx.get('commands') as CommandsService | undefined
    if (commands === undefined) return
    current?.dispose()
    const disposers = invocable
      // Commands of other plugins win a name clash (`/model` stays the model command).
      .filter(skill => commands.get(skill.name, agent.scope) === undefined)
      .map(skill => commands.register(skillCommand(skill), agent.scope))
    this.commands.set(agent.scope, { key, dispose: () => { for (const dispose of disposers) dispose() } })
  }
}

function skillCommand(skill: Skill): SlashCommand {
  return {
    name: skill.name,
    description: skill.description,
    argumentHint: '[request]',
    run: ({ args }) => {
      const content = renderSkillContent(skill)
      const request = args.trim()
      return { kind: 'prompt', input: request === '' ? content : `${content}\n\n${request}`, text: `Skill ${skill.name} loaded.` }
    },
  }
}

function failure(message: string, code: string) {
  return { content: [{ type: 'text' as const, text: `Error: ${message}` }], isError: true, error: { name: 'SkillError', code } }
}
