/**
 * Session attachments (docs/session-format.md, "Attachments"): images are checked from their own
 * bytes, named by content hash, kept per session in the store (memory by default) and found
 * again by a live child through its parent.
 */
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SessionsServicePlugin } from './service.js'
import { AttachmentError, attachmentIdOf, describeImage, isAttachmentId, sniffImage, MAX_IMAGE_BYTES } from './attachments.js'
import { gifHeader, jpegHeader, pngImage } from '../../test-support/images.js'

describe('image checks', () => {
  it('reads type and size from PNG, GIF, JPEG and WebP headers', () => {
    expect(sniffImage(pngImage(3, 2))).toEqual({ mediaType: 'image/png', width: 3, height: 2 })
    expect(sniffImage(gifHeader(640, 480))).toEqual({ mediaType: 'image/gif', width: 640, height: 480 })
    expect(sniffImage(jpegHeader(1024, 768))).toEqual({ mediaType: 'image/jpeg', width: 1024, height: 768 })
    const webp = Buffer.alloc(30)
    webp.write('RIFF', 0, 'ascii'); webp.write('WEBP', 8, 'ascii'); webp.write('VP8X', 12, 'ascii')
    webp.writeUIntLE(99, 24, 3); webp.writeUIntLE(49, 27, 3)
    expect(sniffImage(webp)).toEqual({ mediaType: 'image/webp', width: 100, height: 50 })
    expect(sniffImage(Buffer.from('%PDF-1.7 not an image'))).toBeUndefined()
    expect(sniffImage(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeUndefined()
  })

  it('describes an image as a content-addressed reference', () => {
    const png = pngImage(4, 3)
    const ref = describeImage(png, 'image/png', 'shot.png')
    expect(ref).toEqual({ attachmentId: attachmentIdOf(png), mediaType: 'image/png', width: 4, height: 3, bytes: png.length, name: 'shot.png' })
    expect(isAttachmentId(ref.attachmentId)).toBe(true)
    expect(describeImage(png).name).toBeUndefined()
  })

  it('S-1: a reference keeps the recorded key order (a named file: size first; a prompt image: size last)', () => {
    const png = pngImage(4, 3)
    expect(Object.keys(describeImage(png, undefined, 'shot.png'))).toEqual(['attachmentId', 'mediaType', 'bytes', 'width', 'height', 'name'])
    expect(Object.keys(describeImage(png))).toEqual(['attachmentId', 'mediaType', 'width', 'height', 'bytes'])
  })

  it('refuses empty, oversized, non-image and mislabelled data with one line', () => {
    expect(() => describeImage(Buffer.alloc(0))).toThrow(AttachmentError)
    expect(() => describeImage(Buffer.from('hello'), undefined, 'notes.txt')).toThrow('"notes.txt" is not a PNG, JPEG, GIF or WebP image')
    expect(() => describeImage(pngImage(1, 1), 'image/jpeg')).toThrow('declared image/jpeg but its bytes are image/png')
    const big = Buffer.alloc(MAX_IMAGE_BYTES + 1)
    pngImage(1, 1).copy(big)
    expect(() => describeImage(big)).toThrow(`at most ${MAX_IMAGE_BYTES} bytes`)
  })

  it('only sha256:<64 hex> is an attachment id', () => {
    expect(isAttachmentId(`sha256:${'a'.repeat(64)}`)).toBe(true)
    for (const id of ['sha256:../../etc/passwd', `sha256:${'A'.repeat(64)}`, `md5:${'a'.repeat(32)}`, '']) expect(isAttachmentId(id)).toBe(false)
  })
})

describe('ctx.sessions.attachments', () => {
  let ctx: Context
  beforeEach(async () => {
    ctx = new Context()
    await ctx.plugin(SessionsServicePlugin).await()
  })
  afterEach(() => ctx.registry.delete(SessionsServicePlugin))

  it('stores an image with a live session and reads it back; the block references it', async () => {
    const session = ctx.sessions.create({ cwd: '/w' })
    const png = pngImage(2, 2)
    const block = await ctx.sessions.attachments.addImage(session.id, png, { mediaType: 'image/png' })
    expect(block).toEqual({ type: 'image', attachment: { attachmentId: attachmentIdOf(png), mediaType: 'image/png', width: 2, height: 2, bytes: png.length } })
    const read = await ctx.sessions.attachments.read(session.id, block.attachment.attachmentId)
    expect(Buffer.from(read!.data).equals(png)).toBe(true)
    expect(read!.mediaType).toBe('image/png')
    // Another session does not see it.
    expect(await ctx.sessions.attachments.read(ctx.sessions.create().id, block.attachment.attachmentId)).toBeUndefined()
  })

  it('refuses a session that is not live, and bad bytes before storing anything', async () => {
    await expect(ctx.sessions.attachments.addImage('nope', pngImage(1, 1))).rejects.toThrow('not live')
    const session = ctx.sessions.create()
    await expect(ctx.sessions.attachments.addImage(session.id, Buffer.from('text'))).rejects.toThrow(AttachmentError)
  })

  it('a live fork reads its parent\'s images; copy makes them its own; deletion drops them', async () => {
    const parent = ctx.sessions.create()
    parent.append('turn/start', { turn: 1 })
    parent.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    const block = await ctx.sessions.attachments.addImage(parent.id, pngImage(1, 1))
    const child = ctx.sessions.fork(parent.id)
    expect(await ctx.sessions.attachments.read(child.id, block.attachment.attachmentId)).toBeDefined()
    const other = ctx.sessions.create()
    await ctx.sessions.attachments.copy(parent.id, other.header, [block.attachment.attachmentId])
    await ctx.parallel('session/deleted', parent.id)
    expect(await ctx.sessions.attachments.read(parent.id, block.attachment.attachmentId)).toBeUndefined()
    expect(await ctx.sessions.attachments.read(other.id, block.attachment.attachmentId)).toBeDefined()
  })

  it('useStore replaces the memory store until disposed', async () => {
    const puts: string[] = []
    const dispose = ctx.sessions.attachments.useStore({ put: async (header, id) => { puts.push(`${header.id} ${id}`) }, get: async () => undefined })
    const session = ctx.sessions.create()
    const block = await ctx.sessions.attachments.addImage(session.id, pngImage(1, 1))
    expect(puts).toEqual([`${session.id} ${block.attachment.attachmentId}`])
    expect(await ctx.sessions.attachments.read(session.id, block.attachment.attachmentId)).toBeUndefined()
    dispose()
    await ctx.sessions.attachments.addImage(session.id, pngImage(1, 1))
    expect(await ctx.sessions.attachments.read(session.id, block.attachment.attachmentId)).toBeDefined()
  })
})
