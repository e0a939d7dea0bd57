/**
 * Images in protocol prompts (ACP `session/prompt`, SDK `session/prompt`): inline `image`
 * content blocks (base64 `data` + `mimeType`) are stored with the session
 * (ctx.sessions.attachments) and the user message references them by content hash, as the web
 * UI's prompts do. A route that does not take images refuses the prompt before anything is stored.
 */
import type { Context } from 'cordis'
import type { ContentBlock } from '../llm/types.js'
import { AttachmentError, describeImage } from '../session/attachments.js'
import '../llm/api.js'
import '../session/api.js'

/** Why an image prompt cannot go to this route, or undefined when it can (or has no image). */
export function imageRefusal(ctx: Context, route: { provider: string; model: string }, content: readonly ContentBlock[]): string | undefined {
  if (!content.some(block => block.type === 'image')) return undefined
  if (ctx.llm.model(route.provider, route.model)?.imageInput === true) return undefined
  return `${route.model} (${route.provider}) does not accept images: choose an image-capable model, or send the text without them`
}

/**
 * The content with every inline image replaced by a stored attachment reference. All images are
 * checked before the first is stored; a bad one throws `AttachmentError` naming its position.
 */
export async function storeInlineImages(ctx: Context, sessionId: string, content: readonly ContentBlock[]): Promise<ContentBlock[]> {
  const decoded = content.map((block, index) => {
    if (block.type !== 'image' || !('data' in block)) return undefined
    const bytes = Buffer.from(block.data, 'base64')
    try {
      describeImage(bytes, block.mimeType)
    } catch (error) {
      throw new AttachmentError(`content block ${index}: ${(error as Error).message}`)
    }
    return bytes
  })
  const out: ContentBlock[] = []
  for (const [index, block] of content.entries()) {
    const bytes = decoded[index]
    out.push(bytes === undefined ? block : await ctx.sessions.attachments.addImage(sessionId, bytes, { mediaType: (block as { mimeType: string }).mimeType }))
  }
  return out
}
