import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import type { PreStepDecision, PreStepPayload } from '../agent/api.js'
import { LlmServicePlugin } from '../llm/index.js'
import { requestHold } from '../llm/request-hold.js'
import type { LlmAdapter, LlmCallOptions, StreamChunk } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { SessionsServicePlugin } from '../session/service.js'
import type { ToolContext, ToolExecution, ToolResultRecord } from '../tools/api.js'
import { TOOL_ABORTED_BEFORE_DISPATCH } from '../tools/errors.js'
import { CheckpointPolicy } from './checkpoint.js'
import { JsonlBackend } from './jsonl/backend.js'
import { SessionPersistence } from './service.js'

interface Gate { open(): void; promise: Promise<void> }
function gate(): Gate {
  let open!: () => void
  const promise = new Promise<void>((resolve) => { open = resolve })
  return { open, promise }
}

/** A context whose `session/flush` listener logs and may be held open. */
async function boot() {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin, {})
  await ctx.plugin(CheckpointPolicy)
  const log: string[] = []
  let hold: Gate | undefined
  ctx.on('session/flush', async (session) => {
    log.push(`flush ${session.id}`)
    if (hold) await hold.promise
    log.push(`flushed ${session.id}`)
  })
  return { ctx, log, holdNext: () => (hold = gate()) }
}

const call: ToolExecution = { callId: 'c1', name: 'bash', arguments: '{}' }
const ok: ToolResultRecord = { content: [{ type: 'text', text: 'ok' }], isError: false }
const options = (meta?: Record<string, unknown>): LlmCallOptions => ({ provider: 'p', model: 'm', messages: [], meta } as unknown as LlmCallOptions)

async function drain(iterable: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of iterable) out.push(chunk)
  return out
}

describe('checkpoint policy (D-3)', () => {
  it('D-3: a model request of a live session waits for session/flush before the adapter is called', async () => {
    const { ctx, log } = await boot()
    const session = ctx.sessions.create({ id: 's' })
    const inner = async function* (): AsyncGenerator<StreamChunk> {
      log.push('adapter')
      yield { type: 'finish', reason: { kind: 'stop' } }
    }
    const chunks = await drain(ctx.waterfall('llm/stream', options({ sessionId: session.id, agentLoop: true }), inner))
    expect(chunks).toEqual([{ type: 'finish', reason: { kind: 'stop' } }])
    expect(log).toEqual(['flush s', 'flushed s', 'adapter'])
  })

  it('D-3: calls without a live session id are not held', async () => {
    const { ctx, log } = await boot()
    ctx.sessions.create({ id: 'closed' })
    ctx.sessions.close('closed')
    const inner = async function* (): AsyncGenerator<StreamChunk> { log.push('adapter') }
    await drain(ctx.waterfall('llm/stream', options(), inner))
    await drain(ctx.waterfall('llm/stream', options({ sessionId: 'closed' }), inner))
    await drain(ctx.waterfall('llm/stream', options({ sessionId: 'unknown' }), inner))
    expect(log).toEqual(['adapter', 'adapter', 'adapter'])
  })

  it('D-3: a tool body runs only after the session is flushed', async () => {
    const { ctx, log } = await boot()
    const session = ctx.sessions.create({ id: 't' })
    const context: ToolContext = { callId: 'c1', cwd: '/', signal: new AbortController().signal, session }
    const record = await ctx.waterfall('tools/execute', call, context, async () => { log.push('body'); return ok })
    expect(record).toBe(ok)
    expect(log).toEqual(['flush t', 'flushed t', 'body'])
  })

  it('D-3/T-6: a cancel during the tool checkpoint gives ABORTED_BEFORE_DISPATCH and the body never runs', async () => {
    const { ctx, log, holdNext } = await boot()
    const session = ctx.sessions.create({ id: 't' })
    const held = holdNext()
    const controller = new AbortController()
    const context: ToolContext = { callId: 'c1', cwd: '/', signal: controller.signal, session }
    const pending = ctx.waterfall('tools/execute', call, context, async () => { log.push('body'); return ok })
    await Promise.resolve()
    expect(log).toEqual(['flush t'])
    controller.abort()
    const record = await pending
    expect(record).toMatchObject({ isError: true, error: { code: TOOL_ABORTED_BEFORE_DISPATCH } })
    held.open()
    await held.promise
    expect(log).not.toContain('body')
    // Already cancelled before the checkpoint: no flush, no body.
    const again = await ctx.waterfall('tools/execute', call, context, async () => { log.push('body'); return ok })
    expect(again.error?.code).toBe(TOOL_ABORTED_BEFORE_DISPATCH)
    expect(log.filter((l) => l === 'body')).toEqual([])
  })

  it('D-3: agent/pre-step continues only after the flush', async () => {
    const { ctx, log } = await boot()
    const session = ctx.sessions.create({ id: 'p' })
    const payload = { session, messages: [], turn: 1, step: 1, signal: new AbortController().signal } as unknown as PreStepPayload
    const decision = await ctx.waterfall('agent/pre-step', payload, async (): Promise<PreStepDecision> => {
      log.push('default')
      return { kind: 'enter', messages: [] }
    })
    expect(decision).toEqual({ kind: 'enter', messages: [] })
    expect(log).toEqual(['flush p', 'flushed p', 'default'])
  })

  it('D-3: when the flush fails, the model request never leaves and the tool body never runs', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionsServicePlugin, {})
    await ctx.plugin(CheckpointPolicy)
    ctx.on('session/flush', async () => { throw new Error('disk full') })
    const session = ctx.sessions.create({ id: 'f' })
    const calls: string[] = []
    const inner = async function* (): AsyncGenerator<StreamChunk> { calls.push('adapter') }
    await expect(drain(ctx.waterfall('llm/stream', options({ sessionId: 'f' }), inner))).rejects.toThrow()
    const context: ToolContext = { callId: 'c1', cwd: '/', signal: new AbortController().signal, session }
    await expect(ctx.waterfall('tools/execute', call, context, async () => { calls.push('body'); return ok })).rejects.toThrow()
    expect(calls).toEqual([])
  })

  describe('through ctx.llm: the request is prepared during the flush and sent after it', () => {
    const MODEL = { provider: 'p', model: 'm', contextWindow: 1000, defaultMaxTokens: 10, reasoningEfforts: [], imageInput: false }

    /** An adapter that builds its request at once and sends it only after the call's hold, as the HTTP transport does. */
    function holdingAdapter(log: string[]): LlmAdapter {
      return {
        provider: 'p',
        awaitsRequestHold: true,
        async *stream(call) {
          log.push('built')
          await requestHold(call)
          log.push('sent')
          yield { type: 'finish', reason: { kind: 'stop' } }
        },
      }
    }

    async function withLlm(adapter: (log: string[]) => LlmAdapter) {
      const booted = await boot()
      await booted.ctx.plugin(LlmServicePlugin).await()
      booted.ctx.llm.register({ adapter: adapter(booted.log), models: [MODEL] })
      return booted
    }

    it('D-3: an adapter that honours the hold builds its request while the flush runs and sends it only after the flush', async () => {
      const { ctx, log, holdNext } = await withLlm(holdingAdapter)
      const session = ctx.sessions.create({ id: 's' })
      const held = holdNext()
      const chunks = drain(ctx.llm.stream(ctx.llm.prepareCall(options({ sessionId: session.id, agentLoop: true }))))
      while (!log.includes('built')) await new Promise(resolve => setImmediate(resolve))
      expect(log).toEqual(['flush s', 'built'])
      held.open()
      expect(await chunks).toEqual([{ type: 'finish', reason: { kind: 'stop' } }])
      expect(log).toEqual(['flush s', 'built', 'flushed s', 'sent'])
    })

    it('D-3: an adapter that does not know holds is called only after the flush', async () => {
      const { ctx, log, holdNext } = await withLlm((log) => ({
        provider: 'p',
        async *stream() {
          log.push('adapter')
          yield { type: 'finish', reason: { kind: 'stop' } }
        },
      }))
      const session = ctx.sessions.create({ id: 's' })
      const held = holdNext()
      const chunks = drain(ctx.llm.stream(ctx.llm.prepareCall(options({ sessionId: session.id }))))
      await new Promise(resolve => setImmediate(resolve))
      expect(log).toEqual(['flush s'])
      held.open()
      await chunks
      expect(log).toEqual(['flush s', 'flushed s', 'adapter'])
    })

    it('D-3: when the flush fails, the prepared request is never sent and the stream fails with the flush error', async () => {
      const ctx = new Context()
      await ctx.plugin(SessionsServicePlugin, {})
      await ctx.plugin(CheckpointPolicy)
      await ctx.plugin(LlmServicePlugin).await()
      const log: string[] = []
      ctx.llm.register({ adapter: holdingAdapter(log), models: [MODEL] })
      ctx.on('session/flush', async () => { throw new Error('disk full') })
      ctx.sessions.create({ id: 'f' })
      const error = await drain(ctx.llm.stream(ctx.llm.prepareCall(options({ sessionId: 'f' })))).then(() => undefined, (caught: unknown) => caught)
      // The barrier's own rejection (ctx.parallel: an AggregateError of the listeners' errors).
      expect((error as AggregateError).errors.map((e: Error) => e.message)).toEqual(['disk full'])
      await new Promise(resolve => setImmediate(resolve))
      expect(log).toEqual(['built'])
    })
  })

  describe('with ctx.sessionPersistence', () => {
    let root: string | undefined
    afterEach(async () => { if (root) await rm(root, { recursive: true, force: true }) })

    it('D-3: when a tool body starts, its tool/call is already on disk (long write-behind window)', async () => {
      root = await mkdtemp(join(tmpdir(), 'dsh-checkpoint-'))
      const backend = new JsonlBackend({ root })
      const ctx = new Context()
      await ctx.plugin(SessionsServicePlugin, {})
      await ctx.plugin(SessionPersistence, { backend, maxDelayMs: 1_000_000 })
      await ctx.plugin(CheckpointPolicy)
      const session: Session = ctx.sessions.create({ id: 'durable' })
      session.append('turn/start', { turn: 1 })
      session.append('step/start', { turn: 1, step: 1 })
      session.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' })
      const context: ToolContext = { callId: 'c1', cwd: '/', signal: new AbortController().signal, session }
      let seen: string | undefined
      await ctx.waterfall('tools/execute', call, context, async () => {
        seen = (await backend.loadStored('durable'))?.events.at(-1)?.type
        return ok
      })
      expect(seen).toBe('tool/call')
    })
  })
})
