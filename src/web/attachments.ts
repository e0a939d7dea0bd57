/**
 * Images in web prompts: `prompt` takes `images: [{data (base64), mediaType?, name?}]`; they are
 * checked against the session's model route, stored with the session (ctx.sessions.attachments)
 * and referenced from the user message by content hash. `GET /api/attachment` serves them back.
 */
import type { Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import type { ContentBlock } from '../llm/types.js'
import { describeImage, isAttachmentId, MAX_IMAGE_BYTES } from '../session/attachments.js'
import { WebApiError } from './api.js'
import '../llm/api.js'
import '../session/api.js'

/** At most this many images per prompt. */
export const MAX_PROMPT_IMAGES = 8

/** New image bytes (`data`), or an image already stored with the session (`attachmentId`, e.g. Retry). */
type ImageParam =
  | { readonly data: string; readonly mediaType?: string; readonly name?: string; readonly attachmentId?: undefined }
  | { readonly attachmentId: string; readonly data?: undefined; readonly mediaType?: undefined; readonly name?: undefined }

/** The `images` parameter, checked for shape (not yet for content); empty when absent. */
export function imageParams(params: Record<string, unknown>): ImageParam[] {
  const value = params.images
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw new WebApiError(400, 'BAD_PARAMS', '"images" must be a list of {data, mediaType, name}')
  if (value.length > MAX_PROMPT_IMAGES) throw new WebApiError(400, 'BAD_PARAMS', `at most ${MAX_PROMPT_IMAGES} images per message (got ${value.length})`)
  return value.map((item, index) => {
    const image = item as Record<string, unknown> | null
    if (image !== null && typeof image === 'object' && typeof image.attachmentId === 'string' && image.data === undefined) {
      if (!isAttachmentId(image.attachmentId)) throw new WebApiError(400, 'BAD_PARAMS', `images[${index}].attachmentId must be sha256:<64 hex digits>`)
      return { attachmentId: image.attachmentId }
    }
    if (image === null || typeof image !== 'object' || typeof image.data !== 'string' || image.data === '') {
      throw new WebApiError(400, 'BAD_PARAMS', `images[${index}].data must be base64 image data (or attachmentId, an image of the session)`)
    }
    return {
      data: image.data,
      ...typeof image.mediaType === 'string' ? { mediaType: image.mediaType } : {},
      ...typeof image.name === 'string' ? { name: image.name } : {},
    }
  })
}

/** Whether the agent's route takes image input (the model catalogue's `imageInput`). */
export function routeTakesImages(root: Context, agent: Agent): boolean {
  return root.llm.model(agent.config.provider, agent.config.model)?.imageInput === true
}

/** One line saying why images cannot go to this route. */
export function textOnlyRefusal(agent: Agent): WebApiError {
  return new WebApiError(400, 'NO_IMAGE_INPUT',
    `${agent.config.model} (${agent.config.provider}) does not accept images: choose an image-capable model, or send the text without them`)
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * The content of a prompt with images: refused before anything is stored when the route is
 * text-only or an image is bad, so a refused prompt leaves no trace. Text first, then images.
 */
export async function promptWithImages(root: Context, agent: Agent, text: string, images: readonly ImageParam[]): Promise<ContentBlock[]> {
  if (!routeTakesImages(root, agent)) throw textOnlyRefusal(agent)
  const decoded = await Promise.all(images.map(async (image, index) => {
    if (image.attachmentId !== undefined) {
      // An image the session already has (Retry): its bytes from the store.
      const stored = await root.sessions.attachments.read(agent.session.id, image.attachmentId)
      if (stored === undefined) throw new WebApiError(400, 'BAD_IMAGE', `images[${index}]: ${image.attachmentId} is not an image of this session`)
      return { bytes: Buffer.from(stored.data) } as { bytes: Buffer; mediaType?: string; name?: string }
    }
    const data = image.data.replace(/^data:[^,]*;base64,/, '')
    if (!BASE64.test(data) || data.length % 4 === 1) throw new WebApiError(400, 'BAD_IMAGE', `images[${index}] is not base64`)
    if (data.length * 3 / 4 > MAX_IMAGE_BYTES + 3) throw new WebApiError(400, 'BAD_IMAGE', `images[${index}] is larger than ${MAX_IMAGE_BYTES} bytes`)
    return { ...image, bytes: Buffer.from(data, 'base64') }
  }))
  // Check every image before storing any (describeImage throws on the first bad one).
  decoded.forEach((image, index) => {
    try {
      describeImage(image.bytes, image.mediaType, image.name)
    } catch (error) {
      throw new WebApiError(400, 'BAD_IMAGE', `images[${index}]: ${(error as Error).message}`)
    }
  })
  const blocks: ContentBlock[] = text.trim() === '' ? [] : [{ type: 'text', text }]
  for (const image of decoded) {
    blocks.push(await root.sessions.attachments.addImage(agent.session.id, image.bytes, {
      ...image.mediaType !== undefined ? { mediaType: image.mediaType } : {},
      ...image.name !== undefined ? { name: image.name } : {},
    }))
  }
  return blocks
}

/** `GET /api/attachment?session=ID&id=sha256:...`: the bytes, typed, never sniffed or scripted. */
export async function readAttachment(root: Context, sessionId: string | null, id: string | null): Promise<{ data: Uint8Array; mediaType: string }> {
  if (sessionId === null || sessionId === '' || id === null || !isAttachmentId(id)) {
    throw new WebApiError(400, 'BAD_PARAMS', '"session" and "id" (sha256:<hex>) are required')
  }
  const found = await root.sessions.attachments.read(sessionId, id)
  if (found === undefined) throw new WebApiError(404, 'NOT_FOUND', `no attachment ${id} in session "${sessionId}"`)
  return found
}
