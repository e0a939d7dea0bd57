import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopHarness } from '../../test-support/agent-harness.js'
import { SCRIPTED_MODEL_INFO, text, toolCalls } from '../../test-support/scripted-model.js'
import { defineTool } from '../tools/index.js'

const echo = defineTool({
  name: 'echo',
  description: 'echoes its text',
  schema: z.object({ text: z.string() }),
  execute: ({ text: value }) => ({ content: [{ type: 'text', text: value }] }),
})

const reasoning = { loop: { thinking: true, reasoningEffort: 'high' as const }, models: [{ ...SCRIPTED_MODEL_INFO, reasoningEfforts: ['low', 'high'] as const }] }
const script = () => [toolCalls([{ id: 'c1', name: 'echo', arguments: { text: 'x' } }]), text('done')]

describe('agent/request-config: a per-step request policy (A-10, A-11)', () => {
  it('A-10: a listener that lowers the effort after a tool result changes the request, logged as a header change first', async () => {
    const h = await loopHarness({ responses: script(), tools: [echo], ...reasoning })
    const seen: { turn: number; step: number }[] = []
    h.ctx.on('agent/request-config', (payload, next) => {
      seen.push({ turn: payload.turn, step: payload.step })
      const config = next()
      return payload.step === 1 ? config : { ...config, reasoningEffort: 'low' }
    })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(seen).toEqual([{ turn: 1, step: 1 }, { turn: 1, step: 2 }])
    const headers = h.of('request/header').map(event => event.data)
    expect(headers.map(header => [header.reason, header.header.config.reasoningEffort])).toEqual([['initial', 'high'], ['change', 'low']])
    expect(h.model.requests.map(request => request.reasoningEffort)).toEqual(['high', 'low'])
  })

  it('without a listener every step asks with the agent config and one header is logged', async () => {
    const h = await loopHarness({ responses: script(), tools: [echo], ...reasoning })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('request/header')).toHaveLength(1)
    expect(h.model.requests.map(request => request.reasoningEffort)).toEqual(['high', 'high'])
  })

  it('an effort the model does not offer fails the turn before any request leaves', async () => {
    const h = await loopHarness({ responses: script(), tools: [echo], ...reasoning })
    h.ctx.on('agent/request-config', (_payload, next) => ({ ...next(), reasoningEffort: 'max' }))
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.model.requests).toHaveLength(0)
    const end = h.of('turn/end')[0]!.data as { reason: { kind: string; error?: { message: string } } }
    expect(end.reason.kind).toBe('error')
  })
})
