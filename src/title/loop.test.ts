/**
 * Model titles through the real loop (scripted model): the request is logged where the original
 * logs it, and a title call that fails, or answers with a tool call, never touches the turn; the
 * fallback title stays.
 */
import type { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import type { LlmCallOptions, StreamChunk } from '../llm/types.js'
import { SessionTitlePlugin, titleOf } from './index.js'

/** A second provider for the title route, answering with `answer` (or failing). */
function titleProvider(ctx: Context, answer: (options: LlmCallOptions) => AsyncIterable<StreamChunk>): LlmCallOptions[] {
  const calls: LlmCallOptions[] = []
  ctx.llm.register({
    adapter: { provider: 'titles', stream: (options) => { calls.push(options); return answer(options) } },
    models: [{ provider: 'titles', model: 't', contextWindow: 1000, defaultMaxTokens: 64, reasoningEfforts: [], imageInput: false }],
  })
  return calls
}

async function run(answer: (options: LlmCallOptions) => AsyncIterable<StreamChunk>) {
  let calls: LlmCallOptions[] = []
  let titles: { dispose(): unknown } | undefined
  const h = await loopHarness({
    responses: [text('the answer')],
    setup: async (ctx) => {
      calls = titleProvider(ctx, answer)
      const fiber = ctx.plugin(SessionTitlePlugin, { provider: 'titles', model: 't' })
      titles = fiber
      await fiber.await()
    },
  })
  h.agent.followup('Prove the headless profile path with one tool round trip')
  await h.agent.whenIdle()
  // The title call runs after the turn: let it settle (the plugin's pending work is awaited on unload).
  await titles!.dispose()
  return { h, calls }
}

describe('model titles in a real turn', () => {
  it('the request is logged right after the first request/context, before the answer streams; a good answer becomes the title', async () => {
    const { h, calls } = await run(async function* () {
      yield { type: 'text-delta', index: 0, text: 'Headless round trip proof' }
      yield { type: 'finish', reason: { kind: 'stop' } }
    })
    // (The fallback title, one microtask after the prompt, lands among them: product order, not compared.)
    const types = h.types().filter(type => type !== 'session/title')
    const at = types.indexOf('request/context')
    expect(types.slice(at, at + 3)).toEqual(['request/context', 'session/title-llm-request', 'assistant/chunk'])
    expect(h.of('session/title-llm-request')[0]!.data).toMatchObject({ route: { provider: 'titles', model: 't' }, messageSeqs: [h.of('user/message')[0]!.seq] })
    expect(calls).toHaveLength(1)
    expect(titleOf(h.session)).toBe('Headless round trip proof')
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['completed'])
    await h.dispose()
  })

  it('a title call that fails leaves the turn completed and the fallback title in place', async () => {
    const { h, calls } = await run(async function* () {
      yield* []
      throw new Error('SERVER: title provider failed')
    })
    expect(calls).toHaveLength(1)
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['completed'])
    expect(h.of('assistant/message').at(-1)!.data.message.content).toEqual([{ type: 'text', text: 'the answer' }])
    expect(h.of('session/title-llm-request')).toHaveLength(1)
    expect(h.of('session/title').map(e => e.data)).toEqual([{ title: 'Prove the headless profile path', messageSeqs: [h.of('user/message')[0]!.seq], source: { kind: 'fallback' } }])
    await h.dispose()
  })

  it('a title answered with a tool call (as the recorded headless-profile mock does) is no title', async () => {
    const chunks = toolCalls([{ id: 'c1', name: 'bash', arguments: { command: 'true' } }])
    const { h } = await run(async function* () { yield* chunks })
    expect(h.of('session/title').map(e => (e.data as { source: { kind: string } }).source.kind)).toEqual(['fallback'])
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['completed'])
    await h.dispose()
  })
})
