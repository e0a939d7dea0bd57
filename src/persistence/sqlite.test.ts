import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { PersistenceBackend } from './api.js'
import { FormatVersionError } from './api.js'
import { describeBackendConformance, realisticLog } from './backend.conformance.js'
import { RENDERED_RECORD, SQLITE_APPLICATION_ID, SQLITE_SCHEMA_VERSION, SqliteBackend } from './sqlite/backend.js'
import { eventRowValues, rowRecord, type StoredEventRow } from './records.js'
import { EVENT_COLUMNS } from './event-columns.js'
import { repoRoot } from '../../test-support/run-dsh.js'

const sqlite = (backend: PersistenceBackend) => backend as SqliteBackend

describeBackendConformance({
  name: 'sqlite',
  open: (dir) => new SqliteBackend({ file: join(dir, 'sessions.db') }),
  async modes(backend, dir) {
    return [
      { path: dir, mode: 0o700 },
      { path: join(dir, 'sessions.db'), mode: 0o600 },
      { path: join(dir, 'sessions.db-wal'), mode: 0o600 },
    ]
  },
  async corrupt(backend, id, seq) {
    const { changes } = sqlite(backend).db.prepare(
      "UPDATE events SET data = '{not json' WHERE session_id = ? AND seq = (SELECT max(seq) FROM events WHERE session_id = ? AND seq <= ?)",
    ).run(id, id, seq)
    if (changes !== 1) throw new Error(`no row holds seq ${seq}`)
  },
  child: { kind: 'sqlite', store: (dir) => join(dir, 'sessions.db') },
  async setHeaderVersion(backend, id, version) {
    sqlite(backend).db.prepare("UPDATE sessions SET header = json_set(header, '$.version', ?) WHERE id = ?").run(version, id)
  },
})

describe('SQLite store (D-6)', () => {
  const withDir = async (fn: (dir: string) => Promise<void>) => {
    const dir = await mkdtemp(join(tmpdir(), 'dsh-sqlite-'))
    try {
      await fn(dir)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }

  it('D-5/D-6: a row rendered by SQLite for a cold load is exactly the record text rendered from its columns, damaged and unusual rows included', () => {
    const db = new Database(':memory:')
    try {
      db.exec('CREATE TABLE events (seq INTEGER NOT NULL PRIMARY KEY, count INTEGER NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL, data TEXT NOT NULL, ignorable INTEGER, surface_op TEXT, source_event_seqs TEXT) STRICT')
      const base = { count: 1, type: 'tool/result', time: 1_700_000_000_123, data: '{"turn":1,"step":1,"message":{"id":"m"}}', ignorable: null, surface_op: '"append"', source_event_seqs: '[3,5]' }
      const rows = [
        base,
        { ...base, type: 'x/y', ignorable: 1, surface_op: null, source_event_seqs: null },
        { ...base, ignorable: 0 },
        { ...base, ignorable: -7 },
        { ...base, time: -5 },
        { ...base, time: 2 ** 53 + 1 },
        { ...base, type: 'text-chunks', count: 3, data: '{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}', surface_op: null, source_event_seqs: null },
        { ...base, type: 'tool-call-chunks', count: 3, data: '{}', ignorable: 1 },
        { ...base, type: 'reasoning-chunks', count: 3, data: '{}', surface_op: '{"op":"replace"}' },
        { ...base, type: 'a"b\\c\n\t\u0001\u001f\u007f é ✓ 😀 \u2028', ignorable: null },
        { ...base, type: '' },
        { ...base, data: '{"turn":1},"extra":2' },
        { ...base, data: '{"turn":' },
        { ...base, data: '' },
        { ...base, surface_op: '{', source_event_seqs: ' [1] ' },
      ]
      const insert = db.prepare('INSERT INTO events (seq, count, type, time, data, ignorable, surface_op, source_event_seqs) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      rows.forEach((row, seq) => insert.run(seq, row.count, row.type, row.time, row.data, row.ignorable, row.surface_op, row.source_event_seqs))
      const rendered = db.prepare<[], string>(`SELECT ${RENDERED_RECORD} FROM events ORDER BY seq`).pluck(true).all()
      const read = db.prepare<[], StoredEventRow>('SELECT * FROM events ORDER BY seq').all()
      expect(rendered).toEqual(read.map((row) => rowRecord(row).text))
      expect(rendered).toHaveLength(rows.length)
    } finally {
      db.close()
    }
  })

  it('D-6: WAL, synchronous=FULL, application_id and user_version are set', () => withDir(async (dir) => {
    const backend = new SqliteBackend({ file: join(dir, 's.db') })
    expect(backend.db.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(backend.db.pragma('synchronous', { simple: true })).toBe(2)
    expect(backend.db.pragma('application_id', { simple: true })).toBe(SQLITE_APPLICATION_ID)
    expect(backend.db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION)
    const strict = backend.db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%STRICT%' ORDER BY name").all()
    expect(strict.map((r) => (r as { name: string }).name)).toEqual(['attachments', 'events', 'session_archived', 'session_writers', 'sessions', 'store_state', 'trash_attachments', 'trash_events', 'trash_sessions'])
    await backend.close()
  }))

  it('D-6: a foreign database is refused and left untouched', () => withDir(async (dir) => {
    const file = join(dir, 'other.db')
    const other = new Database(file)
    other.exec('CREATE TABLE notes (x TEXT)')
    other.close()
    expect(() => new SqliteBackend({ file })).toThrow(FormatVersionError)
    expect(() => new SqliteBackend({ file })).toThrow(/not a dsh session store/)
    const check = new Database(file)
    expect(check.pragma('journal_mode', { simple: true })).toBe('delete')
    expect(check.pragma('application_id', { simple: true })).toBe(0)
    check.close()
  }))

  it('D-6: a newer or older schema version is refused naming the direction, never migrated', () => withDir(async (dir) => {
    const file = join(dir, 's.db')
    await new SqliteBackend({ file }).close()
    for (const [version, word] of [[SQLITE_SCHEMA_VERSION + 1, 'newer'], [SQLITE_SCHEMA_VERSION - 1, 'older']] as const) {
      const raw = new Database(file)
      raw.pragma(`user_version = ${version}`)
      raw.close()
      expect(() => new SqliteBackend({ file })).toThrow(new RegExp(`schema version ${version} is ${word}`))
      const after = new Database(file)
      expect(after.pragma('user_version', { simple: true })).toBe(version)
      after.close()
    }
  }))

  it('D-6/D-7: the revision token is storeId:incarnation:revision, bumped per transaction; a new incarnation after trash', () => withDir(async (dir) => {
    const backend = new SqliteBackend({ file: join(dir, 's.db') })
    const { header, events } = await realisticLog(1, 4)
    await backend.create(header, events.slice(0, 5))
    const first = (await backend.readStoredRevision(header.id))!
    const [store, incarnation, revision] = first.split(':')
    expect(revision).toBe('1')
    await backend.appendBatch(header, events.slice(5))
    expect(await backend.readStoredRevision(header.id)).toBe(`${store}:${incarnation}:2`)
    await backend.trash(header.id)
    await backend.create(header, [])
    const again = (await backend.readStoredRevision(header.id))!.split(':')
    expect(again[0]).toBe(store)
    expect(again[1]).not.toBe(incarnation)
    const trashed = backend.db.prepare('SELECT count(*) AS n FROM trash_events WHERE incarnation = ?').get(incarnation) as { n: number }
    expect(trashed.n).toBeGreaterThan(0)
    await backend.close()
  }))

  it('D-6: a write waiting for another process\'s lock leaves the event loop running, and lands once the lock is let go', () => withDir(async (dir) => {
    const file = join(dir, 's.db')
    const backend = new SqliteBackend({ file })
    const { header, events } = await realisticLog(1, 6)
    await backend.create(header, events.slice(0, 5))
    const locker = spawn(process.execPath, [join(repoRoot, 'test-support', 'sqlite-locker.mjs'), file], { stdio: ['pipe', 'pipe', 'inherit'] })
    const lines = createInterface({ input: locker.stdout! })
    const said = (word: string) => new Promise<void>((resolve) => lines.on('line', (line) => { if (line === word) resolve() }))
    const released = said('released')
    await said('locked')
    try {
      let settled = false
      const append = backend.appendBatch(header, events.slice(5)).finally(() => { settled = true })
      // Fires only if the event loop runs while the write waits; it lets the lock go, which is
      // what the write waits for (a busy wait on the loop would fail the write instead).
      let firedWhileWaiting = false
      const timer = new Promise<void>((resolve) => setTimeout(() => {
        firedWhileWaiting = !settled
        locker.stdin!.end('release\n')
        resolve()
      }, 1))
      await timer
      await released
      await append
      expect(firedWhileWaiting).toBe(true)
      expect((await backend.loadStored(header.id))!.events).toHaveLength(events.length)
    } finally {
      locker.kill()
      await backend.close()
    }
  }))

  it('D-6: events and trash_events have the one shared column list (event-columns.ts), in order, with its types', () => withDir(async (dir) => {
    const backend = new SqliteBackend({ file: join(dir, 's.db') })
    for (const table of ['events', 'trash_events']) {
      const columns = backend.db.prepare<[], { name: string; type: string; notnull: number }>(`SELECT name, type, "notnull" FROM pragma_table_info('${table}') ORDER BY cid`).all()
      expect(columns.slice(1).map((c) => `${c.name} ${c.type}${c.notnull ? ' NOT NULL' : ''}`)).toEqual(EVENT_COLUMNS.map((c) => `${c.name} ${c.sqlite}`))
    }
    const { header, events } = await realisticLog(1, 4)
    for (const row of eventRowValues(events, true)) expect(row).toHaveLength(EVENT_COLUMNS.length)
    await backend.create(header, events)
    expect(await backend.trash(header.id)).toBe(true)
    expect(backend.db.prepare<[], { n: number }>('SELECT count(*) AS n FROM trash_events').get()!.n).toBeGreaterThan(0)
    await backend.close()
  }))

  it('D-5/D-6: a damaged database file fails a load naming the file, the session and the repair command', () => withDir(async (dir) => {
    const file = join(dir, 's.db')
    const backend = new SqliteBackend({ file })
    const { header, events } = await realisticLog(40, 7)
    await backend.create(header, events)
    const pages = backend.db.prepare<[], { pageno: number }>("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno").all()
    const pageSize = backend.db.pragma('page_size', { simple: true }) as number
    backend.db.pragma('wal_checkpoint(TRUNCATE)')
    await backend.close()
    expect(pages.length).toBeGreaterThan(2)
    // A leaf page of the events table overwritten (a bad disk sector, a torn copy).
    const damaged = readFileSync(file)
    damaged.fill(0x5a, (pages[1].pageno - 1) * pageSize, pages[1].pageno * pageSize)
    writeFileSync(file, damaged)
    const reopened = new SqliteBackend({ file })
    try {
      const failure = await reopened.loadStored(header.id).then(() => undefined, (error: Error) => error)
      expect(failure?.message).toContain(file)
      expect(failure?.message).toContain(`session ${JSON.stringify(header.id)} cannot be read, the database file is damaged (database disk image is malformed)`)
      expect(failure?.message).toContain(`dsh sessions repair ${header.id}`)
    } finally {
      await reopened.close()
    }
  }))

  it('#43 item 13: a listing of a damaged database file lists the session it cannot read as damaged (file, session, repair command); an intact one beside it stays healthy', () => withDir(async (dir) => {
    const file = join(dir, 's.db')
    const backend = new SqliteBackend({ file })
    const { header, events } = await realisticLog(40, 7)
    await backend.create(header, events)
    const small = await realisticLog(1, 8)
    const intact = { ...small.header, id: 'zz-intact' }
    await backend.create(intact, small.events)
    const pages = backend.db.prepare<[], { pageno: number }>("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno").all()
    const pageSize = backend.db.pragma('page_size', { simple: true }) as number
    backend.db.pragma('wal_checkpoint(TRUNCATE)')
    const healthy = await backend.list()
    await backend.close()
    expect(healthy.filter((s) => s.unreadable !== undefined || s.damaged !== undefined)).toEqual([])
    // The same damage as the load test above: a leaf page of the first session's events overwritten.
    const damaged = readFileSync(file)
    damaged.fill(0x5a, (pages[1].pageno - 1) * pageSize, pages[1].pageno * pageSize)
    writeFileSync(file, damaged)
    const reopened = new SqliteBackend({ file })
    try {
      const loadFailure = await reopened.loadStored(header.id).then(() => undefined, (error: Error) => error)
      expect(loadFailure?.message).toContain('the database file is damaged')
      expect((await reopened.loadStored(intact.id))?.events).toHaveLength(small.events.length)
      const listed = await reopened.list()
      const broken = listed.find((s) => s.id === header.id)
      expect(broken).toMatchObject({ damaged: true, turns: 0, length: 0, unreadable: loadFailure!.message })
      expect(broken?.unreadable).toContain(file)
      expect(broken?.unreadable).toContain(`dsh sessions repair ${header.id}`)
      const other = listed.find((s) => s.id === intact.id)
      expect(other).toMatchObject({ turns: 1, length: small.events.length, lastTurn: 'completed' })
      expect(other?.unreadable).toBeUndefined()
      expect(other?.damaged).toBeUndefined()
      // A second listing of the unchanged file answers the same.
      expect(await reopened.list()).toEqual(listed)
    } finally {
      await reopened.close()
    }
  }))

  it('D-6: a batch that fails inside its transaction leaves no rows (no torn writes)', () => withDir(async (dir) => {
    const backend = new SqliteBackend({ file: join(dir, 's.db') })
    const { header, events } = await realisticLog(1, 6)
    await backend.create(header, events.slice(0, 5))
    const bad = [...events.slice(5, 9), { ...events[9], time: 1.5 }]
    await expect(backend.appendBatch(header, bad)).rejects.toThrow()
    expect((await backend.loadStored(header.id))!.events).toHaveLength(5)
    await backend.appendBatch(header, events.slice(5))
    expect((await backend.loadStored(header.id))!.events).toHaveLength(events.length)
    await backend.close()
  }))

  it.skipIf(!existsSync('/proc/self/maps'))('D-1/D-6: a whole-session read maps the file while it reads and unmaps it after (no pages left in RSS); the load and salvage are unchanged', () => withDir(async (dir) => {
    const file = join(dir, 's.db')
    // A mapping of the store file itself (not its -wal or -shm), as /proc/self/maps lists it.
    const mapped = () => readFileSync('/proc/self/maps', 'utf8').split('\n').some(line => line.endsWith(` ${file}`))
    const backend = new SqliteBackend({ file })
    const { header, events } = await realisticLog(3, 4)
    await backend.create(header, events)
    // Into the file itself: pages still in the write-ahead log are read from there, never mapped.
    backend.db.pragma('wal_checkpoint(TRUNCATE)')
    const statements = (backend as unknown as { statements: Record<'eventTexts' | 'events', { all: (...args: unknown[]) => unknown }> }).statements
    const seen: boolean[] = []
    for (const name of ['eventTexts', 'events'] as const) {
      const all = statements[name].all.bind(statements[name])
      statements[name].all = (...args: unknown[]) => { seen.push(mapped()); return all(...args) }
    }
    expect(mapped()).toBe(false)
    expect((await backend.loadStored(header.id))!.events).toEqual(events)
    expect(mapped()).toBe(false)
    expect((await backend.salvageStored(header.id))!.events).toEqual(events)
    expect(mapped()).toBe(false)
    expect(seen).toEqual([true, true])
    expect(backend.db.pragma('mmap_size', { simple: true })).toBe(0)
    await backend.close()
  }))

  it('D-6: packed chunk rows are stored as single rows spanning their seqs', () => withDir(async (dir) => {
    const backend = new SqliteBackend({ file: join(dir, 's.db') })
    const { header, events } = await realisticLog(1, 8)
    await backend.create(header, events)
    const rows = backend.db.prepare('SELECT type, count FROM events WHERE session_id = ? AND count > 1').all(header.id) as { type: string; count: number }[]
    expect(new Set(rows.map((r) => r.type))).toEqual(new Set(['reasoning-chunks', 'text-chunks', 'tool-call-chunks']))
    await backend.close()
  }))

  it('D-5: a missing row with rows after it is corruption, inside an open turn too: refused, nothing cut; salvage keeps the rows before the gap', () => withDir(async (dir) => {
    const backend = new SqliteBackend({ file: join(dir, 's.db') })
    const { header, events } = await realisticLog(2, 9, 20)
    await backend.create(header, events)
    const rows = backend.db.prepare('SELECT seq FROM events WHERE session_id = ? AND count = 1 ORDER BY seq').all(header.id) as { seq: number }[]
    const lastTurnEnd = events.findLastIndex((e) => e.type === 'turn/end')
    const tailRow = rows.find((r) => r.seq > lastTurnEnd + 3)!.seq
    backend.db.prepare('DELETE FROM events WHERE session_id = ? AND seq = ?').run(header.id, tailRow)
    const count = () => (backend.db.prepare('SELECT count(*) AS n FROM events WHERE session_id = ?').get(header.id) as { n: number }).n
    const before = count()
    await expect(backend.loadStored(header.id)).rejects.toThrow(/row seq \d+: wrong-seq: .*a valid record (follows|stands)/)
    expect(count()).toBe(before)
    const salvaged = (await backend.salvageStored(header.id))!
    expect(salvaged.events).toHaveLength(tailRow)
    expect(salvaged.skipped.join('\n')).toMatch(new RegExp(`seq ${tailRow} is missing`))
    await backend.close()
  }))
})
