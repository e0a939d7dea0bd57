import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopHarness } from '../../test-support/agent-harness.js'
import { errorFinish, text, toolCalls, type ScriptedResponse } from '../../test-support/scripted-model.js'
import type { StreamChunk } from '../llm/types.js'
import type { Tool } from '../tools/api.js'
import { defineTool } from '../tools/index.js'

type Move =
  | { kind: 'text' }
  | { kind: 'tools'; calls: { parallel: boolean; fail: boolean }[] }
  | { kind: 'error' }
  | { kind: 'max-tokens' }

const tools: Tool[] = [
  defineTool({ name: 'par', description: 'parallel-safe', schema: z.object({ fail: z.boolean() }), isConcurrencySafe: () => true,
    execute: async ({ fail }) => { await Promise.resolve(); if (fail) throw new Error('failed'); return { content: [{ type: 'text', text: 'ok' }] } } }),
  defineTool({ name: 'ex', description: 'exclusive', schema: z.object({ fail: z.boolean() }),
    execute: ({ fail }) => { if (fail) throw new Error('failed'); return { content: [{ type: 'text', text: 'ok' }] } } }),
]

function response(move: Move, n: number): ScriptedResponse {
  switch (move.kind) {
    case 'text': return text(`reply ${n}`)
    case 'error': return errorFinish('AUTH')
    case 'max-tokens': return [{ type: 'text-delta', index: 0, text: 'cut' }, { type: 'finish', reason: { kind: 'max-tokens' } }] as StreamChunk[]
    case 'tools': return toolCalls(move.calls.map((c, i) => ({ id: `c${n}-${i}`, name: c.parallel ? 'par' : 'ex', arguments: { fail: c.fail } })))
  }
}

const move: fc.Arbitrary<Move> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'text' } as const) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tools' as const), calls: fc.array(fc.record({ parallel: fc.boolean(), fail: fc.boolean() }), { minLength: 1, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'error' } as const) },
  { weight: 1, arbitrary: fc.constant({ kind: 'max-tokens' } as const) },
)

describe('agent loop property (A-5..A-7, T-4)', () => {
  it('any model script gives a well-formed log: every call answered in model order, one turn/end per prompt, the invariant holds', async () => {
    // Scripts end with a text reply so the last turn has a model answer to end on.
    await fc.assert(fc.asyncProperty(fc.array(move, { maxLength: 12 }).map(m => [...m, { kind: 'text' } as Move]), async (moves) => {
      const h = await loopHarness({ tools, responses: moves.map(response) })
      // Prompt until the script is used up: each turn consumes moves up to its ending one.
      let prompts = 0
      while (h.model.remaining > 0) {
        h.agent.followup(`prompt ${prompts++}`)
        await h.agent.whenIdle()
      }
      expect(h.model.requests).toHaveLength(moves.length)
      expect(h.of('turn/end')).toHaveLength(prompts)
      const calls = h.of('tool/call').map(e => e.data.callId)
      const results = h.of('tool/result').map(e => e.data.message.source.callId)
      expect(results).toEqual(calls)
      const expectedCalls = moves.flatMap((m, n) => m.kind === 'tools' ? m.calls.map((_, i) => `c${n}-${i}`) : [])
      expect(calls).toEqual(expectedCalls)
      for (const result of h.of('tool/result')) {
        const call = h.session.events[result.sourceEventSeqs![0]!]!
        expect(call.type).toBe('tool/call')
      }
      // Turn end reasons follow the move that ended each turn; max-tokens never runs tool calls.
      const reasons = h.of('turn/end').map(e => e.data.reason.kind)
      const expected: string[] = []
      for (const m of moves) {
        if (m.kind === 'text') expected.push('completed')
        else if (m.kind === 'error') expected.push('error')
        else if (m.kind === 'max-tokens') expected.push('max-tokens')
      }
      expect(reasons).toEqual(expected)
      await h.dispose()
    }), { numRuns: 40 })
  }, 120_000)

  it('A-9/T-6: cancelling at any model call or tool body leaves a well-formed log, and the agent keeps working', async () => {
    const where = fc.record({ at: fc.nat(8), inTool: fc.boolean(), afterChunks: fc.nat(3) })
    await fc.assert(fc.asyncProperty(fc.array(move, { maxLength: 8 }).map(m => [...m, { kind: 'text' } as Move]), where, async (moves, cancel) => {
      let agentRef: { cancel(): void } | undefined
      let requests = 0
      let bodies = 0
      const cancellingTools: Tool[] = tools.map(tool => ({
        ...tool,
        execute: async (args: never, context: never) => {
          if (cancel.inTool && bodies++ === cancel.at) agentRef!.cancel()
          return tool.execute(args, context)
        },
      }))
      const responses: ScriptedResponse[] = moves.map((m, n) => async function* (request, signal) {
        const chunks = response(m, n) as StreamChunk[]
        const index = requests++
        for (let i = 0; i < chunks.length; i++) {
          if (!cancel.inTool && index === cancel.at && i === cancel.afterChunks) {
            agentRef!.cancel()
            await new Promise<void>(resolve => { if (signal?.aborted) resolve(); else signal?.addEventListener('abort', () => resolve()) })
            throw Object.assign(new Error('aborted'), { code: 'ABORTED' })
          }
          yield chunks[i]!
        }
      })
      const h = await loopHarness({ tools: cancellingTools, responses })
      agentRef = h.agent
      h.agent.followup('go')
      await h.agent.whenIdle()
      for (let turn = 0; turn < 12 && h.model.remaining > 0; turn++) {
        h.agent.followup('again')
        await h.agent.whenIdle()
      }
      // Well-formed whatever the cancel point: every call answered, steps and turns closed.
      expect(h.of('tool/result').map(e => e.data.message.source.callId)).toEqual(h.of('tool/call').map(e => e.data.callId))
      expect(h.session.position.turnOpen).toBe(false)
      expect(h.of('step/start')).toHaveLength(h.of('step/end').length)
      const aborted = h.of('turn/end').filter(e => e.data.reason.kind === 'aborted')
      expect(aborted.length).toBeLessThanOrEqual(1)
      for (const end of aborted) {
        const index = h.session.events.indexOf(end)
        expect(h.session.events[index - 1]!.type).toBe('step/end')
      }
      for (const result of h.of('tool/result')) {
        if (result.data.error?.code === 'ABORTED' || result.data.error?.code === 'ABORTED_BEFORE_DISPATCH') {
          expect(aborted).toHaveLength(1)
        }
      }
      await h.dispose()
    }), { numRuns: 60 })
  }, 120_000)
})
