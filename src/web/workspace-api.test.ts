/**
 * The workspace methods of `dsh web` over real HTTP: prompts with images (stored with the
 * session, referenced by hash, served back by GET /api/attachment; refused on a text-only route
 * with nothing stored), the folder picker's listing with hostile paths refused, recent folders,
 * and archive / restore.
 */
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { attachmentIdOf } from '../session/attachments.js'
import { encodeEvent, encodeHeader } from '../persistence/records.js'
import type { UserMessage } from '../llm/types.js'
import { SCRIPTED_MODEL, SCRIPTED_MODEL_INFO, SCRIPTED_PROVIDER, ScriptedModel, text } from '../../test-support/scripted-model.js'
import { pngImage } from '../../test-support/images.js'
import { apiClient, httpRequest, startWebApi, type WebApiHarness } from '../../test-support/web-api.js'
import { WebServer } from './server.js'
import { checkFolderPath, listFolders } from './folders.js'

const TOKEN = 'workspace-token-0123456789abcdef'
const VISION = 'scripted-vision'

async function http(port: number, path: string, options: { method?: string; body?: string } = {}) {
  return httpRequest(port, path, { ...options, headers: { 'X-Dsh-Token': TOKEN, 'Content-Type': 'application/json' } })
}

describe('dsh web workspace methods', () => {
  let ctx: Context
  let server: WebServer
  let model: ScriptedModel
  let home: string
  let port: number

  const { call, ok } = apiClient(() => port, TOKEN)
  let harness: WebApiHarness

  beforeEach(async () => {
    home = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-web-ws-')))
    harness = await startWebApi({ home, token: TOKEN, model: VISION, models: [SCRIPTED_MODEL_INFO, { ...SCRIPTED_MODEL_INFO, model: VISION, imageInput: true }] })
    ;({ ctx, model, port } = harness)
    server = harness.server!
  })

  afterEach(async () => {
    await harness.stop()
    rmSync(home, { recursive: true, force: true })
  })

  describe('images', () => {
    it('a prompt with images stores them and references them by hash; the adapter reads the bytes; GET /api/attachment serves them', async () => {
      const png = pngImage(5, 4)
      const created = await ok('sessions.create', { model: VISION })
      let bytes: Uint8Array | undefined
      model.push(async request => {
        const image = request.messages.flatMap(m => m.content).find(b => b.type === 'image')
        if (image && 'attachment' in image) bytes = (await request.attachments?.(image.attachment.attachmentId))?.data
        return text('a small picture')
      })
      await ok('prompt', { id: created.id, text: 'what is this?', images: [{ data: png.toString('base64'), mediaType: 'image/png', name: 'shot.png' }] })
      await ctx.agents.get(created.id)!.whenIdle()
      const message = ctx.sessions.get(created.id)!.events.find(e => e.type === 'user/message')!.data as UserMessage
      const id = attachmentIdOf(png)
      expect(message.content).toEqual([
        { type: 'text', text: 'what is this?' },
        { type: 'image', attachment: { attachmentId: id, mediaType: 'image/png', width: 5, height: 4, bytes: png.length, name: 'shot.png' } },
      ])
      expect(Buffer.from(bytes!).equals(png)).toBe(true)
      // The log carries no base64.
      expect(JSON.stringify(ctx.sessions.get(created.id)!.events)).not.toContain(png.toString('base64').slice(0, 40))
      const served = await http(port, `/api/attachment?session=${created.id}&id=${encodeURIComponent(id)}`)
      expect(served.status).toBe(200)
      expect(served.headers['content-type']).toBe('image/png')
      expect(served.headers['x-content-type-options']).toBe('nosniff')
      expect(served.body.equals(png)).toBe(true)
      expect((await http(port, `/api/attachment?session=${created.id}&id=sha256:${'0'.repeat(64)}`)).status).toBe(404)
      expect((await http(port, `/api/attachment?session=${created.id}&id=../session.jsonl`)).status).toBe(400)
    })

    it('sessions.export: a session with images carries their bytes (also once stored and closed; an image the store lost is named); a session without is the log alone, unchanged', async () => {
      const png = pngImage(3, 2)
      const other = pngImage(2, 3)
      const plain = await ok('sessions.create', { model: VISION })
      model.push(text('hello'))
      await ok('prompt', { id: plain.id, text: 'hi' })
      await ctx.agents.get(plain.id)!.whenIdle()
      const session = ctx.sessions.get(plain.id)!
      const log = `${[encodeHeader(session.header), ...session.events.map(encodeEvent)].join('\n')}\n`
      // Exactly the two fields, the log byte for byte as the store encodes its lines (canonical key order).
      expect(await ok('sessions.export', { id: plain.id })).toEqual({ filename: `${plain.id}.jsonl`, jsonl: log })

      const created = await ok('sessions.create', { model: VISION })
      model.push(text('two pictures'), text('again'))
      await ok('prompt', { id: created.id, text: 'look', images: [{ data: png.toString('base64'), name: 'a.png' }, { data: other.toString('base64') }] })
      await ctx.agents.get(created.id)!.whenIdle()
      await ok('prompt', { id: created.id, text: 'the first again', images: [{ attachmentId: attachmentIdOf(png) }] })
      await ctx.agents.get(created.id)!.whenIdle()
      const live = await ok('sessions.export', { id: created.id })
      const expected = [
        { attachmentId: attachmentIdOf(png), mediaType: 'image/png', data: png.toString('base64') },
        { attachmentId: attachmentIdOf(other), mediaType: 'image/png', data: other.toString('base64') },
      ]
      expect(live.attachments).toEqual(expected)
      expect(live.missingAttachments).toBeUndefined()
      const stored = ctx.sessions.get(created.id)!
      expect(live.jsonl).toBe(`${[encodeHeader(stored.header), ...stored.events.map(encodeEvent)].join('\n')}\n`)

      // Closed: read back from the session folder, the same export.
      await ctx.agents.dispose(created.id)
      await ctx.sessionPersistence.flush(created.id)
      ctx.sessions.close(created.id)
      expect(ctx.sessions.get(created.id)).toBeUndefined()
      const closed = await ok('sessions.export', { id: created.id })
      const parsed = (jsonl: string) => jsonl.trim().split('\n').map(line => JSON.parse(line))
      expect(parsed(closed.jsonl)).toEqual(parsed(live.jsonl))
      expect(closed.attachments).toEqual(expected)
      expect(closed.missingAttachments).toBeUndefined()

      // An image the store lost: the export still goes out and names it.
      const lost = attachmentIdOf(other).slice('sha256:'.length)
      const files = (readdirSync(home, { recursive: true }) as string[]).filter(path => path.endsWith(lost))
      expect(files).toHaveLength(1)
      rmSync(join(home, files[0]!))
      const partial = await ok('sessions.export', { id: created.id })
      expect(partial).toEqual({ ...closed, attachments: [expected[0]], missingAttachments: [attachmentIdOf(other)] })
    })

    it('an image on a text-only route is refused with one line, and nothing is stored or queued', async () => {
      const created = await ok('sessions.create', { model: SCRIPTED_MODEL })
      const reply = await call('prompt', { id: created.id, text: 'look', images: [{ data: pngImage(1, 1).toString('base64'), mediaType: 'image/png' }] })
      expect(reply.status).toBe(400)
      expect(reply.json.error.code).toBe('NO_IMAGE_INPUT')
      expect(reply.json.error.message).toBe(`${SCRIPTED_MODEL} (${SCRIPTED_PROVIDER}) does not accept images: choose an image-capable model, or send the text without them`)
      const session = ctx.sessions.get(created.id)!
      expect(session.events.filter(e => e.type === 'user/message' || e.type === 'agent/inbox/spliced')).toEqual([])
      expect(await ctx.sessions.attachments.read(created.id, attachmentIdOf(pngImage(1, 1)))).toBeUndefined()
      expect(model.requests).toHaveLength(0)
      expect((await call('steer', { id: created.id, text: 'x', images: [{ data: pngImage(1, 1).toString('base64') }] })).json.error.code).toBe('NO_IMAGE_INPUT')
    })

    it('an image the session already has is sent again by its id (Retry); an unknown id is refused', async () => {
      const png = pngImage(6, 6)
      const created = await ok('sessions.create', { model: VISION })
      model.push(text('first'), text('again'))
      await ok('prompt', { id: created.id, text: 'one', images: [{ data: png.toString('base64') }] })
      await ctx.agents.get(created.id)!.whenIdle()
      const id = attachmentIdOf(png)
      await ok('prompt', { id: created.id, text: 'one', images: [{ attachmentId: id }] })
      await ctx.agents.get(created.id)!.whenIdle()
      const prompts = ctx.sessions.get(created.id)!.events.filter(e => e.type === 'user/message').map(e => (e.data as UserMessage).content)
      expect(prompts[1]).toEqual([{ type: 'text', text: 'one' }, { type: 'image', attachment: { attachmentId: id, mediaType: 'image/png', width: 6, height: 6, bytes: png.length } }])
      const unknown = await call('prompt', { id: created.id, text: 'x', images: [{ attachmentId: `sha256:${'1'.repeat(64)}` }] })
      expect(unknown.json.error).toEqual({ code: 'BAD_IMAGE', message: `images[0]: sha256:${'1'.repeat(64)} is not an image of this session` })
      expect((await call('prompt', { id: created.id, text: 'x', images: [{ attachmentId: '../x' }] })).json.error.code).toBe('BAD_PARAMS')
    })

    it('bad image data is refused before any image of the prompt is stored', async () => {
      const created = await ok('sessions.create', { model: VISION })
      const good = pngImage(2, 2)
      const reply = await call('prompt', { id: created.id, text: 'two', images: [{ data: good.toString('base64') }, { data: Buffer.from('not an image').toString('base64'), name: 'notes.txt' }] })
      expect(reply.status).toBe(400)
      expect(reply.json.error).toEqual({ code: 'BAD_IMAGE', message: 'images[1]: "notes.txt" is not a PNG, JPEG, GIF or WebP image' })
      expect(await ctx.sessions.attachments.read(created.id, attachmentIdOf(good))).toBeUndefined()
      expect((await call('prompt', { id: created.id, text: 'x', images: [{ data: '!!!' }] })).json.error.code).toBe('BAD_IMAGE')
      expect((await call('prompt', { id: created.id, text: 'x', images: 'nope' })).json.error.code).toBe('BAD_PARAMS')
    })
  })

  describe('folders', () => {
    it('lists subfolders (hidden ones only on request), resolves symlinks, and knows its parent', async () => {
      const root = join(home, 'tree')
      mkdirSync(join(root, 'beta'), { recursive: true })
      mkdirSync(join(root, 'Alpha'))
      mkdirSync(join(root, '.secret'))
      writeFileSync(join(root, 'file.txt'), 'x')
      symlinkSync(join(root, 'beta'), join(root, 'link-to-beta'))
      const listing = await ok('folders.list', { path: root })
      expect(listing.path).toBe(root)
      expect(listing.parent).toBe(home)
      expect(listing.folders.map((f: { name: string }) => f.name)).toEqual(['Alpha', 'beta', 'link-to-beta'])
      const all = await ok('folders.list', { path: root, hidden: true })
      expect(all.folders.map((f: { name: string }) => f.name)).toEqual(['.secret', 'Alpha', 'beta', 'link-to-beta'])
      expect((await ok('folders.list', { path: join(root, 'link-to-beta') })).path).toBe(join(root, 'beta'))
      expect((await ok('folders.list', {})).path).toBe(home)
      expect((await ok('folders.list', { path: '/' })).parent).toBeNull()
    })

    it('refuses hostile or bad paths with 400 BAD_PATH', async () => {
      writeFileSync(join(home, 'plain.txt'), 'x')
      const cases: [unknown, string][] = [
        ['relative/dir', 'is not an absolute path'],
        [`${home}/../..`, 'contains . or .. segments'],
        [`${home}/./x`, 'contains . or .. segments'],
        [`${home}\u0000/etc`, 'control characters'],
        [`${home}/missing`, 'is not an existing folder'],
        [join(home, 'plain.txt'), 'is not a folder'],
        [`/${'x'.repeat(5000)}`, 'longer than'],
      ]
      for (const [path, message] of cases) {
        const reply = await call('folders.list', { path })
        expect(reply.status, String(path).slice(0, 40)).toBe(400)
        expect(reply.json.error.code).toBe('BAD_PATH')
        expect(reply.json.error.message).toContain(message)
      }
      expect((await call('folders.list', { path: 42 })).json.error.code).toBe('BAD_PARAMS')
      expect((await call('folders.list', { path: home, hidden: 'yes' })).json.error.code).toBe('BAD_PARAMS')
    })

    it('~ names the home folder; the listing is bounded', async () => {
      expect(checkFolderPath('~', '/home/me')).toBe('/home/me')
      expect(checkFolderPath('~/src/', '/home/me')).toBe('/home/me/src')
      expect(() => checkFolderPath('~other/x', '/home/me')).toThrow('not an absolute path')
      const many = join(home, 'many')
      for (let i = 0; i < 510; i++) mkdirSync(join(many, `d${String(i).padStart(3, '0')}`), { recursive: true })
      const listing = await listFolders(many)
      expect(listing.folders).toHaveLength(500)
      expect(listing.truncated).toBe(true)
      expect(readdirSync(many)).toHaveLength(510)
    })

    it('recent folders come from sessions that had a turn, newest first, existing folders only', async () => {
      const a = join(home, 'a'), b = join(home, 'b'), gone = join(home, 'gone')
      for (const path of [a, b, gone]) mkdirSync(path)
      for (const cwd of [a, gone, b]) {
        const created = await ok('sessions.create', { cwd, model: VISION })
        model.push(text('ok'))
        await ok('prompt', { id: created.id, text: 'hi' })
        await ctx.agents.get(created.id)!.whenIdle()
      }
      await ok('sessions.create', { cwd: home }) // no turn: not offered
      rmSync(gone, { recursive: true })
      const { folders } = await ok('folders.recent')
      expect(folders.map((f: { path: string }) => f.path)).toEqual([b, a])
    })
  })

  describe('archive', () => {
    it('archives and restores a session; the default list leaves archived sessions out; the state is in the log', async () => {
      const created = await ok('sessions.create', { model: VISION })
      model.push(text('ok'))
      await ok('prompt', { id: created.id, text: 'hello' })
      await ctx.agents.get(created.id)!.whenIdle()
      const archived = await ok('sessions.archive', { id: created.id })
      expect(archived.archived).toBe(true)
      expect((await ok('sessions.list')).map((s: { id: string }) => s.id)).toEqual([])
      expect((await ok('sessions.list', { archived: 'only' })).map((s: { id: string }) => s.id)).toEqual([created.id])
      expect((await ok('sessions.list', { archived: 'include' })).map((s: { archived?: boolean }) => s.archived)).toEqual([true])
      // Stored: after the session is unloaded, the backend's listing says so too.
      await ctx.agents.dispose(created.id)
      await ctx.sessionPersistence.unload(created.id)
      expect((await ok('sessions.list', { archived: 'only' })).map((s: { id: string }) => s.id)).toEqual([created.id])
      expect((await ok('sessions.history', { id: created.id })).summary.archived).toBe(true)
      const restored = await ok('sessions.archive', { id: created.id, archived: false })
      expect(restored.archived).toBeUndefined()
      expect((await ok('sessions.list')).map((s: { id: string }) => s.id)).toEqual([created.id])
      const events = ctx.sessions.get(created.id)!.events.filter(e => e.type === 'session/archived').map(e => e.data)
      expect(events).toEqual([{ archived: true }, { archived: false }])
      // Archiving twice appends nothing new.
      await ok('sessions.archive', { id: created.id, archived: false })
      expect(ctx.sessions.get(created.id)!.events.filter(e => e.type === 'session/archived')).toHaveLength(2)
      expect((await call('sessions.archive', { id: created.id, archived: 'yes' })).json.error.code).toBe('BAD_PARAMS')
      expect((await call('sessions.list', { archived: 'all' })).json.error.code).toBe('BAD_PARAMS')
    })
  })
})
