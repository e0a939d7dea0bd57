/**
 * The conversation fold with images (web/src/fold.ts, in Node): a prompt's images (stored or
 * inline) come with its item, and a failed turn's Retry knows the prompt's stored images.
 */
import { describe, expect, it } from 'vitest'
import { LogFold, imagesOf } from '../../web/src/fold.js'

const ID = `sha256:${'c'.repeat(64)}`
const prompt = {
  id: 'm1', role: 'user', source: { kind: 'user' },
  content: [
    { type: 'text', text: 'look' },
    { type: 'image', attachment: { attachmentId: ID, mediaType: 'image/png', width: 4, height: 3, bytes: 70, name: 'a.png' } },
    { type: 'image', data: 'AAAA', mimeType: 'image/gif' },
  ],
}

describe('fold: images', () => {
  it('reads stored and inline images in order', () => {
    expect(imagesOf(prompt.content)).toEqual([
      { attachmentId: ID, mediaType: 'image/png', name: 'a.png', width: 4, height: 3 },
      { data: 'AAAA', mediaType: 'image/gif' },
    ])
    expect(imagesOf([{ type: 'text', text: 'x' }])).toEqual([])
  })

  it('a user item carries its images; a failed turn offers them to Retry', () => {
    const fold = new LogFold()
    fold.apply([
      { type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } },
      { type: 'user/message', seq: 1, time: 2, data: prompt },
      { type: 'turn/end', seq: 2, time: 3, data: { turn: 1, reason: { kind: 'error', error: { code: 'SERVER', message: 'down' } } } },
    ])
    const user = fold.items.find(item => item.kind === 'user')
    expect(user?.kind === 'user' && user.images?.map(image => image.attachmentId ?? image.data)).toEqual([ID, 'AAAA'])
    const end = fold.items.find(item => item.kind === 'turn-end')
    expect(end?.kind === 'turn-end' && end.promptImages).toEqual([ID])
    expect(end?.kind === 'turn-end' && end.prompt).toBe('look')
  })
})
