/**
 * The hooks plugin (docs/hooks.md, HK-1..HK-11): loads Claude Code and Codex hook files once,
 * then bridges each supported event onto the runtime's interception points:
 *
 * - `SessionStart` -> `agent/created` (detached; context is injected; no `hook/*` records)
 * - `UserPromptSubmit` -> `agent/pre-step` when the claimed batch is non-empty (block rejects the step)
 * - `PreToolUse` -> `tools/pre-execute` (block/deny -> `Error: <reason>`; `ask` -> `ctx.approval`)
 * - `PostToolUse` -> `tools/post-execute` (block replaces the result; context -> next-step message)
 * - `Stop` -> `agent/turn-stopping` (block steers the reason; capped per turn)
 *
 * Matching hooks run serially in file order; each run is logged as an adjacent
 * `hook/invoked` / `hook/result` pair inside the open turn.
 */
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { Context } from 'cordis'
import type { Agent, PreStepDecision, PreStepPayload, TurnStoppingPayload } from '../agent/api.js'
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { EventDataValidator } from '../session/types.js'
import type { PreExecuteDecision, ToolExecution, ToolResultRecord } from '../tools/api.js'
import { isTrusted, pinnedAsIs, PROJECT_HOOK_FILES, readTrustList, type TrustList } from '../trust/index.js'
import type { HookDecision, HookDialect, HookFileSource, HookInvokedData, HookPoint, HookResultData } from './api.js'
import { HookConfigError, parseHookFile, SUBAGENT_TYPE, type HookGroup } from './config.js'
import type { SubagentFinished, SubagentStarted } from '../subagents/api.js'
import '../subagents/api.js'
import '../commands/api.js'
import { decodeHookRun, mergeHooks, runHookCommand, type DecodedHook, type MergedHooks } from './run.js'

/**
 * `node:util`'s formatter, loaded on the first warning: importing `node:util` loads its argument
 * parser and MIME modules too, which no run without a hook warning needs (docs/benchmarks.md,
 * round six).
 */
function formatWithOptions(): typeof import('node:util').formatWithOptions {
  return (createRequire(import.meta.url)('node:util') as typeof import('node:util')).formatWithOptions
}

export * from './api.js'
export { compileMatcher, parseHookFile, HookConfigError, CLAUDE_CODE_TOOL_NAMES } from './config.js'
export { decodeHookRun, mergeHooks, runHookCommand } from './run.js'

export interface HooksConfig {
  /** Explicit files (profile rows): always loaded, no trust step. */
  readonly files?: readonly HookFileSource[]
  /** Look for the usual user and project files (default true). */
  readonly discover?: boolean
  /** The launch folder: relative paths and project discovery start here. */
  readonly cwd?: string
  /** The user's home folder (`~/.claude`, `~/.codex`). */
  readonly userHome?: string
  /** `$DSH_HOME`: where the trusted-project list lives. */
  readonly dshHome?: string
  /** Extra trusted project folders (in addition to `$DSH_HOME/trusted-projects.json`). */
  readonly trustedProjects?: readonly string[]
  /**
   * Say on stderr that an untrusted project's hooks are not loaded (default true). The terminal
   * app turns it off: it asks about the folder itself.
   */
  readonly untrustedNotice?: boolean
  readonly defaultTimeoutMs?: number
  readonly stderrSummaryMaxChars?: number
  /** Consecutive Stop blocks honoured per turn before the turn is allowed to end (default 8). */
  readonly maxStopBlocks?: number
  /** Codex `model` field in payloads (default: the agent's model). */
  readonly model?: string
}

export const HOOK_PLUGIN_NAMES: Readonly<Record<HookDialect, string>> = {
  'claude-code': 'hooks-claude-code',
  codex: 'hooks-codex',
}

const FALLBACK = {
  UserPromptSubmit: 'blocked by UserPromptSubmit hook',
  PreToolUse: 'blocked by PreToolUse hook',
  PostToolUse: 'blocked by PostToolUse hook',
  Stop: 'continue: blocked by Stop hook',
} as const

interface LoadedGroup extends HookGroup {
  readonly source: HookFileSource
}

/** What the bridge knows about an agent's open turn (from its last pre-step). */
interface TurnState {
  readonly agent: Agent
  readonly session: Session
  readonly turn: number
  readonly signal: AbortSignal
  stopBlocks: number
}

/** The files discovery looks at, in load order: user files first, then project files. */
export function discoverHookFiles(cwd: string, userHome: string): HookFileSource[] {
  const out: HookFileSource[] = []
  const add = (dialect: HookDialect, path: string, origin: 'user' | 'project') => {
    // Started in the home folder, the project's .claude/settings.json is the user's own file: once.
    if (out.some(source => source.path === path)) return
    if (existsSync(path)) out.push({ dialect, path, origin, ...(origin === 'project' ? { projectDir: cwd } : {}) })
  }
  add('claude-code', join(userHome, '.claude', 'settings.json'), 'user')
  add('codex', join(userHome, '.codex', 'hooks.json'), 'user')
  for (const file of PROJECT_HOOK_FILES) add(file.dialect, join(cwd, file.path), 'project')
  return out
}

/** `/hooks`: one line per hook command (event, matcher, file and the command), then files waiting for trust. */
function describeHooks(groups: readonly LoadedGroup[], waiting: readonly string[], cwd: string, userHome: string): string {
  const shown = (path: string) => path.startsWith(`${cwd}${sep}`) ? relative(cwd, path) : path.startsWith(`${userHome}${sep}`) ? `~${sep}${relative(userHome, path)}` : path
  const lines: string[] = []
  const count = groups.reduce((sum, group) => sum + group.hooks.length, 0)
  if (count === 0) lines.push('No hooks loaded.')
  else {
    lines.push(`${count} hook command${count === 1 ? '' : 's'} loaded:`)
    for (const group of groups) {
      for (const hook of group.hooks) {
        const command = hook.command.length > 60 ? `${hook.command.slice(0, 59)}…` : hook.command
        lines.push(`  ${group.point.padEnd(17)}${(group.matcher ?? '*').padEnd(12)}${shown(group.source.path)}: ${command}`)
      }
    }
  }
  if (waiting.length > 0) lines.push(`Waiting for this folder to be trusted (/trust on): ${waiting.map(shown).join(', ')}`)
  return lines.join('\n')
}

const validateInvoked: EventDataValidator = (data) => {
  const d = data as Partial<HookInvokedData>
  if (typeof d !== 'object' || d === null) return 'hook/invoked data must be an object'
  if (typeof d.handlerId !== 'string' || typeof d.point !== 'string' || typeof d.dialect !== 'string' || typeof d.turn !== 'number') {
    return 'hook/invoked needs string handlerId, point, dialect and a number turn'
  }
  if (d.matcher !== undefined && typeof d.matcher !== 'string') return 'hook/invoked matcher must be a string'
  return null
}

const validateResult: EventDataValidator = (data) => {
  const d = data as Partial<HookResultData>
  if (typeof d !== 'object' || d === null) return 'hook/result data must be an object'
  if (typeof d.handlerId !== 'string' || typeof d.point !== 'string' || typeof d.decision !== 'string' || typeof d.durationMs !== 'number') {
    return 'hook/result needs string handlerId, point, decision and a number durationMs'
  }
  if (d.exitCode !== undefined && typeof d.exitCode !== 'number') return 'hook/result exitCode must be a number'
  return null
}

export class HooksPlugin {
  static readonly inject = ['sessions']

  private readonly groups: LoadedGroup[] = []
  private readonly counters = new Map<string, number>()
  private readonly turns = new WeakMap<object, TurnState>()
  /** PostToolUse context waiting for its result to be committed. */
  private readonly pendingContext = new WeakMap<ToolExecution, { message: UserMessage }>()
  /** Calls whose body ran (PostToolUse fires only for those, not for refused calls). */
  private readonly ran = new WeakSet<ToolExecution>()
  private readonly lifetime = new AbortController()
  private readonly detached = new Set<Promise<void>>()
  private readonly timeoutMs: number
  private readonly stderrMax: number
  private readonly maxStopBlocks: number
  /** Project hook files not loaded because their folder is not trusted (yet). */
  private readonly untrusted: (HookFileSource & { readonly path: string })[] = []

  constructor(private readonly ctx: Context, private readonly config: HooksConfig = {}) {
    this.timeoutMs = config.defaultTimeoutMs ?? 600_000
    this.stderrMax = config.stderrSummaryMaxChars ?? 500
    this.maxStopBlocks = config.maxStopBlocks ?? 8
    const cwd = resolve(config.cwd ?? process.cwd())
    const sources: HookFileSource[] = [...(config.files ?? []).map(file => ({ origin: 'explicit' as const, ...file }))]
    if (config.discover !== false) sources.push(...discoverHookFiles(cwd, config.userHome ?? homedir()))
    const list = this.trustList()
    for (const source of sources) {
      const path = isAbsolute(source.path) ? source.path : resolve(cwd, source.path)
      if (source.origin !== 'project') {
        this.load({ ...source, path })
        continue
      }
      const admitted = this.admit(path, list)
      if ('text' in admitted) {
        this.load({ ...source, path }, admitted.text)
        continue
      }
      // Loaded as soon as the folder is trusted with the file as it is (`dsh trust on`, `/trust
      // on`, the terminal app's question), checked when an agent starts and before each step.
      this.untrusted.push({ ...source, path })
      if (config.untrustedNotice !== false) this.warn('project hooks in %s are not loaded: %s (run `dsh trust on` there, or `/trust on` in a session)', path, admitted.why)
    }
    if (this.untrusted.length > 0 && list.problem !== undefined && config.untrustedNotice !== false) this.warn('%s', list.problem)
    ctx.effect(() => ctx.sessions.registerEventType({ type: 'hook/invoked', owner: 'hooks', validate: validateInvoked }))
    ctx.effect(() => ctx.sessions.registerEventType({ type: 'hook/result', owner: 'hooks', validate: validateResult }))

    // `/hooks`: what runs where, and what waits for the folder to be trusted.
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'hooks',
        description: 'The hook commands loaded (event, matcher, file) and project files waiting for trust',
        run: () => {
          this.adoptTrusted()
          return { kind: 'success', text: describeHooks(this.groups, this.waitingForTrust, cwd, config.userHome ?? homedir()) }
        },
      })
    })
    ctx.on('agent/pre-step', (payload, next) => this.preStep(payload, next))
    ctx.on('tools/pre-execute', (execution, next) => this.preTool(execution, next))
    ctx.on('tools/execute', (execution, _context, next) => { this.ran.add(execution); return next() })
    ctx.on('tools/post-execute', (execution, record, next) => this.postTool(execution, record, next))
    ctx.on('tools/result', (execution) => this.committed(execution))
    ctx.on('agent/turn-stopping', (payload) => this.stopping(payload))
    ctx.on('agent/created', (agent) => this.sessionStart(agent))
    ctx.on('subagent/started', (info) => this.subagentStart(info))
    ctx.on('subagent/finished', (info) => this.subagentStop(info))
    // HK-11: disposing aborts running hooks and waits for them.
    ctx.effect(() => () => {
      this.lifetime.abort()
      return Promise.allSettled([...this.detached]).then(() => undefined)
    })
  }

  /** `$DSH_HOME/trusted-projects.json` (and why it is unreadable, if it is). */
  private trustList(): TrustList {
    return this.config.dshHome !== undefined ? readTrustList(this.config.dshHome) : { projects: [], pins: {} }
  }

  /**
   * Whether a project hook file may load: its folder is trusted and the file is the content pinned
   * then (the row's own `trustedProjects` trust any content: the profile's author chose them).
   * Returns the text that was checked, so what loads is what was checked.
   */
  private admit(path: string, list: TrustList): { text: string } | { why: string } {
    const explicit = isTrusted(dirname(path), this.config.trustedProjects ?? [])
    if (!explicit && !isTrusted(dirname(path), list.projects)) return { why: 'the project is not trusted' }
    let bytes: Buffer
    try {
      bytes = readFileSync(path)
    } catch (error) {
      return { why: `it is not readable (${error instanceof Error ? error.message : String(error)})` }
    }
    if (!explicit && !pinnedAsIs(list, path, bytes)) return { why: 'the file is new or changed since the folder was trusted' }
    return { text: bytes.toString('utf8') }
  }

  /** Reads one hook file (or takes the text already checked) and registers its groups; HK-1: a bad file registers none. */
  private load(source: HookFileSource & { readonly path: string }, checked?: string): void {
    let text: string
    try {
      text = checked ?? readFileSync(source.path, 'utf8')
    } catch (error) {
      this.warn('hook file %s is not readable (%s); no hooks from it', source.path, error instanceof Error ? error.message : String(error))
      return
    }
    try {
      const parsed = parseHookFile(text, source.dialect)
      for (const warning of parsed.warnings) this.warn('%s: %s', source.path, warning)
      for (const group of parsed.groups) this.groups.push({ ...group, source })
    } catch (error) {
      this.warn('hook file %s is rejected, none of its hooks are registered: %s', source.path, error instanceof HookConfigError ? error.message : String(error))
    }
  }

  /**
   * Project files skipped for want of trust are loaded once their folder is trusted. Costs
   * nothing when none are waiting; otherwise one small read of the trust list.
   */
  private adoptTrusted(): void {
    if (this.untrusted.length === 0) return
    const list = this.trustList()
    for (const source of [...this.untrusted]) {
      const admitted = this.admit(source.path, list)
      if (!('text' in admitted)) continue
      this.untrusted.splice(this.untrusted.indexOf(source), 1)
      this.load(source, admitted.text)
    }
  }

  /** Project hook files waiting for their folder to be trusted. */
  get waitingForTrust(): readonly string[] {
    return this.untrusted.map(source => source.path)
  }

  /** Warnings reach the user: the host's stderr when there is one, else the logger. */
  private warn(format: string, ...args: unknown[]): void {
    const host = this.ctx.get('host') as { stderr?: NodeJS.WritableStream } | undefined
    if (host?.stderr !== undefined) host.stderr.write(`dsh hooks: ${formatWithOptions()({ colors: false }, format, ...args)}\n`)
    else this.ctx.logger('hooks').warn(format, ...args)
  }

  /** How many hook commands are loaded (per point), for diagnostics and tests. */
  get loaded(): readonly HookGroup[] {
    return this.groups
  }

  private matching(point: HookPoint, subject?: string): LoadedGroup[] {
    return this.groups.filter(group => group.point === point && (subject === undefined || group.test(subject)))
  }

  // ---- the interception points ----

  private async preStep(payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> {
    this.adoptTrusted()
    const previous = this.turns.get(payload.agent.scope)
    const state: TurnState = previous !== undefined && previous.turn === payload.turn && previous.session === payload.session
      ? previous
      : { agent: payload.agent, session: payload.session, turn: payload.turn, signal: payload.signal, stopBlocks: 0 }
    this.turns.set(payload.agent.scope, state)
    // HK-8: only batches with input from outside the hooks themselves.
    const input = payload.messages.filter(message => !isHookMessage(message))
    const groups = input.length > 0 ? this.matching('UserPromptSubmit') : []
    if (groups.length === 0) return next()
    const prompt = input.map(messageText).filter(text => text !== '').join('\n')
    const merged = await this.runGroups(state, 'UserPromptSubmit', groups, undefined, { prompt })
    if (isBlocking(merged.outcome.decision)) {
      return { kind: 'reject', message: merged.outcome.reason ?? FALLBACK.UserPromptSubmit }
    }
    const decision = await next()
    if (decision.kind !== 'enter' || merged.contexts.length === 0) return decision
    return { kind: 'enter', messages: [...decision.messages, ...merged.contexts.map(({ dialect, text }) => hookMessage(dialect, text))] }
  }

  private async preTool(execution: ToolExecution, next: () => Promise<PreExecuteDecision>): Promise<PreExecuteDecision> {
    const state = execution.scope !== undefined ? this.turns.get(execution.scope) : undefined
    const groups = this.matching('PreToolUse', execution.name)
    if (state === undefined || groups.length === 0) return next()
    const merged = await this.runGroups(state, 'PreToolUse', groups, execution, {})
    const { decision, reason } = merged.outcome
    if (isBlocking(decision)) {
      const text = reason ?? FALLBACK.PreToolUse
      return { kind: 'deny', reason: text, message: text }
    }
    if (decision === 'ask') {
      // HK-6: the approval seam decides; a later policy may still deny.
      const inner = await next()
      return inner.kind === 'deny' ? inner : { kind: 'ask', ...(reason !== undefined ? { reason } : {}) }
    }
    // HK-6: `allow` pre-approves nothing.
    return next()
  }

  private async postTool(execution: ToolExecution, record: ToolResultRecord, next: () => Promise<ToolResultRecord>): Promise<ToolResultRecord> {
    const result = await next()
    const state = execution.scope !== undefined ? this.turns.get(execution.scope) : undefined
    const groups = this.matching('PostToolUse', execution.name)
    if (state === undefined || groups.length === 0 || !this.ran.has(execution)) return result
    const response = result.content.map(block => block.type === 'text' ? block.text : '').join('')
    const merged = await this.runGroups(state, 'PostToolUse', groups, execution, { tool_response: response })
    if (merged.contexts.length > 0) {
      const first = merged.contexts[0]!
      this.pendingContext.set(execution, { message: hookMessage(first.dialect, merged.contexts.map(context => context.text).join('\n\n')) })
    }
    if (isBlocking(merged.outcome.decision)) {
      // HK-7: the committed content is exactly the reason text.
      return { content: [{ type: 'text', text: merged.outcome.reason ?? FALLBACK.PostToolUse }], isError: true }
    }
    return result
  }

  /** After `tool/result` is in the log: queue the PostToolUse context for the next step. */
  private committed(execution: ToolExecution): void {
    const pending = this.pendingContext.get(execution)
    if (pending === undefined) return
    this.pendingContext.delete(execution)
    const state = execution.scope !== undefined ? this.turns.get(execution.scope) : undefined
    state?.agent.inject(pending.message)
  }

  private async stopping(payload: TurnStoppingPayload): Promise<void> {
    const state = this.turns.get(payload.agent.scope)
    const groups = this.matching('Stop')
    if (state === undefined || state.turn !== payload.turn || groups.length === 0) return
    if (state.stopBlocks >= this.maxStopBlocks) {
      this.warn('Stop hooks blocked %d times in turn %d; letting the turn end', state.stopBlocks, payload.turn)
      return
    }
    const merged = await this.runGroups(state, 'Stop', groups, undefined, { stop_hook_active: state.stopBlocks > 0 })
    if (!isBlocking(merged.outcome.decision) || merged.outcome.decision === 'stop') return
    state.stopBlocks++
    const dialect = merged.blockedBy ?? groups[0]!.source.dialect
    payload.steer(hookMessage(dialect, merged.outcome.reason ?? FALLBACK.Stop))
  }

  private sessionStart(agent: Agent): void {
    this.adoptTrusted()
    const source = agent.session.position.turn > 0 ? 'resume' : 'startup'
    const groups = this.matching('SessionStart', source)
    if (groups.length === 0) return
    const work = (async () => {
      const contexts: { dialect: HookDialect; text: string }[] = []
      for (const group of groups) {
        for (const hook of group.hooks) {
          if (this.lifetime.signal.aborted) return
          const decoded = await this.runOne(group, hook, agent.session, undefined, 'SessionStart', { source }, this.lifetime.signal)
          if (decoded.context !== undefined) contexts.push({ dialect: group.source.dialect, text: decoded.context })
        }
      }
      if (contexts.length > 0 && !this.lifetime.signal.aborted && this.ctx.get('agents')?.get(agent.id) === agent) {
        agent.inject(hookMessage(contexts[0]!.dialect, contexts.map(context => context.text).join('\n\n')))
      }
    })().catch((error: unknown) => {
      this.warn('SessionStart hooks failed: %s', error instanceof Error ? error.message : String(error))
    })
    this.detached.add(work)
    void work.finally(() => this.detached.delete(work))
  }

  /** HK-11: detached, no `hook/*` records; context goes into the live child. Claude Code only. */
  private subagentStart(info: SubagentStarted): void {
    const groups = this.matching('SubagentStart', SUBAGENT_TYPE)
    const child = this.ctx.sessions.get(info.childSessionId)
    if (groups.length === 0 || child === undefined) return
    this.detach('SubagentStart', async () => {
      const contexts: { dialect: HookDialect; text: string }[] = []
      for (const group of groups) {
        for (const hook of group.hooks) {
          if (this.lifetime.signal.aborted) return
          const decoded = await this.runOne(group, hook, child, undefined, 'SubagentStart', { agent_id: info.childSessionId, agent_type: SUBAGENT_TYPE }, this.lifetime.signal)
          if (decoded.context !== undefined) contexts.push({ dialect: group.source.dialect, text: decoded.context })
        }
      }
      const agent = this.ctx.get('agents')?.get(info.childSessionId)
      if (contexts.length > 0 && !this.lifetime.signal.aborted && agent !== undefined) {
        agent.inject(hookMessage(contexts[0]!.dialect, contexts.map(context => context.text).join('\n\n')))
      }
    })
  }

  /** HK-11: detached and observe-only; runs against the parent session (the child may be gone). */
  private subagentStop(info: SubagentFinished): void {
    const groups = this.matching('SubagentStop', SUBAGENT_TYPE)
    const parent = this.ctx.sessions.get(info.parentSessionId)
    if (groups.length === 0 || parent === undefined) return
    const last = info.lastAssistantMessage
    const lastText = typeof last === 'string' ? last : Array.isArray(last)
      ? last.map(block => (block as { type?: unknown; text?: unknown })?.type === 'text' ? String((block as { text: unknown }).text) : '').join('')
      : null
    this.detach('SubagentStop', async () => {
      for (const group of groups) {
        for (const hook of group.hooks) {
          if (this.lifetime.signal.aborted) return
          await this.runOne(group, hook, parent, undefined, 'SubagentStop', {
            stop_hook_active: false, agent_id: info.childSessionId, agent_type: SUBAGENT_TYPE, last_assistant_message: lastText,
          }, this.lifetime.signal)
        }
      }
    })
  }

  private detach(point: HookPoint, body: () => Promise<void>): void {
    const work = body().catch((error: unknown) => {
      this.warn('%s hooks failed: %s', point, error instanceof Error ? error.message : String(error))
    })
    this.detached.add(work)
    void work.finally(() => this.detached.delete(work))
  }

  /** Resolves when every detached hook run (SessionStart, Subagent*) started so far has ended. */
  async settled(): Promise<void> {
    while (this.detached.size > 0) await Promise.allSettled([...this.detached])
  }

  // ---- running ----

  /** HK-3: each matching hook in file order, logged as an adjacent invoked/result pair. */
  private async runGroups(
    state: TurnState, point: HookPoint, groups: readonly LoadedGroup[], execution: ToolExecution | undefined, extra: Record<string, unknown>,
  ): Promise<{ outcome: MergedHooks; contexts: { dialect: HookDialect; text: string }[]; blockedBy?: HookDialect }> {
    const decoded: DecodedHook[] = []
    const contexts: { dialect: HookDialect; text: string }[] = []
    let blockedBy: HookDialect | undefined
    for (const group of groups) {
      for (const hook of group.hooks) {
        if (state.signal.aborted) break
        const dialect = group.source.dialect
        const n = (this.counters.get(`${dialect}:${point}`) ?? 0) + 1
        this.counters.set(`${dialect}:${point}`, n)
        const handlerId = `${dialect}:${point}:${n}`
        state.session.append('hook/invoked', {
          turn: state.turn, point, dialect, handlerId, ...(group.matcher !== undefined ? { matcher: group.matcher } : {}),
        })
        const started = performance.now()
        const run = await this.execute(group, hook, state.session, execution, point, { ...extra, turn: state.turn }, state.signal)
        const durationMs = performance.now() - started
        const result = decodeHookRun(run, point, dialect)
        const stderr = run.stderr.trim()
        state.session.append('hook/result', {
          turn: state.turn, point, handlerId, decision: result.decision,
          ...(run.exitCode !== null ? { exitCode: run.exitCode } : {}),
          ...(stderr !== '' ? { stderrSummary: stderr.length > this.stderrMax ? `${stderr.slice(0, this.stderrMax)}…` : stderr } : {}),
          durationMs,
        })
        if (result.updatedInput !== undefined) this.ctx.logger('hooks').info('%s returned updatedInput, which is not applied', handlerId)
        decoded.push(result)
        if (result.context !== undefined) contexts.push({ dialect, text: result.context })
        if (isBlocking(result.decision) && blockedBy === undefined) blockedBy = dialect
      }
    }
    return { outcome: mergeHooks(decoded), contexts, ...(blockedBy !== undefined ? { blockedBy } : {}) }
  }

  private async runOne(
    group: LoadedGroup, hook: HookGroup['hooks'][number], session: Session, execution: ToolExecution | undefined,
    point: HookPoint, extra: Record<string, unknown>, signal: AbortSignal,
  ): Promise<DecodedHook> {
    const run = await this.execute(group, hook, session, execution, point, extra, signal)
    return decodeHookRun(run, point, group.source.dialect)
  }

  private execute(
    group: LoadedGroup, hook: HookGroup['hooks'][number], session: Session, execution: ToolExecution | undefined,
    point: HookPoint, extra: Record<string, unknown>, signal: AbortSignal,
  ) {
    const cwd = session.header.cwd ?? this.config.cwd ?? process.cwd()
    const dialect = group.source.dialect
    let command = hook.command
    const env: Record<string, string> = {}
    if (dialect === 'claude-code') {
      const projectDir = group.source.projectDir ?? cwd
      env.CLAUDE_PROJECT_DIR = projectDir
      command = command.split('${CLAUDE_PROJECT_DIR}').join(projectDir)
      if (group.source.pluginRoot !== undefined) command = command.split('${CLAUDE_PLUGIN_ROOT}').join(group.source.pluginRoot)
    }
    const payload = this.payload(dialect, point, session, cwd, execution, extra)
    const stdin = JSON.stringify(payload) + (dialect === 'claude-code' ? '\n' : '')
    const timeoutMs = hook.timeoutSec !== undefined ? hook.timeoutSec * 1000 : this.timeoutMs
    const both = anySignal(signal, this.lifetime.signal)
    return runHookCommand({ command, cwd, stdin, timeoutMs, signal: both.signal, env }).finally(both.release)
  }

  /** The recorded stdin payloads of each dialect. */
  private payload(
    dialect: HookDialect, point: HookPoint, session: Session, cwd: string, execution: ToolExecution | undefined, extra: Record<string, unknown>,
  ): Record<string, unknown> {
    const { turn, ...fields } = extra as { turn?: number } & Record<string, unknown>
    const base: Record<string, unknown> = dialect === 'claude-code'
      ? { session_id: session.id, transcript_path: '', cwd, hook_event_name: point }
      : {
          session_id: session.id, transcript_path: null, cwd, hook_event_name: point,
          model: this.config.model ?? this.ctx.get('agents')?.get(session.id)?.config.model ?? '', permission_mode: 'default',
          ...(turn !== undefined ? { turn_id: String(turn) } : {}),
        }
    if (execution !== undefined) {
      let input: unknown
      try {
        input = execution.arguments.trim() === '' ? {} : JSON.parse(execution.arguments)
      } catch {
        input = {}
      }
      const command = typeof (input as { command?: unknown })?.command === 'string' ? (input as { command: string }).command : ''
      base.tool_name = execution.name
      base.tool_input = dialect === 'codex' ? { command } : input
      base.tool_use_id = execution.callId
    }
    if (point === 'Stop' && dialect === 'codex') base.last_assistant_message = null
    return { ...base, ...fields }
  }
}

function isBlocking(decision: HookDecision): boolean {
  return decision === 'block' || decision === 'deny' || decision === 'stop'
}

function messageText(message: UserMessage): string {
  return message.content.map(block => block.type === 'text' ? block.text : '').join('')
}

function isHookMessage(message: UserMessage): boolean {
  const source = message.source as { kind: string; plugin?: unknown }
  return source.kind === 'plugin' && (source.plugin === HOOK_PLUGIN_NAMES['claude-code'] || source.plugin === HOOK_PLUGIN_NAMES.codex)
}

function hookMessage(dialect: HookDialect, text: string): UserMessage {
  return { id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: { kind: 'plugin', plugin: HOOK_PLUGIN_NAMES[dialect] } }
}

/** Aborts when either aborts; `release` removes the listeners once the run is over. */
function anySignal(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; release(): void } {
  const controller = new AbortController()
  if (a.aborted || b.aborted) {
    controller.abort()
    return { signal: controller.signal, release: () => {} }
  }
  const abort = () => controller.abort()
  a.addEventListener('abort', abort, { once: true })
  b.addEventListener('abort', abort, { once: true })
  return { signal: controller.signal, release: () => { a.removeEventListener('abort', abort); b.removeEventListener('abort', abort) } }
}
