/**
 * `restore` (#44.6, `dsh sessions restore ID`) on every backend: the session last trashed with
 * an id comes back as it was (events, bookkeeping, images), refused while the id is stored.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test-support/postgres.js'
import type { PersistenceBackend } from './api.js'
import { realisticLog } from './backend.conformance.js'
import { JsonlBackend } from './jsonl/backend.js'
import { PostgresBackend } from './postgres/backend.js'
import { SqliteBackend } from './sqlite/backend.js'
import type { SessionEvent } from '../session/types.js'

const pgUnavailable = postgresUnavailable()
if (pgUnavailable) console.warn(`skipping the PostgreSQL restore test: ${pgUnavailable}`)
let server: PostgresServer | undefined
beforeAll(async () => { if (!pgUnavailable) server = await startPostgres({ fsync: false }) }, 120_000)
afterAll(async () => { await server?.stop() })
let schemas = 0

const backends: [string, (dir: string) => PersistenceBackend][] = [
  ['jsonl', dir => new JsonlBackend({ root: join(dir, 'sessions') })],
  ['sqlite', dir => new SqliteBackend({ file: join(dir, 'sessions.db') })],
  ...pgUnavailable ? [] : [['postgres', () => new PostgresBackend({ url: server!.url, schema: `restore_${process.pid}_${schemas++}` })] as [string, (dir: string) => PersistenceBackend]],
]

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex')
const IMAGE = `sha256:${createHash('sha256').update(PNG).digest('hex')}`

describe.each(backends)('%s restore', (_kind, open) => {
  it('brings back the newest trashed copy as it was (events, turns, title, an image); refuses while the id is stored; false when the trash has none', async () => {
    const backend = open(mkdtempSync(join(tmpdir(), 'dsh-restore-')))
    try {
      const older = await realisticLog(1, 4)
      const newer = await realisticLog(2, 4)
      const titled: SessionEvent[] = [...newer.events, { type: 'session/title', seq: newer.events.length, time: 99, data: { title: 'kept title' } } as SessionEvent]
      await backend.create({ ...older.header, id: 'twice', cwd: '/p' }, older.events)
      await backend.trash('twice')
      // The trash orders copies by the millisecond they went in: the second goes in a later one.
      for (const at = Date.now(); Date.now() === at;) { /* the next millisecond */ }
      await backend.create({ ...newer.header, id: 'twice', cwd: '/p' }, titled)
      await backend.putAttachment?.({ ...newer.header, id: 'twice', cwd: '/p' }, IMAGE, { data: PNG, mediaType: 'image/png' })
      await expect(backend.restore!('twice')).rejects.toThrow(/is stored; it cannot be restored over/)
      expect(await backend.trash('twice')).toBe(true)
      expect(await backend.list()).toEqual([])

      expect(await backend.restore!('twice')).toBe(true)
      expect((await backend.loadStored('twice'))!.events).toEqual(titled)
      expect(await backend.list()).toMatchObject([{ id: 'twice', cwd: '/p', turns: 2, title: 'kept title', length: titled.length }])
      if (backend.getAttachment !== undefined) expect((await backend.getAttachment('twice', IMAGE))?.data).toEqual(PNG)
      // The older copy is still in the trash, and comes back once this one is gone again.
      await backend.trash('twice')
      expect(await backend.restore!('twice')).toBe(true)
      expect(await backend.restore!('nothing-here')).toBe(false)
    } finally {
      await backend.close?.()
    }
  })
})
