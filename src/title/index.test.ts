import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { LlmServicePlugin } from '../llm/index.js'
import type { LlmCallOptions, StreamChunk } from '../llm/types.js'
import { SessionsServicePlugin } from '../session/index.js'
import { fallbackTitle, SessionTitlePlugin, titleOf } from './index.js'

async function setup(reply: string, config = {}) {
  const ctx = new Context()
  ctx.plugin(SessionsServicePlugin)
  ctx.plugin(LlmServicePlugin)
  const calls: LlmCallOptions[] = []
  await ctx.inject(['llm'], () => {}).then(() => undefined)
  ctx.llm.register({
    adapter: {
      provider: 'fake',
      async *stream(options): AsyncIterable<StreamChunk> {
        calls.push(options)
        yield { type: 'text-delta', index: 0, text: reply }
        yield { type: 'finish', reason: { kind: 'stop' } }
      },
    },
    models: [{ provider: 'fake', model: 'm', contextWindow: 1000, defaultMaxTokens: 100, reasoningEfforts: [], imageInput: false }],
  })
  const fiber = ctx.plugin(SessionTitlePlugin, config)
  await fiber
  return { ctx, calls, fiber }
}

function runTurn(ctx: Context, text: string) {
  const session = ctx.sessions.create({ cwd: '/w' })
  session.append('turn/start', { turn: 1 })
  session.append('step/start', { turn: 1, step: 1 })
  session.append('user/message', { id: 'u1', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text }] }, { surfaceOp: 'append' })
  return session
}

describe('session titles', () => {
  it('a fallback title from the first words lands right after the first prompt', async () => {
    const { ctx } = await setup('Unused')
    const session = runTurn(ctx, 'Fix the failing build in the parser module please')
    await Promise.resolve()
    const title = session.events.at(-1)!
    expect(title.type).toBe('session/title')
    expect(title.data).toEqual({ title: 'Fix the failing build in', messageSeqs: [2], source: { kind: 'fallback' } })
  })

  it('after the first turn the model proposes a title, logged with its route', async () => {
    const { ctx, calls, fiber } = await setup('"Parser build fix."\n')
    const session = runTurn(ctx, 'Fix the failing build in the parser module please')
    session.append('request/context', { provider: 'fake', model: 'm' })
    session.append('step/end', { turn: 1, step: 1 })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await fiber.dispose()
    expect(calls).toHaveLength(1)
    expect(calls[0].messages[0].content).toEqual([{ type: 'text', text: 'Fix the failing build in the parser module please' }])
    expect(titleOf(session)).toBe('Parser build fix')
    expect(session.events.at(-1)!.data).toMatchObject({ source: { kind: 'llm', provider: 'fake', model: 'm' }, messageSeqs: [2] })
  })

  it('with llm: false only the fallback title is written', async () => {
    const { ctx, calls, fiber } = await setup('x', { llm: false })
    const session = runTurn(ctx, 'hello there')
    session.append('step/end', { turn: 1, step: 1 })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await fiber.dispose()
    expect(calls).toHaveLength(0)
    expect(titleOf(session)).toBe('hello there')
  })

  it('a vetoed fallback title is dropped, not an uncaught error, and disposal still settles', async () => {
    const { ctx, fiber } = await setup('x', { llm: false })
    ctx.on('session/append', (_session, event) => {
      if (event.type === 'session/title') throw new Error('titles are vetoed here')
    })
    const session = runTurn(ctx, 'hello there')
    await fiber.dispose()
    expect(titleOf(session)).toBeUndefined()
    expect(session.events.at(-1)!.type).toBe('user/message')
  })

  it('a file attached by an @ mention is not part of the title or the title request', async () => {
    const { ctx, calls, fiber } = await setup('Minutes question')
    const session = ctx.sessions.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    session.append('user/message', { id: 'u1', role: 'user', source: { kind: 'user' }, content: [
      { type: 'text', text: 'what does @notes.md say' },
      { type: 'text', text: '<file path="notes.md">\nsecret body words\n</file>' },
    ] }, { surfaceOp: 'append' })
    await Promise.resolve()
    expect(titleOf(session)).toBe('what does @notes.md say')
    session.append('request/context', { provider: 'fake', model: 'm' })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await fiber.dispose()
    expect(JSON.stringify(calls[0]!.messages)).not.toContain('secret body')
  })

  it('fallbackTitle keeps at most N words', () => {
    expect(fallbackTitle('  a b   c d e f g ', 3)).toBe('a b c')
  })
})
