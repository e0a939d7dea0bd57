/**
 * The scheduler under timeouts, cancellation and approval waits (T-4, T-6): a started body is
 * never abandoned, a call cancelled before its body starts is ABORTED_BEFORE_DISPATCH, and a
 * finished result reaches the log while a later call still waits.
 */
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import type { Tool } from '../tools/api.js'
import { defineTool } from '../tools/index.js'

function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>(r => { resolve = r })
  return { promise, resolve }
}

/** Lets every queued microtask and immediate run: the scheduler's own work needs no I/O. */
async function settle(rounds = 30): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>(resolve => setImmediate(resolve))
}

const codes = (h: LoopHarness) => h.of('tool/result').map(e => `${e.data.message.source.callId}:${e.data.error?.code ?? 'ok'}`)

describe('scheduler races (T-6)', () => {
  it('T-6: a timed-out body is awaited before its TIMEOUT result commits and before the next exclusive call starts', async () => {
    const trace: string[] = []
    const slow: Tool = defineTool({
      name: 'slow', description: 'ignores nothing, but takes a while to stop', schema: z.object({}), timeoutMs: 5,
      async execute(_args, context) {
        trace.push('slow started')
        await new Promise<void>(resolve => context.signal.addEventListener('abort', () => resolve(), { once: true }))
        trace.push('slow signalled')
        // Cleaning up takes a while (think: a process group being reaped).
        await settle()
        trace.push('slow stopped')
        return { content: [{ type: 'text', text: 'late' }] }
      },
    })
    const next: Tool = defineTool({
      name: 'next', description: 'exclusive', schema: z.object({}),
      execute: () => { trace.push('next started'); return { content: [{ type: 'text', text: 'ok' }] } },
    })
    const h = await loopHarness({ tools: [slow, next], responses: [toolCalls([{ id: 'a', name: 'slow' }, { id: 'b', name: 'next' }]), text('done')] })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(trace).toEqual(['slow started', 'slow signalled', 'slow stopped', 'next started'])
    expect(codes(h)).toEqual(['a:TIMEOUT', 'b:ok'])
    const types = h.session.events.filter(e => e.type === 'tool/call' || e.type === 'tool/result').map(e => `${e.type}`)
    expect(types).toEqual(['tool/call', 'tool/result', 'tool/call', 'tool/result'])
  })

  it('T-6: a cancel between authorization and dispatch yields ABORTED_BEFORE_DISPATCH and the body never runs', async () => {
    const ran: string[] = []
    const tool: Tool = defineTool({
      name: 'work', description: 'records that it ran', schema: z.object({}),
      execute: () => { ran.push('work'); return { content: [{ type: 'text', text: 'ran' }] } },
    })
    const authorizing = deferred()
    const gate = deferred()
    const h = await loopHarness({ tools: [tool], responses: [toolCalls([{ id: 'c1', name: 'work' }])] })
    h.ctx.on('tools/pre-execute', async (_execution, next) => {
      authorizing.resolve()
      await gate.promise
      return next()
    })
    h.agent.followup('go')
    await authorizing.promise
    h.agent.cancel()
    gate.resolve()
    await h.agent.whenIdle()
    expect(ran).toEqual([])
    expect(codes(h)).toEqual(['c1:ABORTED_BEFORE_DISPATCH'])
    expect(h.of('turn/end')[0]!.data.reason.kind).toBe('aborted')
  })

  it('T-4: a finished result commits while a later call still waits for approval', async () => {
    const fast: Tool = defineTool({
      name: 'fast', description: 'parallel, instant', schema: z.object({}), isConcurrencySafe: () => true,
      execute: () => ({ content: [{ type: 'text', text: 'fast' }] }),
    })
    const guarded: Tool = defineTool({
      name: 'guarded', description: 'parallel, needs approval', schema: z.object({}), isConcurrencySafe: () => true,
      execute: () => ({ content: [{ type: 'text', text: 'guarded' }] }),
    })
    let seenWhileWaiting: string[] | undefined
    const h = await loopHarness({
      tools: [fast, guarded],
      responses: [toolCalls([{ id: 'f', name: 'fast' }, { id: 'g', name: 'guarded' }]), text('done')],
      setup: (ctx) => {
        ctx.provide('approval', {
          request: async () => {
            await settle()
            seenWhileWaiting = codes(h)
            return 'allowed-once'
          },
        })
      },
    })
    h.ctx.on('tools/pre-execute', async (execution, next) => execution.name === 'guarded' ? { kind: 'ask', reason: 'test' } : next())
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(seenWhileWaiting).toEqual(['f:ok'])
    expect(codes(h)).toEqual(['f:ok', 'g:ok'])
  })
})
