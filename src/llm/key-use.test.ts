/**
 * A stored key's first use with an endpoint (security #42.2), through the DeepSeek adapter and
 * the LLM service against the fake server: the surfaces are asked before the request leaves;
 * `refuse` sends nothing, `send` and no answer go on, and only those record the pairing.
 */
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { DEEPSEEK_PROVIDER, DeepSeekPlugin } from './deepseek/index.js'
import type { KeyFirstUse, KeyUseAnswer, KeyUseGate } from './key-use.js'
import { LlmServicePlugin } from './service.js'
import type { LlmCallOptions, StreamChunk } from './types.js'

let server: FakeDeepSeek
beforeEach(async () => { server = await FakeDeepSeek.start() })
afterEach(async () => { await server.close() })

/** A gate whose pairings live in a set; it records what it was told. */
function gate(): KeyUseGate & { paired: Set<string>; allowedCalls: { endpoint: string; asked: boolean }[] } {
  const paired = new Set<string>()
  const allowedCalls: { endpoint: string; asked: boolean }[] = []
  return {
    paired, allowedCalls,
    firstUse: endpoint => paired.has(endpoint) ? undefined : { keyName: 'DEEPSEEK_API_KEY', endpoint, chosenBy: 'DEEPSEEK_BASE_URL from /repo/.env' },
    allowed: (use, asked) => {
      paired.add(use.endpoint)
      allowedCalls.push({ endpoint: use.endpoint, asked })
    },
  }
}

async function setup(keyUse: KeyUseGate) {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin)
  await ctx.plugin(DeepSeekPlugin, { baseUrl: server.url, apiKey: 'sk-stored', keyUse })
  return ctx
}

const call = (extra: Partial<LlmCallOptions> = {}): LlmCallOptions => ({
  provider: DEEPSEEK_PROVIDER, model: 'deepseek-v4-flash', messages: [{ id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }],
  meta: { sessionId: 's1', agentLoop: true }, ...extra,
})

async function finish(ctx: Context, options = call()): Promise<Extract<StreamChunk, { type: 'finish' }>> {
  let last: StreamChunk | undefined
  for await (const chunk of ctx.llm.stream(ctx.llm.prepareCall(options))) last = chunk
  return last as Extract<StreamChunk, { type: 'finish' }>
}

const ok = () => streamResponse([{ text: 'hello' }, { finish: 'stop', usage: { prompt_tokens: 1, completion_tokens: 1 } }])

describe('a stored key\'s first use with an endpoint (security #42.2)', () => {
  it('refused: nothing reaches the endpoint, nothing is recorded, and the next request asks again', async () => {
    const keys = gate()
    const ctx = await setup(keys)
    const asked: KeyFirstUse[] = []
    ctx.on('llm/key-first-use', (use) => {
      asked.push(use)
      return 'refuse'
    })
    for (let i = 0; i < 2; i++) {
      const end = await finish(ctx)
      expect(end.reason.kind).toBe('error')
      const failure = end.reason.kind === 'error' ? end.reason.failure : undefined
      expect(failure?.code).toBe('KEY_NOT_SENT')
      expect(failure?.message).toContain(`the stored DEEPSEEK_API_KEY was not sent to ${server.url} (DEEPSEEK_BASE_URL from /repo/.env)`)
    }
    expect(server.requests).toHaveLength(0)
    expect(keys.allowedCalls).toEqual([])
    expect(asked).toEqual([
      { keyName: 'DEEPSEEK_API_KEY', endpoint: server.url, chosenBy: 'DEEPSEEK_BASE_URL from /repo/.env', sessionId: 's1' },
      { keyName: 'DEEPSEEK_API_KEY', endpoint: server.url, chosenBy: 'DEEPSEEK_BASE_URL from /repo/.env', sessionId: 's1' },
    ])
  })

  it('after a refusal, a request the loop did not make (a title) is refused without a question; the loop\'s next request asks', async () => {
    const keys = gate()
    const ctx = await setup(keys)
    const answers: KeyUseAnswer[] = ['refuse', 'send']
    let asks = 0
    ctx.on('llm/key-first-use', () => {
      asks++
      return answers.shift()
    })
    const loop = { sessionId: 's1', agentLoop: true }
    const title = { sessionId: 's1', purpose: 'session-title' }
    const codeOf = (end: Extract<StreamChunk, { type: 'finish' }>) => end.reason.kind === 'error' ? end.reason.failure.code : end.reason.kind
    expect(codeOf(await finish(ctx, call({ meta: loop })))).toBe('KEY_NOT_SENT')
    expect(codeOf(await finish(ctx, call({ meta: title })))).toBe('KEY_NOT_SENT')
    expect(asks).toBe(1)
    server.enqueue(ok(), ok())
    expect(codeOf(await finish(ctx, call({ meta: loop })))).toBe('stop')
    expect(codeOf(await finish(ctx, call({ meta: title })))).toBe('stop')
    expect(asks).toBe(2)
    expect(server.requests).toHaveLength(2)
  })

  it('allowed: the request leaves only after the answer; the pairing is recorded as asked and not asked again', async () => {
    const keys = gate()
    const ctx = await setup(keys)
    let answer!: (value: KeyUseAnswer) => void
    let asks = 0
    const waiting = new Promise<void>(resolve => {
      ctx.on('llm/key-first-use', () => {
        asks++
        resolve()
        return new Promise<KeyUseAnswer>(settle => { answer = settle })
      })
    })
    server.enqueue(ok(), ok())
    const first = finish(ctx)
    await waiting
    expect(server.requests).toHaveLength(0)
    answer('send')
    expect((await first).reason.kind).toBe('stop')
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-stored')
    expect(keys.allowedCalls).toEqual([{ endpoint: server.url, asked: true }])
    expect((await finish(ctx)).reason.kind).toBe('stop')
    expect(asks).toBe(1)
  })

  it('nobody answers: the request goes on and the host is told it was not asked (it says so in one line)', async () => {
    const keys = gate()
    const ctx = await setup(keys)
    server.enqueue(ok())
    expect((await finish(ctx)).reason.kind).toBe('stop')
    expect(keys.allowedCalls).toEqual([{ endpoint: server.url, asked: false }])
  })

  it('requests waiting at once share one question (the turn\'s and a title\'s)', async () => {
    const keys = gate()
    const ctx = await setup(keys)
    let asks = 0
    ctx.on('llm/key-first-use', async (): Promise<KeyUseAnswer> => {
      asks++
      return 'send'
    })
    server.enqueue(ok(), ok())
    const ends = await Promise.all([finish(ctx), finish(ctx)])
    expect(ends.map(end => end.reason.kind)).toEqual(['stop', 'stop'])
    expect(asks).toBe(1)
    expect(keys.allowedCalls).toEqual([{ endpoint: server.url, asked: true }])
  })

  it('cancelled while asked, or a listener that throws: nothing is sent or recorded', async () => {
    const keys = gate()
    const ctx = await setup(keys)
    const controller = new AbortController()
    const off = ctx.on('llm/key-first-use', (_use, signal) => new Promise<KeyUseAnswer>(resolve => {
      signal?.addEventListener('abort', () => resolve('refuse'), { once: true })
      controller.abort()
    }))
    expect((await finish(ctx, call({ signal: controller.signal }))).reason.kind).toBe('aborted')
    off()
    ctx.on('llm/key-first-use', () => { throw new Error('the surface broke') })
    expect((await finish(ctx)).reason.kind).toBe('error')
    expect(server.requests).toHaveLength(0)
    expect(keys.allowedCalls).toEqual([])
  })
})
