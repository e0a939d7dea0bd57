/**
 * The replay adapter: serves model calls from a recorded session log, one call per recorded
 * chunk group (the `assistant/chunk` run of each step attempt, error finishes included), in
 * order, per session. A `replay.override.json` may replace the derived script (a bare
 * `ReplayEntry[]`) or patch it (`{patches:[{at, entry}]}`). Inside chunk strings,
 * `{{fromRequest:<regex>}}` is filled with the last match of the regex in the live request's
 * message text, so ids minted at run time (goal ids...) can be echoed back.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import type { Context } from 'cordis'
import { parseSessionFile } from '../session/codec.js'
import type { SessionEvent } from '../session/types.js'
import { LlmError } from '../llm/errors.js'
import { DEEPSEEK_MODELS } from '../llm/deepseek/index.js'
import type { LlmAdapter, LlmCallOptions, Message, ModelInfo, ReasoningEffort, StreamChunk } from '../llm/types.js'

export type ReplayEntry =
  | { readonly kind: 'chunks'; readonly chunks: readonly StreamChunk[] }
  /** Emits `chunks`, then the adapter throws `{message, code, status?}` (an error finish). */
  | { readonly kind: 'throw'; readonly message: string; readonly code: string; readonly status?: number; readonly chunks?: readonly StreamChunk[] }
  /** Emits `chunks`, touches `readyFile` (relative to the session cwd), then waits for the abort. */
  | { readonly kind: 'hang'; readonly chunks?: readonly StreamChunk[]; readonly readyFile?: string }

export type ReplayOverride = readonly ReplayEntry[] | { readonly patches: readonly { readonly at: number; readonly entry: ReplayEntry }[] }

export class ReplayError extends Error {
  constructor(detail: string) {
    super(`dsh-replay: ${detail}`)
    this.name = 'ReplayError'
  }
}

/**
 * One entry per step attempt: a run of `assistant/chunk` events ends at its `finish` chunk or at
 * the first other event (a cancelled attempt has no finish: it becomes a `hang`).
 */
export function scriptFromEvents(events: readonly SessionEvent[]): ReplayEntry[] {
  const script: ReplayEntry[] = []
  let group: StreamChunk[] | undefined
  const close = (finished: boolean) => {
    if (group === undefined) return
    script.push(finished ? { kind: 'chunks', chunks: group } : { kind: 'hang', chunks: group })
    group = undefined
  }
  for (const event of events) {
    if (event.type !== 'assistant/chunk') {
      close(false)
      continue
    }
    const chunk = (event.data as { chunk: StreamChunk }).chunk
    ;(group ??= []).push(chunk)
    if (chunk.type === 'finish') close(true)
  }
  close(false)
  return script
}

export function scriptFromLogText(text: string): ReplayEntry[] {
  return scriptFromEvents(parseSessionFile(text).events)
}

function checkEntry(entry: unknown, where: string): ReplayEntry {
  const e = entry as Record<string, unknown> | null
  if (e === null || typeof e !== 'object') throw new ReplayError(`${where}: an entry must be an object`)
  const chunks = e.chunks
  if (chunks !== undefined && !Array.isArray(chunks)) throw new ReplayError(`${where}: chunks must be an array`)
  switch (e.kind) {
    case 'chunks':
      if (!Array.isArray(chunks)) throw new ReplayError(`${where}: a "chunks" entry needs a chunks array`)
      return e as unknown as ReplayEntry
    case 'throw':
      if (typeof e.message !== 'string' || typeof e.code !== 'string') throw new ReplayError(`${where}: a "throw" entry needs string message and code`)
      if (e.status !== undefined && typeof e.status !== 'number') throw new ReplayError(`${where}: throw.status must be a number`)
      return e as unknown as ReplayEntry
    case 'hang':
      if (e.readyFile !== undefined && typeof e.readyFile !== 'string') throw new ReplayError(`${where}: hang.readyFile must be a string`)
      return e as unknown as ReplayEntry
    default:
      throw new ReplayError(`${where}: unknown entry kind ${JSON.stringify(e.kind)} (expected chunks, throw or hang)`)
  }
}

/** Applies an override (already parsed JSON) to a derived script. */
export function applyOverride(script: readonly ReplayEntry[], override: unknown): ReplayEntry[] {
  if (Array.isArray(override)) return override.map((entry, i) => checkEntry(entry, `override entry ${i}`))
  const patches = (override as { patches?: unknown } | null)?.patches
  if (!Array.isArray(patches)) throw new ReplayError('an override is a ReplayEntry[] or {patches:[{at, entry}]}')
  const out = [...script]
  patches.forEach((patch, i) => {
    const at = (patch as { at?: unknown })?.at
    if (!Number.isSafeInteger(at) || (at as number) < 0 || (at as number) > out.length) {
      throw new ReplayError(`patch ${i}: at must be an index within 0..${out.length}, got ${JSON.stringify(at)}`)
    }
    out[at as number] = checkEntry((patch as { entry?: unknown }).entry, `patch ${i}`)
  })
  return out
}

const FROM_REQUEST = /\{\{fromRequest:(.+?)\}\}/g

function requestText(messages: readonly Message[]): string {
  const parts: string[] = []
  for (const message of messages) {
    for (const block of message.content) {
      if (block.type === 'text' || block.type === 'reasoning') parts.push(block.text)
      else if (block.type === 'tool-call') parts.push(block.arguments)
      else if (block.type === 'tool-result') for (const inner of block.content) if (inner.type === 'text') parts.push(inner.text)
    }
  }
  return parts.join('\n')
}

/** Keys whose strings are JSON text (a tool call's arguments): the working folder goes in escaped. */
const JSON_TEXT_KEYS = new Set(['argumentsDelta', 'arguments'])

/**
 * Fills `{{fromRequest:regex}}` in every string of `value` from the request text, and `{{cwd}}`
 * (the recording's working folder, INDEX.md) with the live session's folder when it is known;
 * inside a tool call's arguments (JSON text) the folder goes in JSON-escaped.
 */
export function substitute<T>(value: T, request: () => string, cwd?: string, json = false): T {
  if (typeof value === 'string') {
    let text: string = value
    if (cwd !== undefined && text.includes('{{cwd}}')) text = text.split('{{cwd}}').join(json ? JSON.stringify(cwd).slice(1, -1) : cwd)
    if (!text.includes('{{fromRequest:')) return text as T
    return text.replace(FROM_REQUEST, (_whole, source: string) => {
      const matches = [...request().matchAll(new RegExp(source, 'g'))]
      if (matches.length === 0) throw new ReplayError(`{{fromRequest:${source}}} matched nothing in the live request`)
      return matches[matches.length - 1]![0]
    }) as T
  }
  if (Array.isArray(value)) return value.map(item => substitute(item, request, cwd, json)) as T
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, request, cwd, json || JSON_TEXT_KEYS.has(k))])) as T
  }
  return value
}

export interface ReplayScriptSource {
  /** Path of a recorded session log (projected or persisted). */
  readonly log?: string
  /** Path of a `replay.override.json`; a missing file is an error. */
  readonly override?: string
  /** A ready script (takes the place of `log`). */
  readonly script?: readonly ReplayEntry[]
}

export function loadScript(source: ReplayScriptSource): ReplayEntry[] {
  let script: ReplayEntry[] = source.script !== undefined ? [...source.script] : []
  if (source.log !== undefined) script = scriptFromLogText(readFileSync(source.log, 'utf8'))
  if (source.override !== undefined) {
    let parsed: unknown
    try {
      parsed = JSON.parse(readFileSync(source.override, 'utf8'))
    } catch (error) {
      throw new ReplayError(`cannot read override ${source.override}: ${error instanceof Error ? error.message : String(error)}`)
    }
    script = applyOverride(script, parsed)
  }
  return script
}

export interface ReplayAdapterOptions {
  readonly provider: string
  /** Scripts per live session id; `default` serves sessions not listed. */
  readonly sessions?: Readonly<Record<string, readonly ReplayEntry[]>>
  readonly default?: readonly ReplayEntry[]
  /**
   * Calls not made by the agent loop (no `meta.agentLoop`: compaction summaries, titles...) are
   * served from this script, per session, when given; otherwise they share the loop's script.
   */
  readonly auxiliary?: readonly ReplayEntry[]
  /** Resolves a session's cwd for `hang.readyFile`. */
  readonly cwdOf?: (sessionId: string | undefined) => string | undefined
  /** Called when a `hang` entry has emitted its chunks (tests and drivers cancel here). */
  readonly onHang?: (sessionId: string | undefined) => void
  /** Awaited before a session's call is served (a recorder's fence between parent and child). */
  readonly beforeCall?: (sessionId: string | undefined) => Promise<void>
}

interface Cursor { readonly script: readonly ReplayEntry[]; next: number }

export class ReplayAdapter implements LlmAdapter {
  readonly provider: string
  private readonly cursors = new Map<string, Cursor>()

  constructor(private readonly options: ReplayAdapterOptions) {
    this.provider = options.provider
  }

  private cursor(sessionId: string | undefined, auxiliary: boolean): Cursor {
    const key = auxiliary ? `auxiliary:${sessionId ?? ''}` : sessionId ?? ''
    let cursor = this.cursors.get(key)
    if (cursor === undefined) {
      const script = auxiliary
        ? this.options.auxiliary!
        : (sessionId !== undefined ? this.options.sessions?.[sessionId] : undefined) ?? this.options.default
      if (script === undefined) throw new ReplayError(`no replay script for session ${JSON.stringify(sessionId)}`)
      this.cursors.set(key, cursor = { script, next: 0 })
    }
    return cursor
  }

  /** Calls not consumed, per session (a finished replay should leave none). */
  leftover(): { sessionId: string; remaining: number }[] {
    const out: { sessionId: string; remaining: number }[] = []
    for (const [sessionId, cursor] of this.cursors) {
      if (cursor.next < cursor.script.length) out.push({ sessionId, remaining: cursor.script.length - cursor.next })
    }
    const unused = Object.keys(this.options.sessions ?? {}).filter(id => !this.cursors.has(id))
    for (const sessionId of unused) out.push({ sessionId, remaining: this.options.sessions![sessionId]!.length })
    return out
  }

  async *stream(options: LlmCallOptions): AsyncIterable<StreamChunk> {
    const sessionId = typeof options.meta?.sessionId === 'string' ? options.meta.sessionId : undefined
    await this.options.beforeCall?.(sessionId)
    const cursor = this.cursor(sessionId, this.options.auxiliary !== undefined && options.meta?.agentLoop !== true)
    const index = cursor.next++
    const entry = cursor.script[index]
    if (entry === undefined) {
      throw new LlmError('REPLAY_EXHAUSTED', `dsh-replay: model call #${index + 1} has no recorded response (the script has ${cursor.script.length})`)
    }
    let text: string | undefined
    const request = () => (text ??= requestText(options.messages))
    const cwd = this.options.cwdOf?.(sessionId)
    for (const chunk of entry.chunks ?? []) yield substitute(chunk, request, cwd)
    if (entry.kind === 'throw') {
      throw new LlmError(entry.code, entry.message, entry.status !== undefined ? { status: entry.status } : {})
    }
    if (entry.kind === 'hang') {
      const signal = options.signal
      if (entry.readyFile !== undefined) {
        const path = isAbsolute(entry.readyFile) || cwd === undefined ? entry.readyFile : join(cwd, entry.readyFile)
        writeFileSync(path, '')
      }
      this.options.onHang?.(sessionId)
      await new Promise<void>(resolve => {
        if (signal === undefined) return
        if (signal.aborted) resolve()
        else signal.addEventListener('abort', () => resolve(), { once: true })
      })
      throw new LlmError('ABORTED', 'dsh-replay: the hanging call was cancelled')
    }
  }
}

export interface ReplayPluginConfig extends ReplayScriptSource {
  /** Scripts of other sessions by id (recorded child logs); the script above serves the rest. */
  readonly sessions?: Readonly<Record<string, readonly ReplayEntry[]>>
  /** Provider name to register (default: the recorded `request/header` provider, else `replay`). */
  readonly provider?: string
  /** Models to offer (default: the recorded model, else `replay`). */
  readonly models?: readonly string[]
  readonly contextWindow?: number
  readonly maxTokens?: number
  /**
   * The recorder's fence (conformance): a continuable child's model calls wait until its parent
   * agent is idle, as the recordings that deliver a settlement notice to an idle parent show.
   */
  readonly fenceContinuableChildren?: boolean
}

/** Registers a ReplayAdapter on `ctx.llm` from config (usable from a composition). */
export const ReplayPlugin = {
  name: 'llm-replay',
  inject: ['llm'],
  apply(ctx: Context, config: ReplayPluginConfig) {
    const script = loadScript(config ?? {})
    const recorded = config?.log !== undefined ? recordedRoute(readFileSync(config.log, 'utf8')) : undefined
    const provider = config?.provider ?? recorded?.provider ?? 'replay'
    const models = config?.models ?? [recorded?.model ?? 'replay']
    const sessions = ctx.get('sessions')
    const beforeCall = config?.fenceContinuableChildren === true ? async (id: string | undefined) => {
      const session = id === undefined ? undefined : sessions?.get(id)
      const parent = session?.header.parentSession
      const first = session?.events[0]
      const continuable = first?.type === 'subagent/descriptor' && (first.data as { mode?: unknown }).mode === 'continuable'
      // Structural: this folder stays below the agent seam.
      const agents = ctx.get('agents' as never) as { get(id: string): { whenIdle(): Promise<void> } | undefined } | undefined
      if (parent !== undefined && continuable) await agents?.get(parent)?.whenIdle()
    } : undefined
    const adapter = new ReplayAdapter({
      provider, default: script, ...config?.sessions !== undefined && { sessions: config.sessions },
      cwdOf: id => (id === undefined ? undefined : sessions?.get(id)?.header.cwd),
      ...beforeCall !== undefined && { beforeCall },
    })
    ctx.effect(() => ctx.llm.register({ adapter, models: models.map(model => replayModelInfo(provider, model, config)) }))
  },
}

/**
 * A recorded route as the catalogue should see it. Image input is what the shipped catalogue
 * says for a model it knows (the DeepSeek V4 models are text-only, so an image is refused as it
 * was when recorded), and allowed for any other (a recorded vision route, say).
 */
export function replayModelInfo(provider: string, model: string, limits: { contextWindow?: number; maxTokens?: number; reasoningEfforts?: readonly ReasoningEffort[] } = {}): ModelInfo {
  const known = DEEPSEEK_MODELS.find(info => info.provider === provider && info.model === model)
  return { provider, model, contextWindow: limits.contextWindow ?? 1_000_000, defaultMaxTokens: limits.maxTokens ?? 32_768, reasoningEfforts: limits.reasoningEfforts ?? [], imageInput: known?.imageInput ?? true }
}

/** The first recorded `request/header` route of a log, if any. */
export function recordedRoute(text: string): { provider: string; model: string } | undefined {
  for (const event of parseSessionFile(text).events) {
    if (event.type === 'request/header') {
      const config = (event.data as { header: { config: { provider: string; model: string } } }).header.config
      return { provider: config.provider, model: config.model }
    }
  }
  return undefined
}
