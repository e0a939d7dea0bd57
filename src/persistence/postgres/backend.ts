/**
 * PostgreSQL backend (npm `pg`): the SQLite layout in a PostgreSQL schema, shared by many dsh
 * processes on many hosts. One `sessions` row per session and one `events` row per stored record
 * (a packed chunk row stays one row spanning `count` seqs); every write is one transaction that
 * bumps the session's revision and notifies listeners on commit. One writer per session is
 * enforced by a lease row with a fencing token (see docs/persistence.md).
 */
import { createHash, randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import pg from 'pg'
import type { SessionEvent, SessionHeader } from '../../session/types.js'
import {
  FormatVersionError, OperationChains, PersistenceError, SeqMismatchError, SessionExistsError, SessionInUseError,
  StaleRevisionError, WriterLeaseLostError,
  type PersistenceBackend, type SalvagedSession, type StoredSession, type StoredSessionSummary, type WriterInfo, type WriterLease,
} from '../api.js'
import { holderIsStale } from '../writer-lock.js'
import { EVENT_COLUMN_LIST, EVENT_COLUMNS, eventColumnArrays } from '../event-columns.js'
import { batchBookkeeping, checkHeader, encodeHeader, eventRowValues, firstRowAfter, headerProblem, lastTurnOf, rowRecord, salvageRecords, scanRecords } from '../records.js'
import type { StoredAttachment } from '../../session/attachments.js'
import { ATTACHMENT_TABLES, POSTGRES_CHANNEL, POSTGRES_FORMAT, POSTGRES_SCHEMA_VERSION, SCHEMA, type EventRow, type LeaseRow, type SessionRow } from './schema.js'
import { parseStoreUrl, quoteIdent, redactStoreUrl, withSearchPath } from './store-url.js'

export { POSTGRES_CHANNEL, POSTGRES_FORMAT, POSTGRES_SCHEMA_VERSION } from './schema.js'
export { parseStoreUrl, quoteIdent, redactStoreUrl } from './store-url.js'

export interface PostgresBackendOptions {
  /** `postgres://...`; a `schema=NAME` query parameter selects the schema (default `dsh`). */
  readonly url: string
  /** Overrides the URL's schema. */
  readonly schema?: string
  /** Pack chunk runs into rows (R-1..R-4). Default true. */
  readonly packed?: boolean
  /** Writer lease time to live; renewed every third of it while held (default 30 s). */
  readonly leaseTtlMs?: number
  /** Pool size (default 4). */
  readonly poolSize?: number
  /** Who this process is, for refusal messages (default: this pid and host name). */
  readonly owner?: { readonly pid: number; readonly host: string }
}

/**
 * Attachments (content-addressed images of a session) and their trash, and the archived flag
 * (the last `session/archived` event, kept as a row so listing never scans the events): added
 * to stores of this schema version when missing; older dsh versions ignore them.
 */

export class PostgresBackend implements PersistenceBackend {
  readonly kind = 'postgres'
  readonly schema: string
  readonly pool: pg.Pool
  /** This instance's writer identity (one per backend instance). */
  readonly holder = randomUUID()
  readonly owner: { readonly pid: number; readonly host: string }
  private readonly where: string
  private readonly packed: boolean
  private readonly leaseTtlMs: number
  private readonly chains = new OperationChains()
  private readonly ready: Promise<string>
  /** Leases this instance holds: session id -> fencing token and since (ISO). */
  private readonly held = new Map<string, { token: string; since: string }>()
  /** Leases this instance lost: writes are refused until it acquires again. */
  private readonly lost = new Map<string, LeaseRow | undefined>()
  private renewTimer?: ReturnType<typeof setInterval>
  private listener?: Promise<pg.Client>
  private readonly watchers = new Map<string, Set<(next: number) => void>>()
  private closed = false
  private readonly connectionString: string

  constructor(options: PostgresBackendOptions) {
    const { connectionString, schema } = parseStoreUrl(options.url)
    this.schema = options.schema ?? schema ?? 'dsh'
    this.connectionString = connectionString
    this.where = `${redactStoreUrl(options.url)} schema ${this.schema}`
    this.packed = options.packed ?? true
    this.leaseTtlMs = options.leaseTtlMs ?? 30_000
    this.owner = options.owner ?? { pid: process.pid, host: hostname() }
    // The schema is set by each connection's start-up options: no query of its own that could
    // race the first one, and a connection that cannot take it fails instead of using another.
    this.pool = new pg.Pool({ connectionString: withSearchPath(connectionString, this.schema), max: options.poolSize ?? 4 })
    // An idle client's error (server restart) must not crash the process; the next query fails.
    this.pool.on('error', () => undefined)
    this.ready = this.openSchema()
    this.ready.catch(() => undefined)
  }

  /** Checks identity and version before anything is written; creates the schema when absent. */
  private async openSchema(): Promise<string> {
    const client = await this.pool.connect()
    try {
      await client.query('BEGIN')
      // One process at a time creates a store: the others wait here and then find it.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('dsh-store:' || $1))", [this.schema])
      const tables = (await client.query<{ table_name: string }>(
        'SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [this.schema])).rows.map((r) => r.table_name)
      if (tables.length === 0) {
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(this.schema)}`)
        await client.query(`SET LOCAL search_path TO ${quoteIdent(this.schema)}`)
        await client.query(SCHEMA)
        await client.query("INSERT INTO dsh_store (key, value) VALUES ('format', $1), ('schema_version', $2), ('store_id', $3)",
          [POSTGRES_FORMAT, String(POSTGRES_SCHEMA_VERSION), randomUUID()])
      } else if (!tables.includes('dsh_store')) {
        throw new FormatVersionError(`${this.where}: not a dsh session store (tables ${tables.sort().join(', ')} but no dsh_store); refusing to touch it`)
      }
      const rows = (await client.query<{ key: string; value: string }>(`SELECT key, value FROM ${quoteIdent(this.schema)}.dsh_store`)).rows
      const state = new Map(rows.map((r) => [r.key, r.value]))
      if (state.get('format') !== POSTGRES_FORMAT) {
        throw new FormatVersionError(`${this.where}: not a dsh session store (dsh_store format ${JSON.stringify(state.get('format') ?? null)}); refusing to touch it`)
      }
      const version = Number(state.get('schema_version'))
      if (version !== POSTGRES_SCHEMA_VERSION) {
        const direction = version > POSTGRES_SCHEMA_VERSION ? 'newer' : 'older'
        throw new FormatVersionError(`${this.where}: session store schema version ${state.get('schema_version')} is ${direction} than the supported version ${POSTGRES_SCHEMA_VERSION}; no migration is done`)
      }
      const storeId = state.get('store_id')
      if (storeId === undefined) throw new PersistenceError(`${this.where}: dsh_store has no store_id`)
      await client.query(`SET LOCAL search_path TO ${quoteIdent(this.schema)}`)
      await client.query(ATTACHMENT_TABLES)
      await client.query('COMMIT')
      return storeId
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined)
      throw error
    } finally {
      client.release()
    }
  }

  /** Resolves once the store is open (schema checked or created); rejects with the reason. */
  async open(): Promise<void> {
    await this.ready
  }

  private async tx<T>(fn: (client: pg.PoolClient, storeId: string) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    if (this.closed) throw new PersistenceError(`${this.where}: the store is closed`)
    const storeId = await this.ready
    const client = await this.pool.connect()
    let broken: Error | undefined
    try {
      await client.query(begin)
      const result = await fn(client, storeId)
      await client.query('COMMIT')
      return result
    } catch (error) {
      await client.query('ROLLBACK').catch((rollback: Error) => { broken = rollback })
      throw error
    } finally {
      client.release(broken)
    }
  }

  create(header: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    return this.chains.run(header.id, () => this.tx(async (client) => {
      await this.fence(client, header.id)
      await this.materialise(client, header, events)
    }))
  }

  appendBatch(header: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    return this.chains.run(header.id, () => this.tx(async (client) => {
      await this.fence(client, header.id)
      const row = (await client.query<SessionRow>('SELECT * FROM sessions WHERE id = $1 FOR UPDATE', [header.id])).rows[0]
      if (row === undefined) return this.materialise(client, header, events)
      if (events.length === 0) return
      if (events[0].seq !== row.next_seq) {
        throw new SeqMismatchError(`session ${JSON.stringify(header.id)}: batch starts at seq ${events[0].seq} but the stored log ends before seq ${row.next_seq}`, header.id)
      }
      await this.insertEvents(client, header.id, events)
    }))
  }

  loadStored(id: string): Promise<StoredSession | undefined> {
    return this.chains.run(id, async () => {
      const { row, rows } = await this.tx(async (client) => {
        const row = (await client.query<SessionRow>('SELECT * FROM sessions WHERE id = $1', [id])).rows[0]
        const rows = row === undefined ? [] : (await client.query<EventRow>(`SELECT ${EVENT_COLUMN_LIST} FROM events WHERE session_id = $1 ORDER BY seq`, [id])).rows
        return { row, rows }
      }, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      if (row === undefined) return undefined
      const storeId = await this.ready
      const header = checkHeader(JSON.parse(row.header), `${this.where} session ${JSON.stringify(id)}`)
      const { events, torn } = scanRecords(id, rows.map(rowRecord))
      return { header, events, revision: token(storeId, row), torn }
    })
  }

  salvageStored(id: string): Promise<SalvagedSession | undefined> {
    return this.chains.run(id, async () => {
      const { row, rows } = await this.tx(async (client) => {
        const row = (await client.query<SessionRow>('SELECT * FROM sessions WHERE id = $1', [id])).rows[0]
        const rows = row === undefined ? [] : (await client.query<EventRow>(`SELECT ${EVENT_COLUMN_LIST} FROM events WHERE session_id = $1 ORDER BY seq`, [id])).rows
        return { row, rows }
      }, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      if (row === undefined) return undefined
      const header = checkHeader(JSON.parse(row.header), `${this.where} session ${JSON.stringify(id)}`)
      return { header, ...salvageRecords(rows.map(rowRecord)) }
    })
  }

  readStoredRevision(id: string): Promise<string | undefined> {
    return this.chains.run(id, async () => {
      const storeId = await this.ready
      const row = (await this.pool.query<SessionRow>('SELECT incarnation, revision FROM sessions WHERE id = $1', [id])).rows[0]
      return row === undefined ? undefined : token(storeId, row)
    })
  }

  /** Seek read: starts at the row holding `seq`, never reads earlier rows. */
  loadStoredFrom(id: string, seq: number): Promise<readonly SessionEvent[]> {
    return this.chains.run(id, async () => {
      await this.ready
      const rows = (await this.pool.query<EventRow>(
        `SELECT ${EVENT_COLUMN_LIST} FROM events WHERE session_id = $1
           AND seq >= coalesce((SELECT max(seq) FROM events WHERE session_id = $1 AND seq <= $2), $2) ORDER BY seq`, [id, seq])).rows
      if (rows.length === 0) return []
      const { events } = scanRecords(id, rows.map(rowRecord), rows[0].seq)
      return events.filter((event) => event.seq >= seq)
    })
  }

  commitRepair(id: string, closers: readonly SessionEvent[], expectedRevision: string): Promise<string> {
    return this.chains.run(id, () => this.tx(async (client, storeId) => {
      await this.fence(client, id)
      const row = (await client.query<SessionRow>('SELECT * FROM sessions WHERE id = $1 FOR UPDATE', [id])).rows[0]
      const current = row === undefined ? undefined : token(storeId, row)
      if (current !== expectedRevision) {
        throw new StaleRevisionError(`session ${JSON.stringify(id)}: written since it was loaded (revision ${current ?? 'none'}, expected ${expectedRevision}); repair refused`, id)
      }
      const rows = (await client.query<EventRow>(`SELECT ${EVENT_COLUMN_LIST} FROM events WHERE session_id = $1 ORDER BY seq`, [id])).rows
      const { events } = scanRecords(id, rows.map(rowRecord))
      if (closers.length > 0 && closers[0].seq !== events.length) {
        throw new SeqMismatchError(`session ${JSON.stringify(id)}: closers start at seq ${closers[0].seq}, the log ends before seq ${events.length}`, id)
      }
      // Cut the crash tail: every row from the first unreadable one on.
      await client.query('DELETE FROM events WHERE session_id = $1 AND seq >= $2', [id, firstRowAfter(rows, events.length)])
      await client.query('UPDATE sessions SET revision = revision + 1, updated_at = $1, next_seq = $2 WHERE id = $3', [Date.now(), events.length, id])
      if (closers.length > 0) await this.insertEvents(client, id, closers)
      else await this.notify(client, id, events.length)
      const after = (await client.query<SessionRow>('SELECT incarnation, revision FROM sessions WHERE id = $1', [id])).rows[0]
      return token(storeId, after)
    }))
  }

  async list(): Promise<readonly StoredSessionSummary[]> {
    await this.ready
    // One statement (one snapshot): each session with its last turn/start or turn/end row, found
    // by walking the (session_id, seq) key backwards.
    const rows = (await this.pool.query<SessionRow & { turn_type: string | null; turn_data: string | null }>(`
      SELECT s.id, s.header, s.cwd, s.parent_session, s.created_at, s.updated_at, s.next_seq, s.turns, s.title, t.type AS turn_type, t.data AS turn_data
      FROM sessions s LEFT JOIN LATERAL (
        SELECT e.type, e.data FROM events e WHERE e.session_id = s.id AND e.type IN ('turn/start', 'turn/end') ORDER BY e.seq DESC LIMIT 1
      ) t ON true
      ORDER BY s.updated_at DESC, s.id`)).rows
    const archived = new Set((await this.pool.query<{ session_id: string }>('SELECT session_id FROM session_archived WHERE archived')).rows.map((row) => row.session_id))
    return rows.map((row): StoredSessionSummary => {
      const base = { id: row.id, cwd: row.cwd ?? undefined, parentSession: row.parent_session ?? undefined, createdAt: Number(row.created_at), updatedAt: Number(row.updated_at), ...archived.has(row.id) ? { archived: true } : {} }
      // A session this runtime cannot read (a newer format version...) is listed with why (S-13).
      const unreadable = headerProblem(row.header, `${this.where} session ${JSON.stringify(row.id)}`)
      if (unreadable !== undefined) return { ...base, title: null, turns: 0, length: 0, unreadable }
      const lastTurn = lastTurnOf(row.turn_type === null || row.turn_data === null ? undefined : { type: row.turn_type, data: row.turn_data })
      return { ...base, title: row.title, turns: row.turns, length: row.next_seq, ...(lastTurn !== undefined ? { lastTurn } : {}) }
    })
  }

  async putAttachment(header: SessionHeader, attachmentId: string, attachment: StoredAttachment): Promise<void> {
    await this.ready
    await this.pool.query('INSERT INTO attachments (session_id, attachment_id, media_type, data) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
      [header.id, attachmentId, attachment.mediaType, Buffer.from(attachment.data)])
  }

  async getAttachment(sessionId: string, attachmentId: string): Promise<StoredAttachment | undefined> {
    await this.ready
    const row = (await this.pool.query<{ media_type: string; data: Buffer }>('SELECT media_type, data FROM attachments WHERE session_id = $1 AND attachment_id = $2', [sessionId, attachmentId])).rows[0]
    return row === undefined ? undefined : { data: row.data, mediaType: row.media_type }
  }

  trash(id: string): Promise<boolean> {
    return this.chains.run(id, () => this.tx(async (client) => {
      await this.fence(client, id)
      const row = (await client.query<SessionRow>('SELECT incarnation FROM sessions WHERE id = $1 FOR UPDATE', [id])).rows[0]
      if (row === undefined) return false
      await client.query('INSERT INTO trash_sessions (incarnation, id, trashed_at, revision, header) SELECT incarnation, id, $1, revision, header FROM sessions WHERE id = $2', [Date.now(), id])
      await client.query(`INSERT INTO trash_events (incarnation, ${EVENT_COLUMN_LIST}) SELECT $1, ${EVENT_COLUMN_LIST} FROM events WHERE session_id = $2`, [row.incarnation, id])
      await client.query('INSERT INTO trash_attachments (incarnation, attachment_id, media_type, data) SELECT $1, attachment_id, media_type, data FROM attachments WHERE session_id = $2 ON CONFLICT DO NOTHING', [row.incarnation, id])
      await client.query('DELETE FROM attachments WHERE session_id = $1', [id])
      await client.query('DELETE FROM session_archived WHERE session_id = $1', [id])
      await client.query('DELETE FROM events WHERE session_id = $1', [id])
      await client.query('DELETE FROM sessions WHERE id = $1', [id])
      await client.query('DELETE FROM leases WHERE session_id = $1 AND holder = $2', [id, this.holder])
      this.held.delete(id)
      return true
    }))
  }

  restore(id: string): Promise<boolean> {
    return this.chains.run(id, () => this.tx(async (client) => {
      await this.fence(client, id)
      if ((await client.query('SELECT 1 FROM sessions WHERE id = $1', [id])).rows.length > 0) throw new SessionExistsError(`session ${JSON.stringify(id)} is stored; it cannot be restored over`, id)
      const trashed = (await client.query<{ incarnation: string; revision: string; header: string }>('SELECT incarnation, revision, header FROM trash_sessions WHERE id = $1 ORDER BY trashed_at DESC LIMIT 1 FOR UPDATE', [id])).rows[0]
      if (trashed === undefined) return false
      const { incarnation } = trashed
      const header = checkHeader(JSON.parse(trashed.header), `${this.where} trashed session ${JSON.stringify(id)}`)
      // The bookkeeping columns, from the rows as they are (packed runs stay packed).
      const counts = (await client.query<{ next: number | null; turns: number }>("SELECT max(seq + count) AS next, count(*) FILTER (WHERE type = 'turn/start')::int AS turns FROM trash_events WHERE incarnation = $1", [incarnation])).rows[0]!
      const lastOf = async (type: string) => (await client.query<{ data: string }>('SELECT data FROM trash_events WHERE incarnation = $1 AND type = $2 ORDER BY seq DESC LIMIT 1', [incarnation, type])).rows[0]
      const title = await lastOf('session/title')
      const archived = await lastOf('session/archived')
      await client.query('INSERT INTO sessions (id, incarnation, revision, header, cwd, parent_session, created_at, updated_at, next_seq, turns, title) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)', [
        id, incarnation, Number(trashed.revision) + 1, trashed.header, header.cwd ?? null, header.parentSession ?? null, header.createdAt, Date.now(), counts.next ?? 0, counts.turns,
        title === undefined ? null : (JSON.parse(title.data) as { title: string }).title])
      await client.query(`INSERT INTO events (session_id, ${EVENT_COLUMN_LIST}) SELECT $1, ${EVENT_COLUMN_LIST} FROM trash_events WHERE incarnation = $2`, [id, incarnation])
      await client.query('INSERT INTO attachments (session_id, attachment_id, media_type, data) SELECT $1, attachment_id, media_type, data FROM trash_attachments WHERE incarnation = $2 ON CONFLICT DO NOTHING', [id, incarnation])
      if (archived !== undefined) await client.query('INSERT INTO session_archived (session_id, archived) VALUES ($1, $2) ON CONFLICT (session_id) DO UPDATE SET archived = excluded.archived', [id, (JSON.parse(archived.data) as { archived?: unknown }).archived === true])
      for (const table of ['trash_events', 'trash_attachments', 'trash_sessions']) await client.query(`DELETE FROM ${table} WHERE incarnation = $1`, [incarnation])
      return true
    }))
  }

  // --- one writer per session: lease with a fencing token ---

  /**
   * Takes the writer lease of `id` for this instance: free, expired, or already ours. Otherwise
   * `SessionInUseError` naming the holder. Each acquisition gets a new fencing token; every
   * write checks it in its own transaction, so once another instance took the lease this one
   * can never write again (`WriterLeaseLostError`) unless it acquires anew.
   */
  acquireWriter(id: string): Promise<WriterLease> {
    return this.chains.run(id, async () => {
      const lease = (since: string): WriterLease => ({
        holder: { pid: this.owner.pid, host: this.owner.host, since },
        release: () => this.releaseWriter(id),
      })
      const mine = this.held.get(id)
      if (mine !== undefined) return lease(mine.since)
      if (this.lost.has(id)) throw lostLease(id, undefined, this.lost.get(id))
      await this.ready
      let taken = (await this.pool.query<{ token: string; since: Date }>(
        `INSERT INTO leases (session_id, token, holder, pid, host, since, expires_at)
           VALUES ($1, nextval('lease_tokens'), $2, $3, $4, clock_timestamp(), clock_timestamp() + $5 * interval '1 millisecond')
         ON CONFLICT (session_id) DO UPDATE SET token = EXCLUDED.token, holder = EXCLUDED.holder, pid = EXCLUDED.pid,
           host = EXCLUDED.host, since = EXCLUDED.since, expires_at = EXCLUDED.expires_at
           WHERE leases.expires_at < clock_timestamp() OR leases.holder = EXCLUDED.holder
         RETURNING token, since`, [id, this.holder, this.owner.pid, this.owner.host, this.leaseTtlMs])).rows[0]
      if (taken === undefined) {
        const current = (await this.pool.query<LeaseRow>(`SELECT token, holder, pid, host, since, expires_at < clock_timestamp() AS expired FROM leases WHERE session_id = $1`, [id])).rows[0]
        // A holder on this very host whose process is gone is stale: take over at once (only
        // that exact lease, so two takers cannot both win).
        if (current !== undefined && holderIsStale({ pid: current.pid, host: current.host, since: current.since.toISOString() })) {
          taken = (await this.pool.query<{ token: string; since: Date }>(
            `UPDATE leases SET token = nextval('lease_tokens'), holder = $2, pid = $3, host = $4, since = clock_timestamp(),
               expires_at = clock_timestamp() + $5 * interval '1 millisecond'
             WHERE session_id = $1 AND token = $6 RETURNING token, since`,
            [id, this.holder, this.owner.pid, this.owner.host, this.leaseTtlMs, current.token])).rows[0]
        }
        if (taken === undefined) throw inUse(id, current)
      }
      const since = taken.since.toISOString()
      this.held.set(id, { token: taken.token, since })
      this.armRenewal()
      return lease(since)
    })
  }

  /** Gives the lease back (only if still ours). */
  releaseWriter(id: string): Promise<void> {
    return this.chains.run(id, async () => {
      this.lost.delete(id)
      if (!this.held.has(id) || this.closed) return void this.held.delete(id) // held until the row is gone: close retries
      await this.pool.query('DELETE FROM leases WHERE session_id = $1 AND holder = $2', [id, this.holder])
      this.held.delete(id)
    })
  }

  /** The current holder of `id`'s lease, if any and not expired. */
  async writer(id: string): Promise<WriterInfo | undefined> {
    await this.ready
    const lease = (await this.pool.query<LeaseRow>(`SELECT token, holder, pid, host, since, expires_at < clock_timestamp() AS expired FROM leases WHERE session_id = $1`, [id])).rows[0]
    if (lease === undefined || lease.expired) return undefined
    return { pid: lease.pid, host: lease.host, since: lease.since.toISOString(), token: lease.token, mine: lease.holder === this.holder }
  }

  /** Inside a write transaction: refuses when another instance holds the lease or ours was lost. */
  private async fence(client: pg.PoolClient, id: string): Promise<void> {
    // FOR SHARE: a concurrent takeover waits for this write to commit, and this write waits
    // for a takeover in flight, so a write is either before the takeover or refused after it.
    const lease = (await client.query<LeaseRow>(
      'SELECT token, holder, pid, host, since, expires_at < clock_timestamp() AS expired FROM leases WHERE session_id = $1 FOR SHARE', [id])).rows[0]
    const mine = this.held.get(id)
    if (mine !== undefined) {
      if (lease !== undefined && lease.token === mine.token) return
      this.held.delete(id)
      this.lost.set(id, lease)
      throw lostLease(id, mine.token, lease)
    }
    if (this.lost.has(id)) throw lostLease(id, undefined, lease ?? this.lost.get(id))
    if (lease !== undefined && !lease.expired && lease.holder !== this.holder) throw inUse(id, lease)
  }

  private armRenewal(): void {
    if (this.renewTimer !== undefined || this.closed) return
    this.renewTimer = setInterval(() => { this.renew().catch(() => undefined) }, Math.max(50, Math.floor(this.leaseTtlMs / 3)))
    this.renewTimer.unref()
  }

  /** Extends every lease still ours; a lease found taken is marked lost. */
  async renew(): Promise<void> {
    const ids = [...this.held.keys()]
    if (ids.length === 0) return
    const kept = new Set((await this.pool.query<{ session_id: string }>(
      `UPDATE leases SET expires_at = clock_timestamp() + $1 * interval '1 millisecond'
         WHERE holder = $2 AND session_id = ANY($3::text[]) RETURNING session_id`, [this.leaseTtlMs, this.holder, ids])).rows.map((r) => r.session_id))
    for (const id of ids) {
      if (!kept.has(id) && this.held.has(id)) {
        this.held.delete(id)
        this.lost.set(id, undefined)
      }
    }
  }

  /** Stops renewing without releasing (what a hung or partitioned process looks like; tests). */
  suspendRenewal(): void {
    if (this.renewTimer !== undefined) clearInterval(this.renewTimer)
    this.renewTimer = undefined
  }

  // --- live events across processes (LISTEN/NOTIFY) ---

  /**
   * Calls `onAppend(next)` after each committed write to `id` by any process on this store,
   * `next` being the stored next seq. Read the new events with `loadStoredFrom`. Returns the
   * disposer; resolves once listening (writes committed after that are all reported).
   */
  async watch(id: string, onAppend: (next: number) => void): Promise<() => void> {
    const listener = this.listener ??= (async () => {
      await this.ready
      const client = new pg.Client({ connectionString: this.connectionString })
      client.on('error', () => undefined)
      await client.connect()
      client.on('notification', (message) => {
        if (message.channel !== this.channel || message.payload === undefined) return
        let payload: { id?: unknown; next?: unknown }
        try {
          payload = JSON.parse(message.payload) as typeof payload
        } catch {
          return
        }
        if (typeof payload.id !== 'string' || typeof payload.next !== 'number') return
        for (const callback of this.watchers.get(payload.id) ?? []) callback(payload.next)
      })
      await client.query(`LISTEN ${quoteIdent(this.channel)}`)
      return client
    })()
    await listener
    let set = this.watchers.get(id)
    if (set === undefined) this.watchers.set(id, set = new Set())
    set.add(onAppend)
    return () => {
      set!.delete(onAppend)
      if (set!.size === 0 && this.watchers.get(id) === set) this.watchers.delete(id)
    }
  }

  /** One channel per store schema, so two stores on one database do not hear each other. */
  private get channel(): string {
    return `${POSTGRES_CHANNEL}_${createHash('sha256').update(this.schema).digest('hex').slice(0, 16)}`
  }

  private async notify(client: pg.PoolClient, id: string, next: number): Promise<void> {
    // Delivered on commit only, in commit order.
    await client.query('SELECT pg_notify($1, $2)', [this.channel, JSON.stringify({ id, next })])
  }

  async close(): Promise<void> {
    if (this.closed) return
    await this.chains.idle()
    this.suspendRenewal()
    const ids = [...this.held.keys()]
    this.held.clear()
    if (ids.length > 0) await this.pool.query('DELETE FROM leases WHERE holder = $1 AND session_id = ANY($2::text[])', [this.holder, ids]).catch(() => undefined)
    this.closed = true
    this.watchers.clear()
    if (this.listener) await (await this.listener.catch(() => undefined))?.end().catch(() => undefined)
    await this.pool.end()
  }

  // --- rows ---

  private async materialise(client: pg.PoolClient, header: SessionHeader, events: readonly SessionEvent[]): Promise<void> {
    if (events.length > 0 && events[0].seq !== 0) {
      throw new SeqMismatchError(`session ${JSON.stringify(header.id)}: the first stored event must have seq 0, got ${events[0].seq}`, header.id)
    }
    const inserted = await client.query(
      `INSERT INTO sessions (id, incarnation, revision, header, cwd, parent_session, created_at, updated_at, next_seq, turns, title)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, 0, NULL) ON CONFLICT (id) DO NOTHING`,
      [header.id, randomUUID(), events.length > 0 ? 0 : 1, encodeHeader(header), header.cwd ?? null, header.parentSession ?? null, header.createdAt, Date.now()])
    if (inserted.rowCount !== 1) throw new SessionExistsError(`session ${JSON.stringify(header.id)} is already stored`, header.id)
    if (events.length > 0) await this.insertEvents(client, header.id, events)
    else await this.notify(client, header.id, 0)
  }

  /** Inside a transaction: rows for `events` in one statement, then the bookkeeping (one revision bump). */
  private async insertEvents(client: pg.PoolClient, id: string, events: readonly SessionEvent[]): Promise<void> {
    const { turns, title, archived } = batchBookkeeping(id, events)
    if (archived !== undefined) {
      await client.query('INSERT INTO session_archived (session_id, archived) VALUES ($1, $2) ON CONFLICT (session_id) DO UPDATE SET archived = excluded.archived', [id, archived])
    }
    const columns: unknown[][] = EVENT_COLUMNS.map(() => [])
    for (const row of eventRowValues(events, this.packed)) row.forEach((value, i) => columns[i].push(value))
    await client.query(
      `INSERT INTO events (session_id, ${EVENT_COLUMN_LIST})
       SELECT $1, * FROM ${eventColumnArrays(2)}`,
      [id, ...columns])
    const next = events[events.length - 1].seq + 1
    await client.query('UPDATE sessions SET revision = revision + 1, updated_at = $1, next_seq = $2, turns = turns + $3, title = coalesce($4, title) WHERE id = $5',
      [Date.now(), next, turns, title, id])
    await this.notify(client, id, next)
  }
}

function token(storeId: string, row: Pick<SessionRow, 'incarnation' | 'revision'>): string {
  return `${storeId}:${row.incarnation}:${row.revision}`
}

function describeHolder(lease: LeaseRow | undefined): string {
  return lease === undefined ? 'nobody holds it now' : `pid ${lease.pid} on ${lease.host}, since ${lease.since.toISOString()}`
}

function inUse(id: string, lease: LeaseRow | undefined): SessionInUseError {
  const holder = lease === undefined ? { pid: 0, host: 'unknown', since: new Date(0).toISOString() } : { pid: lease.pid, host: lease.host, since: lease.since.toISOString() }
  return new SessionInUseError(id, holder)
}

function lostLease(id: string, mine: string | undefined, lease: LeaseRow | undefined): WriterLeaseLostError {
  return new WriterLeaseLostError(
    `session ${id}: this process lost its writer lease${mine === undefined ? '' : ` (token ${mine})`} (now: ${describeHolder(lease)}); nothing more is written by it`, id)
}

