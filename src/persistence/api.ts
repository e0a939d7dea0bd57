/**
 * The persistence seam (contracts D-1..D-7): one backend contract with several implementations
 * (JSONL files, SQLite), and the `ctx.sessionPersistence` service that queues, flushes, loads
 * and repairs sessions through whichever backend is configured.
 */
import type {} from 'cordis'
import type { Session } from '../session/api.js'
import type { SessionEvent, SessionHeader } from '../session/types.js'
import type { StoredAttachment } from '../session/attachments.js'
import type { SessionExchange } from './exchange.js'
import type { FinalSave, SessionFinalSave } from './final-save.js'

/** What a bad stored line or row was (D-5). */
export type BadRecordReason = 'unparsable' | 'wrong-seq' | 'no-newline' | 'invalid-envelope'

/** D-5: a crash tail that was cut off the end of a stored log. */
export interface TornTail {
  /** Seq the first dropped record would have had (= events.length of the kept prefix). */
  readonly fromSeq: number
  /** Why the first dropped record was bad. */
  readonly reason: BadRecordReason
  readonly detail: string
  /** Records (lines or rows) that were dropped, including the bad one. */
  readonly droppedRecords: number
  /** Bytes dropped (JSONL: file bytes from the cut point; SQLite: stored text length). */
  readonly droppedBytes: number
  /** Backend-specific cut point: byte offset for JSONL, first dropped seq for SQLite. */
  readonly cutAt: number
}

export interface StoredSession {
  readonly header: SessionHeader
  /** The committed, contiguous events (seq 0..n-1), crash tail excluded. */
  readonly events: readonly SessionEvent[]
  /** D-7: opaque token; `commitRepair` succeeds only while it is still current. */
  readonly revision: string
  /** Present when a crash tail was found; `commitRepair` cuts it off. */
  readonly torn?: TornTail
}

export interface SalvagedSession {
  readonly header: SessionHeader
  readonly events: readonly SessionEvent[]
  /** One line per stored record or seq that could not be kept. */
  readonly skipped: readonly string[]
}

/**
 * Whether a stored session holds anything to go back to: a turn, or a name. A session opened and
 * left without a prompt (the terminal app started by mistake, a `/new` not used) is stored too,
 * and `dsh -c`, the resume lists and the web's sidebar pass over it.
 */
export function hasConversation(summary: Pick<StoredSessionSummary, 'turns' | 'title'>): boolean {
  return summary.turns > 0 || summary.title !== null
}

/**
 * Whether a stored session is listed without `--all` (`dsh sessions`, the web's sidebar): one
 * holding a conversation worth going back to. Left out: a session with nothing in it (see
 * `hasConversation`), and one whose only turn did not complete (a first run that failed: a
 * refused request, a missing key, a cancel). Always listed: an unreadable session (it must not
 * vanish) and an open turn (running, or crashed: `dsh -c` repairs it).
 */
export function listedByDefault(summary: Pick<StoredSessionSummary, 'turns' | 'title' | 'lastTurn' | 'unreadable'>): boolean {
  if (summary.unreadable !== undefined) return true
  if (!hasConversation(summary)) return false
  return !(summary.turns === 1 && summary.lastTurn !== undefined && summary.lastTurn !== 'completed' && summary.lastTurn !== 'open')
}

export interface StoredSessionSummary {
  readonly id: string
  /** From the last `session/title` event, else null. */
  readonly title: string | null
  readonly cwd?: string
  readonly parentSession?: string
  /** Header `createdAt` (epoch ms). */
  readonly createdAt: number
  /** Last write to the stored log (epoch ms). */
  readonly updatedAt: number
  /** Number of `turn/start` events. */
  readonly turns: number
  /** Stored event count (next seq). */
  readonly length: number
  /**
   * How the last turn ended (`turn/end` reason kind: completed, error, aborted...), `open` when
   * it has started and not ended (running, or crashed); absent with no turns or when the
   * backend does not track it.
   */
  readonly lastTurn?: string
  /** The last `session/archived` event said archived (hidden from the default list). */
  readonly archived?: boolean
  /**
   * Set when the stored session cannot be read by this runtime (a newer format version, a
   * damaged header): why. It is listed so it does not vanish; loading it fails with the same
   * reason. The counts are then 0.
   */
  readonly unreadable?: string
  /**
   * Set (with `unreadable`) when what the store holds of the session is damaged, such as a bad
   * page of a SQLite file: `unreadable` then is the message a load fails with, naming the file,
   * the session and the repair command.
   */
  readonly damaged?: true
}

/** Who holds a session's writer lock. */
export interface WriterHolder {
  readonly pid: number
  readonly host: string
  /** ISO-8601 time the lock was taken. */
  readonly since: string
}

/** A held writer lock; `release` is idempotent. */
export interface WriterLease {
  readonly holder: WriterHolder
  release(): Promise<void>
}

export interface PersistenceBackend {
  /** 'jsonl', 'sqlite', ... (for messages and benchmarks). */
  readonly kind: string
  /**
   * Materialises a new session atomically: header plus `events` (from seq 0), all or nothing.
   * `SessionExistsError` when the id is already stored, so of two racing creators exactly one wins.
   */
  create(header: SessionHeader, events: readonly SessionEvent[]): Promise<void>
  /**
   * Writes `events` durably. The first call for an id materialises the session atomically
   * (header + events, all or nothing; `SessionExistsError` if another writer won). Every batch's
   * first seq must equal the stored next seq, else `SeqMismatchError` and nothing is written.
   * An empty batch only materialises.
   */
  appendBatch(header: SessionHeader, events: readonly SessionEvent[]): Promise<void>
  /** Undefined when no such session is stored. Throws `CorruptSessionError` on D-5 corruption. */
  loadStored(id: string): Promise<StoredSession | undefined>
  readStoredRevision(id: string): Promise<string | undefined>
  /** Seek read: the committed events with seq >= `seq` (backends on a sequential medium omit it). */
  loadStoredFrom?(id: string, seq: number): Promise<readonly SessionEvent[]>
  /**
   * D-7: cuts the crash tail reported by the load (if any) and appends `closers`, only if the
   * stored revision still equals `expectedRevision` (else `StaleRevisionError`). Not atomic:
   * a crash in between leaves a tail or an open turn that the next load repairs again.
   * Returns the new revision.
   */
  commitRepair(id: string, closers: readonly SessionEvent[], expectedRevision: string): Promise<string>
  /**
   * D-5 salvage: every record that is valid on its own, placed by seq, the contiguous run from 0
   * kept (see `salvageRecords`). Reads only; the caller stores the result as a copy. Optional:
   * a backend without it cannot salvage.
   */
  salvageStored?(id: string): Promise<SalvagedSession | undefined>
  list(): Promise<readonly StoredSessionSummary[]>
  /** Moves a stored session to the trash (never unlinks), its attachments with it. False when not stored. */
  trash(id: string): Promise<boolean>
  /**
   * Puts the session last trashed with this id back, as it was (its attachments too). False when
   * the trash holds none; `SessionExistsError` while a session with the id is stored. Optional: a
   * backend without it cannot restore.
   */
  restore?(id: string): Promise<boolean>
  /**
   * Stores an attachment of a session (content-addressed: the same id always holds the same
   * bytes, so a second put is a no-op). Works before the session's log is materialised.
   * A backend without it keeps attachments in memory only.
   */
  putAttachment?(header: SessionHeader, attachmentId: string, attachment: StoredAttachment): Promise<void>
  getAttachment?(sessionId: string, attachmentId: string): Promise<StoredAttachment | undefined>
  /**
   * One writer per session: takes the session's writer lock for this process, whether or not
   * the session is stored yet. Refused with `SessionInUseError` (naming pid, host and since)
   * while another live holder has it; a holder on this host whose pid is dead is stale and
   * taken over. Reads never take it. Every backend that runs the conformance suite provides it;
   * a backend without it gives no single-writer guarantee.
   */
  acquireWriter?(id: string): Promise<WriterLease>
  close?(): Promise<void>
  /** The current writer of `id`, if any. */
  writer?(id: string): Promise<WriterInfo | undefined>
  /**
   * Live appends by any process: calls `onAppend(next)` after each committed write to `id`
   * (`next` = stored next seq). Resolves, with the disposer, once listening.
   */
  watch?(id: string, onAppend: (next: number) => void): Promise<() => void>
}

export interface WriterInfo {
  readonly pid: number
  readonly host: string
  /** ISO-8601 time the writer took the session. */
  readonly since: string
  /** Fencing token of the holder (opaque). */
  readonly token?: string
  /** True when this backend instance is the writer. */
  readonly mine: boolean
}

export class PersistenceError extends Error {
  constructor(message: string, readonly sessionId?: string, options?: ErrorOptions) {
    super(message, options)
    this.name = new.target.name
  }
}
/** Materialisation lost the race (or the id is already stored). */
export class SessionExistsError extends PersistenceError {}
export class SessionNotStoredError extends PersistenceError {}
export class SeqMismatchError extends PersistenceError {}
/** D-7: someone wrote the session after it was loaded. */
export class StaleRevisionError extends PersistenceError {}
/** D-5: a bad record inside the committed region (a valid turn/end follows it). */
export class CorruptSessionError extends PersistenceError {}
/** Another live process holds the session's writer lock. */
export class SessionInUseError extends PersistenceError {
  constructor(id: string, readonly holder: WriterHolder) {
    super(`session ${id} is in use by another writer (pid ${holder.pid} on ${holder.host}, since ${holder.since})`, id)
  }
}
/** Fencing: this instance's writer lease was taken by another after it expired; it never writes again. */
export class WriterLeaseLostError extends PersistenceError {}
/** S-13 / D-6: a newer or older format, or a foreign database. */
export class FormatVersionError extends PersistenceError {}

/**
 * Runs operations per key one after another. Each operation starts after the previous one
 * settled, whatever its outcome, so one failure never poisons the operations queued behind it.
 */
export class OperationChains {
  private readonly tails = new Map<string, Promise<unknown>>()

  run<T>(key: string, operation: () => Promise<T> | T): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve()
    const result = previous.then(operation, operation)
    const tail = result.then(() => undefined, () => undefined)
    this.tails.set(key, tail)
    void tail.then(() => { if (this.tails.get(key) === tail) this.tails.delete(key) })
    return result
  }

  /** Resolves once every operation queued so far has settled. */
  async idle(): Promise<void> {
    while (this.tails.size) await Promise.all(this.tails.values())
  }
}

/** Result of a cold load through the service. */
export interface LoadResult {
  readonly session: Session
  /** Closers appended by crash repair (C-2, C-3); empty when the log was closed. */
  readonly repaired: readonly SessionEvent[]
  readonly torn?: TornTail
  /** True when the id was already live in this process (C-5: flushed, not repaired). */
  readonly wasLive: boolean
}

/** What `inspect` reports about one id, without hydrating or repairing anything. */
export interface SessionInspection {
  readonly id: string
  readonly live: boolean
  /** Undefined when nothing is stored yet. */
  readonly stored?: {
    readonly header: SessionHeader
    readonly length: number
    readonly revision: string
    readonly torn?: TornTail
    /** The stored log ends inside an open turn: a cold load would append these closers. */
    readonly pendingClosers: number
  }
  /** Appended but not yet written (write-behind queue). */
  readonly pendingEvents: number
  /** D-2: the failure that paused automatic writing, if any. */
  readonly writeError?: unknown
}

export interface SalvageResult {
  /** The id of the copy. */
  readonly id: string
  /** Events kept from the original (seq 0..kept-1); closers come after. */
  readonly kept: number
  readonly closers: number
  readonly skipped: readonly string[]
}

/** What `importSession` stored. */
export interface ImportResult {
  /** The id it was stored under. */
  readonly id: string
  /** Events read from the file. */
  readonly events: number
  /** Closers appended to an open turn (C-2), 0 or more. */
  readonly closers: number
  readonly attachments: number
  /** Referenced images the file did not carry. */
  readonly missing: readonly string[]
}

export interface SessionPersistenceService {
  readonly backend: PersistenceBackend
  /** D-2 barrier: resolves once every event of the session appended so far is stored. */
  flush(session: Session | string): Promise<void>
  flushAll(): Promise<void>
  /**
   * The last save before a run is reported done: `flush` retried for a bounded time while the
   * store fails; says what was not stored when it gave up (docs/persistence.md).
   */
  finalSave(session: Session | string): Promise<FinalSave>
  /**
   * `finalSave` of every live session at once (an app's exit: the terminal app, `dsh web`), so
   * the whole exit waits at most one retry window.
   */
  finalSaveAll(): Promise<readonly SessionFinalSave[]>
  /** Sessions whose last final save gave up and whose events the store still lacks (the exit code says so). */
  unstored(): readonly string[]
  /** Stored and write-behind state of an id; never writes, never hydrates. */
  inspect(id: string): Promise<SessionInspection>
  /** Cold load (C-1..C-5), repair, hydrate into `ctx.sessions`. */
  load(id: string): Promise<LoadResult>
  list(): Promise<readonly StoredSessionSummary[]>
  /** S-14 through `ctx.sessions.fork`, then materialised. Loads the source when it is not live. */
  fork(sourceId: string, boundary?: number, childId?: string): Promise<Session>
  /**
   * D-5: stores what can be salvaged from a damaged session as a new session (id `copyId`, else
   * `<id>-salvaged`, `-salvaged-2`...), closing an open turn as interrupted. The original is never
   * written. Throws when the backend cannot salvage.
   */
  salvage(id: string, copyId?: string): Promise<SalvageResult>
  /** Moves the stored session to the trash; refuses a live session with an open turn. */
  delete(id: string): Promise<boolean>
  /** The last write failure of a session whose automatic writing is paused (D-2), if any. */
  writeError(id: string): unknown
  /** Flushes and closes a live session and releases its writer lease; `load` brings it back. */
  unload(id: string): Promise<void>
  /** The session and its images, ready for `encodeSessionExport` (persistence/exchange.ts). */
  exportSession(id: string): Promise<SessionExchange>
  /**
   * Stores an exported session in this home (persistence/exchange.ts): it runs in `cwd` (the
   * file's own folder is never kept), and `session/imported` after the file's events resets
   * every permission knob to this home's defaults. See the implementation.
   */
  importSession(exchange: SessionExchange, options: { readonly id?: string; readonly newId?: boolean; readonly cwd: string }): Promise<ImportResult>
}

declare module 'cordis' {
  interface Context {
    sessionPersistence: SessionPersistenceService
  }
}
