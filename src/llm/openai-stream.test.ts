import { describe, expect, it } from 'vitest'
import { bodyBytes, sseEvent, streamResponse } from '../../test-support/fake-deepseek.js'
import type { HttpExchange } from './http-post.js'
import { streamChatCompletion } from './openai-stream.js'
import type { StreamChunk } from './types.js'

/** A 200 exchange whose body arrives in the given reads; records how it was closed. */
function exchangeOf(reads: readonly (string | Uint8Array)[]): { exchange: HttpExchange; closed: (boolean | undefined)[] } {
  const closed: (boolean | undefined)[] = []
  let next = 0
  const exchange: HttpExchange = {
    response: { status: 200, headers: { get: () => null } },
    body: {
      next: async () => next < reads.length
        ? { done: false, value: typeof reads[next] === 'string' ? Buffer.from(reads[next++] as string) : reads[next++] as Uint8Array }
        : { done: true },
    },
    close: drain => { closed.push(drain) },
  }
  return { exchange, closed }
}

const request = { url: 'http://127.0.0.1/chat/completions', headers: {}, body: {}, label: 't' }
const twoTexts = bodyBytes(streamResponse([{ text: 'a' }, { text: 'b' }, { finish: 'stop' }]))

describe('streamChatCompletion: chunks handed out per read', () => {
  it('L-7: the chunks of one read come one per next(), in order, also when next() is called again before the read arrived', async () => {
    const { exchange, closed } = exchangeOf([twoTexts])
    const stream = streamChatCompletion(request, async () => exchange)
    const first = [stream.next(), stream.next(), stream.next()]
    const types = (await Promise.all(first)).map(r => (r.value as StreamChunk).type)
    expect(types).toEqual(['block-start', 'text-delta', 'text-delta'])
    const rest: StreamChunk[] = []
    for await (const chunk of stream) rest.push(chunk)
    expect(rest.map(c => c.type)).toEqual(['block-end', 'finish'])
    expect(await stream.next()).toEqual({ value: undefined, done: true })
    expect(closed).toEqual([true])
  })

  it('L-7: a bad event fails the stream after the chunks before it in the same read, and adds none of its own', async () => {
    const body = sseEvent({ choices: [{ index: 0, delta: { content: 'ok' } }] })
      + sseEvent({ choices: [{ index: 0, delta: { content: 'lost' } }, null] })
    const { exchange, closed } = exchangeOf([body])
    const chunks: StreamChunk[] = []
    const error = await (async () => {
      try {
        for await (const chunk of streamChatCompletion(request, async () => exchange)) chunks.push(chunk)
      } catch (caught) {
        return caught
      }
    })()
    expect(chunks).toEqual([{ type: 'block-start', index: 0, blockType: 'text' }, { type: 'text-delta', index: 0, text: 'ok' }])
    expect(error).toBeInstanceOf(Error)
    expect(closed).toEqual([false])
  })

  it('a consumer that stops in the middle of a read, before [DONE] arrived, closes the exchange undrained and gets nothing more', async () => {
    const done = twoTexts.indexOf('data: [DONE]')
    const { exchange, closed } = exchangeOf([twoTexts.subarray(0, done), twoTexts.subarray(done)])
    const stream = streamChatCompletion(request, async () => exchange)
    expect((await stream.next()).value).toEqual({ type: 'block-start', index: 0, blockType: 'text' })
    expect(await stream.return(undefined)).toEqual({ value: undefined, done: true })
    expect(closed).toEqual([false])
    expect(await stream.next()).toEqual({ value: undefined, done: true })
  })

  it('L-9: a consumer that stops at the finish chunk (return() without reading past it) closes the exchange drained, so its connection is reused', async () => {
    const { exchange, closed } = exchangeOf([twoTexts])
    const stream = streamChatCompletion(request, async () => exchange)
    for (;;) {
      const { value } = await stream.next()
      if ((value as StreamChunk).type === 'finish') break
    }
    expect(closed).toEqual([])
    await stream.return(undefined)
    expect(closed).toEqual([true])
  })

  it('a request builder that throws fails the first next() with its own error and sends nothing', async () => {
    let sent = 0
    const stream = streamChatCompletion(async () => { throw new Error('no key') }, async () => { sent++; return exchangeOf([]).exchange })
    await expect(stream.next()).rejects.toThrow('no key')
    expect(sent).toBe(0)
    expect(await stream.next()).toEqual({ value: undefined, done: true })
  })
})
