import { promiseHooks } from 'node:v8'
import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import type { StreamChunk } from '../llm/types.js'

/** A text answer of `n` deltas, handed out one chunk per `next()`. */
function manyDeltas(n: number): StreamChunk[] {
  const chunks: StreamChunk[] = [{ type: 'block-start', index: 0, blockType: 'text' }]
  for (let i = 0; i < n; i++) chunks.push({ type: 'text-delta', index: 0, text: 'x' })
  chunks.push({ type: 'block-end', index: 0, block: { type: 'text', text: 'x'.repeat(n) } })
  chunks.push({ type: 'finish', reason: { kind: 'stop' } })
  return chunks
}

describe('agent loop: consuming a model stream', () => {
  it('A-9/#43.9: cancellation stays armed with O(1) reactions per step: no promise gains a reaction per chunk', async () => {
    const N = 500
    const h = await loopHarness({ responses: [manyDeltas(N)] })
    // Every promise made while the step streams, counted by the promise it was chained from.
    const children = new WeakMap<Promise<unknown>, number>()
    let most = 0
    const stop = promiseHooks.onInit((_promise, parent) => {
      if (parent === undefined) return
      const count = (children.get(parent) ?? 0) + 1
      children.set(parent, count)
      if (count > most) most = count
    })
    try {
      h.agent.followup('go')
      await h.agent.whenIdle()
    } finally {
      stop()
    }
    expect(h.of('assistant/chunk')).toHaveLength(N + 3)
    // A few reactions per long-lived promise is fine; one per chunk is what must not happen.
    expect(most).toBeLessThan(N / 10)
  })

  it('A-9: a cancel mid-stream still stops consumption at once, also with an adapter that never yields again', async () => {
    let release!: () => void
    const h = await loopHarness({
      responses: [async function* (): AsyncGenerator<StreamChunk> {
        yield { type: 'block-start', index: 0, blockType: 'text' }
        yield { type: 'text-delta', index: 0, text: 'partial' }
        await new Promise<void>((resolve) => { release = resolve })
      }],
    })
    const streamed = new Promise<void>((resolve) => {
      h.ctx.on('session/event', (_session, event) => { if (event.type === 'assistant/chunk' && (event.data as { chunk: StreamChunk }).chunk.type === 'text-delta') resolve() })
    })
    h.agent.followup('go')
    await streamed
    h.agent.cancel()
    await h.agent.whenIdle()
    expect(h.of('assistant/message')[0]!.data.interrupted).toBe(true)
    expect(h.of('turn/end')[0]!.data.reason).toMatchObject({ kind: 'aborted' })
    release()
  })
})
