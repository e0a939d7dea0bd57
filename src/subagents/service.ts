/**
 * `ctx.subagents` (SubagentsPlugin): providers, one-shot runs, continuable children, message
 * routing between a parent and its children, settlement notices and reports (SA-1..SA-16).
 *
 * A child is an ordinary agent over an ordinary session of the same store; its scope is fresh
 * (not bound under the parent's), so the parent's scoped restrictions do not carry over. What
 * the child gets in its own scope: the `subagent:delegation` runtime context, and inside
 * continuable children the `report` tool and its prompt paragraph.
 */
import { randomUUID } from 'node:crypto'
import { Context, Service } from 'cordis'
import type { Agent, AgentLoopConfig, PreStepDecision, PreStepPayload } from '../agent/api.js'
import type { AssistantMessage, TextBlock, UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { JsonValue, SessionEvent, SessionHeader, TurnEndReason } from '../session/types.js'
import type { Tool } from '../tools/api.js'
import { emitContained } from '../kernel/index.js'
import '../agent/api.js'
import '../persistence/api.js'
import '../prompt/api.js'
import '../tools/api.js'
import {
  SubagentError, type ChildSessionRequest, type ChildStatus, type StartOptions, type SubagentDescriptor,
  type SubagentFinished, type SubagentProvider, type SubagentRunResult, type SubagentsService,
} from './api.js'
import {
  DELEGATION_CONTEXT_NAME, DELEGATION_CONTEXT_TEXT, NO_SUBAGENTS, REPORT_DESCRIPTION, REPORT_SECTION_TEXT,
  depthRejected, failureDiagnostic, failureHeadline, outcomeLine, reportAcceptedText, unavailableText,
} from './texts.js'

export const DESCRIPTOR_EVENT = 'subagent/descriptor'

/** Checks `subagent/descriptor` data (the shape recorded by the original). */
export function descriptorProblem(data: unknown): string | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'data must be an object'
  const d = data as Record<string, unknown>
  if (d.version !== 2) return 'version must be 2'
  if (d.mode !== 'one-shot' && d.mode !== 'continuable') return 'mode must be "one-shot" or "continuable"'
  if (typeof d.provider !== 'string' || d.provider === '') return 'provider must be a non-empty string'
  for (const key of ['label', 'agentProvider', 'agentModel', 'persona'] as const) {
    if (d[key] !== undefined && typeof d[key] !== 'string') return `${key} must be a string`
  }
  return null
}

export interface ProviderOptions {
  /** Chooses the child's session id (replays bind recorded ids); a random UUID otherwise. */
  readonly id?: () => string | undefined
}

/** The fresh child: same cwd as the parent, header fields of SA-1. */
export function spawnProvider(ctx: Context, options: ProviderOptions = {}): SubagentProvider {
  return {
    name: 'spawn',
    createSession({ parent, depth }: ChildSessionRequest): Session {
      const id = options.id?.()
      return ctx.sessions.create({
        ...id !== undefined && { id },
        ...parent.session.header.cwd !== undefined && { cwd: parent.session.header.cwd },
        parentSession: parent.id,
        origin: 'subagent',
        delegationDepth: depth,
      })
    },
  }
}

/** SA-4: the child is seeded with the parent's events up to its last completed turn. */
export function forkProvider(ctx: Context, options: ProviderOptions = {}): SubagentProvider {
  return {
    name: 'fork',
    createSession({ parent, depth }: ChildSessionRequest): Session {
      const events = parent.session.events
      let end = -1
      for (let seq = events.length - 1; seq >= 0; seq -= 1) {
        if (events[seq].type === 'turn/end') { end = seq; break }
      }
      const seed = events.slice(0, end + 1)
      const header: SessionHeader = {
        type: 'session',
        version: parent.session.header.version,
        id: options.id?.() ?? randomUUID(),
        createdAt: Date.now(),
        ...parent.session.header.cwd !== undefined && { cwd: parent.session.header.cwd },
        parentSession: parent.id,
        seedLength: seed.length,
        origin: 'subagent',
        delegationDepth: depth,
      }
      const session = ctx.sessions.hydrate(header, seed)
      session.append('session/end-seed', {})
      return session
    },
  }
}

interface ContinuableChild {
  readonly id: string
  readonly parentId: string
  readonly label: string
  readonly provider: string
  readonly createdAt: number
  readonly depth: number
  readonly route: AgentLoopConfig
  agent?: Agent
  /** The running activation's settlement watcher. */
  activation?: Promise<void>
  /** Resolves when a cold resume finished loading. */
  resuming?: Promise<Agent>
}

const TEXT = (text: string): TextBlock => ({ type: 'text', text })

function textOf(message: AssistantMessage): string {
  return message.content.filter((b): b is TextBlock => b.type === 'text').map(b => b.text).join('')
}

/** The last `turn/end` reason at or after `from`. */
function lastTurnEnd(session: Session, from = 0): TurnEndReason | undefined {
  for (let seq = session.length - 1; seq >= from; seq -= 1) {
    const event = session.events[seq]
    if (event.type === 'turn/end') return (event.data as { reason: TurnEndReason }).reason
  }
  return undefined
}

/** SA-5: the last non-empty assistant text at or after `from`, else all of it, else ''. */
function finalText(session: Session, from: number): string {
  const texts: string[] = []
  for (let seq = from; seq < session.length; seq += 1) {
    const event = session.events[seq]
    if (event.type !== 'assistant/message') continue
    const text = textOf((event.data as { message: AssistantMessage }).message)
    if (text.trim() !== '') texts.push(text)
  }
  return texts.at(-1) ?? ''
}

/** Content of the last assistant message with a non-empty block at or after `from`. */
function lastAssistantContent(session: Session, from: number): AssistantMessage['content'] | undefined {
  for (let seq = session.length - 1; seq >= from; seq -= 1) {
    const event = session.events[seq]
    if (event.type !== 'assistant/message') continue
    const content = (event.data as { message: AssistantMessage }).message.content
    if (content.some(b => (b.type === 'text' || b.type === 'reasoning') && b.text.trim() !== '')) return content
  }
  return undefined
}

function isDescriptor(event: SessionEvent | undefined): boolean {
  return event?.type === DESCRIPTOR_EVENT && descriptorProblem(event.data) === null
}

export interface SubagentsConfig {
  /** SDK `subagent.finished`: count a max-tokens end as `ok`. */
  readonly maxTokensAsSuccess?: boolean
  /** Session ids for the children this process creates, in creation order (replays of recordings); random after. */
  readonly childIds?: readonly string[]
}

export class SubagentsPlugin extends Service implements SubagentsService {
  static inject = ['sessions', 'agents']
  /** Registrations per name; the latest one is in effect (a later registration shadows). */
  private readonly byName = new Map<string, SubagentProvider[]>()
  private readonly continuable = new Map<string, ContinuableChild>()
  /** One-shot children still running, by parent id (for whenQuiet and teardown). */
  private readonly oneShot = new Map<string, Set<Agent>>()

  constructor(ctx: Context, private readonly config: SubagentsConfig = {}) {
    super(ctx, 'subagents')
    ctx.sessions.registerEventType({ type: DESCRIPTOR_EVENT, validate: descriptorProblem, owner: 'subagents' })
    let created = 0
    const id = () => config.childIds?.[created++]
    this.provider(spawnProvider(ctx, { id }))
    this.provider(forkProvider(ctx, { id }))
    // SA-15 teardown: continuable descendants go child-first once cancel reached them top-down.
    ctx.effect(() => () => {
      const children = [...this.continuable.values()].sort((a, b) => b.depth - a.depth)
      for (const child of children) child.agent?.cancel({ keepInbox: true, reason: { kind: 'disposed' } })
      for (const child of children) void child.agent?.dispose()
      this.continuable.clear()
    }, 'subagents: dispose children')
  }

  provider(provider: SubagentProvider): () => void {
    if (typeof provider?.name !== 'string' || provider.name === '' || typeof provider.createSession !== 'function') {
      throw new TypeError('dsh-subagents: a provider needs a non-empty name and createSession()')
    }
    return this.ctx.effect(() => {
      const stack = this.byName.get(provider.name) ?? []
      stack.push(provider)
      this.byName.set(provider.name, stack)
      return () => {
        const index = stack.lastIndexOf(provider)
        if (index >= 0) stack.splice(index, 1)
        if (stack.length === 0 && this.byName.get(provider.name) === stack) this.byName.delete(provider.name)
      }
    }, `subagent provider ${provider.name}`)
  }

  providers(): readonly string[] {
    return [...this.byName.keys()]
  }

  childDepth(parent: Agent): number {
    const runtime = this.continuable.get(parent.id)?.depth ?? 0
    return Math.max(parent.session.header.delegationDepth, runtime) + 1
  }

  // ---- starting a child (SA-1, SA-2) ----

  private createChild(options: StartOptions, mode: SubagentDescriptor['mode']): { session: Session; agent: Agent; depth: number } {
    const { parent } = options
    const provider = this.byName.get(options.provider)?.at(-1)
    if (provider === undefined) throw new SubagentError('UNKNOWN_PROVIDER', `unknown subagent provider "${options.provider}" (registered: ${this.providers().join(', ') || 'none'})`)
    const depth = this.childDepth(parent)
    if (depth > options.maxDepth) throw new SubagentError('DEPTH_EXCEEDED', depthRejected(depth, options.maxDepth))
    const session = provider.createSession({ parent, depth })
    if (mode === 'continuable') {
      const descriptor: SubagentDescriptor = {
        version: 2, mode, provider: provider.name, label: options.label ?? '',
        agentProvider: parent.config.provider, agentModel: parent.config.model,
      }
      session.append(DESCRIPTOR_EVENT, descriptor)
      session.append('session/end-seed', {})
    }
    emitContained(this.ctx, 'subagent/started', [{
      parentSessionId: parent.id, childSessionId: session.id, provider: provider.name, mode,
      ...options.label !== undefined && { label: options.label },
      ...options.callId !== undefined && { callId: options.callId },
    }])
    options.onPublished?.(session.id)
    const route = options.route
    const loop = route === undefined ? parent.config : { ...parent.config, ...route.provider !== undefined && { provider: route.provider }, ...route.model !== undefined && { model: route.model } }
    const agent = this.ctx.agents.create({ sessionId: session.id, loop })
    this.equip(agent, mode === 'continuable')
    options.setup?.(agent)
    return { session, agent, depth }
  }

  /** The child's own scope: the delegation runtime context, and `report` for continuable children. */
  private equip(agent: Agent, continuable: boolean): void {
    const prompt = agent.ctx.get('systemPrompt')
    prompt?.context({ name: DELEGATION_CONTEXT_NAME, order: 1000, render: () => DELEGATION_CONTEXT_TEXT }, agent.scope)
    if (!continuable) return
    prompt?.section({ name: 'subagent:report', order: 1000, text: REPORT_SECTION_TEXT }, agent.scope)
    const tools = agent.ctx.get('tools')
    tools?.register(this.reportTool(agent), agent.scope)
  }

  private reportTool(agent: Agent): Tool<{ output: string }> {
    return {
      name: 'report',
      description: REPORT_DESCRIPTION,
      parameters: {
        type: 'object',
        properties: { output: { type: 'string', description: 'Actionable content for your parent; summarize conclusions and reference relevant shared paths.' } },
        required: ['output'],
      },
      isConcurrencySafe: () => true,
      execute: ({ output }) => {
        const delivered = this.report(agent, output)
        return { content: [TEXT(reportAcceptedText(delivered.id))] }
      },
    }
  }

  // ---- one-shot (SA-3, SA-5, SA-6, SA-15) ----

  async run(options: StartOptions, signal: AbortSignal): Promise<SubagentRunResult> {
    const { parent } = options
    let child: ReturnType<SubagentsPlugin['createChild']>
    try {
      child = this.createChild(options, 'one-shot')
    } catch (error) {
      if (error instanceof SubagentError) throw error
      // Published but never started (its agent could not be created): a failed run.
      return { childSessionId: '', reason: undefined, text: '', output: `Error: subagent run failed: ${String(error)}`, isError: true }
    }
    const { session, agent } = child
    const descriptor: SubagentDescriptor = {
      version: 2, mode: 'one-shot', provider: options.provider, ...options.label !== undefined && { label: options.label },
    }
    let described = false
    // SA-3: the descriptor sits inside turn 1, right after the claim splice, before step/start.
    agent.ctx.on('agent/pre-step', async (payload: PreStepPayload, next: () => Promise<PreStepDecision>) => {
      if (!described && payload.session === session) {
        described = true
        session.append(DESCRIPTOR_EVENT, descriptor)
      }
      return next()
    })
    const running = this.oneShot.get(parent.id) ?? new Set<Agent>()
    running.add(agent)
    this.oneShot.set(parent.id, running)
    const from = session.length
    const onAbort = () => agent.cancel({ reason: { kind: 'parent' } })
    let runError: unknown
    try {
      if (signal.aborted) onAbort()
      else {
        signal.addEventListener('abort', onAbort, { once: true })
        agent.followup(options.prompt)
        await agent.whenIdle()
      }
    } catch (error) {
      runError = error
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
    const reason = runError === undefined ? lastTurnEnd(session, from) : undefined
    const text = finalText(session, from)
    this.finished(options.provider, parent.id, session, reason, from)
    let disposeError: unknown
    try {
      await agent.dispose()
      await this.release(session)
    } catch (error) {
      disposeError = error
    } finally {
      running.delete(agent)
      if (running.size === 0) this.oneShot.delete(parent.id)
    }
    return { childSessionId: session.id, reason, text, ...resultOutput(reason, text, runError, disposeError) }
  }

  /**
   * Closes a finished child: it leaves memory, and with persistence this resolves once its log
   * is durable and its writer lock is given back, so another process can open it (it stays
   * stored; `list_agents` and `load` find it there).
   */
  private async release(session: Session): Promise<void> {
    this.ctx.sessions.close(session.id)
    await this.ctx.get('sessionPersistence')?.unload(session.id)
  }

  private finished(provider: string, parentId: string, session: Session, reason: TurnEndReason | undefined, from: number): void {
    const last = lastAssistantContent(session, from)
    const ok = reason?.kind === 'completed' || (reason?.kind === 'max-tokens' && this.config.maxTokensAsSuccess === true)
    const info: SubagentFinished = {
      provider, agentId: session.id, parentSessionId: parentId, childSessionId: session.id,
      status: ok ? 'ok' : 'error', stopReason: reason?.kind ?? 'error',
      ...last !== undefined && { lastAssistantMessage: last as unknown as JsonValue },
    }
    emitContained(this.ctx, 'subagent/finished', [info])
  }

  // ---- continuable (SA-8..SA-12) ----

  async start(options: StartOptions): Promise<string> {
    const { session, agent, depth } = this.createChild(options, 'continuable')
    const record: ContinuableChild = {
      id: session.id, parentId: options.parent.id, label: options.label ?? '', provider: options.provider,
      createdAt: session.header.createdAt, depth, route: options.parent.config, agent,
    }
    this.continuable.set(session.id, record)
    agent.followup(options.prompt)
    this.watch(record)
    return session.id
  }

  async send(parent: Agent, childId: string, message: string): Promise<UserMessage> {
    const record = this.continuable.get(childId) ?? await this.stored(parent, childId)
    if (record === undefined || record.parentId !== parent.id) throw new SubagentError('NOT_RESUMABLE', unavailableText(childId))
    const agent = await this.resident(record)
    const queued = agent.send({
      id: randomUUID(), role: 'user', content: [TEXT(message)],
      source: { kind: 'coordinator', form: 'relay', senderSessionId: parent.id } as never,
    }, 'next-turn', true)
    this.watch(record)
    return queued
  }

  /** A direct child known only to storage (SA-9 cold resume). */
  private async stored(parent: Agent, childId: string): Promise<ContinuableChild | undefined> {
    const persistence = this.ctx.get('sessionPersistence')
    if (persistence === undefined) return undefined
    const inspection = await persistence.inspect(childId).catch(() => undefined)
    const header = inspection?.stored?.header
    if (header === undefined || header.parentSession !== parent.id || header.origin !== 'subagent') return undefined
    const loaded = await persistence.backend.loadStored(childId).catch(() => undefined)
    const first = loaded?.events[0]
    if (!isDescriptor(first)) return undefined
    const descriptor = first!.data as SubagentDescriptor
    if (descriptor.mode !== 'continuable') return undefined
    const record: ContinuableChild = {
      id: childId, parentId: parent.id, label: descriptor.label ?? '', provider: descriptor.provider,
      createdAt: header.createdAt, depth: header.delegationDepth,
      route: { ...parent.config, ...descriptor.agentProvider !== undefined && { provider: descriptor.agentProvider }, ...descriptor.agentModel !== undefined && { model: descriptor.agentModel } },
    }
    this.continuable.set(childId, record)
    return record
  }

  /** The live agent of a continuable child, cold-resumed from storage when needed. */
  private async resident(record: ContinuableChild): Promise<Agent> {
    if (record.agent !== undefined) return record.agent
    if (record.resuming === undefined) {
      // Cleared in a `.finally` callback, which runs after this assignment even when the body
      // finished at once (a live session, a missing persistence row).
      const resuming: Promise<Agent> = (async () => {
        try {
          const persistence = this.ctx.get('sessionPersistence')
          if (persistence === undefined) throw new SubagentError('NOT_RESUMABLE', unavailableText(record.id))
          const live = this.ctx.sessions.get(record.id)
          const session = live ?? (await persistence.load(record.id)).session
          const agent = this.ctx.agents.get(session.id) ?? this.ctx.agents.create({ sessionId: session.id, loop: record.route })
          this.equip(agent, true)
          record.agent = agent
          return agent
        } catch (error) {
          if (error instanceof SubagentError) throw error
          throw new SubagentError('NOT_RESUMABLE', unavailableText(record.id))
        }
      })().finally(() => {
        if (record.resuming === resuming) record.resuming = undefined
      })
      record.resuming = resuming
    }
    return record.resuming
  }

  /** One settlement notice per activation, once the child is idle with its own children quiet. */
  private watch(record: ContinuableChild): void {
    if (record.activation !== undefined || record.agent === undefined) return
    const agent = record.agent
    record.activation = (async () => {
      await this.whenQuiet(agent.id).catch(() => undefined)
      this.settle(record, agent)
    })().finally(() => { record.activation = undefined })
  }

  private settle(record: ContinuableChild, agent: Agent): void {
    const session = agent.session
    const reason = lastTurnEnd(session)
    const line = outcomeLine(record.id, reason)
    const closing = closingMessage(session)
    const content = closing.length > 0 ? [TEXT(line), TEXT('Its closing message:'), ...closing] : [TEXT(line), TEXT('It left no closing message.')]
    this.finished(record.provider, record.parentId, session, reason, session.header.seedLength ?? 0)
    const parent = this.ctx.agents.get(record.parentId)
    if (parent === undefined) return // SA-10: parent gone, the notice is dropped
    const notice: UserMessage = {
      id: randomUUID(), role: 'user', content,
      source: { kind: 'subagent-settled', form: 'notice', summary: line, senderSessionId: record.id } as never,
    }
    deliver(parent, notice, parent.status === 'running' ? 'next-step' : 'next-turn')
  }

  report(child: Agent, output: string): UserMessage {
    const parentId = child.session.header.parentSession
    const parent = parentId === undefined ? undefined : this.ctx.agents.get(parentId)
    if (parent === undefined) throw new SubagentError('NOT_A_CHILD', 'the agent that started you is not available')
    // A busy parent claims it at its next step. An idle parent is not woken by the report
    // itself: the reporting activation's settlement notice wakes it, and both are claimed by
    // the same turn (as the recordings show); the activation settles in any case.
    return parent.send({
      id: randomUUID(), role: 'user',
      content: [TEXT(`Background subagent ${child.id} reported:`), TEXT(output)],
      source: { kind: 'subagent-report', form: 'relay', senderSessionId: child.id } as never,
    }, 'next-step', parent.status === 'running')
  }

  interrupt(caller: Agent, agentId: string): void {
    const record = this.continuable.get(agentId)
    if (record === undefined || !this.isDescendant(agentId, caller.id)) return
    record.agent?.cancel({ keepInbox: true, reason: { kind: 'parent' } })
  }

  private isDescendant(id: string, ancestorId: string): boolean {
    for (let cursor = this.continuable.get(id); cursor !== undefined; cursor = this.continuable.get(cursor.parentId)) {
      if (cursor.parentId === ancestorId) return true
    }
    return false
  }

  // ---- list_agents (SA-16) ----

  async list(parent: Agent, scope: 'children' | 'descendants'): Promise<readonly string[]> {
    const lines: string[] = []
    const walk = async (parentId: string, depth: number): Promise<void> => {
      for (const entry of await this.childrenOf(parentId)) {
        const where = scope === 'descendants' ? ` parent=${parentId} depth=${depth}` : ''
        if ('diagnostic' in entry) lines.push(`${entry.id} [diagnostic: ${entry.diagnostic}]`)
        else {
          lines.push(`${entry.id} [${entry.status}]${where} — ${entry.label}`)
          if (scope === 'descendants') await walk(entry.id, depth + 1)
        }
      }
    }
    await walk(parent.id, 1)
    return lines.length === 0 ? [NO_SUBAGENTS] : lines
  }

  private async childrenOf(parentId: string): Promise<({ id: string; createdAt: number; status: ChildStatus; label: string } | { id: string; createdAt: number; diagnostic: 'corrupt' | 'unavailable' })[]> {
    const found = new Map<string, { id: string; createdAt: number; status: ChildStatus; label: string } | { id: string; createdAt: number; diagnostic: 'corrupt' | 'unavailable' }>()
    for (const record of this.continuable.values()) {
      if (record.parentId !== parentId) continue
      const status: ChildStatus = record.agent === undefined ? 'ready' : record.agent.status === 'running' ? 'running' : 'idle'
      found.set(record.id, { id: record.id, createdAt: record.createdAt, status, label: record.label })
    }
    const persistence = this.ctx.get('sessionPersistence')
    if (persistence !== undefined) {
      for (const summary of await persistence.list().catch(() => [])) {
        if (summary.parentSession !== parentId || found.has(summary.id)) continue
        // Live-but-undescribed children (one-shot runs) are omitted.
        if (this.ctx.sessions.get(summary.id) !== undefined) continue
        // SA-16: a child whose log cannot be read (damaged lines, an unreadable header) is corrupt.
        if (summary.unreadable !== undefined) { found.set(summary.id, { id: summary.id, createdAt: summary.createdAt, diagnostic: 'corrupt' }); continue }
        let stored: Awaited<ReturnType<typeof persistence.backend.loadStored>>
        try {
          stored = await persistence.backend.loadStored(summary.id)
        } catch {
          found.set(summary.id, { id: summary.id, createdAt: summary.createdAt, diagnostic: 'corrupt' })
          continue
        }
        // Gone between the listing and the load (deleted): nothing to report.
        if (stored === undefined) continue
        if (stored.header.origin !== 'subagent') continue
        const descriptor = stored.events.find(event => event.type === DESCRIPTOR_EVENT)
        if (descriptor === undefined || !isDescriptor(descriptor)) {
          found.set(summary.id, { id: summary.id, createdAt: summary.createdAt, diagnostic: 'corrupt' })
          continue
        }
        const data = descriptor.data as SubagentDescriptor
        if (data.mode !== 'continuable') continue
        found.set(summary.id, { id: summary.id, createdAt: summary.createdAt, status: 'ready', label: data.label ?? '' })
      }
    }
    return [...found.values()].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  }

  // ---- quiescence ----

  async whenQuiet(agentId: string): Promise<void> {
    while (true) {
      const agent = this.ctx.agents.get(agentId)
      if (agent !== undefined) await agent.whenIdle()
      const pending = [...this.continuable.values()]
        .filter(record => record.parentId === agentId && (record.activation !== undefined || record.resuming !== undefined))
        .map(record => record.activation ?? record.resuming)
      const oneShot = [...this.oneShot.get(agentId) ?? []].map(child => child.whenIdle())
      if (pending.length === 0 && oneShot.length === 0 && (agent === undefined || agent.status === 'idle')) return
      await Promise.all([...pending, ...oneShot].map(p => p!.catch(() => undefined)))
    }
  }
}

/** SA-11: the child's last non-empty assistant text blocks from any turn. */
function closingMessage(session: Session): TextBlock[] {
  const from = session.header.seedLength ?? 0
  for (let seq = session.length - 1; seq >= from; seq -= 1) {
    const event = session.events[seq]
    if (event.type !== 'assistant/message') continue
    const blocks = (event.data as { message: AssistantMessage }).message.content
      .filter((b): b is TextBlock => b.type === 'text' && b.text.trim() !== '')
    if (blocks.length > 0) return blocks.map(b => TEXT(b.text))
  }
  return []
}

/** SA-10/12: input for the parent; `next-step` while it works, a new turn when it is idle. */
function deliver(parent: Agent, message: UserMessage, target: 'next-step' | 'next-turn'): UserMessage {
  return parent.send(message, target, true)
}

function resultOutput(reason: TurnEndReason | undefined, text: string, runError: unknown, disposeError: unknown): { output: string; isError: boolean } {
  if (runError !== undefined || disposeError !== undefined) {
    const run = runError === undefined ? failureHeadline(reason) : `subagent run failed: ${String(runError)}`
    return { output: `Error: ${run}${disposeError === undefined ? '' : `; dispose failed: ${String(disposeError)}`}`, isError: true }
  }
  if (reason?.kind === 'completed') return { output: text, isError: false }
  const diagnostic = failureDiagnostic(reason)
  const lines = [`Error: ${failureHeadline(reason)}`]
  if (diagnostic !== undefined) lines.push(`Diagnostic: ${diagnostic}`)
  if (text !== '') lines.push('Partial output before the run ended:', text)
  return { output: lines.join('\n'), isError: true }
}
