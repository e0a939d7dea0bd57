/**
 * Folds a session log into the items the conversation draws: user prompts, assistant steps
 * (streamed from `assistant/chunk` until `assistant/message` lands), tool calls paired with their
 * results, turn ends with token usage, retries and errors. Each event costs O(1): the fold keeps
 * indexes by step and call id and replaces only the item an event touches, so memoised rows
 * re-render only when their own item changed.
 */
import type { SessionEvent } from './types'
import { SessionState, type GoalItem } from './session-state'

export interface Usage { inputTokens?: number; outputTokens?: number; cacheReadTokens?: number; reasoningTokens?: number }

export interface ToolCallView {
  readonly id: string
  readonly name: string
  readonly arguments: string
  readonly startedAt?: number
  readonly result?: { text: string; isError: boolean; meta?: any; error?: { name: string; code: string }; time: number; images?: readonly MessageImage[] }
  /** The calls a `run_code` program made, in order (`tool/code-dispatch*`). */
  readonly inner?: readonly ToolCallView[]
}

/** An image of a user message: a stored attachment (by id) or inline data. */
export interface MessageImage {
  readonly attachmentId?: string
  readonly data?: string
  readonly mediaType: string
  readonly name?: string
  readonly width?: number
  readonly height?: number
}

/** A tool result's images (read_image, an MCP tool), when it has any. */
function resultImages(content: readonly any[] | undefined): { images?: readonly MessageImage[] } {
  const images = Array.isArray(content) ? imagesOf(content) : []
  return images.length > 0 ? { images } : {}
}

/** The images of a message's content blocks, in order. */
export function imagesOf(content: readonly any[] | undefined): MessageImage[] {
  const out: MessageImage[] = []
  for (const block of content ?? []) {
    if (block?.type !== 'image') continue
    if (block.attachment) {
      const a = block.attachment
      out.push({ attachmentId: a.attachmentId, mediaType: a.mediaType, ...a.name ? { name: a.name } : {}, ...a.width ? { width: a.width, height: a.height } : {} })
    } else if (typeof block.data === 'string') out.push({ data: block.data, mediaType: block.mimeType })
  }
  return out
}

/** A permission rule as approval events carry it. */
export interface RuleRef { text: string; kind: 'allow' | 'ask' | 'deny'; source: string }
const isRule = (value: unknown): value is RuleRef => typeof value === 'object' && value !== null
  && typeof (value as RuleRef).text === 'string' && typeof (value as RuleRef).source === 'string' && typeof (value as RuleRef).kind === 'string'

export type Item =
  | { kind: 'user'; key: string; seq: number; text: string; time: number; references?: readonly string[]; images?: readonly MessageImage[] }
  | { kind: 'assistant'; key: string; seq: number; turn: number; step: number; text: string; reasoning: string; streaming: boolean; calls: readonly ToolCallView[]; usage?: Usage; time: number; interrupted?: boolean }
  | { kind: 'turn-end'; key: string; seq: number; turn: number; reason: any; usage: Usage; time: number; durationMs?: number; prompt?: string; mentions?: readonly string[]; promptImages?: readonly string[] }
  /** One line per retried model request: updated in place by every retry of the same step. */
  | { kind: 'retry'; key: string; seq: number; retry: number; maxRetries: number | null; cause: string; delayMs: number; time: number; state: 'waiting' | 'trying' | 'failed' | 'recovered' }
  | { kind: 'notice'; key: string; seq: number; level: 'error' | 'warning' | 'info'; text: string; time: number; output?: boolean }
  | { kind: 'approval'; key: string; seq: number; id: string; toolName: string; callId: string; reason: string; arguments: string; outcome?: string; time: number
      /** The ask rule that made it ask, and the rule that decided it (docs/security.md, "Permission rules"). */
      rule?: RuleRef; decidedBy?: RuleRef }
  /** A goal round began or the goal changed (session-state.ts). */
  | GoalItem
  /** A `!command` the user ran in the terminal app (src/tui/shell.ts), drawn as a bash card. */
  | { kind: 'shell'; key: string; seq: number; time: number; call: ToolCallView }

/** The terminal app's `!command` message: a header line, a blank line, the output (src/tui/shell.ts). */
const SHELL_HEADER_END = 'It was not a tool call.\n\n'

function shellItem(seq: number, time: number, message: any): Item {
  const text = textOf(message.content)
  const at = text.indexOf(SHELL_HEADER_END)
  const output = at < 0 ? text : text.slice(at + SHELL_HEADER_END.length)
  const exitCode = typeof message.source.exitCode === 'number' ? message.source.exitCode : null
  return {
    kind: 'shell', key: `sh:${seq}`, seq, time,
    call: {
      id: `shell:${message.id}`, name: 'bash', arguments: JSON.stringify({ command: message.source.command, description: 'You ran this in your shell; the model saw its output' }),
      // Stopped (Esc) has no exit code: drawn as failed.
      result: { text: output === '(no output)' ? '' : output, isError: exitCode === null, meta: { exitCode }, time },
    },
  }
}

function textOf(content: readonly any[] | undefined): string {
  return (content ?? []).filter(block => block.type === 'text').map(block => block.text).join('')
}

/** A mention's reference block (src/web/files.ts): `<file path="…" …>`. */
const REFERENCE = /^<file path="([^"]*)"[^>]*>/

function referencesOf(content: readonly any[] | undefined): string[] {
  const out: string[] = []
  for (const block of content ?? []) {
    const match = block?.type === 'text' && typeof block.text === 'string' ? REFERENCE.exec(block.text) : null
    if (match) out.push(match[1]!.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&amp;/g, '&'))
  }
  return out
}

function addUsage(into: Usage, usage: Usage | undefined): Usage {
  if (!usage) return into
  const out: any = { ...into }
  for (const [key, value] of Object.entries(usage)) if (typeof value === 'number') out[key] = (out[key] ?? 0) + value
  return out
}

export class LogFold {
  items: Item[] = []
  /** The latest plan (`todo/write`), drawn as a strip above the composer. */
  todos: readonly { content: string; status: string }[] = []
  /** The current goal and plan mode (session-state.ts). */
  readonly state = new SessionState()
  /** Bumped on every change so React sees a new value. */
  version = 0
  private readonly byKey = new Map<string, number>()
  private readonly callStep = new Map<string, string>()
  private turnUsage: Usage = {}
  private turnStart = new Map<number, number>()
  private readonly toolStarts = new Map<string, number>()
  private readonly callArgs = new Map<string, string>()
  /** The retry line of the step being retried, until the step lands or the turn ends. */
  private openRetry: string | undefined
  /** The latest user prompt, offered again by Retry after a failed turn. */
  private lastPrompt: string | undefined
  /** Its `@` mentions, attached again by Retry. */
  private lastMentions: readonly string[] = []
  /** The stored images of the latest prompt (attachment ids), sent again by Retry. */
  private lastPromptImages: string[] = []

  /** A background job's end (docs/jobs.md): shown when it is queued, once (the same key when claimed). */
  private jobNotice(seq: number, time: number, message: any): boolean {
    const source = message?.source
    if (source?.kind !== 'plugin' || typeof source.summary !== 'string') return false
    let level: 'info' | 'warning'
    let text: string
    if (source.plugin === 'jobs') {
      // A log written before the notices took the recorded shape: its summary and status.
      level = source.status === 'completed' ? 'info' : 'warning'
      text = source.summary
    } else if (source.plugin === 'tool-jobs') {
      const full = (Array.isArray(message.content) ? message.content : []).map((block: any) => block?.type === 'text' ? block.text : '').join('')
      level = / finished \[status: completed\b/.test(full) ? 'info' : 'warning'
      text = full.replace(/ Read its output with job_output\.$/, '')
    } else return false
    this.put({ kind: 'notice', key: `job:${message.id}`, seq, level, text, time })
    return true
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

  /** Applies events in seq order; returns true when the items changed. */
  apply(events: readonly SessionEvent[]): boolean {
    const before = this.version
    for (const event of events) {
      try {
        this.one(event)
      } catch {
        this.unreadable(event)
      }
    }
    if (this.version !== before) this.items = this.items.slice()
    return this.version !== before
  }

  /**
   * Starts a fold at a page boundary (a turn start): `seed` holds the events before it that carry
   * state (`sessions.history` sends them, src/web/history-page.ts). They set the plan, plan mode,
   * the goal and the latest prompt as folding the whole prefix would; their items are not drawn.
   */
  seed(events: readonly SessionEvent[]): void {
    if (events.length === 0) return
    this.apply(events)
    this.items = []
    this.byKey.clear()
    this.unreadableCount = 0
    this.version += 1
  }

  /**
   * Puts the items of `earlier` (a fold of the page just before this fold's first event, started
   * from its own seed) in front of this fold's. Pages hold whole turns and items are keyed by
   * turn, step, call or seq, so no item spans two pages; this fold's state (plan, goal, the open
   * turn) is the newer one and stays. Items already drawn keep their identity.
   */
  prepend(earlier: LogFold): void {
    if (earlier.items.length === 0) return
    const older = earlier.items.map(item => this.byKey.has(item.key) ? { ...item, key: `${item.key}:earlier` } : item)
    this.items = [...older, ...this.items]
    this.byKey.clear()
    this.items.forEach((item, index) => this.byKey.set(item.key, index))
    this.unreadableCount += earlier.unreadableCount
    this.version += 1
  }

  /**
   * A local notice (e.g. an API error) shown in the conversation. `output`: a command's text,
   * drawn as a terminal would (monospace, spaces kept), since tables such as `/mcp` line up by spaces.
   */
  notice(level: 'error' | 'warning' | 'info', text: string, output = false): void {
    this.put({ kind: 'notice', key: `local:${Date.now()}:${Math.random()}`, seq: Number.MAX_SAFE_INTEGER, level, text, time: Date.now(), ...output ? { output } : {} })
    this.version += 1
    this.items = this.items.slice()
  }

  /** Events this fold could not read (an unexpected shape): one notice says so, the rest still draws. */
  unreadableCount = 0

  private unreadable(event: SessionEvent): void {
    this.unreadableCount += 1
    this.put({
      kind: 'notice', key: 'unreadable', seq: event.seq, level: 'warning', time: event.time,
      text: `${this.unreadableCount} event${this.unreadableCount === 1 ? '' : 's'} of this session could not be shown (first: #${this.get('unreadable')?.seq ?? event.seq} ${String(event.type)}); the rest of the conversation is drawn.`,
    })
    this.version += 1
  }

  private one(event: SessionEvent): void {
    const data = event.data
    const state = this.state.apply(event)
    if (state.item !== undefined) this.put(state.item)
    if (state.changed) this.version += 1
    switch (event.type) {
      case 'agent/inbox/spliced':
        for (const message of data.inserted ?? []) this.jobNotice(event.seq, event.time, message)
        return
      case 'turn/start':
        // A finished plan is not pinned into later turns (it stays inline where it was written).
        if (this.todos.length > 0 && this.todos.every(todo => todo.status === 'completed')) {
          this.todos = []
          this.version += 1
        }
        this.turnUsage = {}
        this.turnStart.set(data.turn, event.time)
        return
      case 'user/message': {
        if (data.source?.kind === 'plugin' && data.source.plugin === 'shell' && typeof data.source.command === 'string') {
          this.put(shellItem(event.seq, event.time, data))
          return
        }
        if (this.jobNotice(event.seq, event.time, data)) return
        if (data.source?.kind !== 'user') return
        {
          // `@` mentions arrive as reference blocks after the typed text: listed by path, not shown.
          const references = referencesOf(data.content)
          const typed = references.length === 0 ? textOf(data.content) : textOf((data.content as any[]).filter(block => block.type !== 'text' || !REFERENCE.test(block.text)))
          const images = imagesOf(data.content)
          this.put({ kind: 'user', key: `u:${event.seq}`, seq: event.seq, text: typed, time: event.time, ...references.length > 0 ? { references } : {}, ...images.length > 0 ? { images } : {} })
          this.lastPrompt = typed
          this.lastMentions = references
          this.lastPromptImages = images.flatMap(image => image.attachmentId ? [image.attachmentId] : [])
        }
        break
      }
      case 'assistant/chunk':
        this.chunk(event)
        break
      case 'assistant/message': {
        const key = `a:${data.turn}:${data.step}`
        const previous = this.get(key)
        // Older logs keep the content on the event itself (`assistant/message.content`).
        const content: any[] = data.message?.content ?? data.content ?? []
        const calls: ToolCallView[] = content.filter(block => block.type === 'tool-call').map(block => {
          const old = previous?.kind === 'assistant' ? previous.calls.find(call => call.id === block.id) : undefined
          this.callStep.set(block.id, key)
          return { ...old, id: block.id, name: block.name, arguments: block.arguments }
        })
        this.turnUsage = addUsage(this.turnUsage, data.usage)
        this.put({
          kind: 'assistant', key, seq: previous?.seq ?? event.seq, turn: data.turn, step: data.step,
          text: textOf(content), reasoning: content.filter(block => block.type === 'reasoning').map(block => block.text).join(''),
          streaming: false, calls, usage: data.usage, time: event.time, ...data.interrupted === true ? { interrupted: true } : {},
        })
        this.settleRetry('recovered')
        break
      }
      case 'approval/asked':
        this.put({ kind: 'approval', key: `approval:${data.id}`, seq: event.seq, id: data.id, toolName: data.toolName, callId: data.callId, reason: data.reason, arguments: this.callArgs.get(data.callId) ?? '', time: event.time, ...(isRule(data.rule) ? { rule: data.rule } : {}) })
        this.version += 1
        break
      case 'approval/decided': {
        const item = this.get(`approval:${data.id}`)
        if (item?.kind === 'approval') {
          this.put({ ...item, outcome: data.outcome, ...(isRule(data.rule) ? { decidedBy: data.rule } : {}) })
          this.version += 1
        }
        break
      }
      case 'tool/call':
        this.callArgs.set(data.callId, data.arguments ?? '')
        this.toolStarts.set(data.callId, event.time)
        this.updateCall(data.callId, call => ({ ...call, startedAt: event.time }))
        break
      case 'tool/result': {
        // Older logs: `{callId, content, isError}` on the event instead of a tool-result message.
        const block = data.message?.content?.[0] ?? { toolCallId: data.callId, content: data.content, isError: data.isError === true }
        this.updateCall(block.toolCallId, call => ({
          ...call,
          startedAt: call.startedAt ?? this.toolStarts.get(block.toolCallId),
          result: { text: textOf(block.content), isError: block.isError === true, meta: data.meta, error: data.error, time: event.time, ...resultImages(block.content) },
        }))
        break
      }
      // A program's calls nest under its run_code call, live.
      case 'tool/code-dispatch-start':
        this.updateCall(data.parentCallId, call => ({ ...call, inner: [...call.inner ?? [], { id: data.subCallId, name: data.name, arguments: JSON.stringify(data.arguments ?? {}), startedAt: event.time }] }))
        break
      case 'tool/code-dispatch':
        this.updateCall(data.parentCallId, call => ({
          ...call,
          inner: (call.inner ?? []).map(inner => inner.id === data.subCallId ? { ...inner, result: { text: textOf(data.content), isError: data.isError === true, time: event.time, ...resultImages(data.content) } } : inner),
        }))
        break
      case 'todo/write':
        this.todos = data.todos ?? []
        break
      case 'turn/end': {
        const started = this.turnStart.get(data.turn)
        this.put({ kind: 'turn-end', key: `e:${data.turn}`, seq: event.seq, turn: data.turn, reason: data.reason, usage: this.turnUsage, time: event.time,
          ...started === undefined ? {} : { durationMs: event.time - started }, ...this.lastPrompt === undefined ? {} : { prompt: this.lastPrompt }, ...this.lastMentions.length > 0 ? { mentions: this.lastMentions } : {}, ...this.lastPromptImages.length > 0 ? { promptImages: this.lastPromptImages } : {} })
        this.finishStreaming(data.reason?.kind !== 'completed')
        this.settleRetry(data.reason?.kind === 'error' ? 'failed' : 'recovered')
        break
      }
      case 'llm/retry': {
        const failure = data.failure ?? {}
        const key = `retry:${data.retryId ?? `${data.turn}:${data.step}`}`
        const previous = this.get(key)
        // The failed attempt's partial text stays, marked interrupted; the retry streams afresh.
        this.interruptStep(`a:${data.turn}:${data.step}`, data.retry)
        this.put({
          kind: 'retry', key, seq: previous?.seq ?? event.seq, retry: data.retry, maxRetries: data.maxRetries ?? null, delayMs: data.delayMs ?? 0, time: event.time, state: 'waiting',
          cause: `${failure.code ?? 'ERROR'}${failure.status ? ` ${failure.status}` : ''}${failure.message ? `: ${failure.message}` : ''}`,
        })
        this.openRetry = key
        break
      }
      case 'llm/retry-started': {
        const item = this.openRetry === undefined ? undefined : this.get(this.openRetry)
        if (item?.kind !== 'retry') return
        this.put({ ...item, state: 'trying' })
        break
      }
      case 'compaction/summary':
        this.put({ kind: 'notice', key: `c:${event.seq}`, seq: event.seq, level: 'info', text: 'Earlier conversation was summarised to fit the context window.', time: event.time })
        break
      default:
        return
    }
    this.version += 1
  }

  private chunk(event: SessionEvent): void {
    const { turn, step, chunk } = event.data
    const key = `a:${turn}:${step}`
    let item = this.get(key)
    if (item === undefined) {
      item = { kind: 'assistant', key, seq: event.seq, turn, step, text: '', reasoning: '', streaming: true, calls: [], time: event.time }
    }
    if (item.kind !== 'assistant' || !item.streaming) return
    if (chunk.type === 'text-delta') item = { ...item, text: item.text + chunk.text }
    else if (chunk.type === 'reasoning-delta') item = { ...item, reasoning: item.reasoning + chunk.text }
    else if (chunk.type === 'tool-call-delta') {
      const calls = item.calls.slice()
      const index = calls.findIndex(call => call.id === chunk.id)
      if (index < 0) calls.push({ id: chunk.id, name: chunk.name ?? '…', arguments: chunk.argumentsDelta ?? '' })
      else calls[index] = { ...calls[index], name: chunk.name ?? calls[index].name, arguments: calls[index].arguments + (chunk.argumentsDelta ?? '') }
      item = { ...item, calls }
    } else if (chunk.type === 'usage') item = { ...item, usage: chunk.usage }
    else if (this.get(key) !== undefined) return
    this.put(item)
  }

  private updateCall(callId: string, update: (call: ToolCallView) => ToolCallView): void {
    const key = this.callStep.get(callId)
    const item = key === undefined ? undefined : this.get(key)
    if (item?.kind !== 'assistant') return
    this.put({ ...item, calls: item.calls.map(call => call.id === callId ? update(call) : call) })
  }

  /** A turn that ended mid-stream (stop, error) leaves its partial step as it was, not streaming (marked interrupted). */
  private finishStreaming(interrupted: boolean): void {
    for (let index = this.items.length - 1; index >= 0 && index >= this.items.length - 8; index -= 1) {
      const item = this.items[index]
      if (item.kind === 'assistant' && item.streaming) this.items[index] = { ...item, streaming: false, ...interrupted && (item.text || item.calls.length > 0) ? { interrupted: true } : {} }
    }
  }

  /** A step whose request failed mid-stream: its partial item moves aside (interrupted) so the retry starts a new one. */
  private interruptStep(key: string, retry: number): void {
    const index = this.byKey.get(key)
    const item = index === undefined ? undefined : this.items[index]
    if (index === undefined || item?.kind !== 'assistant' || !item.streaming) return
    const moved = `${key}:try${retry}`
    this.byKey.delete(key)
    this.byKey.set(moved, index)
    this.items[index] = { ...item, key: moved, streaming: false, interrupted: true }
  }

  private settleRetry(state: 'failed' | 'recovered'): void {
    const item = this.openRetry === undefined ? undefined : this.get(this.openRetry)
    this.openRetry = undefined
    if (item?.kind === 'retry') this.put({ ...item, state })
  }
}

export function describeEnd(reason: any): { level: 'error' | 'warning' | 'info' | null; text: string } {
  switch (reason?.kind) {
    case 'completed': return { level: null, text: '' }
    case 'aborted': return { level: 'info', text: reason.reason?.kind === 'user' ? 'Stopped' : `Stopped (${reason.reason?.kind ?? 'aborted'})` }
    case 'error': return { level: 'error', text: `${reason.error?.code ?? 'ERROR'}: ${reason.error?.message ?? 'the model request failed'}` }
    case 'blocked': return { level: 'warning', text: `Blocked${reason.message ? `: ${reason.message}` : ''}` }
    case 'max-tokens': return { level: 'warning', text: 'The model hit its output limit' }
    case 'interrupted': return { level: 'warning', text: 'Interrupted (the process stopped during this turn)' }
    default: return { level: 'info', text: String(reason?.kind ?? '') }
  }
}
