/**
 * Moving a session between homes: the export file (plain log, or one JSON document with the
 * images), its strict reader, and `exportSession` / `importSession` over the JSONL and SQLite
 * stores.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { JsonlBackend } from './jsonl/backend.js'
import { SqliteBackend } from './sqlite/backend.js'
import { SessionPersistence } from './service.js'
import { SessionExistsError, type PersistenceBackend } from './api.js'
import { EXPORT_FORMAT, ImportError, encodeSessionExport, exchangeLog, parseSessionExport } from './exchange.js'
import { SessionsServicePlugin } from '../session/service.js'
import { ApprovalPlugin } from '../approval/service.js'
import { attachmentIdOf } from '../session/attachments.js'
import { pngImage } from '../../test-support/images.js'

/** The folder of the importing machine every import here names. */
const HERE = '/home/importer/project'

const backends: [string, (dir: string) => PersistenceBackend][] = [
  ['jsonl', dir => new JsonlBackend({ root: join(dir, 'sessions'), fsync: false })],
  ['sqlite', dir => new SqliteBackend({ file: join(dir, 'sessions.db') })],
]

/** Unloads the persistence plugin (flushes, closes the backend) and the session registry. */
async function stop(ctx: Context): Promise<void> {
  await ctx.registry.delete(SessionPersistence)
  await ctx.registry.delete(SessionsServicePlugin)
}

async function start(backend: PersistenceBackend): Promise<Context> {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin).await()
  await ctx.plugin(SessionPersistence, { backend, maxDelayMs: 1 }).await()
  return ctx
}

/** A finished one-turn session with an image in its prompt (and an open second turn when `open`). */
async function sessionWithImage(ctx: Context, options: { open?: boolean } = {}) {
  const session = ctx.sessions.create({ cwd: '/work/project' })
  const block = await ctx.sessions.attachments.addImage(session.id, pngImage(3, 2))
  session.append('turn/start', { turn: 1 })
  session.append('user/message', { id: 'm1', role: 'user', content: [{ type: 'text', text: 'look' }, block], source: { kind: 'user' } }, { surfaceOp: 'append' })
  session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
  session.append('session/title', { title: 'A picture', messageSeqs: [], source: { kind: 'user' } })
  if (options.open) session.append('turn/start', { turn: 2 })
  await ctx.sessionPersistence.flushAll()
  return { session, attachmentId: block.attachment.attachmentId }
}

describe('the export file', () => {
  let dir: string
  let ctx: Context
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-exchange-'))
    ctx = await start(new JsonlBackend({ root: join(dir, 'sessions'), fsync: false }))
  })
  afterEach(async () => {
    await stop(ctx)
    rmSync(dir, { recursive: true, force: true })
  })

  it('a log without images exports as the JSONL log itself and reads back event for event', async () => {
    const session = ctx.sessions.create({ cwd: '/work/project' })
    session.append('turn/start', { turn: 1 })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    const exchange = await ctx.sessionPersistence.exportSession(session.id)
    const file = encodeSessionExport(exchange)
    expect(file.filename).toBe(`${session.id}.jsonl`)
    expect(file.text).toBe(exchangeLog(session.header, session.events))
    expect(file.text.split('\n')).toHaveLength(4) // header, two events, final newline
    const back = parseSessionExport(file.text)
    expect(back.header).toEqual(session.header)
    expect(back.events).toEqual([...session.events])
    expect(back.attachments).toEqual([])
  })

  it('a log with images exports as one JSON document carrying their bytes, and the bytes are checked on reading', async () => {
    const { session, attachmentId } = await sessionWithImage(ctx)
    const file = encodeSessionExport(await ctx.sessionPersistence.exportSession(session.id))
    expect(file.filename).toBe(`${session.id}.dsh-export.json`)
    const document = JSON.parse(file.text)
    expect(document).toMatchObject({ format: EXPORT_FORMAT, version: 1, attachments: [{ attachmentId, mediaType: 'image/png' }] })
    expect(document.log).toBe(exchangeLog(session.header, session.events))
    const back = parseSessionExport(file.text)
    expect(attachmentIdOf(back.attachments[0]!.data)).toBe(attachmentId)
    // One byte changed in transit: refused, naming the attachment.
    const bytes = Buffer.from(document.attachments[0].data, 'base64')
    bytes[bytes.length - 1] ^= 1
    const damaged = JSON.stringify({ ...document, attachments: [{ ...document.attachments[0], data: bytes.toString('base64') }] })
    expect(() => parseSessionExport(damaged)).toThrow(new ImportError(`session export: attachment 1: its bytes do not hash to ${attachmentId} (damaged in transit?)`))
  })

  it('bad files are refused whole with a message naming the problem', () => {
    const header = '{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}'
    const good = '{"type":"turn/start","seq":0,"time":2,"data":{"turn":1}}'
    expect(() => parseSessionExport('')).toThrow('the file is empty')
    expect(() => parseSessionExport('{"format":"other"}')).toThrow('not a session export')
    expect(() => parseSessionExport(`{"format":"${EXPORT_FORMAT}","version":2,"log":""}`)).toThrow('session export version 2 is not supported')
    expect(() => parseSessionExport(`${header}\n${good}\n{"type":"turn/end","seq":5,"time":3,"data":{}}\n`)).toThrow(/^not a valid session log: line 3: /)
    expect(() => parseSessionExport(`${header}\n${good}\nnot json\n`)).toThrow(/^not a valid session log: line 3: /)
    expect(() => parseSessionExport(`${header}\n\n${good}\n`)).toThrow('not a valid session log: line 2: blank line')
    const png = pngImage(1, 1)
    const stray = JSON.stringify({ format: EXPORT_FORMAT, version: 1, log: `${header}\n${good}\n`, attachments: [{ attachmentId: attachmentIdOf(png), mediaType: 'image/png', data: Buffer.from(png).toString('base64') }] })
    expect(() => parseSessionExport(stray)).toThrow('is not referenced by the log')
    const script = JSON.stringify({ format: EXPORT_FORMAT, version: 1, log: `${header}\n${good}\n`, attachments: [{ attachmentId: attachmentIdOf(png), mediaType: 'text/html', data: 'AA==' }] })
    expect(() => parseSessionExport(script)).toThrow('media type "text/html" is not one of')
  })
})

describe.each(backends)('%s: importing a session', (kind, open) => {
  let dir: string
  let source: Context
  let target: Context
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), `dsh-import-${kind}-`))
    source = await start(open(join(dir, 'a')))
    target = await start(open(join(dir, 'b')))
  })
  afterEach(async () => {
    await stop(source)
    await stop(target)
    rmSync(dir, { recursive: true, force: true })
  })

  it('stores the log and its images in another home; the imported session loads with both and exports the same file', async () => {
    const { session, attachmentId } = await sessionWithImage(source)
    const file = encodeSessionExport(await source.sessionPersistence.exportSession(session.id))
    const result = await target.sessionPersistence.importSession(parseSessionExport(file.text), { cwd: HERE })
    expect(result).toEqual({ id: session.id, events: session.length, closers: 0, attachments: 1, missing: [] })
    // Unloaded after the import: no writer lock kept, listed with its title.
    expect(target.sessions.get(session.id)).toBeUndefined()
    expect((await target.sessionPersistence.list()).map(s => [s.id, s.title])).toEqual([[session.id, 'A picture']])
    const loaded = await target.sessionPersistence.load(session.id)
    // The file's events as they were, then the import marker; the header names this machine's folder.
    expect([...loaded.session.events].slice(0, session.length)).toEqual([...session.events])
    expect(loaded.session.events.slice(session.length)).toMatchObject([{ type: 'session/imported', seq: session.length, data: { from: { id: session.id, cwd: '/work/project' } } }])
    expect(loaded.session.header).toEqual({ ...session.header, cwd: HERE })
    expect(Buffer.from((await target.sessions.attachments.read(session.id, attachmentId))!.data).equals(pngImage(3, 2))).toBe(true)
    const again = parseSessionExport(encodeSessionExport(await target.sessionPersistence.exportSession(session.id)).text)
    expect(again.events.slice(0, session.length)).toEqual([...session.events])
    expect(again.attachments).toEqual(parseSessionExport(file.text).attachments)
  })

  it('a taken id is refused and nothing is written; --new-id stores a copy as <id>-imported, then -imported-2', async () => {
    const { session } = await sessionWithImage(source)
    const exchange = parseSessionExport(encodeSessionExport(await source.sessionPersistence.exportSession(session.id)).text)
    await target.sessionPersistence.importSession(exchange, { cwd: HERE })
    const before = await target.sessionPersistence.backend.readStoredRevision(session.id)
    await expect(target.sessionPersistence.importSession(exchange, { cwd: HERE })).rejects.toThrow(SessionExistsError)
    await expect(target.sessionPersistence.importSession(exchange, { cwd: HERE })).rejects.toThrow(`session "${session.id}" is already stored; import it under a new id (--new-id)`)
    expect(await target.sessionPersistence.backend.readStoredRevision(session.id)).toBe(before)
    expect((await target.sessionPersistence.importSession(exchange, { newId: true, cwd: HERE })).id).toBe(`${session.id}-imported`)
    expect((await target.sessionPersistence.importSession(exchange, { newId: true, cwd: HERE })).id).toBe(`${session.id}-imported-2`)
    const copy = await target.sessionPersistence.load(`${session.id}-imported-2`)
    expect(copy.session.header).toEqual({ ...session.header, id: `${session.id}-imported-2`, cwd: HERE })
    expect((await target.sessionPersistence.list()).length).toBe(3)
  })

  it('C-2: an export taken during an open turn is stored with the turn closed as interrupted', async () => {
    const { session } = await sessionWithImage(source, { open: true })
    const result = await target.sessionPersistence.importSession(parseSessionExport(encodeSessionExport(await source.sessionPersistence.exportSession(session.id)).text), { cwd: HERE })
    expect(result.closers).toBeGreaterThan(0)
    const loaded = await target.sessionPersistence.load(session.id)
    expect(loaded.repaired).toEqual([])
    expect(loaded.session.events.at(-2)).toMatchObject({ type: 'turn/end', data: { turn: 2, reason: { kind: 'interrupted' } } })
    expect(loaded.session.events.at(-1)).toMatchObject({ type: 'session/imported' })
  })

  it('S-3: a log with an event type this home does not know is refused before anything is stored', async () => {
    const session = source.sessions.create({ cwd: '/work/project' })
    session.append('turn/start', { turn: 1 })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await source.sessionPersistence.flushAll()
    const text = exchangeLog(session.header, session.events).replace('"turn/end"', '"mystery/event"')
    await expect(target.sessionPersistence.importSession(parseSessionExport(text), { cwd: HERE })).rejects.toThrow(/^the log cannot be imported: S-3 at seq 1: unknown event type "mystery\/event"/)
    expect(await target.sessionPersistence.backend.readStoredRevision(session.id)).toBeUndefined()
    expect(await target.sessionPersistence.list()).toEqual([])
  })

  it('an image the file does not carry is reported as missing; the log is still imported', async () => {
    const { session, attachmentId } = await sessionWithImage(source)
    const text = exchangeLog(session.header, session.events) // the plain log: no bytes
    const result = await target.sessionPersistence.importSession(parseSessionExport(text), { cwd: HERE })
    expect(result).toMatchObject({ attachments: 0, missing: [attachmentId] })
    expect(await target.sessionPersistence.backend.readStoredRevision(session.id)).toBeDefined()
  })
})

describe('security #42.5: knobs and folder of an imported file', () => {
  let dir: string
  let source: Context
  let target: Context
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-import-knobs-'))
    source = await start(new JsonlBackend({ root: join(dir, 'a', 'sessions'), fsync: false }))
    await source.plugin(ApprovalPlugin).await()
    target = await start(new JsonlBackend({ root: join(dir, 'b', 'sessions'), fsync: false }))
    await target.plugin(ApprovalPlugin, { mode: 'read-only' }).await()
  })
  afterEach(async () => {
    await stop(source)
    await stop(target)
    rmSync(dir, { recursive: true, force: true })
  })

  it('security #42.5: a file ending in danger-full-access / never runs with the importing home\'s defaults, in the folder given; knobs set after the import stay until the next import', async () => {
    const session = source.sessions.create({ cwd: '/their/machine' })
    source.approval.selectPreset(session, 'danger-full-access')
    expect([source.approval.mode(session), source.approval.policy(session)]).toEqual(['danger-full-access', 'never'])
    await source.sessionPersistence.flushAll()
    const file = encodeSessionExport(await source.sessionPersistence.exportSession(session.id)).text
    expect(file).toContain('"danger-full-access"')

    await target.sessionPersistence.importSession(parseSessionExport(file), { cwd: HERE })
    const imported = (await target.sessionPersistence.load(session.id)).session
    expect(imported.header.cwd).toBe(HERE)
    expect(imported.events.map(event => event.type)).toEqual(['permission/preset', 'sandbox/mode', 'approval/policy', 'session/imported'])
    expect(imported.events.at(-1)!.data).toEqual({ from: { id: session.id, cwd: '/their/machine' } })
    // The target's deployment defaults (read-only, ask), not the file's knobs.
    expect([target.approval.mode(imported), target.approval.policy(imported), target.approval.preset(imported)]).toEqual(['read-only', 'ask', 'read-only'])
    // The importing user's own choice after the import holds...
    target.approval.setMode(imported, 'workspace-write')
    expect(target.approval.mode(imported)).toBe('workspace-write')
    await target.sessionPersistence.flushAll()
    // ...until the file travels again: a second import resets it too.
    const second = parseSessionExport(encodeSessionExport(await target.sessionPersistence.exportSession(session.id)).text)
    await target.sessionPersistence.importSession(second, { newId: true, cwd: HERE })
    const copy = (await target.sessionPersistence.load(`${session.id}-imported`)).session
    expect(copy.events.at(-1)).toMatchObject({ type: 'session/imported', data: { from: { id: session.id, cwd: HERE } } })
    expect(target.approval.mode(copy)).toBe('read-only')
  })

  it('security #42.5: importSession refuses to run without a folder of this machine', async () => {
    const session = source.sessions.create({ cwd: '/their/machine' })
    await source.sessionPersistence.flushAll()
    const exchange = parseSessionExport(encodeSessionExport(await source.sessionPersistence.exportSession(session.id)).text)
    await expect(target.sessionPersistence.importSession(exchange, {} as { cwd: string })).rejects.toThrow('needs the working folder of this machine')
    expect(await target.sessionPersistence.list()).toEqual([])
  })

  it('security #42.5: a malformed session/imported marker is refused like any bad event', async () => {
    const session = source.sessions.create({ cwd: '/their/machine' })
    expect(() => session.append('session/imported', { from: { id: 'x' }, knobs: 'keep' })).toThrow(/data must be \{from: \{id, cwd\?\}\}/)
    expect(() => session.append('session/imported', { from: { cwd: '/x' } })).toThrow(/from must be/)
  })
})
