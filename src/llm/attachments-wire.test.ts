/**
 * L-6 with stored images: a user message keeps text and images in the order written, and an
 * attachment reference is sent as a `data:` URL of the bytes the session's store holds (read
 * through `LlmCallOptions.attachments`); a reference the store lacks fails the request.
 */
import { describe, expect, it } from 'vitest'
import { buildRequestBody, inlineAttachments, serializeMessages } from './openai-wire.js'
import type { LlmCallOptions, Message } from './types.js'
import { LlmError } from './errors.js'

const dialect = { sendReasoningContent: false }
const ID = `sha256:${'b'.repeat(64)}`
const attached = { type: 'image' as const, attachment: { attachmentId: ID, mediaType: 'image/png', width: 1, height: 1, bytes: 3 } }
const message = (content: Message['content']): Message => ({ id: 'm', role: 'user', content, source: { kind: 'user' } })

describe('images in the chat-completions request', () => {
  it('keeps text and images in order, joining neighbouring text', () => {
    const wire = serializeMessages(undefined, [message([
      { type: 'text', text: 'Look at' }, { type: 'text', text: 'this' },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      { type: 'text', text: 'then answer.' },
    ])], dialect)
    expect(wire).toEqual([{ role: 'user', content: [
      { type: 'text', text: 'Look at\nthis' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      { type: 'text', text: 'then answer.' },
    ] }])
  })

  it('inlines stored attachments (user and tool-result images) from the reader, once per id', async () => {
    const reads: string[] = []
    const options: LlmCallOptions = {
      provider: 'p', model: 'm',
      messages: [
        message([{ type: 'text', text: 'what is it?' }, attached]),
        message([{ type: 'tool-result', toolCallId: 'c', isError: false, content: [attached] }]),
      ],
      attachments: async id => { reads.push(id); return { data: Uint8Array.from([1, 2, 3]), mediaType: 'image/png' } },
    }
    const inlined = await inlineAttachments(options)
    const body = buildRequestBody(inlined, dialect) as { messages: unknown[] }
    expect(body.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'what is it?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AQID' } }] })
    expect(body.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AQID' } }] })
    expect(reads).toEqual([ID])
    // The caller's messages are untouched (they are the log's, A-11).
    expect(options.messages[0]!.content[1]).toBe(attached)
  })

  it('fails the request with INVALID_REQUEST naming an image the store does not have', async () => {
    const options: LlmCallOptions = { provider: 'p', model: 'm', messages: [message([attached])], attachments: async () => undefined }
    const error = await inlineAttachments(options).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(LlmError)
    expect((error as LlmError).code).toBe('INVALID_REQUEST')
    expect((error as Error).message).toBe(`image ${ID} is not in the session's attachment store`)
  })

  it('without a reader the call is unchanged and the image is named, not sent', async () => {
    const options: LlmCallOptions = { provider: 'p', model: 'm', messages: [message([attached])] }
    expect(await inlineAttachments(options)).toBe(options)
    expect(serializeMessages(undefined, options.messages, dialect)).toEqual([{ role: 'user', content: [{ type: 'text', text: `[image ${ID} is not available to this adapter]` }] }])
  })
})
