/**
 * Session titles as a plugin. A fallback title (the first prompt's first words) lands as soon
 * as the first user prompt is on the log; after the first turn, when a model is available, one
 * short model call proposes a better title. Both are `session/title` events, so titles are
 * derived from the log like everything else (`titleOf`).
 */
import type { Context } from 'cordis'
import type { LlmCallOptions, Message, TextBlock } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import type { SessionEvent } from '../session/types.js'
import '../llm/api.js'
import '../session/api.js'

const SESSION_TITLE: ReadonlySet<string> = new Set(['session/title'])

export interface SessionTitleData {
  readonly title: string
  readonly messageSeqs: readonly number[]
  /** `user`: a rename (e.g. from the web UI); no automatic title replaces it. */
  readonly source: { readonly kind: 'fallback' } | { readonly kind: 'llm'; readonly provider: string; readonly model: string } | { readonly kind: 'user' }
}

export interface SessionTitleConfig {
  /** Ask the model for a title after the first turn (default true). */
  readonly llm?: boolean
  /** Words kept by the fallback title (default 5). */
  readonly fallbackWords?: number
  /** Model route for the title call; defaults to the route of the session's last request. */
  readonly provider?: string
  readonly model?: string
}

const TITLE_SYSTEM = 'You name coding-assistant sessions. Reply with a title of at most five words that says what the user wants. No quotes, no trailing punctuation, one line.'
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

  /** Sessions that already have a title of each kind (rebuilt from the log on hydrate). */
  private readonly titled = new WeakMap<Session, { fallback: boolean; llm: boolean }>()
  private readonly pending = new Set<Promise<void>>()

  constructor(private readonly ctx: Context, private readonly config: SessionTitleConfig = {}) {
    ctx.on('session/created', session => this.titled.set(session, this.scan(session)))
    ctx.on('session/event', (session, event) => this.observe(session, event))
    // Let in-flight title calls land before the tree goes away (their events must be flushed).
    ctx.effect(() => () => Promise.all(this.pending).then(() => undefined))
  }

  private scan(session: Session) {
    const state = { fallback: false, llm: false }
    scanEvents(session.events, 0, SESSION_TITLE, (event) => {
      state.fallback = true
      const kind = (event.data as SessionTitleData).source.kind
      if (kind === 'llm' || kind === 'user') state.llm = true
    })
    return state
  }

  private state(session: Session) {
    let state = this.titled.get(session)
    if (!state) this.titled.set(session, state = this.scan(session))
    return state
  }

  private observe(session: Session, event: SessionEvent): void {
    const state = this.state(session)
    if (event.type === 'session/title' && (event.data as SessionTitleData).source.kind === 'user') {
      state.fallback = state.llm = true
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
    if (!state.llm && event.type === 'turn/end' && this.config.llm !== false && this.ctx.get('llm') !== undefined) {
      state.llm = true
      this.track(this.requestTitle(session))
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

  private route(session: Session): { provider: string; model: string } | undefined {
    if (this.config.provider && this.config.model) return { provider: this.config.provider, model: this.config.model }
    for (let index = session.events.length - 1; index >= 0; index -= 1) {
      const event = session.events[index]
      if (event.type === 'request/context') {
        const { provider, model } = event.data as { provider: string; model: string }
        return { provider, model }
      }
    }
    return undefined
  }

  private async requestTitle(session: Session): Promise<void> {
    const route = this.route(session)
    const prompts = session.events.filter(event => event.type === 'user/message' && (event.data as Message).source.kind === 'user')
    if (route === undefined || prompts.length === 0) return
    const text = prompts.map(event => promptText(event.data as Message)).join('\n\n').slice(0, 4000)
    const options: LlmCallOptions = {
      ...route,
      system: TITLE_SYSTEM,
      messages: [Object.freeze<Message>({ id: `title-${session.id}`, role: 'user', source: { kind: 'plugin', plugin: 'session-title' }, content: [{ type: 'text', text }] })],
      maxTokens: 32,
      thinking: false,
      meta: { purpose: 'session-title', sessionId: session.id },
    }
    const llm = this.ctx.get('llm')
    if (llm === undefined) return
    let raw = ''
    for await (const chunk of llm.stream(llm.prepareCall(options))) {
      if (chunk.type === 'text-delta') raw += chunk.text
      if (chunk.type === 'finish' && chunk.reason.kind !== 'stop') return
    }
    const title = cleanTitle(raw)
    if (title === '') return
    // A rename that landed while the model was answering wins.
    if (lastTitle(session)?.source.kind === 'user') return
    this.append(session, { title, messageSeqs: prompts.map(event => event.seq), source: { kind: 'llm', ...route } })
  }
}
