import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { LlmServicePlugin } from '../llm/index.js'
import type { LlmCallOptions, StreamChunk } from '../llm/types.js'
import { SessionsServicePlugin } from '../session/index.js'
import type { Session } from '../session/api.js'
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

/** The loop's first request of the turn: its header, then its context (the title request's trigger). */
function firstRequest(session: Session) {
  session.append('request/header', { header: { config: { provider: 'fake', model: 'm' }, system: '', tools: [] }, reason: 'initial' })
  session.append('request/context', { provider: 'fake', model: 'm' })
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

  it('the first request logs session/title-llm-request right after request/context, in the original\'s shape; the call goes out when the turn ends; its answer is a provider title', async () => {
    const { ctx, calls, fiber } = await setup('"Parser build fix."\n')
    const session = runTurn(ctx, 'Fix the failing build in the parser module please')
    await Promise.resolve()
    firstRequest(session)
    await Promise.resolve()
    const types = session.events.map(event => event.type)
    expect(types.slice(-3)).toEqual(['request/header', 'request/context', 'session/title-llm-request'])
    const request = session.events.at(-1)!.data as { messages: { id: string }[] }
    expect(request).toEqual({
      titleProvider: 'session-title-first-prompt-llm',
      messageSeqs: [2],
      route: { provider: 'fake', model: 'm' },
      system: 'Create a concise title for an AI coding-assistant session from the supplied human messages.\nReturn only the title on one line, **in plain text of natural language**, with no quotes, prefix, explanation, Markdown, XML, or terminal control codes. No code is allowed.\nUse the language of the messages.\nAim for about 5 words in non-CJK languages or 10 CJK characters.',
      messages: [{
        id: request.messages[0]!.id, role: 'user', source: { kind: 'plugin', plugin: 'dsh-session-title-llm' },
        content: [{ type: 'text', text: 'Generate the session title from this JSON array of human messages:\n[{"seq":2,"text":"Fix the failing build in the parser module please"}]' }],
      }],
      maxTokens: 64,
    })
    // Sent when the turn ends, not beside the main call.
    expect(calls).toHaveLength(0)
    session.append('step/end', { turn: 1, step: 1 })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await fiber.dispose()
    expect(calls).toHaveLength(1)
    expect(calls[0]).toMatchObject({ provider: 'fake', model: 'm', maxTokens: 64, system: expect.stringMatching(/^Create a concise title/), meta: { purpose: 'session-title' } })
    expect(calls[0]!.messages).toEqual(request.messages)
    expect(titleOf(session)).toBe('Parser build fix')
    expect(session.events.at(-1)!.data).toEqual({ title: 'Parser build fix', messageSeqs: [2], source: { kind: 'provider', provider: 'session-title-first-prompt-llm', model: { provider: 'fake', model: 'm' } } })
    // Once per session: a second turn asks nothing.
    expect(session.events.filter(event => event.type === 'session/title-llm-request')).toHaveLength(1)
  })

  it('a fork, a session already asked (read back from its log) and a request on another route than the header\'s ask nothing', async () => {
    const { ctx, calls, fiber } = await setup('Unused')
    const session = runTurn(ctx, 'first words here')
    session.append('request/header', { header: { config: { provider: 'other', model: 'x' }, system: '', tools: [] }, reason: 'initial' })
    session.append('request/context', { provider: 'fake', model: 'm' })
    session.append('step/end', { turn: 1, step: 1 })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await Promise.resolve()
    expect(session.events.some(event => event.type === 'session/title-llm-request')).toBe(false)
    const fork = ctx.sessions.fork(session.id)
    fork.append('turn/start', { turn: 2 })
    fork.append('step/start', { turn: 2, step: 1 })
    fork.append('user/message', { id: 'u2', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'more' }] }, { surfaceOp: 'append' })
    firstRequest(fork)
    const asked = ctx.sessions.hydrate({ ...session.header, id: 'asked' }, [...session.events.slice(0, 3), { type: 'session/title-llm-request', seq: 3, time: 0, data: { titleProvider: 'session-title-first-prompt-llm', messageSeqs: [2], messages: [] } }] as never)
    asked.append('request/header', { header: { config: { provider: 'fake', model: 'm' }, system: '', tools: [] }, reason: 'resume' })
    asked.append('request/context', { provider: 'fake', model: 'm' })
    for (const each of [fork, asked]) {
      each.append('step/end', { turn: each.position.turn, step: 1 })
      each.append('turn/end', { turn: each.position.turn, reason: { kind: 'completed' } })
    }
    await fiber.dispose()
    expect(calls).toHaveLength(0)
    expect(fork.events.filter(event => event.type === 'session/title-llm-request')).toHaveLength(0)
    expect(asked.events.filter(event => event.type === 'session/title-llm-request')).toHaveLength(1)
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
    firstRequest(session)
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await fiber.dispose()
    expect(calls).toHaveLength(1)
    expect(JSON.stringify(calls[0]!.messages)).not.toContain('secret body')
  })

  it('fallbackTitle keeps at most N words', () => {
    expect(fallbackTitle('  a b   c d e f g ', 3)).toBe('a b c')
  })
})
