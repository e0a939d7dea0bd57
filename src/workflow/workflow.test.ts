import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { Router } from '../../test-support/model-router.js'
import { hang, text, toolCalls } from '../../test-support/scripted-model.js'
import type { ToolResultMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'
import type { Session } from '../session/api.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { SubagentsPlugin } from '../subagents/index.js'
import { CodeModePlugin } from '../code-mode/index.js'
import { WorkflowPlugin, type WorkflowConfig } from './index.js'
import { roundPrompt } from './ralph.js'
import { defaultLabel } from './engine.js'

let harness: LoopHarness | undefined
/** Child sessions as they were created (a finished child leaves memory). */
const created: Session[] = []
afterEach(async () => {
  created.length = 0
  await harness?.dispose()
  harness = undefined
})

async function setup(router: Router, config: WorkflowConfig = {}, codeMode = false): Promise<LoopHarness> {
  harness = await loopHarness({
    responses: Array.from({ length: 40 }, () => router.respond),
    setup: async (ctx: Context) => {
      await ctx.plugin(SystemPromptPlugin).await()
      ctx.on('session/created', (session) => { if (session.header.parentSession !== undefined) created.push(session) })
      await ctx.plugin(SubagentsPlugin).await()
      await ctx.plugin(WorkflowPlugin, config).await()
      if (codeMode) await ctx.plugin(CodeModePlugin, { mode: 'both', runtime: 'worker' }).await()
    },
  })
  return harness
}

const workflow = (id: string, script: string, extra: Record<string, unknown> = {}) =>
  toolCalls([{ id, name: 'workflow', arguments: { script, meta: { name: 'wf-test', description: 'a test workflow' }, ...extra } }])
const result = (h: LoopHarness) => {
  const event = h.of('tool/result')[0]!
  const block = (event.data as { message: ToolResultMessage }).message.content[0] as unknown as { content: { text: string }[]; isError: boolean }
  return { text: block.content.map(b => b.text).join(''), isError: block.isError }
}
const workflowEvents = (events: readonly SessionEvent[]) => events.filter(e => e.type.startsWith('tool-workflow/')).map(e => ({ type: e.type, ...e.data as object }))
const childSessions = (h: LoopHarness) => created.filter(s => s.header.parentSession === h.session.id)

describe('workflow', () => {
  it('runs a child per agent() and records run-start, agent-start (label, phase, child id), agent-end and run-end around the result', async () => {
    const script = "phase('Delegate')\nconst reply = await agent('Reply with exactly CHILD_OK.', { label: 'the-child' })\nreturn { reply }"
    const router = new Router()
      .script('go', workflow('w1', script), text('DONE'))
      .script('Reply with exactly CHILD_OK.', text('CHILD_OK'))
    const h = await setup(router)
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(result(h)).toEqual({ text: 'workflow "wf-test" completed (1 agent).\nReturn value:\n{\n  "reply": "CHILD_OK"\n}', isError: false })
    const [child] = childSessions(h)
    const events = workflowEvents(h.session.events)
    const runId = (events[0] as unknown as { runId: string }).runId
    expect(events).toEqual([
      { type: 'tool-workflow/run-start', runId, name: 'wf-test' },
      { type: 'tool-workflow/agent-start', runId, seq: 1, label: 'the-child', phase: 'Delegate', childId: child!.id },
      { type: 'tool-workflow/agent-end', runId, seq: 1, outcome: 'completed' },
      { type: 'tool-workflow/run-end', runId, stopReason: 'completed' },
    ])
    // In the log between the call and its result; the child's descriptor carries no label.
    const types = h.session.events.map(e => e.type)
    expect(types.indexOf('tool/call')).toBeLessThan(types.indexOf('tool-workflow/run-start'))
    expect(types.indexOf('tool-workflow/run-end')).toBeLessThan(types.indexOf('tool/result'))
    expect(child!.events.find(e => e.type === 'subagent/descriptor')!.data).toEqual({ version: 2, mode: 'one-shot', provider: 'spawn' })
  })

  it('a schema child answers through structured_output (validated object); a failing child is null in parallel; pipeline passes (prev, item, index)', async () => {
    const script = `
const schema = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'], additionalProperties: false }
const [a, b] = await parallel([() => agent('count one', { schema }), () => agent('fail two')])
const piped = await pipeline([1, 2], (prev, item, index) => prev * 10 + index)
return { a, b, piped }`
    const router = new Router()
      .script('go', workflow('w1', script), text('DONE'))
      .script('count one', toolCalls([{ id: 's1', name: 'structured_output', arguments: { n: 7 } }]))
      .script('fail two', () => { throw new Error('model down') })
    const h = await setup(router)
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(result(h).text).toContain('"a": {\n    "n": 7\n  },\n  "b": null,\n  "piped": [\n    10,\n    21\n  ]')
    const ends = workflowEvents(h.session.events).filter(e => e.type === 'tool-workflow/agent-end').map(e => (e as unknown as { outcome: string }).outcome).sort()
    expect(ends).toEqual(['completed', 'failed'])
    // The structured_output call ended the child's turn: one request.
    const schemaChild = childSessions(h).find(s => JSON.stringify(s.events).includes('count one'))!
    expect(schemaChild.events.filter(e => e.type === 'request/context')).toHaveLength(1)
  })

  it('a misused hook kills the script even inside try/catch; the run ends in error', async () => {
    const script = "try { await agent('x', { effort: 'high' }) } catch {}\nreturn 'survived'"
    const router = new Router().script('go', workflow('w1', script), text('DONE'))
    const h = await setup(router)
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(result(h)).toEqual({ text: 'Error: workflow run failed: agent(prompt, opts): unknown option "effort" (supported: label, phase, schema, provider, model)', isError: true })
    expect(workflowEvents(h.session.events).map(e => e.type)).toEqual(['tool-workflow/run-start', 'tool-workflow/run-end'])
    expect(workflowEvents(h.session.events)[1]).toMatchObject({ stopReason: 'error' })
    expect(childSessions(h)).toHaveLength(0)
  })

  it('the total-agent cap kills the script at the first agent over it', async () => {
    const script = "for (let i = 0; i < 3; i++) await agent('again')\nreturn 'no'"
    const router = new Router().script('go', workflow('w1', script), text('DONE')).script('again', text('ok'), text('ok'), text('ok'))
    const h = await setup(router, { maxTotalAgents: 2 })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(result(h)).toEqual({ text: "Error: workflow run failed: agent(): the run's cap of 2 agents is reached", isError: true })
    expect(childSessions(h)).toHaveLength(2)
  })

  it('a script that does not parse or bad meta is refused before anything is recorded', async () => {
    const router = new Router()
      .script('go', workflow('w1', 'return {'), toolCalls([{ id: 'w2', name: 'workflow', arguments: { script: 'return 1', meta: { name: '', description: 'd' } } }]), text('DONE'))
    const h = await setup(router)
    h.agent.followup('go')
    await h.agent.whenIdle()
    const results = h.of('tool/result').map(e => ((e.data as { message: ToolResultMessage }).message.content[0] as unknown as { content: { text: string }[] }).content[0]!.text)
    expect(results[0]).toMatch(/^Error: workflow script does not parse: /)
    expect(results[1]).toBe('Error: invalid meta: meta.name must be a non-empty string')
    expect(workflowEvents(h.session.events)).toEqual([])
  })

  it('T-6: cancelling the parent cancels the script and its running child; every record is closed', async () => {
    let ready!: () => void
    const streaming = new Promise<void>(resolve => { ready = resolve })
    const router = new Router()
      .script('go', workflow('w1', "await agent('hang here')\nreturn 1"))
      .script('hang here', hang(text('partial').slice(0, 2), () => ready()))
    const h = await setup(router)
    h.agent.followup('go')
    await streaming
    h.agent.cancel()
    await h.agent.whenIdle()
    const events = workflowEvents(h.session.events)
    expect(events.map(e => e.type)).toEqual(['tool-workflow/run-start', 'tool-workflow/agent-start', 'tool-workflow/agent-end', 'tool-workflow/run-end'])
    expect(events[2]).toMatchObject({ outcome: 'cancelled' })
    expect(events[3]).toMatchObject({ stopReason: 'cancelled' })
    const child = childSessions(h)[0]!
    expect(child.events.findLast(e => e.type === 'turn/end')!.data).toMatchObject({ reason: { kind: 'aborted' } })
  })

  it('a workflow a run_code program starts records no tool-workflow events (root calls only)', async () => {
    const program = JSON.stringify({ code: "const run = await tools.workflow({ script: \"return await agent('inner child')\", meta: { name: 'inner', description: 'd' } })\nreturn [run.agentsStarted, run.result, typeof run.runId]", description: 'wf' })
    const router = new Router()
      .script('go', toolCalls([{ id: 'c1', name: 'run_code', arguments: program }]), text('DONE'))
      .script('inner child', text('INNER_OK'))
    const h = await setup(router, {}, true)
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(workflowEvents(h.session.events)).toEqual([])
    // The program got the recorded value shape: {runId, agentsStarted, result}.
    expect(result(h).text).toContain('[\n  1,\n  "INNER_OK",\n  "string"\n]')
  })

  it('labels default to the first line of the prompt, cut to 48 characters', () => {
    expect(defaultLabel('short\nsecond line')).toBe('short')
    expect(defaultLabel('x'.repeat(60))).toBe(`${'x'.repeat(47)}…`)
  })
})

describe('ralph', () => {
  const objective = 'Make the thing.'
  const report = (status: string, extra: Record<string, unknown> = {}) => toolCalls([{ id: `r-${status}`, name: 'structured_output', arguments: { status, summary: `S_${status}`, evidence: ['e'], nextSteps: [], blocker: '', ...extra } }])
  const ralph = (maxRounds?: number) => toolCalls([{ id: 'ralph-1', name: 'ralph', arguments: { objective, ...maxRounds !== undefined && { maxRounds } } }])

  it('continue then complete: two fresh children, the first report handed to the second, the final report in the result', async () => {
    const first = { status: 'continue', summary: 'S_continue', evidence: ['e'], nextSteps: ['more'], blocker: '' }
    const router = new Router()
      .script('go', ralph(3), text('DONE'))
      .script(roundPrompt(objective, 1, 3, undefined), report('continue', { nextSteps: ['more'] }))
      .script(roundPrompt(objective, 2, 3, JSON.stringify(first, null, 2)), report('complete'))
    const h = await setup(router)
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(result(h)).toEqual({
      text: 'Ralph worker reported completion after 2 rounds.\nFinal report:\n{\n  "status": "complete",\n  "summary": "S_complete",\n  "evidence": [\n    "e"\n  ],\n  "nextSteps": [],\n  "blocker": ""\n}',
      isError: false,
    })
    const children = childSessions(h)
    expect(children.map(c => (c.events.find(e => e.type === 'subagent/descriptor')!.data as { label: string }).label)).toEqual(['Ralph round 1', 'Ralph round 2'])
    // No workflow records in the parent's log.
    expect(workflowEvents(h.session.events)).toEqual([])
  })

  it('stops at the round cap, on a blocker, on a child that reports nothing, and on a report that breaks the rules', async () => {
    const cases: [number, (r: Router) => Router, string, boolean][] = [
      [1, r => r.script(roundPrompt(objective, 1, 1, undefined), report('continue', { nextSteps: ['more'] })), 'Ralph reached its 1 round limit; the worker reported work remaining.', false],
      [2, r => r.script(roundPrompt(objective, 1, 2, undefined), report('blocked', { blocker: 'no key' })), 'Ralph worker reported a blocker after 1 round.', false],
      [2, r => r.script(roundPrompt(objective, 1, 2, undefined), text('I forgot to report')), 'Ralph round 1 child failed before producing a structured report.\nNo previous handoff was available.', true],
      [2, r => r.script(roundPrompt(objective, 1, 2, undefined), report('complete', { evidence: [] })), 'Error: Ralph workflow failed: round 1 reported an invalid report: a "complete" report needs at least one piece of evidence', true],
    ]
    for (const [max, script, expected, isError] of cases) {
      const h = await setup(script(new Router().script('go', ralph(max), text('DONE'))))
      h.agent.followup('go')
      await h.agent.whenIdle()
      expect(result(h).text.startsWith(expected)).toBe(true)
      expect(result(h).isError).toBe(isError)
      await h.dispose()
      harness = undefined
      created.length = 0
    }
  })
})
