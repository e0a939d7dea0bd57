/**
 * Session titles as a plugin. A fallback title (the first prompt's first words) lands as soon
 * as the first user prompt is on the log. When a model is available, a fresh session (not a
 * fork) asks it once for a better title, as the original's `session-title-first-prompt-llm`
 * provider does: the request is logged as `session/title-llm-request` right after the loop's
 * first `request/context` (the original's place, before the main call's first chunk), and sent
 * when that first turn ends (one call at a time per session); its answer lands as a provider
 * `session/title`. Both titles are `session/title` events, so titles are derived from the log
 * like everything else (`titleOf`). A title call that fails keeps the fallback and never touches
 * the turn.
 */
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { LlmCallOptions, Message, TextBlock } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import type { SessionEvent } from '../session/types.js'
import '../llm/api.js'
import '../session/api.js'

/** The log-only record of a model title request (docs/compaction.md). */
export const TITLE_REQUEST_EVENT = 'session/title-llm-request'
/** The original's name for the first-prompt model title provider, logged with the request and the title. */
export const TITLE_PROVIDER = 'session-title-first-prompt-llm'

const TITLE_EVENTS: ReadonlySet<string> = new Set(['session/title', TITLE_REQUEST_EVENT])

export interface SessionTitleData {
  readonly title: string
  readonly messageSeqs: readonly number[]
  /** `user`: a rename (e.g. from the web UI); no automatic title replaces it. */
  readonly source:
    | { readonly kind: 'fallback' }
    | { readonly kind: 'provider'; readonly provider: string; readonly model: { readonly provider: string; readonly model: string } }
    /** Written by earlier dsh versions (read, not written). */
    | { readonly kind: 'llm'; readonly provider: string; readonly model: string }
    | { readonly kind: 'user' }
}

/** `session/title-llm-request`: what the title call sends, logged before it is sent. */
export interface TitleRequestData {
  readonly titleProvider: string
  readonly messageSeqs: readonly number[]
  readonly route: { readonly provider: string; readonly model: string }
  readonly system: string
  readonly messages: readonly Message[]
  readonly maxTokens: number
}

export interface SessionTitleConfig {
  /** Ask the model for a title once per fresh session (default true). */
  readonly llm?: boolean
  /** Words kept by the fallback title (default 5). */
  readonly fallbackWords?: number
  /** Model route for the title call (both or neither); defaults to the route of the first request. */
  readonly provider?: string
  readonly model?: string
  /** The title the model is asked for: about this many words (default 5)... */
  readonly targetWords?: number
  /** ...or this many CJK characters (default 10). */
  readonly targetCjkCharacters?: number
  /** Human messages over this many bytes (as framed JSON) get no model title (default 4096). */
  readonly maxInputBytes?: number
  /** The title call's output limit (default 64). */
  readonly maxOutputTokens?: number
  /** The title call is given up after this long (default 60 000 ms). */
  readonly timeoutMs?: number
}

/** The original's title instruction (products-titles spec, "LLM session titles"). */
export function titleSystem(targetWords = 5, targetCjkCharacters = 10): string {
  return [
    'Create a concise title for an AI coding-assistant session from the supplied human messages.',
    'Return only the title on one line, **in plain text of natural language**, with no quotes, prefix, explanation, Markdown, XML, or terminal control codes. No code is allowed.',
    'Use the language of the messages.',
    `Aim for about ${targetWords} words in non-CJK languages or ${targetCjkCharacters} CJK characters.`,
  ].join('\n')
}

/** The one user message of a title call: the human messages as a JSON array of `{seq, text}`. */
export function titleFrame(messages: readonly { readonly seq: number; readonly text: string }[]): string {
  return `Generate the session title from this JSON array of human messages:\n${JSON.stringify(messages.map(({ seq, text }) => ({ seq, text })))}`
}

const MAX_TITLE_CHARS = 80

/** A file attached by an `@` mention (`<file path="…">…</file>`, docs/web.md): not what the user asked. */
const REFERENCE_BLOCK = /^<file path="[^"]*"[^>]*>/

function promptText(message: Message): string {
  return message.content.filter((block): block is TextBlock => block.type === 'text' && !REFERENCE_BLOCK.test(block.text)).map(block => block.text).join('\n').trim()
}

export function fallbackTitle(text: string, words = 5): string {
  return text.split(/\s+/).filter(Boolean).slice(0, words).join(' ').slice(0, MAX_TITLE_CHARS)
}

function lastTitle(session: Pick<Session, 'events'>): SessionTitleData | undefined {
  for (let index = session.events.length - 1; index >= 0; index -= 1) {
    const event = session.events[index]
    if (event.type === 'session/title') return event.data as SessionTitleData
  }
  return undefined
}

/** A fork's title: the source's, marked once (a fork of a fork is not "(fork) (fork)"). */
export function forkTitle(title: string): string {
  return title.endsWith(' (fork)') ? title : `${title} (fork)`
}

/**
 * A user's fork (S-14: the web's Fork, the terminal's /fork, going back to an earlier prompt):
 * the stored copy of `source` up to `boundary` (its end by default), titled `forkTitle` of the
 * source's title when it has one.
 */
export async function forkTitled(persistence: { fork(sourceId: string, boundary?: number): Promise<Session> }, source: Session, boundary?: number): Promise<Session> {
  const child = await persistence.fork(source.id, boundary)
  const title = titleOf(source)
  if (title !== undefined) child.append('session/title', { title: forkTitle(title), messageSeqs: [], source: { kind: 'user' } })
  return child
}

/** The session's current title: the data of its last `session/title` event. */
export function titleOf(session: Pick<Session, 'events'>): string | undefined {
  return lastTitle(session)?.title
}

function cleanTitle(raw: string): string {
  const line = raw.split('\n').map(part => part.trim()).find(Boolean) ?? ''
  return line.replace(/^["'`#*\s]+|["'`.*\s]+$/g, '').slice(0, MAX_TITLE_CHARS)
}

export class SessionTitlePlugin {
  static readonly inject = ['sessions']

  /** What each session's log already holds (rebuilt from the log on hydrate). */
  private readonly titled = new WeakMap<Session, TitleState>()
  private readonly pending = new Set<Promise<void>>()

  constructor(private readonly ctx: Context, private readonly config: SessionTitleConfig = {}) {
    ctx.on('session/created', session => this.titled.set(session, this.scan(session)))
    ctx.on('session/event', (session, event) => this.observe(session, event))
    // Let in-flight title calls land before the tree goes away (their events must be flushed).
    ctx.effect(() => () => Promise.all(this.pending).then(() => undefined))
  }

  private scan(session: Session): TitleState {
    // A fork (the user's or a subagent's) is titled from its source, never by a model call.
    const state: TitleState = { fallback: false, asked: session.header.parentSession !== undefined }
    scanEvents(session.events, 0, TITLE_EVENTS, (event) => {
      if (event.type === TITLE_REQUEST_EVENT) {
        state.asked = true
        return
      }
      state.fallback = true
      const kind = (event.data as SessionTitleData).source.kind
      if (kind !== 'fallback') state.asked = true
    })
    return state
  }

  private state(session: Session): TitleState {
    let state = this.titled.get(session)
    if (!state) this.titled.set(session, state = this.scan(session))
    return state
  }

  private observe(session: Session, event: SessionEvent): void {
    const state = this.state(session)
    if (event.type === 'session/title' && (event.data as SessionTitleData).source.kind === 'user') {
      // A rename pins the title: a request logged but not sent yet is not sent.
      state.fallback = state.asked = true
      state.request = undefined
      return
    }
    if (!state.fallback && event.type === 'user/message') {
      const message = event.data as Message
      if (message.source.kind !== 'user') return
      const title = fallbackTitle(promptText(message), this.config.fallbackWords)
      if (title === '') return
      state.fallback = true
      // An observer may not append re-entrantly (S-5): land in the next microtask, right after
      // the current append returns (docs/session.md, Notification).
      this.track(Promise.resolve().then(() => this.append(session, { title, messageSeqs: [event.seq], source: { kind: 'fallback' } })))
      return
    }
    if (!state.asked && event.type === 'request/context' && this.config.llm !== false && this.ctx.get('llm') !== undefined) {
      const request = this.request(session, event.data as { provider: string; model: string })
      if (request === undefined) return
      state.asked = true
      state.request = request
      // Logged where the original logs it: right after the first request/context, before the
      // main call's first chunk (one microtask later, S-5).
      this.track(Promise.resolve().then(() => { if (session.live && state.request === request) session.append(TITLE_REQUEST_EVENT, request) }))
      return
    }
    if (state.request !== undefined && event.type === 'turn/end') {
      const request = state.request
      state.request = undefined
      this.track(this.requestTitle(session, request))
    }
  }

  /**
   * The title request of the loop's first request (`context`), or undefined when there is none
   * to make: the route differs from the logged header's, no human message, or too much text.
   */
  private request(session: Session, context: { provider: string; model: string }): TitleRequestData | undefined {
    const header = lastOf(session, 'request/header')?.data as { header?: { config?: { provider?: string; model?: string } } } | undefined
    const config = header?.header?.config
    if (config === undefined || config.provider !== context.provider || config.model !== context.model) return undefined
    const humans: { seq: number; text: string }[] = []
    for (const event of session.events) {
      if (event.type !== 'user/message' || (event.data as Message).source.kind !== 'user') continue
      const text = promptText(event.data as Message)
      if (text !== '') humans.push({ seq: event.seq, text })
    }
    if (humans.length === 0) return undefined
    if (Buffer.byteLength(JSON.stringify(humans)) > (this.config.maxInputBytes ?? 4096)) return undefined
    const route = this.config.provider && this.config.model ? { provider: this.config.provider, model: this.config.model } : { provider: context.provider, model: context.model }
    const message: Message = {
      id: randomUUID(), role: 'user', source: { kind: 'plugin', plugin: 'dsh-session-title-llm' },
      content: [{ type: 'text', text: titleFrame(humans) }],
    }
    return {
      titleProvider: TITLE_PROVIDER,
      messageSeqs: humans.map(human => human.seq),
      route,
      system: titleSystem(this.config.targetWords, this.config.targetCjkCharacters),
      messages: [message],
      maxTokens: this.config.maxOutputTokens ?? 64,
    }
  }

  /**
   * Titles are best effort: a failed model call or a vetoed append is dropped rather than
   * surfacing as an unhandled rejection (a bare queueMicrotask throw would kill the process).
   * Tracked so disposal waits for titles already on their way.
   */
  private track(work: Promise<void>): void {
    const job: Promise<void> = work.catch(() => undefined).finally(() => this.pending.delete(job))
    this.pending.add(job)
  }

  private append(session: Session, data: SessionTitleData): void {
    if (session.live) session.append('session/title', data)
  }

  /** Sends a logged request; tool calls, empty text, a finish other than `stop` or a timeout give no title. */
  private async requestTitle(session: Session, request: TitleRequestData): Promise<void> {
    const llm = this.ctx.get('llm')
    if (llm === undefined) return
    const options: LlmCallOptions = {
      ...request.route,
      system: request.system,
      messages: request.messages,
      maxTokens: request.maxTokens,
      thinking: false,
      signal: AbortSignal.timeout(this.config.timeoutMs ?? 60_000),
      meta: { purpose: 'session-title', sessionId: session.id },
    }
    let raw = ''
    for await (const chunk of llm.stream(llm.prepareCall(options))) {
      if (chunk.type === 'text-delta') raw += chunk.text
      else if (chunk.type === 'tool-call-delta' || (chunk.type === 'block-start' && chunk.blockType === 'tool-call')) return
      else if (chunk.type === 'finish' && chunk.reason.kind !== 'stop') return
    }
    const title = cleanTitle(raw)
    if (title === '') return
    // A rename that landed while the model was answering wins.
    if (lastTitle(session)?.source.kind === 'user') return
    this.append(session, { title, messageSeqs: request.messageSeqs, source: { kind: 'provider', provider: TITLE_PROVIDER, model: request.route } })
  }
}

interface TitleState {
  /** A title of any kind is on the log (no fallback is needed). */
  fallback: boolean
  /** The model was asked, or need not be (a fork, a rename, a model title on the log). */
  asked: boolean
  /** Logged and not sent yet: sent when the turn ends. */
  request?: TitleRequestData
}

function lastOf(session: Pick<Session, 'events'>, type: string): SessionEvent | undefined {
  for (let index = session.events.length - 1; index >= 0; index -= 1) {
    if (session.events[index]!.type === type) return session.events[index]
  }
  return undefined
}
