import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopHarness } from '../../test-support/agent-harness.js'
import { errorFinish, SCRIPTED_MODEL_INFO, text, toolCalls } from '../../test-support/scripted-model.js'
import type { LlmCallOptions, Message } from '../llm/types.js'
import { defineTool } from '../tools/index.js'
import { CompactionPlugin, estimateTokens } from './index.js'

const big = defineTool({
  name: 'dump',
  description: 'prints a lot',
  schema: z.object({ size: z.number() }),
  execute: ({ size }) => ({ content: [{ type: 'text', text: 'x'.repeat(size) }] }),
})

const summaryFor = (request: LlmCallOptions) => request.meta?.purpose === 'compaction'
const messageTexts = (messages: readonly Message[]) => messages.map(m => m.content.map(b => ('text' in b ? b.text : b.type === 'tool-result' ? `result:${b.content.map(c => ('text' in c ? c.text : '')).join('')}` : b.type)).join('|'))

async function harness(responses: NonNullable<Parameters<typeof loopHarness>[0]>['responses'], config = {}) {
  return loopHarness({ responses, tools: [big], setup: async ctx => { await ctx.plugin(CompactionPlugin, config) } })
}

describe('compaction', () => {
  it('the estimate without reported usage is the surface size, folded incrementally across appends and a replace', async () => {
    const h = await harness([
      toolCalls([{ id: 'c1', name: 'dump', arguments: { size: 4000 } }]),
      text('looked at it'),
      text('second answer'),
    ])
    const plugin = new CompactionPlugin(h.ctx)
    const surfaceSize = () => h.session.deriveMessages().reduce((sum, message) => sum + estimateTokens(message), 0)
    expect(plugin.estimate(h.session)).toBe(0)
    h.agent.followup('dump something')
    await h.agent.whenIdle()
    expect(plugin.estimate(h.session)).toBe(surfaceSize())
    // A replace (as the pruning tier writes) shrinks the surface; the fold recomputes it.
    const result = h.of('tool/result')[0]!
    const block = result.data.message.content[0]
    h.session.append('turn/start', { turn: 2 })
    h.session.append('tool/result', { ...result.data, message: { ...result.data.message, content: [{ ...block, content: [{ type: 'text', text: 'stub' }] }] } },
      { surfaceOp: { op: 'replace', start: result.seq, end: result.seq }, sourceEventSeqs: [result.seq] })
    h.session.append('turn/end', { turn: 2, reason: { kind: 'completed' } })
    expect(plugin.estimate(h.session)).toBe(surfaceSize())
    expect(plugin.estimate(h.session)).toBeLessThan(1000)
    h.agent.followup('and now?')
    await h.agent.whenIdle()
    expect(plugin.estimate(h.session)).toBe(surfaceSize())
    await h.dispose()
  })

  it('recovers from a context-overflow error: summary replaces the old span, the retried request sees it, invariant holds', async () => {
    const h = await harness([
      text('first answer'),
      errorFinish('CONTEXT_WINDOW_EXCEEDED', 'too long'),
      text('Goal: answer questions. Done so far: first answer.'),
      text('RECOVERED'),
    ])
    h.agent.followup('first question')
    await h.agent.whenIdle()
    h.agent.followup('second question')
    await h.agent.whenIdle()
    const types = h.types()
    const start = types.indexOf('compaction/start')
    expect(start).toBeGreaterThan(0)
    expect(types.slice(start, start + 4)).toEqual(['compaction/start', 'compaction/summary', 'user/message', 'compaction/end'])
    const replacing = h.session.events[start + 2]
    expect(replacing.surfaceOp).toMatchObject({ op: 'replace' })
    expect(h.of('turn/end').at(-1)!.data.reason).toEqual({ kind: 'completed' })
    // The summary call saw the old span; the retried request sees the summary, not the old turn.
    const summaryCall = h.model.requests.find(summaryFor)!
    expect(messageTexts(summaryCall.messages)[0]).toContain('first question')
    const retried = h.model.requests.at(-1)!
    const texts = messageTexts(retried.messages)
    expect(texts.some(t => t.includes('Goal: answer questions.'))).toBe(true)
    expect(texts.some(t => t === 'first question')).toBe(false)
    expect(texts.at(-1)).toBe('second question')
    // The shadowed events are still in the log.
    expect(h.session.events.some(e => e.type === 'user/message' && (e.data as Message).content[0].type === 'text' && ((e.data as Message).content[0] as { text: string }).text === 'first question')).toBe(true)
    await h.dispose()
  })

  it('a second overflow in the same step is not retried again (the error ends the turn)', async () => {
    const h = await harness([
      text('a'),
      errorFinish('CONTEXT_WINDOW_EXCEEDED'),
      text('summary'),
      errorFinish('CONTEXT_WINDOW_EXCEEDED'),
    ])
    h.agent.followup('q1')
    await h.agent.whenIdle()
    h.agent.followup('q2')
    await h.agent.whenIdle()
    expect(h.of('turn/end').at(-1)!.data.reason).toMatchObject({ kind: 'error', error: { code: 'CONTEXT_WINDOW_EXCEEDED' } })
    await h.dispose()
  })

  it('triggers before a step when the estimate passes the threshold, pruning old large tool results first (S-9 replace)', async () => {
    const h = await harness([
      toolCalls([{ id: 'c1', name: 'dump', arguments: { size: 9000 } }]),
      text('looked at it', { usage: { inputTokens: 2600, outputTokens: 10 } }),
      text('summary of the dump'),
      text('next answer'),
    ], { pruneAbove: 1000, threshold: 2500 / SCRIPTED_MODEL_INFO.contextWindow })
    h.agent.followup('dump something')
    await h.agent.whenIdle()
    h.agent.followup('and now?')
    await h.agent.whenIdle()
    const prune = h.of('compaction/prune')
    expect(prune).toHaveLength(1)
    const replaced = h.of('tool/result').find(e => typeof e.surfaceOp === 'object')!
    expect(replaced.data.message.content[0].content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^\[pruned: this earlier tool output \(9000 characters\)/) })
    expect(replaced.data.message.id).toBe(h.of('tool/result')[0].data.message.id)
    const last = h.model.requests.at(-1)!
    expect(JSON.stringify(last.messages)).not.toContain('x'.repeat(2000))
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['completed', 'completed'])
    await h.dispose()
  })

  it('/compact compacts by hand and makes no model call for the command itself', async () => {
    const h = await harness([text('answer one'), text('the summary')])
    h.agent.followup('question one')
    await h.agent.whenIdle()
    h.agent.followup('/compact')
    await h.agent.whenIdle()
    expect(h.model.requests).toHaveLength(2)
    expect(summaryFor(h.model.requests[1])).toBe(true)
    expect(h.of('compaction/end')).toHaveLength(1)
    expect(h.session.deriveMessages().map(m => m.source.kind)).toEqual(['plugin', 'model'])
    expect(h.of('turn/end').at(-1)!.data.reason).toEqual({ kind: 'completed' })
    await h.dispose()
  })
})
