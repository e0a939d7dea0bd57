/**
 * `ctx.sessionPersistence` (K-2): write-behind (D-2), cold load with crash repair (C-1..C-5,
 * D-5, D-7) and session management (list, load, fork, delete) over one `PersistenceBackend`.
 *
 * Load with `ctx.plugin(SessionPersistence, { backend })` after `ctx.sessions`.
 */
import { Context, Service } from 'cordis'
import type { ListenerErrorReporter } from '../kernel/index.js'
import type { Session } from '../session/api.js'
import { interruptedTurnClosers } from '../session/repair.js'
import { IMPORTED_EVENT } from '../session/registry.js'
import { concatEvents } from '../session/packed-run.js'
import type { SessionEvent } from '../session/types.js'
import {
  PersistenceError, SeqMismatchError, SessionExistsError, SessionNotStoredError, StaleRevisionError,
  type ImportResult, type LoadResult, type PersistenceBackend, type SalvageResult, type WriterLease, type SessionInspection, type SessionPersistenceService, type StoredSessionSummary,
} from './api.js'
import { encodeEvent, encodeHeader } from './records.js'
import { retryFlush, type FinalSave, type SessionFinalSave } from './final-save.js'
import { gatherAttachments, ImportError, loggedAttachments, type SessionExchange } from './exchange.js'

export interface SessionPersistenceConfig {
  readonly backend: PersistenceBackend
  /** D-2 batch window, from the first pending event (default 200 ms). */
  readonly maxDelayMs?: number
  /** Close the backend when the plugin unloads (default true). */
  readonly closeBackend?: boolean
  /** Where failed background writes are reported (default: stderr). */
  readonly report?: ListenerErrorReporter
  /** How long `finalSave` retries a store that fails (default 15 s). */
  readonly retryMs?: number
}

/** Per live session write-behind state. */
interface Tracked {
  readonly session: Session
  /** Appended but not yet stored, seq-contiguous. */
  readonly queue: SessionEvent[]
  /** Undefined: unknown (the session became live without us); appendBatch then materialises if needed. */
  stored: boolean | undefined
  timer?: ReturnType<typeof setTimeout>
  writing?: Promise<void>
  flushing?: Promise<void>
  /** D-2: set by a failed batch; cleared by the next event or flush(). */
  paused: boolean
  error?: unknown
}

const STALE_RETRIES = 3

const defaultReporter: ListenerErrorReporter = (name, error) => {
  process.stderr.write(`dsh: ${name}: ${error instanceof Error ? error.message : String(error)}\n`)
}

export class SessionPersistence extends Service implements SessionPersistenceService {
  static inject = ['sessions']

  readonly backend: PersistenceBackend
  private readonly maxDelayMs: number
  private readonly retryMs: number
  private readonly report: ListenerErrorReporter
  private readonly tracked = new Map<string, Tracked>()
  /** Cold loads in progress by id: concurrent loads of one id share one. */
  private readonly loading = new Map<string, Promise<LoadResult>>()
  /** Ids being hydrated by `load`: their events are already stored. */
  private readonly hydrating = new Set<string>()
  private readonly root: Context
  /** Attachment copies of seeded children still running, by child id (flush waits for them). */
  private readonly copying = new Map<string, Promise<void>>()
  /** One writer per session: the writer locks this process holds (or is taking), by id. */
  private readonly leases = new Map<string, Promise<WriterLease | undefined>>()
  /** Closed sessions whose last writes and lock release are under way, by id. */
  private readonly retiring = new Map<string, Promise<void>>()
  /** Sessions whose last final save gave up (`unstored`). */
  private readonly gaveUp = new Set<string>()

  constructor(ctx: Context, config: SessionPersistenceConfig) {
    super(ctx, 'sessionPersistence')
    this.root = ctx
    this.backend = config.backend
    this.maxDelayMs = config.maxDelayMs ?? 200
    this.retryMs = config.retryMs ?? 15_000
    this.report = config.report ?? defaultReporter
    ctx.on('session/created', (session) => this.onCreated(session))
    ctx.on('session/event', (session, event) => this.onEvent(session, event))
    ctx.on('session/flush', (session) => this.flush(session))
    ctx.on('session/closed', (session) => { this.retire(session.id).catch(() => undefined) })
    // Attachments are kept by the backend, with the session (docs/session-format.md).
    const { putAttachment, getAttachment } = this.backend
    if (putAttachment !== undefined && getAttachment !== undefined) {
      ctx.effect(() => ctx.sessions.attachments.useStore({
        put: (header, id, attachment) => putAttachment.call(this.backend, header, id, attachment),
        get: (sessionId, id) => getAttachment.call(this.backend, sessionId, id),
      }), 'sessionPersistence: attachment store')
    }
    ctx.effect(() => () => {
      for (const tracked of this.tracked.values()) if (tracked.timer) clearTimeout(tracked.timer)
      // Each failed write was reported where it failed (writeOnce): not again here.
      const pending = this.flushAll().catch(() => undefined)
        .then(() => this.releaseAll())
      // Returned so unloading waits: nothing appended before teardown may be lost.
      return (config.closeBackend ?? true) ? pending.then(() => this.backend.close?.()) : pending
    }, 'sessionPersistence: final flush')
  }

  /**
   * Takes the session's writer lock once per process, before anything is written for it or a
   * stored copy is repaired; a refusal is not remembered, so a later attempt may succeed.
   */
  private lease(id: string): Promise<WriterLease | undefined> {
    let lease = this.leases.get(id)
    if (lease === undefined) {
      lease = this.backend.acquireWriter?.(id) ?? Promise.resolve(undefined)
      this.leases.set(id, lease)
      lease.catch(() => { if (this.leases.get(id) === lease) this.leases.delete(id) })
    }
    return lease
  }

  private async release(id: string): Promise<void> {
    const lease = this.leases.get(id)
    this.leases.delete(id)
    await (await lease?.catch(() => undefined))?.release()
  }

  private async releaseAll(): Promise<void> {
    await Promise.all([...this.leases.keys()].map((id) => this.release(id).catch((error) => this.report(`session persistence (${id})`, error))))
  }

  /**
   * The end of a closed session (docs/persistence.md, "Session lifecycle"): write what is still
   * queued (a write in flight is awaited, never lost), then drop the tracking and give the
   * writer lock back. A failed write is reported by the write itself and rejects this: the queue
   * and the lock stay (nothing is lost and no other writer can diverge from it) until a later
   * `unload`, `load` or `delete` of the id retries, or the process ends.
   */
  private retire(id: string): Promise<void> {
    const under = this.retiring.get(id)
    if (under !== undefined) return under
    const retiring = (async () => {
      await this.flush(id)
      // A session with this id live again (loaded anew) owns the tracking and the lock now.
      if (this.sessions.get(id) !== undefined) return
      const tracked = this.tracked.get(id)
      if (tracked !== undefined && !tracked.session.live) this.tracked.delete(id)
      await this.release(id)
    })()
    this.retiring.set(id, retiring)
    retiring.catch(() => undefined).finally(() => { if (this.retiring.get(id) === retiring) this.retiring.delete(id) })
    return retiring
  }

  /** Waits for the end of a closed session's close (retried after a failed write); rejects as a failed write does. */
  private closing(id: string): Promise<void> {
    if (this.retiring.has(id) || (this.sessions.get(id) === undefined && this.tracked.has(id))) return this.retire(id)
    return Promise.resolve()
  }

  /** Ends a live session without writing what it still queues (a load or import that failed after it went live). */
  private async discard(id: string): Promise<void> {
    const tracked = this.tracked.get(id)
    if (tracked?.timer) clearTimeout(tracked.timer)
    this.tracked.delete(id)
    this.sessions.close(id)
    await this.closing(id).catch(() => undefined)
    await this.release(id)
  }

  private get sessions() {
    return this.root.sessions
  }

  // --- write-behind (D-2) ---

  private track(session: Session, stored: boolean | undefined, queue: SessionEvent[]): Tracked {
    const previous = this.tracked.get(session.id)
    if (previous?.timer) clearTimeout(previous.timer)
    const tracked: Tracked = { session, queue, stored, paused: false }
    this.tracked.set(session.id, tracked)
    return tracked
  }

  private onCreated(session: Session): void {
    if (this.hydrating.has(session.id)) {
      this.track(session, true, [])
      return
    }
    // New or forked: the header and any seed are not stored yet.
    this.schedule(this.track(session, false, [...session.events]))
    // A child seeded from its parent (fork, subagent fork) keeps the images its seed references,
    // so it still has them when it is loaded later without its parent.
    const parent = session.header.parentSession
    const ids = parent === undefined ? [] : loggedAttachments(session.events)
    if (parent !== undefined && ids.length > 0) {
      const copying = this.sessions.attachments.copy(parent, session.header, ids)
        .catch((error) => this.report(`session persistence (${session.id} attachments)`, error))
        .finally(() => { if (this.copying.get(session.id) === copying) this.copying.delete(session.id) })
      this.copying.set(session.id, copying)
    }
  }

  private onEvent(session: Session, event: SessionEvent): void {
    let tracked = this.tracked.get(session.id)
    if (tracked === undefined || tracked.session !== session) {
      // Live before we were loaded: store what it has, materialising if needed.
      tracked = this.track(session, undefined, session.events.slice(0, event.seq))
    }
    tracked.queue.push(event)
    tracked.paused = false
    this.schedule(tracked)
  }

  /** Arms the window from the first pending event; no timer while writing or paused. */
  private schedule(tracked: Tracked): void {
    if (tracked.timer || tracked.writing || tracked.paused) return
    if (tracked.queue.length === 0 && tracked.stored !== false) return
    tracked.timer = setTimeout(() => {
      tracked.timer = undefined
      this.writeOnce(tracked).catch(() => undefined)
    }, this.maxDelayMs)
  }

  /** Writes everything queued now as one batch. A failed batch stays at the head of the queue. */
  private writeOnce(tracked: Tracked): Promise<void> {
    if (tracked.writing) return tracked.writing
    if (tracked.timer) {
      clearTimeout(tracked.timer)
      tracked.timer = undefined
    }
    const { header } = tracked.session
    let batch: SessionEvent[] = []
    const write = (async () => {
      await this.lease(header.id)
      // Taken once the lease is held, not when the write was asked for: events appended in the
      // same tick (an observer's append lands in the microtask after the event it saw, as the
      // fallback title does after the first prompt) join this batch instead of needing a write,
      // and an fdatasync, of their own before a flush can return.
      batch = tracked.queue.slice()
      try {
        if (tracked.stored === false) await this.backend.create(header, batch)
        else await this.backend.appendBatch(header, batch)
      } catch (error) {
        if (!(error instanceof SessionExistsError || error instanceof SeqMismatchError) || !await this.reconcile(tracked, batch)) throw error
      }
    })()
    tracked.writing = write.then(() => {
      tracked.stored = true
      tracked.queue.splice(0, batch.length)
      tracked.error = undefined
      tracked.paused = false
      // A closed session with nothing left to write needs no more tracking.
      if (!tracked.session.live && tracked.queue.length === 0 && this.tracked.get(tracked.session.id) === tracked) {
        this.tracked.delete(tracked.session.id)
      }
    }, (error: unknown) => {
      // Once per run of failures: a flush retried while the store is away says it once.
      const first = !tracked.paused
      tracked.error = error
      tracked.paused = true
      if (first) this.report(`session persistence (${tracked.session.id})`, error)
      throw error
    }).finally(() => {
      tracked.writing = undefined
      this.schedule(tracked)
    })
    return tracked.writing
  }

  /**
   * After "already stored" or a seq mismatch: if the store holds this very session (same header)
   * and its events are a prefix of ours (an earlier write that reported failure but landed, or a
   * session that was live before we were loaded), write only what is missing. Rare path: reads
   * the stored log once. False when the store holds something else.
   */
  private async reconcile(tracked: Tracked, batch: readonly SessionEvent[]): Promise<boolean> {
    const { session } = tracked
    const stored = await this.backend.loadStored(session.id)
    if (stored === undefined || stored.torn !== undefined || encodeHeader(stored.header) !== encodeHeader(session.header)) return false
    const first = batch[0]?.seq ?? session.length
    const have = stored.events.length
    if (have < first || have > first + batch.length) return false
    for (let seq = Math.max(0, first - 8); seq < have; seq++) {
      if (encodeEvent(stored.events[seq]) !== encodeEvent(session.events[seq])) return false
    }
    const missing = batch.slice(have - first)
    if (missing.length > 0) await this.backend.appendBatch(session.header, missing)
    return true
  }

  /** D-2 barrier, shared by concurrent callers: writes until the queue is empty. */
  flush(target: Session | string): Promise<void> {
    const id = typeof target === 'string' ? target : target.id
    // A seeded child's attachment copy is part of what a flush makes durable.
    const copying = this.copying.get(id)
    if (copying !== undefined) return copying.then(() => this.flush(id))
    const tracked = this.tracked.get(id)
    if (tracked === undefined) return Promise.resolve()
    if (tracked.flushing === undefined) {
      // Cleared in a `.finally` callback, which always runs after this assignment: a `finally`
      // block inside the function ran before it when there was nothing to write, and left a
      // settled barrier that every later flush returned without writing.
      const flushing: Promise<void> = (async () => {
        while (tracked.queue.length > 0 || tracked.stored !== true) {
          await (tracked.writing ?? this.writeOnce(tracked))
        }
      })().finally(() => {
        if (tracked.flushing === flushing) tracked.flushing = undefined
      })
      tracked.flushing = flushing
    }
    return tracked.flushing
  }

  /**
   * The last save of a session before it is reported done: `flush`, retried while the store
   * fails (not when another writer holds the session) for up to `retryMs`; what it could not
   * store when it gave up.
   */
  finalSave(target: Session | string): Promise<FinalSave> {
    const id = typeof target === 'string' ? target : target.id
    const pending = () => {
      const tracked = this.tracked.get(id)
      return { events: tracked?.queue.length ?? 0, whole: tracked?.stored === false }
    }
    return retryFlush({ flush: () => this.flush(id), pending, retryMs: this.retryMs }).then((saved) => {
      if (saved.stored) this.gaveUp.delete(id)
      else this.gaveUp.add(id)
      return saved
    })
  }

  unstored(): readonly string[] {
    return [...this.gaveUp].filter((id) => {
      const tracked = this.tracked.get(id)
      return tracked !== undefined && (tracked.queue.length > 0 || tracked.stored === false)
    })
  }

  finalSaveAll(): Promise<readonly SessionFinalSave[]> {
    return Promise.all([...this.tracked.values()].map(async ({ session }) => ({ id: session.id, saved: await this.finalSave(session.id), length: session.length })))
  }

  async flushAll(): Promise<void> {
    const results = await Promise.allSettled([...this.tracked.keys()].map((id) => this.flush(id)))
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason)
    if (failures.length) throw new AggregateError(failures, `session persistence: ${failures.length} session(s) failed to flush`)
  }

  writeError(id: string): unknown {
    const tracked = this.tracked.get(id)
    return tracked?.paused ? tracked.error : undefined
  }

  async inspect(id: string): Promise<SessionInspection> {
    const tracked = this.tracked.get(id)
    const stored = await this.backend.loadStored(id)
    return {
      id,
      live: this.sessions.get(id)?.live === true,
      ...stored && {
        stored: {
          header: stored.header, length: stored.events.length, revision: stored.revision,
          ...stored.torn && { torn: stored.torn },
          pendingClosers: interruptedTurnClosers(stored.events).length,
        },
      },
      pendingEvents: tracked?.queue.length ?? 0,
      ...tracked?.paused && { writeError: tracked.error },
    }
  }

  // --- cold load (C-1..C-5) ---

  async load(id: string): Promise<LoadResult> {
    const live = this.sessions.get(id)
    if (live !== undefined) {
      // C-5: never repair a live session; make it durable, refuse while its turn is open.
      await this.flush(live)
      if (live.position.turnOpen) {
        throw new PersistenceError(`session ${JSON.stringify(id)} is live in this process with turn ${live.position.turn} open; it cannot be loaded until the turn ends`, id)
      }
      return { session: live, repaired: [], wasLive: true }
    }
    // A session closed in this process is read only once its last writes are durable; if they
    // failed, they are retried now and their error refuses the load (they are still queued).
    await this.closing(id)
    // Concurrent first uses of a stored session (two prompts at once) share one cold load; the
    // later callers get the same live session, already repaired.
    const pending = this.loading.get(id)
    if (pending !== undefined) return { ...await pending, repaired: [], wasLive: true }
    const loading = (async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.coldLoad(id)
        } catch (error) {
          if (!(error instanceof StaleRevisionError) || attempt >= STALE_RETRIES) throw error
        }
      }
    })()
    this.loading.set(id, loading)
    try {
      return await loading
    } finally {
      this.loading.delete(id)
    }
  }

  private async coldLoad(id: string): Promise<LoadResult> {
    // One writer per session: refuse before reading, so a live writer's open turn is never
    // repaired as interrupted by a second process.
    await this.lease(id)
    let stored
    try {
      stored = await this.backend.loadStored(id)
    } catch (error) {
      await this.release(id)
      throw error
    }
    if (stored === undefined) {
      await this.release(id)
      throw this.notStored(id)
    }
    const { header, events, torn } = stored
    const closers = interruptedTurnClosers(events)
    // The session registry checks every event (unknown types, data, invariants) before anything
    // is written back; the session goes live (session/created) only once its repair committed,
    // so no listener sees a session whose load then fails.
    let prepared
    try {
      // The backend parsed these objects (JSON.parse) for this load alone: frozen in place, not
      // copied; the closers are frozen JSON snapshots already.
      prepared = this.sessions.prepare(header, concatEvents(events, closers), { adopt: 'parsed' })
      // D-7: a stale revision (someone wrote since our read) rejects here; nothing went live.
      if (torn !== undefined || closers.length > 0) await this.backend.commitRepair(id, closers, stored.revision)
    } catch (error) {
      await this.release(id)
      throw error
    }
    this.hydrating.add(id)
    let session: Session
    try {
      session = prepared.publish()
    } finally {
      this.hydrating.delete(id)
    }
    return { session, repaired: closers, torn, wasLive: false }
  }

  // --- management ---

  list(): Promise<readonly StoredSessionSummary[]> {
    return this.backend.list()
  }

  async fork(sourceId: string, boundary?: number, childId?: string): Promise<Session> {
    if (this.sessions.get(sourceId) === undefined) await this.load(sourceId)
    const child = this.sessions.fork(sourceId, boundary, childId)
    // The copy (started when the child was created) keeps its images when the source is deleted later.
    await this.flush(child)
    return child
  }

  async salvage(id: string, copyId?: string): Promise<SalvageResult> {
    if (this.backend.salvageStored === undefined) throw new PersistenceError(`the ${this.backend.kind} backend cannot salvage sessions`, id)
    const found = await this.backend.salvageStored(id)
    if (found === undefined) throw this.notStored(id)
    const closers = interruptedTurnClosers(found.events)
    for (let n = 1; ; n++) {
      const target = copyId ?? `${id}-salvaged${n === 1 ? '' : `-${n}`}`
      try {
        await this.backend.create({ ...found.header, id: target }, [...found.events, ...closers])
        return { id: target, kept: found.events.length, closers: closers.length, skipped: found.skipped }
      } catch (error) {
        if (!(error instanceof SessionExistsError) || copyId !== undefined) throw error
      }
    }
  }

  /**
   * A session as it travels to another home: its log (a live one as it is now, flushed first;
   * a stored one as committed) and the bytes of the images it references (`missing`: ids this
   * store no longer has; the export still goes out, the log is the record).
   */
  async exportSession(id: string): Promise<SessionExchange> {
    const live = this.sessions.get(id)
    let header, events
    if (live !== undefined) {
      await this.flush(live).catch(() => undefined)
      // A snapshot: the live log may grow while the images are read.
      ;({ header, events } = { header: live.header, events: live.events.slice() })
    } else {
      const stored = await this.backend.loadStored(id)
      if (stored === undefined) throw this.notStored(id)
      ;({ header, events } = stored)
    }
    const read = (attachmentId: string) => live !== undefined ? this.sessions.attachments.read(id, attachmentId) : this.backend.getAttachment?.(id, attachmentId) ?? Promise.resolve(undefined)
    return { header, events, ...await gatherAttachments(events, read) }
  }

  private notStored(id: string): SessionNotStoredError {
    return new SessionNotStoredError(`session ${JSON.stringify(id)} is not stored (${this.backend.kind} backend)`, id)
  }

  /**
   * Stores a session from another home (`parseSessionExport`) under its own id, or under
   * `options.id`; with `newId`, a taken id becomes `<id>-imported`, `-imported-2`...; `cwd`
   * replaces the header's working folder (the exporting machine's may not exist here). Every event
   * is checked as a cold load checks it, an open turn is closed as interrupted (C-2), the images
   * are stored first, and the session is durable when this resolves. Nothing is written when
   * the id is taken or a check fails.
   *
   * The file's header `cwd` is never kept: the session runs in `options.cwd`, a folder of this
   * machine the caller chose. After the file's events (and the closers of an open turn) comes
   * `session/imported {from: {id, cwd?}}`, where every permission knob fold starts again, so the
   * file's sandbox mode, approval policy and preset do not apply here (docs/security.md).
   */
  async importSession(exchange: SessionExchange, options: { readonly id?: string; readonly newId?: boolean; readonly cwd: string }): Promise<ImportResult> {
    if (typeof options?.cwd !== 'string' || options.cwd === '') throw new TypeError('importSession needs the working folder of this machine (options.cwd)')
    const base = options.id ?? exchange.header.id
    for (let n = 1; ; n++) {
      const id = n === 1 ? base : `${base}-imported${n === 2 ? '' : `-${n - 1}`}`
      if (this.sessions.get(id) !== undefined || await this.backend.readStoredRevision(id) !== undefined) {
        if (options.newId && n < 1000) continue
        throw new SessionExistsError(`session ${JSON.stringify(id)} is already stored; import it under a new id (--new-id) or remove the stored one first`, id)
      }
      return this.importAs(id, options.cwd, exchange)
    }
  }

  private async importAs(id: string, cwd: string, exchange: SessionExchange): Promise<ImportResult> {
    const header = { ...exchange.header, id, cwd }
    const closers = interruptedTurnClosers(exchange.events)
    const from = { id: exchange.header.id, ...exchange.header.cwd !== undefined ? { cwd: exchange.header.cwd } : {} }
    await this.lease(id)
    let session: Session | undefined
    try {
      // Checks every event (types, data, invariants) before anything is written.
      session = this.sessions.hydrate(header, concatEvents(exchange.events, closers))
      session.append(IMPORTED_EVENT, { from })
    } catch (error) {
      if (session !== undefined) await this.discard(id)
      else await this.release(id)
      throw new ImportError(`the log cannot be imported: ${error instanceof Error ? error.message : String(error)}`, id)
    }
    try {
      for (const attachment of exchange.attachments) {
        await this.backend.putAttachment?.(header, attachment.attachmentId, { data: attachment.data, mediaType: attachment.mediaType })
      }
      await this.flush(session)
    } catch (error) {
      await this.discard(id)
      throw error
    }
    await this.unload(id)
    return { id, events: exchange.events.length, closers: closers.length, attachments: exchange.attachments.length, missing: exchange.missing }
  }

  async delete(id: string): Promise<boolean> {
    const live = this.sessions.get(id)
    if (live !== undefined) {
      if (live.position.turnOpen) {
        throw new PersistenceError(`session ${JSON.stringify(id)} is live with turn ${live.position.turn} open; cancel it before deleting`, id)
      }
      await this.flush(live)
      this.sessions.close(id)
    }
    // The stored copy goes to the trash: a closed session's write that failed is not retried.
    await this.closing(id).catch(() => undefined)
    this.tracked.delete(id)
    await this.lease(id)
    let deleted: boolean
    try {
      deleted = await this.backend.trash(id)
    } finally {
      await this.release(id)
    }
    if (deleted) await this.root.parallel('session/deleted', id)
    return deleted
  }

  /**
   * Flushes a live session, closes it and waits until its writer lock is given back, so another
   * process can take it; it stays stored and a later `load` brings it back. Refuses an open turn.
   * For a session already closed it waits for (or retries) the end of that close.
   */
  async unload(id: string): Promise<void> {
    const live = this.sessions.get(id)
    if (live !== undefined) {
      if (live.position.turnOpen) {
        throw new PersistenceError(`session ${JSON.stringify(id)} is live with turn ${live.position.turn} open; it cannot be unloaded until the turn ends`, id)
      }
      // A failed write leaves the session live, as it was.
      await this.flush(live)
      this.sessions.close(id)
    }
    await this.closing(id)
    if (this.sessions.get(id) === undefined) await this.release(id)
  }
}
