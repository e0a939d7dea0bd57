/**
 * Images of protocol prompts (ACP, SDK): inline `image` blocks become stored session attachments (the same
 * reference the recorded corpus has: sha256 id, media type, size in pixels and bytes); a route
 * without image input refuses the prompt in one line; a bad image stores nothing.
 */
import { Context } from 'cordis'
import { beforeEach, describe, expect, it } from 'vitest'
import { LlmServicePlugin } from '../llm/index.js'
import { SessionsServicePlugin } from '../session/index.js'
import { AttachmentError, attachmentIdOf } from '../session/attachments.js'
import { ScriptedModel, SCRIPTED_MODEL_INFO, SCRIPTED_PROVIDER, SCRIPTED_MODEL } from '../../test-support/scripted-model.js'
import { pngImage } from '../../test-support/images.js'
import { imageRefusal, storeInlineImages } from './images.js'

describe('protocol prompt images', () => {
  let ctx: Context
  beforeEach(async () => {
    ctx = new Context()
    await ctx.plugin(SessionsServicePlugin).await()
    await ctx.plugin(LlmServicePlugin).await()
    new ScriptedModel().register(ctx, [SCRIPTED_MODEL_INFO, { ...SCRIPTED_MODEL_INFO, model: 'vision', imageInput: true }])
  })

  it('stores inline images and keeps the blocks in order', async () => {
    const session = ctx.sessions.create()
    const png = pngImage(1, 1)
    const content = await storeInlineImages(ctx, session.id, [
      { type: 'text', text: 'Inspect this image, then' },
      { type: 'image', data: png.toString('base64'), mimeType: 'image/png' },
      { type: 'text', text: 'answer.' },
    ])
    expect(content).toEqual([
      { type: 'text', text: 'Inspect this image, then' },
      { type: 'image', attachment: { attachmentId: attachmentIdOf(png), mediaType: 'image/png', width: 1, height: 1, bytes: png.length } },
      { type: 'text', text: 'answer.' },
    ])
    expect(Buffer.from((await ctx.sessions.attachments.read(session.id, attachmentIdOf(png)))!.data).equals(png)).toBe(true)
  })

  it('refuses images on a text-only route in one line; text-only prompts pass', () => {
    const image = [{ type: 'image' as const, data: 'AAAA', mimeType: 'image/png' }]
    expect(imageRefusal(ctx, { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL }, image))
      .toBe(`${SCRIPTED_MODEL} (${SCRIPTED_PROVIDER}) does not accept images: choose an image-capable model, or send the text without them`)
    expect(imageRefusal(ctx, { provider: SCRIPTED_PROVIDER, model: 'vision' }, image)).toBeUndefined()
    expect(imageRefusal(ctx, { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL }, [{ type: 'text', text: 'hi' }])).toBeUndefined()
  })

  it('a bad image refuses the prompt before any image is stored', async () => {
    const session = ctx.sessions.create()
    const good = pngImage(2, 2)
    const stored = storeInlineImages(ctx, session.id, [
      { type: 'image', data: good.toString('base64'), mimeType: 'image/png' },
      { type: 'image', data: Buffer.from('GIF89a').toString('base64'), mimeType: 'image/gif' },
    ])
    await expect(stored).rejects.toThrow(AttachmentError)
    await expect(stored).rejects.toThrow('content block 1: the data is not a PNG, JPEG, GIF or WebP image')
    expect(await ctx.sessions.attachments.read(session.id, attachmentIdOf(good))).toBeUndefined()
  })
})
