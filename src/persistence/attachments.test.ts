/**
 * Attachments in the JSONL and SQLite stores: durable across backend instances, storable before
 * the log is materialised, moved to the trash with the session, refused for ids that are not
 * content hashes; the archived flag of a session list; a persisted fork keeps its images.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { JsonlBackend } from './jsonl/backend.js'
import { SqliteBackend } from './sqlite/backend.js'
import { SessionPersistence } from './service.js'
import type { PersistenceBackend } from './api.js'
import { SessionsServicePlugin } from '../session/service.js'
import { attachmentIdOf } from '../session/attachments.js'
import type { SessionEvent, SessionHeader } from '../session/types.js'
import { pngImage } from '../../test-support/images.js'
import { postgresUnavailable, startPostgres, type PostgresServer } from '../../test-support/postgres.js'
import { PostgresBackend } from './postgres/backend.js'
import { afterAll, beforeAll } from 'vitest'

const pgUnavailable = postgresUnavailable()
if (pgUnavailable) console.warn(`skipping the PostgreSQL attachment tests: ${pgUnavailable}`)
let server: PostgresServer | undefined
beforeAll(async () => { if (!pgUnavailable) server = await startPostgres({ fsync: false }) }, 120_000)
afterAll(async () => { await server?.stop() })
let schemas = 0
/** One schema per test folder, so a reopened backend finds the same store. */
const schemaOf = new Map<string, string>()

const header = (id: string): SessionHeader => ({ type: 'session', version: 0, id, createdAt: 1, cwd: '/work/project', delegationDepth: 0 })
const event = (seq: number, type: string, data: unknown): SessionEvent => ({ type, seq, time: 10 + seq, data } as SessionEvent)

const backends: [string, (dir: string) => PersistenceBackend][] = [
  ['jsonl', dir => new JsonlBackend({ root: join(dir, 'sessions'), fsync: false })],
  ['sqlite', dir => new SqliteBackend({ file: join(dir, 'sessions.db') })],
  ...pgUnavailable ? [] : [['postgres', (dir: string) => {
    if (!schemaOf.has(dir)) schemaOf.set(dir, `attach_${process.pid}_${schemas++}`)
    return new PostgresBackend({ url: server!.url, schema: schemaOf.get(dir)! })
  }] as [string, (dir: string) => PersistenceBackend]],
]

describe.each(backends)('%s attachments', (kind, open) => {
  let dir: string
  let backend: PersistenceBackend
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), `dsh-attach-${kind}-`)) })
  afterEach(async () => {
    await backend?.close?.()
    rmSync(dir, { recursive: true, force: true })
  })

  it('keeps an image across backend instances, stored before the log exists', async () => {
    backend = open(dir)
    const png = pngImage(2, 2)
    const id = attachmentIdOf(png)
    await backend.putAttachment!(header('s1'), id, { data: png, mediaType: 'image/png' })
    await backend.putAttachment!(header('s1'), id, { data: png, mediaType: 'image/png' }) // idempotent
    expect(Buffer.from((await backend.getAttachment!('s1', id))!.data).equals(png)).toBe(true)
    await backend.appendBatch(header('s1'), [event(0, 'turn/start', { turn: 1 })])
    await backend.close?.()
    backend = open(dir)
    const read = await backend.getAttachment!('s1', id)
    expect(read?.mediaType).toBe('image/png')
    expect(Buffer.from(read!.data).equals(png)).toBe(true)
    expect(await backend.getAttachment!('s2', id)).toBeUndefined()
    // Listing does not show a session that has attachments but no log.
    await backend.putAttachment!(header('orphan'), id, { data: png, mediaType: 'image/png' })
    expect((await backend.list()).map(s => s.id)).toEqual(['s1'])
  })

  it('moves attachments to the trash with the session', async () => {
    backend = open(dir)
    const png = pngImage(1, 1)
    const id = attachmentIdOf(png)
    await backend.appendBatch(header('gone'), [event(0, 'turn/start', { turn: 1 })])
    await backend.putAttachment!(header('gone'), id, { data: png, mediaType: 'image/png' })
    expect(await backend.trash('gone')).toBe(true)
    expect(await backend.getAttachment!('gone', id)).toBeUndefined()
    if (kind === 'jsonl') {
      const trash = join(dir, 'sessions', '.trash')
      const [folder] = readdirSync(trash)
      expect(existsSync(join(trash, folder!, 'attachments', id.slice('sha256:'.length)))).toBe(true)
    } else if (kind === 'sqlite') {
      const db = (backend as SqliteBackend).db
      expect(db.prepare('SELECT count(*) AS n FROM trash_attachments WHERE attachment_id = ?').get(id)).toEqual({ n: 1 })
      expect(db.prepare('SELECT count(*) AS n FROM attachments').get()).toEqual({ n: 0 })
    } else {
      const pool = (backend as PostgresBackend).pool
      expect((await pool.query('SELECT count(*)::int AS n FROM trash_attachments WHERE attachment_id = $1', [id])).rows[0]).toEqual({ n: 1 })
      expect((await pool.query('SELECT count(*)::int AS n FROM attachments')).rows[0]).toEqual({ n: 0 })
    }
  })

  it('lists the archived flag from the last session/archived event', async () => {
    backend = open(dir)
    await backend.appendBatch(header('a'), [event(0, 'turn/start', { turn: 1 }), event(1, 'session/archived', { archived: true })])
    await backend.appendBatch(header('b'), [event(0, 'session/archived', { archived: true }), event(1, 'session/archived', { archived: false })])
    const byId = Object.fromEntries((await backend.list()).map(s => [s.id, s.archived ?? false]))
    expect(byId).toEqual({ a: true, b: false })
    await backend.appendBatch(header('a'), [event(2, 'session/archived', { archived: false })])
    expect((await backend.list()).find(s => s.id === 'a')?.archived).toBeUndefined()
  })

  if (kind === 'jsonl') {
    it('refuses an id that is not a content hash (no path outside the session folder)', async () => {
      backend = open(dir)
      await expect(backend.putAttachment!(header('s'), 'sha256:../../../escape', { data: pngImage(1, 1), mediaType: 'image/png' })).rejects.toThrow('is not sha256:<64 hex digits>')
      await expect(backend.getAttachment!('s', '../session.jsonl')).rejects.toThrow('is not sha256:<64 hex digits>')
    })
  }

  it('through the service: a stored session\'s images survive a restart and a fork copies them', async () => {
    const start = async () => {
      const ctx = new Context()
      await ctx.plugin(SessionsServicePlugin).await()
      await ctx.plugin(SessionPersistence, { backend: open(dir), maxDelayMs: 1 }).await()
      return ctx
    }
    let ctx = await start()
    const session = ctx.sessions.create({ cwd: '/work/project' })
    const block = await ctx.sessions.attachments.addImage(session.id, pngImage(3, 3))
    session.append('turn/start', { turn: 1 })
    session.append('user/message', { id: 'm1', role: 'user', content: [block], source: { kind: 'user' } }, { surfaceOp: 'append' })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await ctx.sessionPersistence.flushAll()
    const fork = await ctx.sessionPersistence.fork(session.id)
    // An in-memory fork (as subagent forks are made) gets its copy on creation; flush waits for it.
    const child = ctx.sessions.fork(session.id)
    await ctx.sessionPersistence.flush(child)
    await ctx.sessionPersistence.delete(session.id)
    ctx.registry.delete(SessionPersistence)
    await ctx.registry.delete(SessionsServicePlugin)
    ctx = await start()
    const loaded = await ctx.sessionPersistence.load(fork.id)
    expect(await ctx.sessions.attachments.read(loaded.session.id, block.attachment.attachmentId)).toBeDefined()
    expect(await ctx.sessions.attachments.read(session.id, block.attachment.attachmentId)).toBeUndefined()
    await ctx.sessionPersistence.load(child.id)
    expect(await ctx.sessions.attachments.read(child.id, block.attachment.attachmentId)).toBeDefined()
    await ctx.registry.delete(SessionPersistence)
    backend = undefined as unknown as PersistenceBackend
  })
})
