/**
 * Folds a session log into what the terminal draws: user prompts, assistant steps (streamed from
 * `assistant/chunk` until `assistant/message` lands), tool calls paired with their results, turn
 * ends with tokens and time, and one transient status line for retries. Every event costs O(1):
 * items are found through indexes by step and call id, and only the touched item is replaced.
 *
 * Items are "settled" once nothing can change them any more; the app prints settled items once
 * into the terminal's scrollback and redraws only the live rest.
 */
import type { AssistantMessage, ContentBlock, TokenUsage, UserMessage } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/types.js'
import { typedText } from '../host/mentions.js'
import { shellRunOf } from './shell.js'
import { scanEvents } from '../session/packed-run.js'

export interface ToolCallView {
  readonly id: string
  readonly name: string
  readonly arguments: string
  readonly result?: { readonly text: string; readonly isError: boolean; readonly meta?: unknown; readonly code?: string }
  /** The calls a `run_code` program made, in order (`tool/code-dispatch*`). */
  readonly inner?: readonly ToolCallView[]
}

interface Dispatch { readonly parentCallId: string; readonly subCallId: string; readonly name: string; readonly arguments: unknown; readonly content?: readonly ContentBlock[]; readonly isError?: boolean }

export type Item =
  | { readonly kind: 'user'; readonly key: string; readonly text: string }
  /** `!command` typed in the app: what ran, how it ended, its output (src/tui/shell.ts). */
  | { readonly kind: 'shell'; readonly key: string; readonly command: string; readonly exitCode: number | null; readonly output: string }
  | {
    readonly kind: 'assistant'; readonly key: string; readonly turn: number; readonly step: number
    readonly text: string; readonly reasoning: string; readonly streaming: boolean
    readonly calls: readonly ToolCallView[]; readonly closed: boolean
  }
  | {
    readonly kind: 'turn-end'; readonly key: string; readonly turn: number; readonly reason: TurnEndReason
    readonly usage: TokenUsage; readonly steps: number; readonly durationMs?: number
  }
  | { readonly kind: 'notice'; readonly key: string; readonly level: 'error' | 'warning' | 'info'; readonly text: string }

function textOf(content: readonly ContentBlock[] | undefined): string {
  return (content ?? []).flatMap(block => block.type === 'text' ? [block.text] : []).join('')
}

function addUsage(into: TokenUsage, usage: TokenUsage | undefined): TokenUsage {
  if (usage === undefined) return into
  const out: Record<string, number> = { ...into as Record<string, number> }
  for (const [key, value] of Object.entries(usage)) if (typeof value === 'number') out[key] = (out[key] ?? 0) + value
  return out as TokenUsage
}

export function settled(item: Item): boolean {
  if (item.kind !== 'assistant') return true
  return item.closed || (!item.streaming && item.calls.every(call => call.result !== undefined))
}

export class ConversationFold {
  readonly items: Item[] = []
  /** One status line (retries); cleared when the step goes on or the turn ends. */
  status: string | undefined
  /** Input tokens of the latest model request: the context in use. */
  contextTokens = 0
  running = false
  private readonly byKey = new Map<string, number>()
  private readonly callStep = new Map<string, string>()
  private turnUsage: TokenUsage = {}
  private turnSteps = 0
  private readonly turnStart = new Map<number, number>()
  private localNotices = 0

  /**
   * A `!command` the user ran: shown when it ran (the app calls this with the message it
   * injects) and again from the log on resume; the same key, so never twice.
   */
  shell(message: UserMessage): void {
    const run = shellRunOf(message)
    if (run !== undefined) this.put({ kind: 'shell', key: `sh:${message.id}`, ...run })
    else this.jobNotice(message)
  }

  /** A background job's end (docs/jobs.md): shown when it is queued, once (the same key when claimed). */
  private jobNotice(message: UserMessage): void {
    const notice = jobNoticeOf(message)
    if (notice !== undefined) this.put({ kind: 'notice', key: `job:${message.id}`, ...notice })
  }

  private put(item: Item): void {
    const index = this.byKey.get(item.key)
    if (index === undefined) {
      this.byKey.set(item.key, this.items.length)
      this.items.push(item)
    } else this.items[index] = item
  }

  private get(key: string): Item | undefined {
    const index = this.byKey.get(key)
    return index === undefined ? undefined : this.items[index]
  }

  notice(level: 'error' | 'warning' | 'info', text: string): void {
    this.localNotices += 1
    this.put({ kind: 'notice', key: `local:${this.localNotices}`, level, text })
  }

  apply(event: SessionEvent): void {
    switch (event.type) {
      case 'turn/start': {
        const { turn } = event.data as { turn: number }
        this.turnUsage = {}
        this.turnSteps = 0
        this.turnStart.set(turn, event.time)
        this.running = true
        return
      }
      case 'user/message': {
        const message = event.data as UserMessage
        if (message.source?.kind === 'plugin') return this.shell(message)
        if (message.source?.kind !== 'user') return
        this.put({ kind: 'user', key: `u:${event.seq}`, text: typedText(message) })
        return
      }
      case 'agent/inbox/spliced':
        for (const message of (event.data as { inserted?: readonly UserMessage[] }).inserted ?? []) this.jobNotice(message)
        return
      case 'step/start':
        this.turnSteps += 1
        this.status = undefined
        return
      case 'assistant/chunk':
        this.chunk(event as SessionEvent<'assistant/chunk'>)
        return
      case 'assistant/message': {
        const data = event.data as { turn: number; step: number; message: AssistantMessage; usage?: TokenUsage }
        const key = `a:${data.turn}:${data.step}`
        const previous = this.get(key)
        const calls: ToolCallView[] = data.message.content.flatMap(block => {
          if (block.type !== 'tool-call') return []
          const old = previous?.kind === 'assistant' ? previous.calls.find(call => call.id === block.id) : undefined
          this.callStep.set(block.id, key)
          return [{ ...old, id: block.id, name: block.name, arguments: block.arguments }]
        })
        this.turnUsage = addUsage(this.turnUsage, data.usage)
        this.contextFrom(data.usage)
        const reasoning = data.message.content.flatMap(block => block.type === 'reasoning' ? [block.text] : []).join('')
        this.put({ kind: 'assistant', key, turn: data.turn, step: data.step, text: textOf(data.message.content), reasoning, streaming: false, calls, closed: false })
        this.status = undefined
        return
      }
      case 'tool/result': {
        const data = event.data as { message: { content: readonly [{ toolCallId: string; content: readonly ContentBlock[]; isError: boolean }] }; meta?: unknown; error?: { code: string } }
        const block = data.message.content[0]
        this.updateCall(block.toolCallId, call => ({
          ...call,
          result: { text: textOf(block.content), isError: block.isError, meta: data.meta, ...data.error === undefined ? {} : { code: data.error.code } },
        }))
        return
      }
      case 'tool/code-dispatch-start': {
        const data = event.data as Dispatch
        this.updateCall(data.parentCallId, call => ({ ...call, inner: [...call.inner ?? [], { id: data.subCallId, name: data.name, arguments: JSON.stringify(data.arguments ?? {}) }] }))
        return
      }
      case 'tool/code-dispatch': {
        const data = event.data as Dispatch
        const result = { text: textOf(data.content), isError: data.isError === true }
        this.updateCall(data.parentCallId, call => ({ ...call, inner: (call.inner ?? []).map(inner => inner.id === data.subCallId ? { ...inner, result } : inner) }))
        return
      }
      case 'turn/end': {
        const data = event.data as { turn: number; reason: TurnEndReason }
        const started = this.turnStart.get(data.turn)
        this.closeOpenSteps()
        this.put({
          kind: 'turn-end', key: `e:${data.turn}`, turn: data.turn, reason: data.reason, usage: this.turnUsage, steps: this.turnSteps,
          ...started === undefined ? {} : { durationMs: event.time - started },
        })
        this.status = undefined
        this.running = false
        return
      }
      case 'llm/retry': {
        const data = event.data as { retry: number; maxRetries: number | null; delayMs: number; failure: { code?: string; message?: string } }
        const of = data.maxRetries === null ? '' : `/${data.maxRetries}`
        this.status = `retry ${data.retry}${of} in ${(data.delayMs / 1000).toFixed(1)}s · ${data.failure.code ?? 'ERROR'}: ${data.failure.message ?? ''}`
        return
      }
      case 'compaction/summary':
        this.put({ kind: 'notice', key: `c:${event.seq}`, level: 'info', text: 'earlier conversation summarised to fit the context window' })
        return
      default:
    }
  }

  /** The context in use after a model request with this usage (unchanged without input tokens). */
  contextFrom(usage: TokenUsage | undefined): void {
    if (usage?.inputTokens !== undefined) this.contextTokens = usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0) + (usage.outputTokens ?? 0)
  }

  private chunk(event: SessionEvent<'assistant/chunk'>): void {
    const { turn, step, chunk } = event.data
    const key = `a:${turn}:${step}`
    let item = this.get(key)
    if (item === undefined) item = { kind: 'assistant', key, turn, step, text: '', reasoning: '', streaming: true, calls: [], closed: false }
    if (item.kind !== 'assistant' || !item.streaming) return
    if (chunk.type === 'text-delta') item = { ...item, text: item.text + chunk.text }
    else if (chunk.type === 'reasoning-delta') item = { ...item, reasoning: item.reasoning + chunk.text }
    else if (chunk.type === 'tool-call-delta') {
      const calls = item.calls.slice()
      const index = calls.findIndex(call => call.id === chunk.id)
      if (index < 0) calls.push({ id: chunk.id, name: chunk.name ?? '…', arguments: chunk.argumentsDelta })
      else calls[index] = { ...calls[index], name: chunk.name ?? calls[index].name, arguments: calls[index].arguments + chunk.argumentsDelta }
      item = { ...item, calls }
    } else if (this.get(key) !== undefined) return
    this.put(item)
    this.status = undefined
  }

  private updateCall(callId: string, update: (call: ToolCallView) => ToolCallView): void {
    const key = this.callStep.get(callId)
    const item = key === undefined ? undefined : this.get(key)
    if (item?.kind !== 'assistant') return
    this.put({ ...item, calls: item.calls.map(call => call.id === callId ? update(call) : call) })
  }

  /** A turn that ended mid-stream or mid-tool leaves its last steps as they were, settled. */
  private closeOpenSteps(): void {
    for (let index = this.items.length - 1; index >= 0 && index >= this.items.length - 8; index -= 1) {
      const item = this.items[index]
      if (item.kind === 'assistant' && !item.closed) {
        this.items[index] = { ...item, streaming: false, closed: true }
      }
    }
  }
}

const TAIL_MARKS = new Set(['turn/end', 'assistant/message'])

/**
 * The fold of a stored log's latest part, holding at least `minItems` items when the log has
 * them: what a resumed session draws (its latest items) without folding all of it. A long log is
 * mostly streamed deltas and steps long gone; folding 100k events was ~0.2 s of the terminal
 * app's first frame. The fold starts right after a `turn/end` (where a full fold's state is the
 * initial one but for the items and the context in use, taken from the log's last model usage),
 * the last few turns first, going four times further back while it holds too few items. The
 * items it holds equal the full fold's last ones. `hiddenTurns`: turns ended before its start.
 */
export function foldTail(events: readonly SessionEvent[], minItems: number): { fold: ConversationFold; hiddenTurns: number } {
  const ends: number[] = []
  let usage: TokenUsage | undefined
  const length = scanEvents(events, 0, TAIL_MARKS, event => {
    if (event.type === 'turn/end') ends.push(event.seq)
    else {
      const used = (event.data as { usage?: TokenUsage }).usage
      if (used?.inputTokens !== undefined) usage = used
    }
  })
  for (let turns = 4; ; turns *= 4) {
    const hiddenTurns = Math.max(0, ends.length - turns)
    const from = hiddenTurns === 0 ? 0 : ends[hiddenTurns - 1] + 1
    const fold = new ConversationFold()
    for (let seq = from; seq < length; seq += 1) fold.apply(events[seq])
    if (fold.items.length >= minItems || hiddenTurns === 0) {
      if (hiddenTurns > 0) fold.contextFrom(usage)
      return { fold, hiddenTurns }
    }
  }
}

/** One line for how a turn ended (empty for a completed turn). */
export function describeEnd(reason: TurnEndReason): { level: 'error' | 'warning' | 'info' | undefined; text: string } {
  switch (reason.kind) {
    case 'completed': return { level: undefined, text: '' }
    case 'aborted': return { level: 'info', text: reason.reason.kind === 'user' ? 'cancelled' : `cancelled (${reason.reason.kind})` }
    case 'error': return { level: 'error', text: `${reason.error.code}: ${reason.error.message}` }
    case 'blocked': return { level: 'warning', text: `blocked${reason.message ? `: ${reason.message}` : ''}` }
    case 'max-tokens': return { level: 'warning', text: 'the model hit its output limit' }
    case 'interrupted': return { level: 'warning', text: 'interrupted (the process stopped during this turn)' }
    default: return { level: 'info', text: String((reason as { kind: string }).kind) }
  }
}

export { compactNumber } from '../host/numbers.js'

export function duration(ms: number): string {
  if (ms < 1000) return `${ms}ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`
  return `${Math.floor(ms / 60_000)}m${Math.round((ms % 60_000) / 1000)}s`
}

/**
 * A background job's settlement notice as the conversation shows it: the model's text without
 * its closing instruction (plugin `tool-jobs`), or the summary of a log written before it
 * (plugin `jobs`, with `status` in its source).
 */
export function jobNoticeOf(message: UserMessage): { level: 'info' | 'warning'; text: string } | undefined {
  const source = message.source as { kind?: string; plugin?: unknown; summary?: unknown; status?: unknown } | undefined
  if (source?.kind !== 'plugin' || typeof source.summary !== 'string') return undefined
  if (source.plugin === 'jobs') return { level: source.status === 'completed' ? 'info' : 'warning', text: source.summary }
  if (source.plugin !== 'tool-jobs') return undefined
  const text = message.content.map(block => block.type === 'text' ? block.text : '').join('')
  const status = / finished \[status: (\w+)/.exec(text)?.[1]
  return { level: status === 'completed' ? 'info' : 'warning', text: text.replace(/ Read its output with job_output\.$/, '') }
}
