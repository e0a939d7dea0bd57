/**
 * SQLite backend (D-6) on better-sqlite3: one `sessions` row per session and one `events` row
 * per stored record (a packed chunk row stays one row spanning `count` seqs). Every write is one
 * IMMEDIATE transaction that bumps the session's revision, so there are no torn writes; a row
 * that is nevertheless unreadable is classified exactly like a bad JSONL line (D-5).
 */
import { randomUUID } from 'node:crypto'
import { closeSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { SessionEvent, SessionHeader } from '../../session/types.js'
import { CHUNK_ROW_TYPES } from '../../session/chunk-rows.js'
import {
  FormatVersionError, OperationChains, PersistenceError, SeqMismatchError, SessionExistsError, StaleRevisionError,
  type PersistenceBackend, type SalvagedSession, type WriterHolder, type WriterLease, SessionInUseError, type StoredSession, type StoredSessionSummary,
} from '../api.js'
import { batchBookkeeping, checkHeader, encodeHeader, eventRowValues, firstRowAfter, headerProblem, lastTurnOf, renderedRowRecord, rowRecord, salvageRecords, scanRecords, type RawRecord } from '../records.js'
import { currentHolder, holderIsStale } from '../writer-lock.js'
import { EVENT_COLUMN_LIST, EVENT_COLUMNS, eventColumnDefinitions } from '../event-columns.js'
import type { StoredAttachment } from '../../session/attachments.js'

/** 'DSHP' */
export const SQLITE_APPLICATION_ID = 0x44534850
export const SQLITE_SCHEMA_VERSION = 1

export interface SqliteBackendOptions {
  /** Database file; its folder is created 0700 and the file 0600 when missing. */
  readonly file: string
  /** Pack chunk runs into rows (R-1..R-4). Default true. */
  readonly packed?: boolean
  /**
   * How long an operation waits for a lock another process holds before it fails (default
   * 5000 ms). The wait is asynchronous: the event loop runs on meanwhile.
   */
  readonly busyTimeoutMs?: number
}

/** The first and the longest pause between two attempts on a locked database. */
const BUSY_FIRST_PAUSE_MS = 5
const BUSY_MAX_PAUSE_MS = 100

/** SQLite's answer for a file whose bytes are not a sound database (a bad page, a torn copy). */
function isDamage(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^SQLITE_(CORRUPT|NOTADB)/.test(code)
}

/** `PRAGMA quick_check`: every page of the file read and its b-tree structure checked. */
function fileIsIntact(db: Database.Database): boolean {
  try {
    const problems = db.pragma('quick_check', { simple: false }) as { quick_check: string }[]
    return problems.length === 1 && problems[0]!.quick_check === 'ok'
  } catch (error) {
    if (isDamage(error)) return false
    throw error
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'))
}

const SCHEMA = `
CREATE TABLE store_state (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) STRICT;
CREATE TABLE sessions (
  id TEXT PRIMARY KEY NOT NULL,
  incarnation TEXT NOT NULL UNIQUE,
  revision INTEGER NOT NULL,
  header TEXT NOT NULL,
  cwd TEXT,
  parent_session TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  next_seq INTEGER NOT NULL,
  turns INTEGER NOT NULL,
  title TEXT
) STRICT;
CREATE TABLE events (
  session_id TEXT NOT NULL REFERENCES sessions(id),
${eventColumnDefinitions('sqlite')}
  PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;
CREATE TABLE trash_sessions (
  incarnation TEXT PRIMARY KEY NOT NULL,
  id TEXT NOT NULL,
  trashed_at INTEGER NOT NULL,
  revision INTEGER NOT NULL,
  header TEXT NOT NULL
) STRICT;
CREATE TABLE trash_events (
  incarnation TEXT NOT NULL,
${eventColumnDefinitions('sqlite')}
  PRIMARY KEY (incarnation, seq)
) STRICT, WITHOUT ROWID;
`

/**
 * Attachments (content-addressed images of a session) and their trash, and the archived flag
 * (the last `session/archived` event, kept as a row so listing never scans the events). Added to
 * stores of this schema version when missing, like the writers table; older versions ignore them.
 */
const ATTACHMENT_TABLES = `
CREATE TABLE IF NOT EXISTS attachments (
  session_id TEXT NOT NULL,
  attachment_id TEXT NOT NULL,
  media_type TEXT NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (session_id, attachment_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trash_attachments (
  incarnation TEXT NOT NULL,
  attachment_id TEXT NOT NULL,
  media_type TEXT NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (incarnation, attachment_id)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_archived (
  session_id TEXT PRIMARY KEY NOT NULL,
  archived INTEGER NOT NULL
) STRICT;
`

const WRITERS_TABLE = `
CREATE TABLE IF NOT EXISTS session_writers (
  session_id TEXT PRIMARY KEY NOT NULL,
  pid INTEGER NOT NULL,
  host TEXT NOT NULL,
  since TEXT NOT NULL,
  token TEXT NOT NULL
) STRICT;
`

interface SessionRow {
  id: string
  incarnation: string
  revision: number
  header: string
  cwd: string | null
  parent_session: string | null
  created_at: number
  updated_at: number
  next_seq: number
  turns: number
  title: string | null
}

/**
 * An event row rendered by SQLite as the record text `rowRecord(row).text` renders in
 * JavaScript: the same keys in the same order (`seq0`/`time0` on chunk rows, `ignorable` as
 * `true` for 1 and the stored integer otherwise, absent columns absent). The columns are STRICT
 * (safe integers print as JavaScript prints them, `data` and the JSON columns are pasted verbatim), and
 * `json_quote` escapes a type string as `JSON.stringify` does; records.test.ts compares the two.
 */
export const RENDERED_RECORD = `'{"type":' || json_quote(type) || CASE WHEN type IN (${CHUNK_ROW_TYPES.map(t => `'${t}'`).join(', ')}) ` +
  `THEN ',"seq0":' || seq || ',"time0":' ELSE ',"seq":' || seq || ',"time":' END || time || ',"data":' || data || ` +
  `CASE WHEN ignorable IS NULL THEN '' WHEN ignorable = 1 THEN ',"ignorable":true' ELSE ',"ignorable":' || ignorable END || ` +
  `coalesce(',"surfaceOp":' || surface_op, '') || coalesce(',"sourceEventSeqs":' || source_event_seqs, '') || '}'`

/** How much of the file a whole-session read maps (a larger file is read past it as before). */
const MAPPED_READ_BYTES = 1 << 30

interface EventRow {
  seq: number
  count: number
  type: string
  time: number
  data: string
  ignorable: number | null
  surface_op: string | null
  source_event_seqs: string | null
}

export class SqliteBackend implements PersistenceBackend {
  readonly kind = 'sqlite'
  readonly file: string
  readonly db: Database.Database
  private readonly packed: boolean
  private readonly busyTimeoutMs: number
  private readonly storeId: string
  private readonly chains = new OperationChains()
  private readonly statements
  /** The last damage check of `list()` and the state of the file it was made on. */
  private checked?: { readonly key: string; readonly damaged: ReadonlyMap<string, string> }

  constructor(options: SqliteBackendOptions) {
    this.file = options.file
    this.packed = options.packed ?? true
    this.busyTimeoutMs = options.busyTimeoutMs ?? 5000
    mkdirSync(dirname(options.file), { recursive: true, mode: 0o700 })
    // Create the file 0600 ourselves: SQLite gives the -wal/-shm files the same mode.
    closeSync(openSync(options.file, 'a', 0o600))
    this.db = new Database(options.file)
    try {
      this.storeId = this.openSchema()
    } catch (error) {
      this.db.close()
      throw error
    }
    // From here on SQLite never waits for a lock itself (its busy handler sleeps on the calling
    // thread, which is the event loop's): `locked` retries a busy operation after async pauses.
    this.db.pragma('busy_timeout = 0')
    const db = this.db
    this.statements = {
      session: db.prepare<[string], SessionRow>('SELECT * FROM sessions WHERE id = ?'),
      revision: db.prepare<[string], Pick<SessionRow, 'incarnation' | 'revision'>>('SELECT incarnation, revision FROM sessions WHERE id = ?'),
      insertSession: db.prepare('INSERT INTO sessions (id, incarnation, revision, header, cwd, parent_session, created_at, updated_at, next_seq, turns, title) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
      updateSession: db.prepare('UPDATE sessions SET revision = revision + 1, updated_at = ?, next_seq = ?, turns = turns + ?, title = coalesce(?, title) WHERE id = ?'),
      insertEvent: db.prepare(`INSERT INTO events (session_id, ${EVENT_COLUMN_LIST}) VALUES (?, ${EVENT_COLUMNS.map(() => '?').join(', ')})`),
      events: db.prepare<[string], EventRow>(`SELECT ${EVENT_COLUMN_LIST} FROM events WHERE session_id = ? ORDER BY seq`),
      // A cold load: the rows as record texts rendered by SQLite (see RENDERED_RECORD), and
      // their seqs, in two one-column reads (a row object of eight columns costs several times more).
      eventTexts: db.prepare<[string], string>(`SELECT ${RENDERED_RECORD} FROM events WHERE session_id = ? ORDER BY seq`).pluck(true),
      eventSeqs: db.prepare<[string], number>('SELECT seq FROM events WHERE session_id = ? ORDER BY seq').pluck(true),
      rowStart: db.prepare<[string, number], { start: number | null }>('SELECT max(seq) AS start FROM events WHERE session_id = ? AND seq <= ?'),
      eventsFrom: db.prepare<[string, number], EventRow>(`SELECT ${EVENT_COLUMN_LIST} FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq`),
      deleteFrom: db.prepare('DELETE FROM events WHERE session_id = ? AND seq >= ?'),
      list: db.prepare<[], SessionRow>('SELECT * FROM sessions ORDER BY updated_at DESC, id'),
      totalChanges: db.prepare<[], number>('SELECT total_changes()').pluck(true),
      ids: db.prepare<[], string>('SELECT id FROM sessions').pluck(true),
      // Walks the (session_id, seq) key backwards: only the rows after the last turn event.
      lastTurn: db.prepare<[string], Pick<EventRow, 'type' | 'data'>>("SELECT type, data FROM events WHERE session_id = ? AND type IN ('turn/start', 'turn/end') ORDER BY seq DESC LIMIT 1"),
      trashSession: db.prepare('INSERT INTO trash_sessions (incarnation, id, trashed_at, revision, header) SELECT incarnation, id, ?, revision, header FROM sessions WHERE id = ?'),
      trashEvents: db.prepare(`INSERT INTO trash_events (incarnation, ${EVENT_COLUMN_LIST}) SELECT ?, ${EVENT_COLUMN_LIST} FROM events WHERE session_id = ?`),
      deleteEvents: db.prepare('DELETE FROM events WHERE session_id = ?'),
      deleteSession: db.prepare('DELETE FROM sessions WHERE id = ?'),
      putAttachment: db.prepare('INSERT OR IGNORE INTO attachments (session_id, attachment_id, media_type, data) VALUES (?, ?, ?, ?)'),
      getAttachment: db.prepare<[string, string], { media_type: string; data: Buffer }>('SELECT media_type, data FROM attachments WHERE session_id = ? AND attachment_id = ?'),
      trashAttachments: db.prepare('INSERT OR IGNORE INTO trash_attachments (incarnation, attachment_id, media_type, data) SELECT ?, attachment_id, media_type, data FROM attachments WHERE session_id = ?'),
      deleteAttachments: db.prepare('DELETE FROM attachments WHERE session_id = ?'),
      archived: db.prepare<[], { session_id: string }>('SELECT session_id FROM session_archived WHERE archived = 1'),
      setArchived: db.prepare('INSERT INTO session_archived (session_id, archived) VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET archived = excluded.archived'),
      dropArchived: db.prepare('DELETE FROM session_archived WHERE session_id = ?'),
    }
  }

  /**
   * One writer per session: a row in session_writers, taken in an immediate transaction (so of
   * two racing processes exactly one inserts); a row of a dead pid on this host is replaced.
   */
  acquireWriter(id: string): Promise<WriterLease> {
    return this.locked(id, () => {
      const holder = currentHolder()
      const token = randomUUID()
      this.db.transaction(() => {
        const held = this.db.prepare<[string], WriterHolder & { token: string }>('SELECT pid, host, since, token FROM session_writers WHERE session_id = ?').get(id)
        if (held !== undefined && !holderIsStale(held)) throw new SessionInUseError(id, { pid: held.pid, host: held.host, since: held.since })
        this.db.prepare('INSERT OR REPLACE INTO session_writers (session_id, pid, host, since, token) VALUES (?, ?, ?, ?, ?)').run(id, holder.pid, holder.host, holder.since, token)
      }).immediate()
      let released = false
      return {
        holder,
        release: async () => {
          if (released || !this.db.open) return
          await this.unbusy(() => this.db.prepare('DELETE FROM session_writers WHERE session_id = ? AND token = ?').run(id, token))
          // Only once the row is gone: a release that failed (the file locked) may be tried again.
          released = true
        },
      }
    })
  }

  /** Checks identity and version before anything is written; creates the schema in a fresh file. */
  private openSchema(): string {
    const db = this.db
    const applicationId = db.pragma('application_id', { simple: true }) as number
    const version = db.pragma('user_version', { simple: true }) as number
    const objects = (db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'").get() as { n: number }).n
    const fresh = applicationId === 0 && version === 0 && objects === 0
    if (!fresh && applicationId !== SQLITE_APPLICATION_ID) {
      throw new FormatVersionError(`${this.file}: not a dsh session store (application_id 0x${applicationId.toString(16)}, expected 0x${SQLITE_APPLICATION_ID.toString(16)}); refusing to touch it`)
    }
    if (!fresh && version !== SQLITE_SCHEMA_VERSION) {
      const direction = version > SQLITE_SCHEMA_VERSION ? 'newer' : 'older'
      throw new FormatVersionError(`${this.file}: session store schema version ${version} is ${direction} than the supported version ${SQLITE_SCHEMA_VERSION}; no migration is done`)
    }
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = FULL')
    const synchronous = db.pragma('synchronous', { simple: true })
    if (synchronous !== 2) throw new PersistenceError(`${this.file}: PRAGMA synchronous reads back ${String(synchronous)}, not FULL (2)`)
    db.pragma('foreign_keys = ON')
    db.pragma('busy_timeout = 5000')
    if (fresh) {
      db.transaction(() => {
        db.exec(SCHEMA)
        db.prepare("INSERT INTO store_state (key, value) VALUES ('store_id', ?)").run(randomUUID())
        db.pragma(`application_id = ${SQLITE_APPLICATION_ID}`)
        db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`)
      }).immediate()
    }
    // Writer locks (one writer per session) are process state, not data: the table is added to
    // stores of this schema version when missing, and older dsh versions ignore it.
    db.exec(WRITERS_TABLE)
    db.exec(ATTACHMENT_TABLES)
    const row = db.prepare("SELECT value FROM store_state WHERE key = 'store_id'").get() as { value: string } | undefined
    if (row === undefined) throw new PersistenceError(`${this.file}: store_state has no store_id`)
    return row.value
  }

  create(header: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    return this.locked(header.id, () => {
      this.db.transaction(() => {
        if (this.statements.session.get(header.id) !== undefined) {
          throw new SessionExistsError(`session ${JSON.stringify(header.id)} is already stored`, header.id)
        }
        this.materialise(header, events)
      }).immediate()
    })
  }

  appendBatch(header: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    return this.locked(header.id, () => {
      this.db.transaction(() => {
        const row = this.statements.session.get(header.id)
        if (row === undefined) return this.materialise(header, events)
        if (events.length === 0) return
        if (events[0].seq !== row.next_seq) {
          throw new SeqMismatchError(`session ${JSON.stringify(header.id)}: batch starts at seq ${events[0].seq} but the stored log ends before seq ${row.next_seq}`, header.id)
        }
        this.insertEvents(header.id, events)
      }).immediate()
    })
  }

  loadStored(id: string): Promise<StoredSession | undefined> {
    return this.locked(id, () => {
      const { row, seqs, texts } = this.mapped(() => this.db.transaction(() => {
        const row = this.statements.session.get(id)
        if (row === undefined) return { row, seqs: [], texts: [] }
        return { row, seqs: this.statements.eventSeqs.all(id), texts: this.statements.eventTexts.all(id) }
      }).deferred())
      if (row === undefined) return undefined
      const header = checkHeader(JSON.parse(row.header), `${this.file} session ${JSON.stringify(id)}`)
      const records = new Array<RawRecord>(texts.length)
      for (let i = 0; i < texts.length; i++) records[i] = renderedRowRecord(seqs[i], texts[i])
      const { events, torn } = scanRecords(id, records, 0, `${this.file} session ${JSON.stringify(id)}`)
      return { header, events, revision: this.token(row), torn }
    })
  }

  salvageStored(id: string): Promise<SalvagedSession | undefined> {
    return this.locked(id, () => {
      const { row, rows } = this.mapped(() => this.db.transaction(() => {
        const row = this.statements.session.get(id)
        return { row, rows: row === undefined ? [] : this.statements.events.all(id) }
      }).deferred())
      if (row === undefined) return undefined
      const header = checkHeader(JSON.parse(row.header), `${this.file} session ${JSON.stringify(id)}`)
      return { header, ...salvageRecords(rows.map(rowRecord)) }
    })
  }

  /**
   * A read of a whole session goes through a memory map of the file: SQLite then takes each page
   * from the mapping instead of a read() into its own 2 MB page cache, which on a cold load of
   * 100k events cost ~60 ms of ~350 (docs/decisions.md, "SQLite cold loads read through a memory
   * map"). The map is dropped again at once (PRAGMA mmap_size = 0 unmaps), so the pages it touched
   * do not stay in the process's RSS. Synchronous, like every call on this connection: no other
   * statement runs in between.
   */
  private mapped<T>(read: () => T): T {
    this.db.pragma(`mmap_size = ${MAPPED_READ_BYTES}`)
    try {
      return read()
    } finally {
      this.db.pragma('mmap_size = 0')
    }
  }

  readStoredRevision(id: string): Promise<string | undefined> {
    return this.locked(id, () => {
      const row = this.statements.revision.get(id)
      return row === undefined ? undefined : this.token(row)
    })
  }

  /** Seek read (D-6): starts at the row holding `seq`, never reads earlier rows. */
  loadStoredFrom(id: string, seq: number): Promise<readonly SessionEvent[]> {
    return this.locked(id, () => {
      const rows = this.db.transaction(() => {
        const start = this.statements.rowStart.get(id, seq)?.start ?? seq
        return this.statements.eventsFrom.all(id, start)
      }).deferred()
      if (rows.length === 0) return []
      const { events } = scanRecords(id, rows.map(rowRecord), rows[0].seq)
      return events.filter((event) => event.seq >= seq)
    })
  }

  commitRepair(id: string, closers: readonly SessionEvent[], expectedRevision: string): Promise<string> {
    return this.locked(id, () => this.db.transaction(() => {
      const row = this.statements.session.get(id)
      const current = row === undefined ? undefined : this.token(row)
      if (current !== expectedRevision) {
        throw new StaleRevisionError(`session ${JSON.stringify(id)}: written since it was loaded (revision ${current ?? 'none'}, expected ${expectedRevision}); repair refused`, id)
      }
      const { events } = scanRecords(id, this.statements.events.all(id).map(rowRecord))
      // Cut the crash tail: every row from the first unreadable one on.
      this.statements.deleteFrom.run(id, firstRowAfter(this.statements.events.all(id), events.length))
      if (closers.length > 0 && closers[0].seq !== events.length) {
        throw new SeqMismatchError(`session ${JSON.stringify(id)}: closers start at seq ${closers[0].seq}, the log ends before seq ${events.length}`, id)
      }
      this.statements.updateSession.run(Date.now(), events.length, 0, null, id)
      if (closers.length > 0) this.insertEvents(id, closers)
      return this.token(this.statements.session.get(id)!)
    }).immediate())
  }

  /**
   * Every stored session's summary. A session whose rows the file cannot give back (a damaged
   * page) is listed as `damaged`, with the message its load fails with, instead of as healthy
   * (#43 item 13): see `damagedSessions`. A sessions table that cannot be read fails the listing
   * naming the file.
   */
  list(): Promise<readonly StoredSessionSummary[]> {
    return this.unbusy(() => {
      try {
        // Outside the listing's transaction: a read that meets a damaged page fails its
        // transaction's commit too.
        const damaged = this.damagedSessions()
        return this.db.transaction(() => {
          const archived = new Set(this.statements.archived.all().map(row => row.session_id))
          return this.statements.list.all().map((row): StoredSessionSummary => {
            const base = { id: row.id, cwd: row.cwd ?? undefined, parentSession: row.parent_session ?? undefined, createdAt: row.created_at, updatedAt: row.updated_at, ...archived.has(row.id) ? { archived: true } : {} }
            // A session this runtime cannot read (a newer format version...) is listed with why (S-13).
            const unreadable = headerProblem(row.header, `${this.file} session ${JSON.stringify(row.id)}`)
            if (unreadable !== undefined) return { ...base, title: null, turns: 0, length: 0, unreadable }
            const damage = damaged.get(row.id)
            if (damage !== undefined) return { ...base, title: row.title, turns: 0, length: 0, unreadable: damage, damaged: true }
            const lastTurn = lastTurnOf(this.statements.lastTurn.get(row.id))
            return { ...base, title: row.title, turns: row.turns, length: row.next_seq, ...(lastTurn !== undefined ? { lastTurn } : {}) }
          })
        }).deferred()
      } catch (error) {
        if (!isDamage(error)) throw error
        throw new PersistenceError(`${this.file}: the session store cannot be listed, the database file is damaged (${(error as Error).message}); a backup of the file can replace it`, undefined, { cause: error })
      }
    })
  }

  /**
   * id -> the load failure of each listed session whose rows cannot be read. `PRAGMA
   * quick_check` reads every page of the file once (~5 ms for 9 MB, 110k events); only when it
   * finds damage is each session read as a load reads it, to tell which ones the damage reaches.
   * The answer is kept while the file is unchanged: no commit by another connection
   * (`data_version`) and no row changed by this one (`total_changes()`).
   */
  private damagedSessions(): ReadonlyMap<string, string> {
    const key = `${this.db.pragma('data_version', { simple: true })}:${this.statements.totalChanges.get()}`
    if (this.checked?.key === key) return this.checked.damaged
    const damaged = new Map<string, string>()
    if (!fileIsIntact(this.db)) {
      for (const id of this.statements.ids.all()) {
        try {
          this.statements.eventSeqs.all(id)
          this.statements.eventTexts.all(id)
          this.statements.lastTurn.get(id)
        } catch (error) {
          if (!isDamage(error)) throw error
          damaged.set(id, (this.damaged(id, error) as Error).message)
        }
      }
    }
    this.checked = { key, damaged }
    return damaged
  }

  putAttachment(header: SessionHeader, attachmentId: string, attachment: StoredAttachment): Promise<void> {
    return this.locked(header.id, () => {
      this.statements.putAttachment.run(header.id, attachmentId, attachment.mediaType, Buffer.from(attachment.data))
    })
  }

  getAttachment(sessionId: string, attachmentId: string): Promise<StoredAttachment | undefined> {
    return this.locked(sessionId, () => {
      const row = this.statements.getAttachment.get(sessionId, attachmentId)
      return row === undefined ? undefined : { data: row.data, mediaType: row.media_type }
    })
  }

  trash(id: string): Promise<boolean> {
    return this.locked(id, () => this.db.transaction(() => {
      const row = this.statements.session.get(id)
      if (row === undefined) return false
      this.statements.trashSession.run(Date.now(), id)
      this.statements.trashEvents.run(row.incarnation, id)
      this.statements.trashAttachments.run(row.incarnation, id)
      this.statements.deleteAttachments.run(id)
      this.statements.dropArchived.run(id)
      this.statements.deleteEvents.run(id)
      this.statements.deleteSession.run(id)
      return true
    }).immediate())
  }

  restore(id: string): Promise<boolean> {
    return this.locked(id, () => this.db.transaction(() => {
      if (this.statements.session.get(id) !== undefined) throw new SessionExistsError(`session ${JSON.stringify(id)} is stored; it cannot be restored over`, id)
      const trashed = this.db.prepare<[string], { incarnation: string; revision: number; header: string }>('SELECT incarnation, revision, header FROM trash_sessions WHERE id = ? ORDER BY trashed_at DESC, rowid DESC LIMIT 1').get(id)
      if (trashed === undefined) return false
      const { incarnation } = trashed
      const header = checkHeader(JSON.parse(trashed.header), `${this.file} trashed session ${JSON.stringify(id)}`)
      // The bookkeeping columns, from the rows as they are (packed runs stay packed).
      const lastOf = this.db.prepare<[string, string], { data: string }>('SELECT data FROM trash_events WHERE incarnation = ? AND type = ? ORDER BY seq DESC LIMIT 1')
      const count = this.db.prepare<[string], { next: number | null; turns: number }>("SELECT max(seq + count) AS next, count(*) FILTER (WHERE type = 'turn/start') AS turns FROM trash_events WHERE incarnation = ?").get(incarnation)!
      const title = lastOf.get(incarnation, 'session/title')
      const archived = lastOf.get(incarnation, 'session/archived')
      this.statements.insertSession.run(id, incarnation, trashed.revision + 1, trashed.header, header.cwd ?? null, header.parentSession ?? null, header.createdAt, Date.now(), count.next ?? 0, count.turns,
        title === undefined ? null : (JSON.parse(title.data) as { title: string }).title)
      this.db.prepare(`INSERT INTO events (session_id, ${EVENT_COLUMN_LIST}) SELECT ?, ${EVENT_COLUMN_LIST} FROM trash_events WHERE incarnation = ?`).run(id, incarnation)
      this.db.prepare('INSERT OR IGNORE INTO attachments (session_id, attachment_id, media_type, data) SELECT ?, attachment_id, media_type, data FROM trash_attachments WHERE incarnation = ?').run(id, incarnation)
      if (archived !== undefined) this.statements.setArchived.run(id, (JSON.parse(archived.data) as { archived?: unknown }).archived === true ? 1 : 0)
      for (const table of ['trash_events', 'trash_attachments', 'trash_sessions']) this.db.prepare(`DELETE FROM ${table} WHERE incarnation = ?`).run(incarnation)
      return true
    }).immediate())
  }

  async close(): Promise<void> {
    await this.chains.idle()
    if (this.db.open) this.db.close()
  }

  /** One operation on a session, in order with the others on it, waiting out another process's lock. */
  private locked<T>(id: string, operation: () => T): Promise<Awaited<T>> {
    return this.chains.run(id, () => this.unbusy(operation).catch((error: unknown) => { throw this.damaged(id, error) }))
  }

  /** SQLite's bare "database disk image is malformed", said with the file, the session and what to do. */
  private damaged(id: string, error: unknown): unknown {
    if (!isDamage(error)) return error
    return new PersistenceError(`${this.file}: session ${JSON.stringify(id)} cannot be read, the database file is damaged (${(error as Error).message}); ` +
      `\`dsh sessions repair ${id}\` copies what can still be read into a new session, and a backup of the file can replace it`, id, { cause: error })
  }

  /**
   * Runs `operation` (synchronous, usually one transaction) and, while another process holds the
   * lock it needs, runs it again after a pause that doubles up to 100 ms, for up to
   * `busyTimeoutMs`; then fails naming the file. Nothing was written by a busy attempt.
   */
  private async unbusy<T>(operation: () => T): Promise<Awaited<T>> {
    const deadline = Date.now() + this.busyTimeoutMs
    for (let pause = BUSY_FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, BUSY_MAX_PAUSE_MS)) {
      try {
        return await operation()
      } catch (error) {
        if (!isBusy(error)) throw error
        if (Date.now() >= deadline) {
          throw new PersistenceError(`${this.file}: the database is locked by another process (waited ${this.busyTimeoutMs} ms): ${(error as Error).message}`, undefined, { cause: error })
        }
        await new Promise((resolve) => setTimeout(resolve, pause))
      }
    }
  }

  private token(row: Pick<SessionRow, 'incarnation' | 'revision'>): string {
    return `${this.storeId}:${row.incarnation}:${row.revision}`
  }

  private materialise(header: SessionHeader, events: readonly SessionEvent[]): void {
    if (events.length > 0 && events[0].seq !== 0) {
      throw new SeqMismatchError(`session ${JSON.stringify(header.id)}: the first stored event must have seq 0, got ${events[0].seq}`, header.id)
    }
    const now = Date.now()
    // insertEvents bumps the revision, so a materialised session starts at revision 1 either way.
    this.statements.insertSession.run(header.id, randomUUID(), events.length > 0 ? 0 : 1, encodeHeader(header), header.cwd ?? null, header.parentSession ?? null, header.createdAt, now, 0, 0, null)
    if (events.length > 0) this.insertEvents(header.id, events)
  }

  /** Inside a transaction: rows for `events`, then the session's bookkeeping (one revision bump). */
  private insertEvents(id: string, events: readonly SessionEvent[]): void {
    const { turns, title, archived } = batchBookkeeping(id, events)
    if (archived !== undefined) this.statements.setArchived.run(id, archived ? 1 : 0)
    for (const row of eventRowValues(events, this.packed)) this.statements.insertEvent.run(id, ...row)
    const last = events[events.length - 1]
    this.statements.updateSession.run(Date.now(), last.seq + 1, turns, title, id)
  }
}

