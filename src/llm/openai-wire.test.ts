import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { bodyBytes, streamResponse } from '../../test-support/fake-deepseek.js'
import { LlmError } from './errors.js'
import { classifyHttpError, classifyTransportError, parseRetryAfter, translateSse } from './openai-stream.js'
import { ChatCompletionTranslator, mapUsage, serializeMessages } from './openai-wire.js'
import type { Message, StreamChunk } from './types.js'

function bodyOf(pieces: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({ start(controller) { for (const p of pieces) controller.enqueue(p); controller.close() } })
}

async function translate(pieces: Uint8Array[]): Promise<{ chunks: StreamChunk[]; error?: LlmError }> {
  const chunks: StreamChunk[] = []
  try {
    for await (const chunk of translateSse(bodyOf(pieces), new ChatCompletionTranslator(), { label: 't' })) chunks.push(chunk)
    return { chunks }
  } catch (error) {
    return { chunks, error: error as LlmError }
  }
}

const sample = bodyBytes(streamResponse([
  { reasoning: '' }, { reasoning: 'r1 ' }, { reasoning: 'r2' }, { comment: 'ping' }, { text: 'héllo ' }, { text: '世界' },
  { toolCall: { index: 0, id: 'a', name: 'bash', arguments: '{"c":' } }, { toolCall: { index: 0, arguments: '"ls"}' } },
  { finish: 'tool_calls', usage: { prompt_tokens: 10, completion_tokens: 5 } },
]))

describe('SSE translation (in memory)', () => {
  it('L-7: any split of the bytes yields exactly the chunks of the unsplit body', async () => {
    const whole = await translate([sample])
    expect(whole.error).toBeUndefined()
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: sample.length - 1 }), { maxLength: 40 }), async cuts => {
      const points = [0, ...cuts.sort((a, b) => a - b), sample.length]
      const pieces = points.slice(1).map((end, i) => sample.subarray(points[i], end))
      expect(await translate(pieces)).toEqual(whole)
    }), { numRuns: 200 })
  })

  it('L-7: a body cut at every byte offset is STREAM_CLOSED (EMPTY_RESPONSE at 0) with nothing finalised', async () => {
    for (let cut = 0; cut < sample.length; cut++) {
      const { chunks, error } = await translate([sample.subarray(0, cut)])
      expect(error?.code, `cut at ${cut}`).toBe(cut === 0 ? 'EMPTY_RESPONSE' : 'STREAM_CLOSED')
      expect(chunks.some(c => c.type === 'block-end' || c.type === 'usage' || c.type === 'finish'), `cut at ${cut}`).toBe(false)
    }
  })

  it('L-7: a [DONE] ends the stream even if more bytes follow', async () => {
    const extra = new TextEncoder().encode('data: {"choices":[{"index":0,"delta":{"content":"late"}}]}\n\n')
    const { chunks } = await translate([sample, extra])
    expect(chunks.some(c => c.type === 'text-delta' && c.text === 'late')).toBe(false)
    expect(chunks.at(-1)?.type).toBe('finish')
  })

  it('L-7: in one read, the chunks before a malformed event or the end of the body come out before the failure', async () => {
    const text = (t: string) => `data: {"choices":[{"index":0,"delta":{"content":"${t}"}}]}\n\n`
    const bad = await translate([new TextEncoder().encode(`${text('a')}${text('b')}data: {not json\n\n${text('c')}`)])
    expect(bad.error?.code).toBe('MALFORMED_RESPONSE')
    expect(bad.chunks.filter(c => c.type === 'text-delta').map(c => (c as { text: string }).text)).toEqual(['a', 'b'])
    const cut = await translate([new TextEncoder().encode(`${text('a')}${text('b')}`)])
    expect(cut.error?.code).toBe('STREAM_CLOSED')
    expect(cut.chunks.filter(c => c.type === 'text-delta').map(c => (c as { text: string }).text)).toEqual(['a', 'b'])
  })

  it('a provider error object inside the stream is thrown as a classified failure', async () => {
    const { error } = await translate([new TextEncoder().encode('data: {"error":{"message":"internal"}}\n\n')])
    expect(error).toMatchObject({ code: 'SERVER', message: 'provider error in stream: internal' })
  })
})

describe('wire helpers', () => {
  it('L-8: usage mapping takes cached_tokens (or prompt_cache_hit_tokens) out of the input', () => {
    expect(mapUsage({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 }, prompt_cache_hit_tokens: 9 }))
      .toEqual({ inputTokens: 6, outputTokens: 3, cacheReadTokens: 4 })
    expect(mapUsage({ prompt_tokens: 10, completion_tokens: 3, prompt_cache_hit_tokens: 9, completion_tokens_details: { reasoning_tokens: 2 } }))
      .toEqual({ inputTokens: 1, outputTokens: 3, cacheReadTokens: 9, reasoningTokens: 2 })
  })

  it('L-9: Retry-After accepts delta-seconds and HTTP dates; anything else is ignored', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(parseRetryAfter('7', now)).toBe(7000)
    expect(parseRetryAfter('1.5', now)).toBe(1500)
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000)
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0)
    expect(parseRetryAfter('soon', now)).toBeUndefined()
    expect(parseRetryAfter(null, now)).toBeUndefined()
  })

  it('L-9: quota wording is checked before 429, but a 5xx stays SERVER', () => {
    const h = new Headers()
    expect(classifyHttpError('x', 429, '{"error":{"message":"insufficient_quota"}}', h).code).toBe('QUOTA')
    expect(classifyHttpError('x', 500, 'quota service down', h).code).toBe('SERVER')
    expect(classifyHttpError('x', 400, 'prompt is too long: 2000000 tokens', h).code).toBe('CONTEXT_WINDOW_EXCEEDED')
    expect(classifyHttpError('x', 418, '', h)).toMatchObject({ code: 'HTTP_418', message: 'x: HTTP 418' })
  })

  it('L-9: error precedence is idle timeout, then caller abort, then transport', () => {
    const base = { label: 'x', what: 'reading the stream', idleTimeoutMs: 5 }
    const cause = new TypeError('terminated')
    expect(classifyTransportError(cause, { ...base, idleFired: true, callerAborted: true }).code).toBe('TIMEOUT')
    expect(classifyTransportError(cause, { ...base, idleFired: false, callerAborted: true }).code).toBe('ABORTED')
    expect(classifyTransportError(cause, { ...base, idleFired: false, callerAborted: false })).toMatchObject({ code: 'TRANSPORT', message: 'x: reading the stream failed: terminated' })
    const known = new LlmError('MALFORMED_RESPONSE', 'bad')
    expect(classifyTransportError(known, { ...base, idleFired: false, callerAborted: false })).toBe(known)
  })

  it('L-6: a tool result carrying images sends a text placeholder and the images as a following user message', () => {
    const message: Message = {
      id: 't', role: 'user', source: { kind: 'tool', callId: 'c' },
      content: [{ type: 'tool-result', toolCallId: 'c', isError: false, content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] }],
    }
    expect(serializeMessages(undefined, [message], { sendReasoningContent: true })).toEqual([
      { role: 'tool', tool_call_id: 'c', content: '(image output attached below)' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
    ])
  })

  it('L-6: a frozen message serialises the same in every request and per dialect, and one request\'s body cannot alter the next', () => {
    const deepFreeze = <T>(value: T): T => {
      if (typeof value === 'object' && value !== null) { for (const child of Object.values(value)) deepFreeze(child); Object.freeze(value) }
      return value
    }
    const assistant = deepFreeze<Message>({
      id: 'a', role: 'assistant', source: { kind: 'model' } as Message['source'],
      content: [{ type: 'reasoning', text: 'think' }, { type: 'text', text: 'hi' }, { type: 'tool-call', id: 'c', name: 'bash', arguments: '{}' }],
    } as Message)
    const withReasoning = [{ role: 'assistant', content: 'hi', reasoning_content: 'think', tool_calls: [{ id: 'c', type: 'function', function: { name: 'bash', arguments: '{}' } }] }]
    const first = serializeMessages('sys', [assistant], { sendReasoningContent: true })
    expect(first.slice(1)).toEqual(withReasoning)
    expect(() => { (first[1] as { content: string }).content = 'edited' }).toThrow(TypeError)
    expect(serializeMessages('sys', [assistant], { sendReasoningContent: true }).slice(1)).toEqual(withReasoning)
    const { reasoning_content: _, ...without } = withReasoning[0]!
    expect(serializeMessages(undefined, [assistant], { sendReasoningContent: false })).toEqual([without])
  })
})

describe('answers without content (L-7)', () => {
  const sse = (chunks: unknown[]) => new TextEncoder().encode(chunks.map(c => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n')

  it('L-7: a reply with only reasoning (no text, no tool call) is a retryable EMPTY_RESPONSE, never a completed answer', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 5 }),
      fc.constantFrom<string | undefined>('stop', undefined),
      fc.boolean(),
      async (pieces, finish, legacyField) => {
        const deltas = pieces.map(text => ({ choices: [{ index: 0, delta: legacyField ? { reasoning: text } : { reasoning_content: text } }] }))
        const last = { choices: [{ index: 0, delta: { content: '' }, ...(finish !== undefined ? { finish_reason: finish } : {}) }], usage: { prompt_tokens: 3, completion_tokens: 2 } }
        const { chunks, error } = await translate([sse([...deltas, last])])
        expect(error).toBeUndefined()
        const end = chunks.at(-1)
        expect(end).toMatchObject({ type: 'finish', reason: { kind: 'error', failure: { code: 'EMPTY_RESPONSE' } } })
        // The reasoning still streamed (and is logged as chunks); only the verdict changed.
        expect(chunks.filter(c => c.type === 'reasoning-delta').map(c => (c as { text: string }).text).join('')).toBe(pieces.join(''))
      },
    ), { numRuns: 100 })
  })

  it('L-7: reasoning followed by text or a tool call is still an answer', async () => {
    const withText = await translate([sse([{ choices: [{ index: 0, delta: { reasoning_content: 'r' } }] }, { choices: [{ index: 0, delta: { content: 'a' }, finish_reason: 'stop' }] }])])
    expect(withText.chunks.at(-1)).toEqual({ type: 'finish', reason: { kind: 'stop' } })
    const withCall = await translate([sse([{ choices: [{ index: 0, delta: { reasoning_content: 'r', tool_calls: [{ index: 0, id: 'c', function: { name: 'x', arguments: '{}' } }] }, finish_reason: 'tool_calls' }] }])])
    expect(withCall.chunks.at(-1)).toEqual({ type: 'finish', reason: { kind: 'tool-calls' } })
  })

  it('L-7/L-10: DeepSeek\'s insufficient_system_resource finish is a retryable SERVER failure naming the reason', async () => {
    const { chunks } = await translate([sse([{ choices: [{ index: 0, delta: { content: 'par' }, finish_reason: 'insufficient_system_resource' }] }])])
    const end = chunks.at(-1) as { type: string; reason: { kind: string; failure: { code: string; message: string } } }
    expect(end).toMatchObject({ type: 'finish', reason: { kind: 'error', failure: { code: 'SERVER' } } })
    expect(end.reason.failure.message).toContain('insufficient_system_resource')
  })
})
