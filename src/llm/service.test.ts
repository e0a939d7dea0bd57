import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { LlmError } from './errors.js'
import { holdRequest } from './request-hold.js'
import { LlmServicePlugin } from './service.js'
import type { LlmAdapter, LlmCallOptions, ModelInfo, StreamChunk } from './types.js'

const model: ModelInfo = { provider: 'fake', model: 'm1', contextWindow: 1000, defaultMaxTokens: 100, reasoningEfforts: ['high', 'max'], imageInput: false, thinking: true }

async function setup() {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin)
  return ctx
}

async function collect(iterable: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of iterable) out.push(chunk)
  return out
}

/** Waits until `check` holds, one macrotask at a time (no wall-clock wait). */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise<void>((resolve) => setImmediate(resolve))
}

function adapter(provider: string, stream: (options: LlmCallOptions) => AsyncIterable<StreamChunk>): LlmAdapter {
  return { provider, stream }
}

const call: LlmCallOptions = { provider: 'fake', model: 'm1', messages: [] }

describe('LlmServicePlugin (ctx.llm)', () => {
  it('registration is an effect: the disposer removes the adapter and its models', async () => {
    const ctx = await setup()
    const fiber = ctx.plugin({
      inject: ['llm'],
      apply: (ctx: Context) => { ctx.effect(() => ctx.llm.register({ adapter: adapter('fake', async function* () {}), models: [model], retry: 'always' })) },
    })
    await fiber
    expect(ctx.llm.adapter('fake')?.provider).toBe('fake')
    expect(ctx.llm.model('fake', 'm1')).toEqual(model)
    expect(ctx.llm.models()).toHaveLength(1)
    expect(ctx.llm.retryMode('fake')).toBe('always')
    await fiber.dispose()
    expect(ctx.llm.adapter('fake')).toBeUndefined()
    expect(ctx.llm.model('fake', 'm1')).toBeUndefined()
    expect(ctx.llm.retryMode('fake')).toBe('normal')
  })

  it('rejects a second adapter for the same provider and a model naming another provider', async () => {
    const ctx = await setup()
    ctx.llm.register({ adapter: adapter('fake', async function* () {}), models: [model] })
    expect(() => ctx.llm.register({ adapter: adapter('fake', async function* () {}), models: [] })).toThrow(/already registered/)
    expect(() => ctx.llm.register({ adapter: adapter('other', async function* () {}), models: [model] })).toThrow(/names provider "fake"/)
  })

  it('prepareCall fills maxTokens and thinking from the catalogue and keeps explicit values', async () => {
    const ctx = await setup()
    ctx.llm.register({ adapter: adapter('fake', async function* () {}), models: [model] })
    expect(ctx.llm.prepareCall(call)).toMatchObject({ maxTokens: 100, thinking: true })
    expect(ctx.llm.prepareCall({ ...call, maxTokens: 7, thinking: false })).toMatchObject({ maxTokens: 7, thinking: false })
  })

  it('prepareCall rejects a reasoning effort the model does not list, naming the supported ones', async () => {
    const ctx = await setup()
    ctx.llm.register({ adapter: adapter('fake', async function* () {}), models: [model] })
    expect(() => ctx.llm.prepareCall({ ...call, reasoningEffort: 'low' }))
      .toThrow('llm: model fake/m1 does not support reasoning effort "low"; supported: high, max')
    expect(ctx.llm.prepareCall({ ...call, reasoningEffort: 'max' }).reasoningEffort).toBe('max')
    expect(() => ctx.llm.prepareCall({ ...call, model: 'nope' })).toThrow(/no model "nope"; known models: m1/)
  })

  it('L-4: llm/stream is a waterfall around the adapter call (listeners observe and replace)', async () => {
    const ctx = await setup()
    ctx.llm.register({ adapter: adapter('fake', async function* () {
      yield { type: 'text-delta', index: 0, text: 'from adapter' }
      yield { type: 'finish', reason: { kind: 'stop' } }
    }), models: [model] })
    const seen: string[] = []
    ctx.on('llm/stream', (options, next) => {
      seen.push(options.model)
      return (async function* () {
        for await (const chunk of next()) yield chunk.type === 'text-delta' ? { ...chunk, text: chunk.text.toUpperCase() } : chunk
      })()
    })
    const chunks = await collect(ctx.llm.stream(call))
    expect(seen).toEqual(['m1'])
    expect(chunks).toEqual([{ type: 'text-delta', index: 0, text: 'FROM ADAPTER' }, { type: 'finish', reason: { kind: 'stop' } }])
  })

  it('L-4: a throw inside the adapter becomes a terminal error finish carrying the failure', async () => {
    const ctx = await setup()
    ctx.llm.register({ adapter: adapter('fake', async function* () {
      yield { type: 'text-delta', index: 0, text: 'a' }
      throw new LlmError('SERVER', 'boom', { status: 502, requestId: 'r1' })
    }), models: [model] })
    expect(await collect(ctx.llm.stream(call))).toEqual([
      { type: 'text-delta', index: 0, text: 'a' },
      { type: 'finish', reason: { kind: 'error', failure: { message: 'boom', code: 'SERVER', status: 502, requestId: 'r1' } } },
    ])
  })

  it('L-4: a synchronous throw from adapter.stream() and a non-LlmError are contained too', async () => {
    const ctx = await setup()
    ctx.llm.register({ adapter: adapter('fake', () => { throw new TypeError('bad wiring') }), models: [model] })
    expect(await collect(ctx.llm.stream(call))).toEqual([
      { type: 'finish', reason: { kind: 'error', failure: { message: 'bad wiring', code: 'ADAPTER_ERROR' } } },
    ])
  })

  it('L-4: a throw after the signal fired, or with code ABORTED, becomes an aborted finish', async () => {
    const ctx = await setup()
    const controller = new AbortController()
    ctx.llm.register({ adapter: adapter('fake', async function* (options) {
      if (options.meta?.code === 'ABORTED') throw new LlmError('ABORTED', 'cancelled by the adapter')
      controller.abort()
      throw new Error('socket closed')
    }), models: [model] })
    expect(await collect(ctx.llm.stream({ ...call, signal: controller.signal }))).toEqual([
      { type: 'finish', reason: { kind: 'aborted', failure: { message: 'socket closed', code: 'ABORTED' } } },
    ])
    expect(await collect(ctx.llm.stream({ ...call, meta: { code: 'ABORTED' } }))).toEqual([
      { type: 'finish', reason: { kind: 'aborted', failure: { message: 'cancelled by the adapter', code: 'ABORTED' } } },
    ])
  })

  it('L-4: a throw from an llm/stream listener itself propagates', async () => {
    const ctx = await setup()
    ctx.llm.register({ adapter: adapter('fake', async function* () { yield { type: 'finish', reason: { kind: 'stop' } } }), models: [model] })
    const dispose = ctx.on('llm/stream', () => { throw new Error('vetoed by policy') })
    await expect(collect(ctx.llm.stream(call))).rejects.toThrow('vetoed by policy')
    dispose()
    ctx.on('llm/stream', (_options, next) => (async function* () {
      for await (const chunk of next()) { yield chunk; throw new Error('listener broke mid-stream') }
    })())
    await expect(collect(ctx.llm.stream(call))).rejects.toThrow('listener broke mid-stream')
  })

  it('K-4: llm/send is emitted once per attempt, after the hold and every llm/stream listener, with the options the adapter gets; a throw vetoes it', async () => {
    const ctx = await setup()
    const order: string[] = []
    const received: LlmCallOptions[] = []
    ctx.llm.register({ adapter: adapter('fake', async function* (options) {
      order.push('adapter')
      received.push(options)
      yield { type: 'finish', reason: { kind: 'stop' } }
    }), models: [model] })
    const sent: LlmCallOptions[] = []
    ctx.on('llm/send', (options) => { order.push('send'); sent.push(options) })
    ctx.on('llm/stream', (options, next) => { order.push('stream'); (options as { maxTokens?: number }).maxTokens = 9; return next() })
    let release!: () => void
    const options: LlmCallOptions = { ...call }
    holdRequest(options, new Promise<void>((resolve) => { release = resolve }))
    const iterator = ctx.llm.stream(options)[Symbol.asyncIterator]()
    const first = iterator.next()
    await until(() => order.includes('stream'))
    expect(order).toEqual(['stream'])
    release()
    expect((await first).value).toEqual({ type: 'finish', reason: { kind: 'stop' } })
    expect(order).toEqual(['stream', 'send', 'adapter'])
    expect(sent[0]).toBe(received[0])
    expect(sent[0]!.maxTokens).toBe(9)
    const off = ctx.on('llm/send', () => { throw new Error('not this request') })
    await expect(collect(ctx.llm.stream(call))).rejects.toThrow('not this request')
    expect(received).toHaveLength(1)
    off()
  })

  it('an unknown provider is a clear error finish', async () => {
    const ctx = await setup()
    const chunks = await collect(ctx.llm.stream({ ...call, provider: 'nobody' }))
    expect(chunks).toEqual([{ type: 'finish', reason: { kind: 'error', failure: { code: 'UNKNOWN_PROVIDER', message: 'llm: no adapter registered for provider "nobody"; registered: (none)' } } }])
  })

  it('the stream ends with exactly one finish: chunks after it are dropped, a missing one is added', async () => {
    const ctx = await setup()
    let closed = false
    ctx.llm.register({ adapter: adapter('fake', async function* (options) {
      try {
        yield { type: 'text-delta', index: 0, text: 'x' }
        if (options.meta?.noFinish === true) return
        yield { type: 'finish', reason: { kind: 'stop' } }
        yield { type: 'finish', reason: { kind: 'max-tokens' } }
      } finally { closed = true }
    }), models: [model] })
    const chunks = await collect(ctx.llm.stream(call))
    expect(chunks.filter(c => c.type === 'finish')).toEqual([{ type: 'finish', reason: { kind: 'stop' } }])
    expect(closed).toBe(true)
    const missing = await collect(ctx.llm.stream({ ...call, meta: { noFinish: true } }))
    expect(missing.at(-1)).toEqual({ type: 'finish', reason: { kind: 'stop' } })
  })
})
