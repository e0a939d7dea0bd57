import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls, type ScriptedResponse } from '../../test-support/scripted-model.js'
import type { LlmCallOptions, TextBlock, ToolResultMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { ApprovalPlugin, type PendingQuestion } from '../approval/index.js'
import { SubagentsPlugin, SubagentToolsPlugin } from '../subagents/index.js'
import { DELEGATED_CALLER_TEXT, QuestionToolPlugin } from './index.js'

let harness: LoopHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const ASK = { questions: [{ id: 'cuda-fallback', header: 'Deployment', question: 'Should deployment use the CUDA fallback?', options: [{ label: 'Yes' }, { label: 'No' }] }] }

/** Responses keyed by the first user text of the requesting session (parent and child run in one model). */
function router(scripts: Record<string, ScriptedResponse[]>): ScriptedResponse {
  return (request: LlmCallOptions, signal) => {
    const first = request.messages.find(m => m.role === 'user' && m.source.kind === 'user')
    const key = (first?.content.find(b => b.type === 'text') as TextBlock | undefined)?.text ?? ''
    const next = scripts[key]?.shift()
    if (next === undefined) throw new Error(`no response left for "${key}"`)
    return typeof next === 'function' ? next(request, signal) : next
  }
}

async function setup(respond: ScriptedResponse, withApproval = true): Promise<LoopHarness> {
  harness = await loopHarness({
    responses: Array.from({ length: 10 }, () => respond),
    setup: async (ctx: Context) => {
      await ctx.plugin(SystemPromptPlugin).await()
      if (withApproval) await ctx.plugin(ApprovalPlugin, { mode: 'workspace-write', policy: 'ask' }).await()
      await ctx.plugin(SubagentsPlugin).await()
      await ctx.plugin(SubagentToolsPlugin, { tools: [{ provider: 'spawn', toolName: 'subagent', backgroundMode: 'one-shot', maxDepth: 1 }] }).await()
      await ctx.plugin(QuestionToolPlugin).await()
    },
  })
  return harness
}

const results = (events: readonly SessionEvent[]) => events.filter(e => e.type === 'tool/result').map(e => {
  const data = e.data as { message: ToolResultMessage; error?: unknown }
  const block = data.message.content[0] as unknown as { content: { text: string }[]; isError: boolean }
  return { text: block.content.map(b => b.text).join(''), isError: block.isError, error: data.error }
})

describe('ask_user_question', () => {
  it('asks the user through the approval seam in a top-level session and returns the answers in the recorded shape', async () => {
    const h = await setup(router({ ask: [toolCalls([{ id: 'q1', name: 'ask_user_question', arguments: ASK }]), text('THANKS')] }))
    const asked: PendingQuestion[] = []
    h.ctx.approval.questioner((question) => {
      asked.push(question)
      return [{ id: 'cuda-fallback', selected: ['Yes'] }]
    })
    h.agent.followup('ask')
    await h.agent.whenIdle()
    expect(asked.map(q => [q.sessionId, q.callId, q.questions])).toEqual([[h.session.id, 'q1', [{ id: 'cuda-fallback', header: 'Deployment', question: 'Should deployment use the CUDA fallback?', options: [{ label: 'Yes' }, { label: 'No' }] }]]])
    expect(results(h.session.events)).toEqual([{ text: '{"answers":[{"id":"cuda-fallback","selected":["Yes"]}]}', isError: false, error: undefined }])
    expect(h.ctx.approval.pendingQuestions()).toEqual([])
  })

  it('fails closed with a clear line when no surface can show questions (a headless run), or an answer names options that were not offered', async () => {
    const h = await setup(router({ ask: [
      toolCalls([{ id: 'q1', name: 'ask_user_question', arguments: ASK }]),
      toolCalls([{ id: 'q2', name: 'ask_user_question', arguments: ASK }]),
      text('DONE'),
    ] }))
    h.agent.followup('ask')
    await h.agent.whenIdle()
    const first = results(h.session.events)[0]!
    expect(first).toMatchObject({ isError: true, error: { name: 'UserQuestionError', code: 'UNAVAILABLE' } })
    expect(first.text).toMatch(/^Error: no one can answer questions in this session/)
    const off = h.ctx.approval.questioner(() => [{ id: 'cuda-fallback', selected: ['Maybe'] }])
    h.agent.followup('ask')
    await h.agent.whenIdle()
    off()
    expect(results(h.session.events)[1]).toMatchObject({ isError: true, error: { code: 'UNAVAILABLE' } })
  })

  it('SA-14: a child owned by a live parent cannot ask the user: DELEGATED_CALLER with the recorded text, nobody is asked, the parent completes', async () => {
    const respond = router({
      delegate: [toolCalls([{ id: 'c1', name: 'subagent', arguments: { description: 'Question check', prompt: 'child asks' } }]), text('PARENT_COMPLETED')],
      'child asks': [toolCalls([{ id: 'call_child_question', name: 'ask_user_question', arguments: ASK }]), text('Unresolved: Should deployment use the CUDA fallback?')],
    })
    const h = await setup(respond)
    let asked = 0
    h.ctx.approval.questioner(() => { asked++; return [{ id: 'cuda-fallback', selected: ['Yes'] }] })
    const children: SessionEvent[][] = []
    h.ctx.on('session/created', (session) => { if (session.header.parentSession !== undefined) children.push(session.events as SessionEvent[]) })
    h.agent.followup('delegate')
    await h.agent.whenIdle()
    expect(asked).toBe(0)
    expect(results(children[0]!)).toEqual([{ text: `Error: ${DELEGATED_CALLER_TEXT}`, isError: true, error: { name: 'UserQuestionError', code: 'DELEGATED_CALLER' } }])
    expect(DELEGATED_CALLER_TEXT).toBe('human interaction is unavailable while the calling agent is owned by another live agent; include the unresolved question or decision in the child agent\'s final result')
    expect(results(h.session.events)).toEqual([{ text: 'Unresolved: Should deployment use the CUDA fallback?', isError: false, error: undefined }])
  })

  it('rejects malformed questions before asking anyone', async () => {
    const h = await setup(router({ ask: [toolCalls([{ id: 'q1', name: 'ask_user_question', arguments: { questions: [{ id: 'a', question: '' }] } }]), text('DONE')] }))
    let asked = 0
    h.ctx.approval.questioner(() => { asked++; return [] })
    h.agent.followup('ask')
    await h.agent.whenIdle()
    expect(asked).toBe(0)
    expect(results(h.session.events)[0]).toMatchObject({ isError: true, error: { code: 'INVALID_ARGUMENTS' } })
    expect(results(h.session.events)[0]!.text).toContain('questions[0].question must be a non-empty string')
  })
})
