/**
 * The public face of the session seam: what `ctx.sessions` offers and the events it dispatches.
 * Providers implement these interfaces; consumers (loop, persistence, protocols) use only them.
 */
import type {} from 'cordis'
import type { AttachedImageBlock, Message } from '../llm/types.js'
import type { AttachmentStore, StoredAttachment } from './attachments.js'
import type {
  AppendOptions, EventTypeDefinition, SessionEvent, SessionEventMap, SessionHeader,
} from './types.js'

/** Where the log currently stands (S-15), folded incrementally on append. */
export interface LogPosition {
  /** Last turn number seen (0 before the first turn/start). */
  readonly turn: number
  /** Last step number of the current turn (0 before its first step/start). */
  readonly step: number
  readonly turnOpen: boolean
  readonly stepOpen: boolean
}

export interface Session {
  readonly id: string
  readonly header: SessionHeader
  /** The log, in seq order. Never mutate; entries are frozen. */
  readonly events: readonly SessionEvent[]
  /** Next seq to be assigned (= events.length). */
  readonly length: number
  readonly position: LogPosition
  /** Bumped by every surface replace; `deriveMessages()` rebuilds only when it changed (S-11). */
  readonly replaceGeneration: number
  /** True until the session is closed or disposed. */
  readonly live: boolean

  /**
   * The append pipeline (S-5..S-10): snapshot, validate, `internal/dispatch` veto, push,
   * notify `session/event`. Throws `SessionRuleError` and leaves the log untouched on rejection.
   */
  append<K extends keyof SessionEventMap>(type: K, data: SessionEventMap[K], options?: AppendOptions): SessionEvent<K>
  append(type: string, data: unknown, options?: AppendOptions): SessionEvent

  /** Current surface: seqs of the model-visible events, in surface order. */
  surface(): readonly number[]
  /** The model history: the surface folded through `deriveEventMessage` (fresh array per call). */
  deriveMessages(): Message[]
}

export interface CreateSessionOptions {
  readonly id?: string
  readonly cwd?: string
  readonly createdAt?: number
  readonly parentSession?: string
  readonly seedLength?: number
  readonly origin?: SessionHeader['origin']
  readonly delegationDepth?: number
  readonly agentPreset?: string
}

/** Images kept with a session, referenced from its log by content hash (docs/session-format.md). */
export interface SessionAttachments {
  /**
   * Checks an image (PNG, JPEG, GIF or WebP, read from its bytes) and stores it with a live
   * session; resolves to the block a message references it with. `AttachmentError` for bad input.
   */
  addImage(sessionId: string, data: Uint8Array, options?: { readonly mediaType?: string; readonly name?: string }): Promise<AttachedImageBlock>
  /** The bytes of an attachment of the session (or, for a live fork or child, of its parents). */
  read(sessionId: string, attachmentId: string): Promise<StoredAttachment | undefined>
  /** Copies the attachments `ids` of one session to another (a fork keeps its images). */
  copy(fromSessionId: string, to: SessionHeader, ids: readonly string[]): Promise<void>
  /**
   * Puts a durable store in place of the in-memory default; the disposer restores the default.
   * Call it inside `ctx.effect` so the store goes with the plugin that provides it.
   */
  useStore(store: AttachmentStore): () => void
}

/** A session rebuilt and checked but not live yet (`SessionsService.prepare`). */
export interface PreparedSession {
  /** Not in the live set and not announced: nobody else sees it before `publish()`. */
  readonly session: Session
  /**
   * Makes it live and fires `session/created`. Throws `ALREADY_EXISTS` if the id became live
   * meanwhile, and on a second call.
   */
  publish(): Session
}

export interface SessionsService {
  readonly attachments: SessionAttachments
  /** S-2: extend the vocabulary. Returns the disposer (the registration is an effect). */
  registerEventType(definition: EventTypeDefinition): () => void
  eventType(type: string): EventTypeDefinition | undefined

  create(options?: CreateSessionOptions): Session
  /**
   * Rebuild a live session from stored events (already seq-contiguous). Every event is checked
   * exactly as an append would be, except that observers are not notified. Each event is stored
   * as a frozen copy; with `adopt: true` the caller hands the events over (nobody else holds or
   * changes them) and their data is frozen in place instead; `adopt: 'parsed'` says in addition
   * that their values come straight from `JSON.parse` (as a store's are), so only -0 needs
   * looking for. A list from a persistence backend may hold chunk runs packed
   * (`session/packed-run.ts`); they are admitted as runs, not one event per delta.
   */
  hydrate(header: SessionHeader, events: readonly SessionEvent[], options?: { readonly adopt?: boolean | 'parsed' }): Session
  /**
   * `hydrate` in two steps: every check now, going live (and `session/created`) only at
   * `publish()`. A cold load commits its crash repair in between, so listeners never see a
   * session whose load then fails. An unpublished session is simply dropped.
   */
  prepare(header: SessionHeader, events: readonly SessionEvent[], options?: { readonly adopt?: boolean | 'parsed' }): PreparedSession
  get(id: string): Session | undefined
  list(): readonly Session[]
  /** S-14 */
  fork(sourceId: string, boundary?: number, childId?: string): Session
  /**
   * Ends a live session: later appends throw, it leaves the live set and `session/closed` fires.
   * The one way a session stops being live (docs/persistence.md, "Session lifecycle"):
   * persistence then writes what is still queued and gives the writer lock back. A no-op for an
   * id that is not live.
   */
  close(id: string): void
}

declare module 'cordis' {
  interface Context {
    sessions: SessionsService
  }
  interface Events {
    /** @mode emit (contained: each listener in its own try/catch). Fired after every append. */
    'session/event'(session: Session, event: SessionEvent): void
    /** @mode emit (contained). A session became live (created, hydrated or forked). */
    'session/created'(session: Session): void
    /**
     * @mode emit (contained). A session stopped being live (`close`): nothing more is appended to
     * it. Persistence drops its tracking and writer lock once its queued events are durable.
     */
    'session/closed'(session: Session): void
    /** @mode parallel. Durability barrier: resolves once every event so far is on disk. */
    'session/flush'(session: Session): Promise<void>
    /**
     * @mode parallel. A stored session was deleted (its id is free again): whatever is kept with
     * it (spilled tool outputs) goes too. Awaited by the deleter.
     */
    'session/deleted'(id: string): Promise<void>
  }
}
