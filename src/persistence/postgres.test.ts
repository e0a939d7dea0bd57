/**
 * The PostgreSQL backend against a real throwaway server (test-support/postgres.ts): the shared
 * backend conformance suite, its own schema versioning, packed rows, transactions, and the
 * writer lease with fencing. Each store is a schema named after the suite's temp folder.
 */
import { createHash } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test-support/postgres.js'
import type { PersistenceBackend } from './api.js'
import { FormatVersionError, SessionInUseError, WriterLeaseLostError } from './api.js'
import { canonical, describeBackendConformance, realisticLog } from './backend.conformance.js'
import { POSTGRES_SCHEMA_VERSION, PostgresBackend } from './postgres/backend.js'
import { EVENT_COLUMNS } from './event-columns.js'
import { eventRowValues } from './records.js'

const unavailable = postgresUnavailable()
if (unavailable) console.warn(`skipping PostgreSQL backend tests: ${unavailable}`)

let server: PostgresServer | undefined
beforeAll(async () => {
  if (!unavailable) server = await startPostgres()
}, 120_000)
afterAll(async () => { await server?.stop() })

const schemaFor = (dir: string) => `s_${createHash('sha256').update(dir).digest('hex').slice(0, 24)}`
const pgb = (backend: PersistenceBackend) => backend as PostgresBackend
const open = (schema: string, extra: Partial<ConstructorParameters<typeof PostgresBackend>[0]> = {}) =>
  new PostgresBackend({ url: server!.url, schema, ...extra })
let schemas = 0
const freshSchema = () => `t_${process.pid}_${schemas++}`

async function sql(text: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: server!.url })
  await client.connect()
  try {
    return await client.query(text, values)
  } finally {
    await client.end()
  }
}

describe.skipIf(unavailable !== undefined)('PostgreSQL backend', () => {
  describeBackendConformance({
    name: 'postgres',
    open: (dir) => open(schemaFor(dir)),
    child: { kind: 'postgres', store: (dir) => `${server!.url}&schema=${schemaFor(dir)}` },
    async corrupt(backend, id, seq) {
      const { rowCount } = await pgb(backend).pool.query(
        "UPDATE events SET data = '{not json' WHERE session_id = $1 AND seq = (SELECT max(seq) FROM events WHERE session_id = $1 AND seq <= $2)", [id, seq])
      if (rowCount !== 1) throw new Error(`no row holds seq ${seq}`)
    },
    async setHeaderVersion(backend, id, version) {
      await pgb(backend).pool.query("UPDATE sessions SET header = jsonb_set(header::jsonb, '{version}', to_jsonb($1::int))::text WHERE id = $2", [version, id])
    },
  })

  describe('PostgreSQL store', () => {
    it('D-6: the schema is created once and versioned; newer or older versions are refused, never migrated', async () => {
      const schema = freshSchema()
      const first = open(schema)
      await first.open()
      await first.close()
      for (const [version, word] of [[POSTGRES_SCHEMA_VERSION + 1, 'newer'], [POSTGRES_SCHEMA_VERSION - 1, 'older']] as const) {
        await sql(`UPDATE ${schema}.dsh_store SET value = $1 WHERE key = 'schema_version'`, [String(version)])
        const backend = open(schema)
        await expect(backend.open()).rejects.toThrow(FormatVersionError)
        await expect(backend.list()).rejects.toThrow(new RegExp(`schema version ${version} is ${word}`))
        await backend.close()
        expect((await sql(`SELECT value FROM ${schema}.dsh_store WHERE key = 'schema_version'`)).rows[0].value).toBe(String(version))
      }
    })

    it('D-6: a schema holding foreign tables is refused and left untouched', async () => {
      const schema = freshSchema()
      await sql(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.notes (x text)`)
      const backend = open(schema)
      await expect(backend.open()).rejects.toThrow(/not a dsh session store/)
      await backend.close()
      const tables = await sql('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [schema])
      expect(tables.rows.map((r) => r.table_name)).toEqual(['notes'])
    })

    it('D-6: events and trash_events have the one shared column list (event-columns.ts), in order, with its types', async () => {
      const schema = freshSchema()
      const backend = open(schema)
      await backend.open()
      for (const table of ['events', 'trash_events']) {
        const columns = (await sql('SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position', [schema, table])).rows
        expect(columns.slice(1).map((c) => [c.column_name, c.data_type, c.is_nullable === 'NO'])).toEqual(
          EVENT_COLUMNS.map((c) => [c.name, c.array.slice(0, -2), c.postgres.endsWith('NOT NULL')]))
      }
      const { header, events } = await realisticLog(1, 4)
      for (const row of eventRowValues(events, true)) expect(row).toHaveLength(EVENT_COLUMNS.length)
      await backend.create(header, events)
      expect(await backend.trash(header.id)).toBe(true)
      expect((await sql(`SELECT count(*)::int AS n FROM ${schema}.trash_events`)).rows[0].n).toBeGreaterThan(0)
      await backend.close()
    })

    it('the schema is chosen when each connection starts, not by a query racing the first one (no concurrent-query warning; every connection on it)', async () => {
      const warnings: string[] = []
      const onWarning = (warning: Error) => { warnings.push(warning.message) }
      process.on('warning', onWarning)
      const schema = freshSchema()
      const backend = open(schema, { poolSize: 3 })
      try {
        const { header, events } = await realisticLog(1, 3)
        await backend.create(header, events)
        const paths = await Promise.all([0, 1, 2].map(() => backend.pool.query<{ search_path: string }>('SHOW search_path')))
        for (const result of paths) expect(result.rows[0].search_path.replace(/"/g, "")).toBe(schema)
        expect((await backend.loadStored(header.id))!.events).toHaveLength(events.length)
        await new Promise((resolve) => setImmediate(resolve))
        expect(warnings.filter((message) => /already executing a query/.test(message))).toEqual([])
      } finally {
        process.off('warning', onWarning)
        await backend.close()
      }
    })

    it('D-6: packed chunk rows are stored as single rows spanning their seqs', async () => {
      const backend = open(freshSchema())
      const { header, events } = await realisticLog(1, 8)
      await backend.create(header, events)
      const rows = (await backend.pool.query('SELECT type, count FROM events WHERE session_id = $1 AND count > 1', [header.id])).rows
      expect(new Set(rows.map((r) => r.type))).toEqual(new Set(['reasoning-chunks', 'text-chunks', 'tool-call-chunks']))
      await backend.close()
    })

    it('D-6: a batch that fails inside its transaction leaves no rows (no torn writes)', async () => {
      const backend = open(freshSchema())
      const { header, events } = await realisticLog(1, 6)
      await backend.create(header, events.slice(0, 5))
      const bad = [...events.slice(5, 9), { ...events[9], time: 1.5 }]
      await expect(backend.appendBatch(header, bad)).rejects.toThrow()
      expect((await backend.loadStored(header.id))!.events).toHaveLength(5)
      await backend.appendBatch(header, events.slice(5))
      expect(canonical((await backend.loadStored(header.id))!.events)).toEqual(canonical(events))
      await backend.close()
    })

    it('live appends: a watcher on another instance hears every committed write, in order', async () => {
      const schema = freshSchema()
      const writer = open(schema)
      const reader = open(schema)
      const { header, events } = await realisticLog(1, 12)
      const heard: number[] = []
      let notify: () => void = () => undefined
      const dispose = await reader.watch(header.id, (next) => { heard.push(next); notify() })
      await writer.create(header, events.slice(0, 3))
      await writer.appendBatch(header, events.slice(3, 10))
      await writer.appendBatch(header, events.slice(10))
      while (heard.at(-1) !== events.length) await new Promise<void>((resolve) => { notify = resolve })
      expect(heard).toEqual([3, 10, events.length])
      expect(canonical(await reader.loadStoredFrom(header.id, 3))).toEqual(canonical(events.slice(3)))
      dispose()
      await writer.close()
      await reader.close()
    })
  })

  describe('one writer per session (lease with fencing token)', () => {
    it('a second instance is refused naming the holder; reads still work; release frees it', async () => {
      const schema = freshSchema()
      const a = open(schema, { owner: { pid: 4242, host: 'host-a' } })
      const b = open(schema, { owner: { pid: 77, host: 'host-b' } })
      const { header, events } = await realisticLog(1, 3)
      await a.acquireWriter(header.id)
      await a.create(header, events.slice(0, 5))
      const refusal = await b.acquireWriter(header.id).catch((error: unknown) => error)
      expect(refusal).toBeInstanceOf(SessionInUseError)
      expect(`dsh: ${(refusal as Error).message}`).toMatch(new RegExp(`^dsh: session ${header.id} is in use by another writer \\(pid 4242 on host-a, since \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z\\)$`))
      // Writing without the lease is refused too, and writes nothing.
      await expect(b.appendBatch(header, events.slice(5))).rejects.toBeInstanceOf(SessionInUseError)
      expect(canonical((await b.loadStored(header.id))!.events)).toEqual(canonical(events.slice(0, 5)))
      expect(await b.writer(header.id)).toMatchObject({ pid: 4242, host: 'host-a', mine: false })
      await a.releaseWriter(header.id)
      await b.acquireWriter(header.id)
      await b.appendBatch(header, events.slice(5))
      expect(canonical((await a.loadStored(header.id))!.events)).toEqual(canonical(events))
      await a.close()
      await b.close()
    })

    it('fencing: an expired holder that comes back can never append; nothing it flushed is lost', async () => {
      const schema = freshSchema()
      const stale = open(schema, { leaseTtlMs: 200 })
      const next = open(schema, { leaseTtlMs: 60_000 })
      const { header, events } = await realisticLog(2, 21)
      await stale.acquireWriter(header.id)
      await stale.create(header, events.slice(0, 30))
      // The holder hangs (no renewals); its lease expires and another instance takes over.
      stale.suspendRenewal()
      for (;;) {
        const taken = await next.acquireWriter(header.id).then(() => true, (error: unknown) => {
          if (error instanceof SessionInUseError) return false
          throw error
        })
        if (taken) break
        await sql('SELECT pg_sleep(0.05)')
      }
      const loaded = (await next.loadStored(header.id))!
      expect(canonical(loaded.events)).toEqual(canonical(events.slice(0, 30)))
      await expect(stale.appendBatch(header, events.slice(30, 40))).rejects.toBeInstanceOf(WriterLeaseLostError)
      await next.appendBatch(header, events.slice(30))
      // Still refused after the new holder wrote, and after the new holder's lease is gone.
      await expect(stale.appendBatch(header, events.slice(events.length))).rejects.toBeInstanceOf(WriterLeaseLostError)
      await next.releaseWriter(header.id)
      await expect(stale.appendBatch(header, [])).rejects.toBeInstanceOf(WriterLeaseLostError)
      expect(canonical((await next.loadStored(header.id))!.events)).toEqual(canonical(events))
      await stale.close()
      await next.close()
    })

    it('a takeover racing a write: the write lands before it or is refused after it, never lost', async () => {
      const schema = freshSchema()
      const { header, events } = await realisticLog(3, 33)
      for (let round = 0; round < 5; round++) {
        const id = `${header.id}-${round}`
        const h = { ...header, id }
        const stale = open(schema, { leaseTtlMs: 1 })
        const next = open(schema)
        await stale.acquireWriter(id)
        stale.suspendRenewal()
        await stale.create(h, events.slice(0, 10))
        const write = stale.appendBatch(h, events.slice(10, 20)).then(() => 'written', (error: unknown) => {
          if (error instanceof WriterLeaseLostError) return 'refused'
          throw error
        })
        for (;;) {
          const taken = await next.acquireWriter(id).then(() => true, (error: unknown) => { if (error instanceof SessionInUseError) return false; throw error })
          if (taken) break
        }
        const seen = (await next.loadStored(id))!.events.length
        const outcome = await write
        expect((await next.loadStored(id))!.events.length).toBe(seen)
        expect(seen).toBe(outcome === 'written' ? 20 : 10)
        await stale.close()
        await next.close()
      }
    })
  })
})
