/**
 * Compaction as a plugin (product.md "Context management"). History is never deleted: both
 * tiers rewrite the model-visible surface with events, so the request stays a pure function of
 * the log and the loop invariant holds before and after.
 *
 * - Pruning tier: old large tool results are replaced by a short stub through the tool-result
 *   replace rule (S-9); a `compaction/prune` trace event lists them.
 * - Summarising tier: one model call condenses the oldest surface span; a plugin `user/message`
 *   with `surfaceOp: replace` takes the span's place, between `compaction/start`,
 *   `compaction/summary` and `compaction/end` trace events.
 *
 * Triggers: before a step when the estimated context passes `threshold` of the model's window;
 * a `/compact` prompt (a turn that compacts and makes no model call); and a provider
 * context-overflow error, which compacts and retries the request once.
 */
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { Message, TextBlock, TokenUsage, ToolResultMessage, UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import { SURFACE_EVENT_TYPES, type SessionEvent } from '../session/types.js'
import { deriveEventMessage } from '../session/surface.js'
import '../agent/api.js'
import '../agent/events.js'
import '../llm/api.js'
import '../commands/api.js'

const COMPACTION_FOLD_TYPES: ReadonlySet<string> = new Set(['request/context', 'compaction/end', ...SURFACE_EVENT_TYPES])

export interface CompactionConfig {
  /** Fraction of the context window that triggers compaction before a step (default 0.8). */
  readonly threshold?: number
  /** Fraction of the estimated context kept verbatim at the recent end (default 0.16). */
  readonly keepRecent?: number
  /** Tool results longer than this (characters) are pruned when old (default 4000). */
  readonly pruneAbove?: number
  /** Output cap of the summary call (default 4096 tokens). */
  readonly summaryMaxTokens?: number
  /** Model route of the summary call; defaults to the session's current route. */
  readonly provider?: string
  readonly model?: string
}

export interface CompactionOutcome {
  readonly pruned: number
  readonly summarised: boolean
  readonly compactionId?: string
}

const CHARS_PER_TOKEN = 4
const SUMMARY_SYSTEM = [
  'You condense the earlier part of a coding-agent conversation so the agent can continue without it.',
  'Write a factual summary: the user\'s goals and constraints, decisions made, files and commands involved with their outcomes, open problems and next steps.',
  'Keep exact names, paths, identifiers and error messages. Do not address the user. Do not invent anything.',
].join(' ')
const SUMMARY_INTRO = 'Summary of the earlier conversation, written automatically to free context. Treat it as established background and continue the task from the messages that follow without mentioning this summary.'

function textOf(blocks: readonly { type: string; text?: string }[]): string {
  return blocks.filter((block): block is TextBlock => block.type === 'text').map(block => block.text).join('\n')
}

/** A rough, provider-neutral size estimate of one message (characters / 4). */
export function estimateTokens(message: Message): number {
  let chars = 0
  for (const block of message.content) {
    if (block.type === 'text' || block.type === 'reasoning') chars += block.text.length
    else if (block.type === 'tool-call') chars += block.name.length + block.arguments.length
    else if (block.type === 'tool-result') chars += textOf(block.content).length
    else if (block.type === 'image') chars += 1000 * CHARS_PER_TOKEN
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + 4
}

function render(message: Message): string {
  const parts: string[] = []
  for (const block of message.content) {
    if (block.type === 'text') parts.push(block.text)
    else if (block.type === 'tool-call') parts.push(`[tool call ${block.name} ${block.arguments}]`)
    else if (block.type === 'tool-result') parts.push(`[tool result${block.isError ? ' (error)' : ''}]\n${textOf(block.content)}`)
    else if (block.type === 'image') parts.push('[image]')
  }
  const who = message.source.kind === 'tool' ? 'tool' : message.role
  return `### ${who}\n${parts.join('\n')}`
}

interface SurfaceNode {
  readonly seq: number
  readonly event: SessionEvent
  readonly message: Message | null
  readonly tokens: number
}

/**
 * What the per-step check needs, folded forward from the events appended since the last look so
 * the check stays flat in log size: `request/context` is written only when the route changes,
 * so the latest one can sit at the start of a long session.
 */
interface SessionFold {
  scanned: number
  context: { provider: string; model: string; contextWindow?: number } | undefined
  /** Estimated tokens of the surface; recomputed only when a replace happened. */
  surfaceTokens: number
  generation: number
  /** Seq of the last assistant/message reporting input usage, and of the last compaction/end (-1: none). */
  usageSeq: number
  compactionEndSeq: number
}

export class CompactionPlugin {
  static readonly inject = ['sessions', 'llm']

  /** Steps already retried after a context overflow, keyed `session:turn:step`. */
  private readonly overflowRetried = new Set<string>()
  private readonly folds = new WeakMap<Session, SessionFold>()

  constructor(private readonly ctx: Context, private readonly config: CompactionConfig = {}) {
    const plugin = this
    ctx.on('agent/pre-step', async (payload, next) => {
      if (isCompactCommand(payload.messages)) {
        await this.compact(payload.session, { turn: payload.turn, signal: payload.signal, force: true })
        // The command itself never reaches the model: an empty first step makes no request.
        return { kind: 'enter', messages: [] }
      }
      await this.maybeCompact(payload.session, payload.turn, payload.messages, payload.signal)
      return next()
    })
    // `/compact` through the command registry (surfaces run it between turns).
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'compact',
        description: 'Compact the conversation now: prune old tool output and summarise the history',
        async run({ agent, signal }) {
          if (agent.status === 'running') return { kind: 'error', text: 'Compaction runs between turns: wait for the running turn to end.' }
          const outcome = await plugin.compact(agent.session, { turn: agent.session.position.turn, signal, force: true })
          return outcome.summarised || outcome.pruned > 0
            ? { kind: 'success', text: `Compacted: ${outcome.pruned} tool result(s) pruned${outcome.summarised ? ', history summarised' : ''}.` }
            : { kind: 'success', text: 'Nothing to compact.' }
        },
      })
    })
    ctx.on('agent/request-error', async (payload, next) => {
      const key = `${payload.session.id}:${payload.turn}:${payload.step}`
      if (payload.failure.code !== 'CONTEXT_WINDOW_EXCEEDED' || this.overflowRetried.has(key)) return next()
      this.overflowRetried.add(key)
      const outcome = await this.compact(payload.session, { turn: payload.turn, signal: payload.signal, force: true })
      return outcome.pruned > 0 || outcome.summarised ? { kind: 'retry' } : next()
    })
  }

  private fold(session: Session): SessionFold {
    let fold = this.folds.get(session)
    if (fold === undefined) this.folds.set(session, fold = { scanned: 0, context: undefined, surfaceTokens: 0, generation: 0, usageSeq: -1, compactionEndSeq: -1 })
    const folding = fold
    // Surface events (the only ones with a surfaceOp) and the types read here.
    fold.scanned = scanEvents(session.events, fold.scanned, COMPACTION_FOLD_TYPES, (event) => {
      const seq = event.seq
      if (event.type === 'request/context') folding.context = event.data as SessionFold['context']
      else if (event.type === 'compaction/end') folding.compactionEndSeq = seq
      if (event.type === 'assistant/message' && (event.data as { usage?: TokenUsage }).usage?.inputTokens !== undefined) folding.usageSeq = seq
      if (event.surfaceOp === 'append') {
        const message = deriveEventMessage(event)
        if (message !== null) folding.surfaceTokens += estimateTokens(message)
      }
    })
    if (fold.generation !== session.replaceGeneration) {
      fold.generation = session.replaceGeneration
      fold.surfaceTokens = this.nodes(session).reduce((sum, node) => sum + node.tokens, 0)
    }
    return fold
  }

  private route(session: Session): { provider: string; model: string; contextWindow?: number } | undefined {
    const data = this.fold(session).context
    if (data === undefined) return undefined
    const contextWindow = data.contextWindow ?? this.ctx.llm.model(data.provider, data.model)?.contextWindow
    return { provider: this.config.provider ?? data.provider, model: this.config.model ?? data.model, contextWindow }
  }

  private nodes(session: Session): SurfaceNode[] {
    return session.surface().map(seq => {
      const event = session.events[seq]
      const message = deriveEventMessage(event)
      return { seq, event, message, tokens: message === null ? 0 : estimateTokens(message) }
    })
  }

  /** Estimated prompt size: the last request's reported usage when there is one, else characters / 4. */
  estimate(session: Session, incoming: readonly Message[] = []): number {
    const extra = incoming.reduce((sum, message) => sum + estimateTokens(message), 0)
    const fold = this.fold(session)
    // A compaction since the last reported usage makes that usage stale: fall back to the estimate.
    if (fold.usageSeq < 0 || fold.usageSeq < fold.compactionEndSeq) return fold.surfaceTokens + extra
    const usage = (session.events[fold.usageSeq].data as { usage: TokenUsage }).usage
    // Only what came after the last model response is counted here (usually one step's results).
    let after = 0
    for (let seq = fold.usageSeq + 1; seq < session.length; seq += 1) {
      const message = deriveEventMessage(session.events[seq])
      if (message !== null) after += estimateTokens(message)
    }
    return usage.inputTokens! + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + (usage.outputTokens ?? 0) + after + extra
  }

  private async maybeCompact(session: Session, turn: number, incoming: readonly Message[], signal: AbortSignal): Promise<void> {
    const route = this.route(session)
    if (route?.contextWindow === undefined) return
    const limit = route.contextWindow * (this.config.threshold ?? 0.8)
    if (this.estimate(session, incoming) <= limit) return
    await this.compact(session, { turn, signal, force: false })
  }

  /** Runs both tiers now; `force` summarises even when pruning alone would fit. */
  async compact(session: Session, options: { turn: number; signal: AbortSignal; force: boolean }): Promise<CompactionOutcome> {
    const pruned = this.prune(session, options.turn)
    const route = this.route(session)
    if (!options.force && route?.contextWindow !== undefined && this.estimate(session) <= route.contextWindow * (this.config.threshold ?? 0.8)) {
      return { pruned, summarised: false }
    }
    const compactionId = randomUUID()
    const summarised = await this.summarise(session, options.turn, compactionId, options.signal)
    return { pruned, summarised, compactionId }
  }

  /** The span kept verbatim starts at a node that is not a tool result (never splits a call from its result). */
  private recentBoundary(nodes: readonly SurfaceNode[]): number {
    const total = nodes.reduce((sum, node) => sum + node.tokens, 0)
    const keep = total * (this.config.keepRecent ?? 0.16)
    let kept = 0
    let boundary = nodes.length
    while (boundary > 0 && kept + nodes[boundary - 1].tokens <= keep) {
      boundary -= 1
      kept += nodes[boundary].tokens
    }
    // Always keep the newest node, and move the boundary back to a message that opens an exchange.
    boundary = Math.min(boundary, nodes.length - 1)
    while (boundary > 0 && nodes[boundary].event.type === 'tool/result') boundary -= 1
    return boundary
  }

  private prune(session: Session, turn: number): number {
    if (!session.position.turnOpen) return 0
    const limit = this.config.pruneAbove ?? 4000
    const nodes = this.nodes(session)
    const boundary = this.recentBoundary(nodes)
    const prunedSeqs: number[] = []
    for (const node of nodes.slice(0, boundary)) {
      if (node.event.type !== 'tool/result' || node.message === null) continue
      const data = node.event.data as { turn: number; step: number; message: ToolResultMessage; error?: unknown; meta?: unknown }
      const block = data.message.content[0]
      const text = textOf(block.content)
      if (text.length <= limit || text.startsWith('[pruned')) continue
      const stub = `[pruned: this earlier tool output (${text.length} characters) was removed to free context; run the tool again if it is still needed]`
      session.append('tool/result', {
        ...data,
        message: { ...data.message, content: [{ ...block, content: [{ type: 'text', text: stub }] }] },
      } as never, { surfaceOp: { op: 'replace', start: node.seq, end: node.seq }, sourceEventSeqs: [node.seq] })
      prunedSeqs.push(node.seq)
    }
    if (prunedSeqs.length > 0) session.append('compaction/prune', { turn, seqs: prunedSeqs })
    return prunedSeqs.length
  }

  private async summarise(session: Session, turn: number, compactionId: string, signal: AbortSignal): Promise<boolean> {
    const nodes = this.nodes(session)
    const boundary = this.recentBoundary(nodes)
    const span = nodes.slice(0, boundary).filter(node => node.message !== null)
    if (span.length === 0) return false
    const route = this.route(session)
    if (route === undefined) return false
    const start = session.append('compaction/start', { compactionId, turn })
    const transcript = span.map(node => render(node.message!)).join('\n\n')
    const maxTokens = this.config.summaryMaxTokens ?? 4096
    let summary = ''
    let usage: TokenUsage | undefined
    let failure: string | undefined
    try {
      const call = this.ctx.llm.prepareCall({
        provider: route.provider,
        model: route.model,
        system: SUMMARY_SYSTEM,
        messages: [Object.freeze<Message>({ id: `compaction-${compactionId}`, role: 'user', source: { kind: 'plugin', plugin: 'compaction' }, content: [{ type: 'text', text: transcript }] })],
        maxTokens,
        thinking: false,
        signal,
        meta: { purpose: 'compaction', sessionId: session.id },
      })
      for await (const chunk of this.ctx.llm.stream(call)) {
        if (chunk.type === 'text-delta') summary += chunk.text
        else if (chunk.type === 'usage') usage = chunk.usage
        else if (chunk.type === 'finish' && (chunk.reason.kind === 'error' || chunk.reason.kind === 'aborted')) failure = `${chunk.reason.failure.code}: ${chunk.reason.failure.message}`
      }
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error)
    }
    summary = summary.trim()
    if (failure !== undefined || summary === '') {
      session.append('compaction/end', { compactionId, turn, error: failure ?? 'the summary was empty' })
      return false
    }
    const last = nodes[boundary - 1].seq
    const shadowed = nodes.slice(0, boundary).map(node => node.seq)
    const summaryEvent = session.append('compaction/summary', {
      compactionId,
      summary: [{ type: 'text', text: summary }],
      shadowedRange: { start: nodes[0].seq, end: last },
      shadowedSeqs: shadowed,
      shadowedTokenCount: nodes.slice(0, boundary).reduce((sum, node) => sum + node.tokens, 0),
      provider: route.provider,
      model: route.model,
      maxTokens,
      ...(usage !== undefined ? { usage } : {}),
    })
    const message: UserMessage = {
      id: randomUUID(),
      role: 'user',
      source: { kind: 'plugin', plugin: 'compaction', compactionId },
      content: [{ type: 'text', text: SUMMARY_INTRO }, { type: 'text', text: summary }],
    }
    session.append('user/message', message, {
      surfaceOp: { op: 'replace', start: nodes[0].seq, end: last },
      sourceEventSeqs: [start.seq, summaryEvent.seq, ...shadowed],
    })
    session.append('compaction/end', { compactionId, turn })
    return true
  }
}

function isCompactCommand(messages: readonly UserMessage[]): boolean {
  return messages.length === 1 && messages[0].source.kind === 'user' && /^\/compact\s*$/.test(textOf(messages[0].content).trim())
}
