import { getEventListeners } from 'node:events'
import { Context } from 'cordis'
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import type { ToolContext, ToolExecution, ToolOutput, ToolResultRecord } from '../tools/api.js'
import { ToolsPlugin } from '../tools/registry.js'
import {
  DEFAULT_MAX_PARALLEL_TOOL_CALLS,
  runToolCalls,
  TOOL_ABORTED,
  TOOL_ABORTED_BEFORE_DISPATCH,
  type RunToolCallsOptions,
} from './tool-calls.js'

interface Deferred<T> {
  readonly promise: Promise<T>
  resolve(value: T): void
  reject(error: unknown): void
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej })
  return { promise, resolve, reject }
}

/** Lets every pending microtask and promise chain settle; no wall-clock wait. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

const text = (record: ToolResultRecord) => record.content.map((block) => (block.type === 'text' ? block.text : '')).join('')

interface Gate {
  readonly started: Deferred<ToolContext>
  readonly release: Deferred<ToolOutput>
}

/**
 * A real `ctx.tools` with one tool, `job`, whose bodies block until the test releases them.
 * `{"mode":"exclusive"}` makes a call exclusive; the log records every append and body start.
 */
class Harness {
  readonly log: string[] = []
  readonly gates = new Map<string, Gate>()
  readonly ctx = new Context()
  active = 0
  maxActive = 0
  private seq = 0

  async setup(): Promise<this> {
    await this.ctx.plugin(ToolsPlugin)
    this.ctx.tools.register({
      name: 'job',
      description: 'a controllable job',
      parameters: { type: 'object', properties: { mode: { type: 'string' } } },
      isConcurrencySafe: (args: { mode?: string }) => args.mode !== 'exclusive',
      execute: async (_args, context) => {
        const gate = this.gate(context.callId)
        this.active++
        this.maxActive = Math.max(this.maxActive, this.active)
        this.log.push(`body:${context.callId}`)
        gate.started.resolve(context)
        try {
          return await gate.release.promise
        } finally {
          this.active--
        }
      },
    })
    return this
  }

  gate(id: string): Gate {
    let gate = this.gates.get(id)
    if (gate === undefined) {
      gate = { started: deferred(), release: deferred() }
      this.gates.set(id, gate)
    }
    return gate
  }

  started(id: string): Promise<ToolContext> {
    return this.gate(id).started.promise
  }

  finish(id: string, output: string | ToolOutput = `ok ${id}`): void {
    this.gate(id).release.resolve(typeof output === 'string' ? { content: [{ type: 'text', text: output }] } : output)
  }

  options(calls: readonly ToolExecution[], overrides: Partial<RunToolCallsOptions> = {}): RunToolCallsOptions {
    return {
      calls,
      tools: this.ctx.tools,
      signal: new AbortController().signal,
      context: { cwd: '/work' },
      startCall: async (execution) => {
        this.log.push(`call:${execution.callId}`)
        return ++this.seq
      },
      commitResult: (execution, record, callSeq) => {
        this.log.push(`result:${execution.callId}@${callSeq}${record.isError ? `!${record.error?.code}` : ''}`)
      },
      abortedBeforeDispatch: async (execution) => {
        this.log.push(`aborted-before-dispatch:${execution.callId}`)
      },
      ...overrides,
    }
  }

  results(): string[] {
    return this.log.filter((entry) => entry.startsWith('result:'))
  }
}

const job = (callId: string, mode = 'parallel'): ToolExecution => ({ callId, name: 'job', arguments: JSON.stringify({ mode }) })

describe('T-3/T-4 ordering', () => {
  it('T-4: results commit in model order when a later call finishes first', async () => {
    const h = await new Harness().setup()
    const done = runToolCalls(h.options([job('a'), job('b'), job('c')]))
    await Promise.all([h.started('a'), h.started('b'), h.started('c')])
    h.finish('c')
    await flush()
    expect(h.results()).toEqual([])
    h.finish('b')
    await flush()
    expect(h.results()).toEqual([])
    h.finish('a')
    await done
    expect(h.log).toEqual(['call:a', 'body:a', 'call:b', 'body:b', 'call:c', 'body:c', 'result:a@1', 'result:b@2', 'result:c@3'])
  })

  it('T-3: at most maxParallelToolCalls bodies are in flight, refilled one by one (rolling pool)', async () => {
    const h = await new Harness().setup()
    const calls = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id) => job(id))
    const done = runToolCalls(h.options(calls, { maxParallelToolCalls: () => 3 }))
    await Promise.all([h.started('a'), h.started('b'), h.started('c')])
    await flush()
    expect(h.log.filter((entry) => entry.startsWith('call:'))).toEqual(['call:a', 'call:b', 'call:c'])
    // A later call finishing frees a slot at once, even though `a` still blocks the commit.
    h.finish('b')
    await h.started('d')
    await flush()
    expect(h.log.filter((entry) => entry.startsWith('call:'))).toEqual(['call:a', 'call:b', 'call:c', 'call:d'])
    expect(h.results()).toEqual([])
    for (const id of ['a', 'c', 'd', 'e', 'f', 'g']) {
      await h.started(id)
      h.finish(id)
    }
    const summary = await done
    expect(h.maxActive).toBe(3)
    expect(h.results()).toEqual(['result:a@1', 'result:b@2', 'result:c@3', 'result:d@4', 'result:e@5', 'result:f@6', 'result:g@7'])
    expect(summary).toEqual({ concludesTurn: false, committed: 7, abortedBeforeDispatch: 0, aborted: false })
  })

  it('T-3: the default pool is 10', async () => {
    const h = await new Harness().setup()
    const calls = Array.from({ length: 12 }, (_, i) => job(`j${i}`))
    const signal = new AbortController().signal
    const done = runToolCalls(h.options(calls, { signal }))
    for (let i = 0; i < DEFAULT_MAX_PARALLEL_TOOL_CALLS; i++) await h.started(`j${i}`)
    await flush()
    expect(h.active).toBe(10)
    // Per-call signals share one listener on the turn signal (no max-listeners leak warning).
    expect(getEventListeners(signal, 'abort')).toHaveLength(1)
    for (const call of calls) {
      await h.started(call.callId)
      h.finish(call.callId)
    }
    await done
    expect(h.maxActive).toBe(10)
  })

  it('T-3: an exclusive call between parallel ones is a barrier', async () => {
    const h = await new Harness().setup()
    const done = runToolCalls(h.options([job('p1'), job('p2'), job('x', 'exclusive'), job('p3'), job('p4')]))
    await Promise.all([h.started('p1'), h.started('p2')])
    await flush()
    expect(h.log).toEqual(['call:p1', 'body:p1', 'call:p2', 'body:p2'])
    h.finish('p2')
    await flush()
    expect(h.log).not.toContain('call:x')
    h.finish('p1')
    await h.started('x')
    await flush()
    expect(h.active).toBe(1)
    expect(h.log.slice(4)).toEqual(['result:p1@1', 'result:p2@2', 'call:x', 'body:x'])
    h.finish('x')
    await Promise.all([h.started('p3'), h.started('p4')])
    h.finish('p4')
    h.finish('p3')
    await done
    expect(h.log.slice(8)).toEqual(['result:x@3', 'call:p3', 'body:p3', 'call:p4', 'body:p4', 'result:p3@4', 'result:p4@5'])
    expect(h.maxActive).toBe(2)
  })

  it('T-2/T-3: each pending call is reclassified right before it starts; exclusive stops the refill', async () => {
    const h = await new Harness().setup()
    let lockdown = false
    h.ctx.tools.register({
      name: 'flip',
      description: 'parallel until lockdown',
      parameters: { type: 'object' },
      isConcurrencySafe: () => !lockdown,
      execute: async (_args, context) => {
        h.log.push(`body:${context.callId}`)
        return { content: [{ type: 'text', text: 'flipped' }] }
      },
    })
    const flip = (callId: string): ToolExecution => ({ callId, name: 'flip', arguments: '' })
    const options = h.options([job('a'), job('b'), flip('c'), job('d')])
    const done = runToolCalls({
      ...options,
      startCall: async (execution) => {
        // Classification of `c` was `parallel` when the batch began; it changes once `b` starts.
        if (execution.callId === 'b') lockdown = true
        return options.startCall(execution)
      },
    })
    await Promise.all([h.started('a'), h.started('b')])
    await flush()
    expect(h.log).toEqual(['call:a', 'body:a', 'call:b', 'body:b'])
    h.finish('a')
    h.finish('b')
    await h.started('d')
    h.finish('d')
    await done
    expect(h.log).toEqual([
      'call:a', 'body:a', 'call:b', 'body:b', 'result:a@1', 'result:b@2',
      'call:c', 'body:c', 'result:c@3',
      'call:d', 'body:d', 'result:d@4',
    ])
  })

  it('T-3: maxParallelToolCalls is read at each group start, never mid-group', async () => {
    const h = await new Harness().setup()
    let limit = 1
    let reads = 0
    const calls = [job('a'), job('b'), job('x', 'exclusive'), job('c'), job('d'), job('e')]
    const done = runToolCalls(h.options(calls, { maxParallelToolCalls: () => { reads++; return limit } }))
    await h.started('a')
    limit = 3 // too late for the running group
    await flush()
    expect(h.active).toBe(1)
    h.finish('a')
    await h.started('b')
    expect(h.active).toBe(1)
    h.finish('b')
    await h.started('x')
    h.finish('x')
    await Promise.all([h.started('c'), h.started('d'), h.started('e')])
    expect(h.active).toBe(3)
    for (const id of ['c', 'd', 'e']) h.finish(id)
    await done
    expect(reads).toBe(3)
  })

  it('T-3: pre-execute runs per call in model order; post-execute runs at the ordered commit', async () => {
    const h = await new Harness().setup()
    const policy = new Map<string, Deferred<void>>([['a', deferred()], ['b', deferred()]])
    h.ctx.on('tools/pre-execute', async (execution, next) => {
      h.log.push(`pre:${execution.callId}`)
      await policy.get(execution.callId)?.promise
      return next()
    })
    h.ctx.on('tools/post-execute', async (execution, _record, next) => {
      h.log.push(`post:${execution.callId}`)
      return next()
    })
    const done = runToolCalls(h.options([job('a'), job('b')]))
    await flush()
    expect(h.log).toEqual(['call:a', 'pre:a'])
    policy.get('a')!.resolve()
    await h.started('a')
    await flush()
    expect(h.log).toEqual(['call:a', 'pre:a', 'body:a', 'call:b', 'pre:b'])
    // `a` finishes while `b` is still in its policy: it commits at once, without waiting for `b` to start.
    h.finish('a')
    await flush()
    expect(h.log).toEqual(['call:a', 'pre:a', 'body:a', 'call:b', 'pre:b', 'post:a', 'result:a@1'])
    policy.get('b')!.resolve()
    await h.started('b')
    h.finish('b')
    await done
    expect(h.log).toEqual(['call:a', 'pre:a', 'body:a', 'call:b', 'pre:b', 'post:a', 'result:a@1', 'body:b', 'post:b', 'result:b@2'])
  })
})

describe('T-6/T-7 outcomes and cancellation', () => {
  it('T-7: invalid JSON, unknown tools and throwing bodies commit error results in order', async () => {
    const h = await new Harness().setup()
    h.ctx.tools.register({ name: 'boom', description: 'throws', parameters: { type: 'object' }, execute: () => { throw new Error('kaput') } })
    const seen: ToolResultRecord[] = []
    const done = runToolCalls(h.options(
      [{ callId: 'bad', name: 'job', arguments: '{nope' }, { callId: 'ghost', name: 'ghost', arguments: '' }, { callId: 'boom', name: 'boom', arguments: '' }, job('ok')],
      { commitResult: (execution, record, seq) => { seen.push(record); h.log.push(`result:${execution.callId}@${seq}`) } },
    ))
    await h.started('ok')
    h.finish('ok')
    const summary = await done
    expect(h.results()).toEqual(['result:bad@1', 'result:ghost@2', 'result:boom@3', 'result:ok@4'])
    expect(seen.map((record) => [record.isError, record.error?.code])).toEqual([
      [true, 'INVALID_ARGUMENTS'], [true, 'UNKNOWN_TOOL'], [true, 'TOOL_FAILED'], [false, undefined],
    ])
    expect(text(seen[0])).toMatch(/^Error: invalid JSON arguments: /)
    expect(text(seen[2])).toBe('Error: kaput')
    expect(summary.committed).toBe(4)
  })

  it('T-7: a denied call (ask without approval) commits an error and the batch goes on', async () => {
    const h = await new Harness().setup()
    h.ctx.on('tools/pre-execute', async (execution, next) => (execution.callId === 'b' ? { kind: 'ask', reason: 'risky' } : next()))
    const done = runToolCalls(h.options([job('a'), job('b'), job('c')]))
    await Promise.all([h.started('a'), h.started('c')])
    h.finish('c')
    h.finish('a')
    await done
    expect(h.results()).toEqual(['result:a@1', 'result:b@2!DENIED', 'result:c@3'])
    expect(h.log).not.toContain('body:b')
  })

  it('T-1/T-7: a call hanging past its timeout commits TIMEOUT and frees its slot', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const h = await new Harness().setup()
      let hungSignal: AbortSignal | undefined
      h.ctx.tools.register({
        name: 'hang',
        description: 'never returns',
        parameters: { type: 'object' },
        timeoutMs: 5_000,
        // Returns only when signalled; the timeout waits for it (T-6).
        execute: (_args, context) => {
          hungSignal = context.signal
          h.log.push(`body:${context.callId}`)
          return new Promise<ToolOutput>((resolve) => {
            context.signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'stopped' }] }), { once: true })
          })
        },
      })
      const done = runToolCalls(h.options([{ callId: 'slow', name: 'hang', arguments: '' }, job('b')], { maxParallelToolCalls: () => 1 }))
      await vi.advanceTimersByTimeAsync(4_999)
      expect(h.log).toEqual(['call:slow', 'body:slow'])
      await vi.advanceTimersByTimeAsync(1)
      await h.started('b')
      expect(hungSignal?.aborted).toBe(true)
      h.finish('b')
      await done
      expect(h.results()).toEqual(['result:slow@1!TIMEOUT', 'result:b@2'])
    } finally {
      vi.useRealTimers()
    }
  })

  it('T-6: cancel during a parallel group awaits started bodies and closes unstarted calls before dispatch', async () => {
    const h = await new Harness().setup()
    const controller = new AbortController()
    let settled = false
    const done = runToolCalls(h.options([job('a'), job('b'), job('c'), job('d')], { signal: controller.signal, maxParallelToolCalls: () => 2 }))
      .then((summary) => { settled = true; return summary })
    const [contextA] = await Promise.all([h.started('a'), h.started('b')])
    controller.abort()
    expect(contextA.signal.aborted).toBe(true)
    await flush()
    // Cancellation never abandons a started body.
    expect(settled).toBe(false)
    h.finish('b', { content: [{ type: 'text', text: 'Error: disk full' }], isError: true })
    await flush()
    expect(settled).toBe(false)
    h.finish('a')
    const summary = await done
    expect(h.log).toEqual([
      'call:a', 'body:a', 'call:b', 'body:b',
      `result:a@1!${TOOL_ABORTED}`, 'result:b@2!undefined',
      'aborted-before-dispatch:c', 'aborted-before-dispatch:d',
    ])
    expect(summary).toEqual({ concludesTurn: false, committed: 2, abortedBeforeDispatch: 2, aborted: true })
  })

  it('T-6: a successful outcome becomes ABORTED while an error outcome is kept verbatim', async () => {
    const h = await new Harness().setup()
    const controller = new AbortController()
    const seen = new Map<string, ToolResultRecord>()
    const done = runToolCalls(h.options([job('ok'), job('err')], {
      signal: controller.signal,
      commitResult: (execution, record) => void seen.set(execution.callId, record),
    }))
    await Promise.all([h.started('ok'), h.started('err')])
    controller.abort()
    h.finish('ok')
    h.finish('err', { content: [{ type: 'text', text: 'Error: exit 2' }], isError: true })
    await done
    expect(seen.get('ok')).toEqual({ content: [{ type: 'text', text: 'Error: tool call aborted' }], isError: true, error: { name: 'AbortError', code: TOOL_ABORTED } })
    expect(seen.get('err')).toEqual({ content: [{ type: 'text', text: 'Error: exit 2' }], isError: true })
  })

  it('T-6: a batch cancelled before it starts writes only ABORTED_BEFORE_DISPATCH pairs', async () => {
    const h = await new Harness().setup()
    const controller = new AbortController()
    controller.abort()
    const summary = await runToolCalls(h.options([job('a'), job('b', 'exclusive')], { signal: controller.signal }))
    expect(h.log).toEqual(['aborted-before-dispatch:a', 'aborted-before-dispatch:b'])
    expect(summary).toMatchObject({ committed: 0, abortedBeforeDispatch: 2, aborted: true })
    expect(TOOL_ABORTED_BEFORE_DISPATCH).toBe('ABORTED_BEFORE_DISPATCH')
  })

  it('T-6: an abort during an exclusive call ends the batch after that call', async () => {
    const h = await new Harness().setup()
    const controller = new AbortController()
    const done = runToolCalls(h.options([job('x', 'exclusive'), job('y')], { signal: controller.signal }))
    await h.started('x')
    controller.abort()
    h.finish('x')
    await done
    expect(h.log).toEqual(['call:x', 'body:x', `result:x@1!${TOOL_ABORTED}`, 'aborted-before-dispatch:y'])
  })

  it('T-6: an internal failure drains started bodies, writes no fake results and rethrows', async () => {
    const h = await new Harness().setup()
    const options = h.options([job('a'), job('b'), job('c'), job('d')])
    let settled = false
    const done = runToolCalls({
      ...options,
      startCall: async (execution) => {
        if (execution.callId === 'c') throw new Error('log append failed')
        return options.startCall(execution)
      },
    }).finally(() => { settled = true })
    await Promise.all([h.started('a'), h.started('b')])
    await flush()
    expect(settled).toBe(false)
    h.finish('b')
    await flush()
    expect(settled).toBe(false)
    h.finish('a')
    await expect(done).rejects.toThrow('log append failed')
    expect(h.log).toEqual(['call:a', 'body:a', 'call:b', 'body:b'])
  })

  it('T-6: a failing commit drains the other started bodies and rethrows without further writes', async () => {
    const h = await new Harness().setup()
    const options = h.options([job('a'), job('b'), job('c')], { maxParallelToolCalls: () => 2 })
    let settled = false
    const done = runToolCalls({
      ...options,
      commitResult: (execution, record, callSeq) => {
        if (execution.callId === 'a') throw new Error('disk full')
        return options.commitResult(execution, record, callSeq)
      },
    }).finally(() => { settled = true })
    await Promise.all([h.started('a'), h.started('b')])
    h.finish('a')
    await flush()
    expect(settled).toBe(false)
    h.finish('b')
    await expect(done).rejects.toThrow('disk full')
    // `a` commits (and fails) before its freed slot is refilled: `c` never starts.
    expect(h.log).toEqual(['call:a', 'body:a', 'call:b', 'body:b'])
  })

  it('A-6: the summary reports a committed concludesTurn result', async () => {
    const h = await new Harness().setup()
    const done = runToolCalls(h.options([job('a'), job('b')]))
    await Promise.all([h.started('a'), h.started('b')])
    h.finish('a', { content: [{ type: 'text', text: 'handing back' }], concludesTurn: true })
    h.finish('b')
    expect(await done).toMatchObject({ concludesTurn: true, committed: 2 })
  })

  it('T-5: tools/result is emitted after each ordered commit', async () => {
    const h = await new Harness().setup()
    h.ctx.on('tools/result', (execution, record) => void h.log.push(`emitted:${execution.callId}:${text(record)}`))
    const done = runToolCalls(h.options([job('a'), job('b')]))
    await Promise.all([h.started('a'), h.started('b')])
    h.finish('b')
    h.finish('a')
    await done
    expect(h.log.slice(4)).toEqual(['result:a@1', 'emitted:a:ok a', 'result:b@2', 'emitted:b:ok b'])
  })

  it('T-3: an empty batch does nothing', async () => {
    const h = await new Harness().setup()
    expect(await runToolCalls(h.options([]))).toEqual({ concludesTurn: false, committed: 0, abortedBeforeDispatch: 0, aborted: false })
    expect(h.log).toEqual([])
  })
})

describe('T-3/T-4 properties', () => {
  it('T-3/T-4: any mix, pool size and finishing order keeps model order, the pool bound and barriers', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.boolean(), { minLength: 1, maxLength: 9 }),
      fc.integer({ min: 1, max: 4 }),
      fc.array(fc.nat(), { minLength: 20, maxLength: 20 }),
      async (exclusive, pool, picks) => {
        const h = await new Harness().setup()
        const calls = exclusive.map((ex, i) => job(`k${i}`, ex ? 'exclusive' : 'parallel'))
        const overlaps: string[] = []
        let settled = false
        const done = runToolCalls(h.options(calls, { maxParallelToolCalls: () => pool })).finally(() => { settled = true })
        const finished = new Set<string>()
        for (let round = 0; !settled; round++) {
          await flush()
          const running = [...h.gates.keys()].filter((id) => h.log.includes(`body:${id}`) && !finished.has(id))
          if (running.length === 0) continue
          if (running.length > 1 && running.some((id) => exclusive[Number(id.slice(1))])) overlaps.push(running.join(','))
          const id = running[picks[round % picks.length] % running.length]
          finished.add(id)
          h.finish(id)
        }
        await done
        const ids = calls.map((call) => call.callId)
        // T-4: results in model order, each after its own tool/call.
        expect(h.results()).toEqual(ids.map((id, i) => `result:${id}@${i + 1}`))
        // T-3: calls start one at a time in model order.
        expect(h.log.filter((entry) => entry.startsWith('call:'))).toEqual(ids.map((id) => `call:${id}`))
        expect(h.maxActive).toBeLessThanOrEqual(pool)
        // T-3: an exclusive call overlaps nothing, and starts only after every earlier result.
        expect(overlaps).toEqual([])
        exclusive.forEach((ex, i) => {
          if (!ex) return
          const start = h.log.indexOf(`call:k${i}`)
          for (let j = 0; j < i; j++) expect(h.log.indexOf(`result:k${j}@${j + 1}`)).toBeLessThan(start)
          for (let j = i + 1; j < calls.length; j++) expect(h.log.indexOf(`call:k${j}`)).toBeGreaterThan(h.log.indexOf(`result:k${i}@${i + 1}`))
        })
      },
    ), { numRuns: 60 })
  })
})
