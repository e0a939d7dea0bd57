import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopHarness } from '../../test-support/agent-harness.js'
import { SCRIPTED_MODEL_INFO, errorFinish, hang, text, toolCalls } from '../../test-support/scripted-model.js'
import type { StreamChunk } from '../llm/types.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import type { Tool } from '../tools/api.js'
import { defineTool } from '../tools/index.js'
import { LoopInvariantError } from './invariant.js'
import type { PreStepDecision } from './api.js'

function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>(r => { resolve = r })
  return { promise, resolve }
}

/** A parallel-safe tool whose calls finish when the test says so. */
function gatedTool(name = 'gate') {
  const gates = new Map<string, ReturnType<typeof deferred<string>>>()
  const started: string[] = []
  const startedSignal = new Map<string, ReturnType<typeof deferred>>()
  const gate = (id: string) => {
    if (!gates.has(id)) gates.set(id, deferred<string>())
    return gates.get(id)!
  }
  const whenStarted = (id: string) => {
    if (!startedSignal.has(id)) startedSignal.set(id, deferred())
    return startedSignal.get(id)!.promise
  }
  const tool: Tool = defineTool({
    name,
    description: 'waits for the test',
    schema: z.object({ id: z.string() }),
    isConcurrencySafe: () => true,
    async execute({ id }) {
      started.push(id)
      whenStarted(id)
      startedSignal.get(id)!.resolve(undefined)
      return { content: [{ type: 'text', text: await gate(id).promise }] }
    },
  })
  return { tool, started, release: (id: string, value = `done ${id}`) => gate(id).resolve(value), whenStarted }
}

const echo: Tool = defineTool({
  name: 'echo',
  description: 'echoes its text',
  schema: z.object({ text: z.string() }),
  execute: ({ text: value }) => ({ content: [{ type: 'text', text: value }] }),
})

const resultsOf = (h: Awaited<ReturnType<typeof loopHarness>>) =>
  h.of('tool/result').map(e => ({ id: e.data.message.source.callId, isError: e.data.message.content[0].isError, code: e.data.error?.code, text: (e.data.message.content[0].content[0] as { text?: string })?.text }))

describe('agent loop: turns and steps (A-4..A-8)', () => {
  it('each turn asks the model\'s adapter to open its connection as it starts, before its first request', async () => {
    const h = await loopHarness({ responses: [toolCalls([{ id: 'c1', name: 'echo', arguments: { text: 'x' } }]), text('one'), text('two')], tools: [echo] })
    h.agent.followup('first')
    await h.agent.whenIdle()
    h.agent.followup('second')
    await h.agent.whenIdle()
    // Once per turn (not per step), each time before that turn's first request.
    expect(h.model.warms).toEqual([{ model: 'scripted-1', requestsBefore: 0 }, { model: 'scripted-1', requestsBefore: 2 }])
  })

  it('A-5: a text turn logs turn/step boundaries, every chunk, and assistant/message citing its chunks', async () => {
    const h = await loopHarness({ responses: [text('PONG', { usage: { inputTokens: 3, outputTokens: 1 } })] })
    h.agent.followup('ping')
    await h.agent.whenIdle()
    expect(h.types()).toEqual([
      'agent/inbox/spliced', 'turn/start', 'agent/inbox/spliced', 'step/start', 'user/message',
      'request/header', 'request/context',
      'assistant/chunk', 'assistant/chunk', 'assistant/chunk', 'assistant/chunk', 'assistant/chunk',
      'assistant/message', 'step/end', 'turn/end',
    ])
    const message = h.of('assistant/message')[0]!
    expect(message.sourceEventSeqs).toEqual(h.of('assistant/chunk').map(e => e.seq))
    expect(message.surfaceOp).toBe('append')
    expect(message.data.usage).toEqual({ inputTokens: 3, outputTokens: 1 })
    expect(message.data.message.content).toEqual([{ type: 'text', text: 'PONG' }])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'completed' })
    expect(h.model.requests[0]!.meta).toEqual({ sessionId: h.session.id, agentLoop: true })
  })

  it('A-5: an empty provider stream still writes assistant/message (content empty)', async () => {
    const h = await loopHarness({ responses: [[{ type: 'finish', reason: { kind: 'stop' } }]] })
    h.agent.followup('ping')
    await h.agent.whenIdle()
    const message = h.of('assistant/message')[0]!
    expect(message.data.message.content).toEqual([])
    expect(message.sourceEventSeqs).toEqual([h.of('assistant/chunk')[0]!.seq])
    expect(h.of('turn/end')[0]!.data.reason.kind).toBe('completed')
  })

  it('A-6: tool results open a new step; the model sees them in the next request', async () => {
    const h = await loopHarness({ tools: [echo], responses: [toolCalls([{ id: 'c1', name: 'echo', arguments: { text: 'hi' } }]), text('DONE')] })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('step/start').map(e => e.data.step)).toEqual([1, 2])
    const call = h.of('tool/call')[0]!
    const result = h.of('tool/result')[0]!
    expect(call.data).toEqual({ turn: 1, step: 1, callId: 'c1', name: 'echo', arguments: '{"text":"hi"}' })
    expect(result.sourceEventSeqs).toEqual([call.seq])
    expect(result.data.message.role).toBe('user')
    expect(result.data.message.source).toEqual({ kind: 'tool', callId: 'c1' })
    expect(result.data.message.content).toEqual([{ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: 'hi' }], isError: false }])
    expect(h.model.requests[1]!.messages.at(-1)).toEqual(result.data.message)
    expect(h.of('request/header')).toHaveLength(1)
  })

  it('A-5: the model stream is closed after its finish chunk (an adapter\'s finally runs, e.g. to return its connection), before the next step\'s request', async () => {
    const closed: number[] = []
    const closing = (id: number, chunks: readonly StreamChunk[]) => async function* () {
      try {
        yield* chunks
        // Never reached: the finish chunk is the last one the loop takes.
        yield* text('AFTER FINISH')
      } finally {
        closed.push(id)
      }
    }
    const h = await loopHarness({
      tools: [echo],
      responses: [closing(1, toolCalls([{ id: 'c1', name: 'echo', arguments: { text: 'hi' } }])), () => { closed.push(-closed.length); return closing(2, text('DONE'))() }],
    })
    h.agent.followup('go')
    await h.agent.whenIdle()
    await new Promise(resolve => setImmediate(resolve))
    // The first stream was closed before the second request was made (-1: one closed by then).
    expect(closed).toEqual([1, -1, 2])
    expect(h.of('assistant/message').map(e => e.data.message.content.map((b: { type: string }) => b.type))).toEqual([['tool-call'], ['text']])
  })

  it('A-6: a result with concludesTurn ends the tool loop without another request', async () => {
    const finisher: Tool = { name: 'finish_now', description: 'ends', parameters: { type: 'object' }, execute: () => ({ content: [{ type: 'text', text: 'bye' }], concludesTurn: true }) }
    const h = await loopHarness({ tools: [finisher], responses: [toolCalls([{ id: 'f', name: 'finish_now' }])] })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.model.requests).toHaveLength(1)
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'completed' })
  })

  it('A-6: agent/request-error retry stays in the same turn and step', async () => {
    const h = await loopHarness({ responses: [errorFinish('EMPTY_RESPONSE'), text('Recovered.')] })
    let retries = 0
    h.ctx.on('agent/request-error', async (payload, next) => {
      expect(payload.failure.code).toBe('EMPTY_RESPONSE')
      if (retries++ === 0) return { kind: 'retry' }
      return next()
    })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('step/start')).toHaveLength(1)
    expect(h.model.requests).toHaveLength(2)
    const message = h.of('assistant/message')[0]!
    const chunks = h.of('assistant/chunk')
    // The error attempt's chunk stays in the log; the message cites only the successful attempt.
    expect(chunks[0]!.data.chunk.type).toBe('finish')
    expect(message.sourceEventSeqs).toEqual(chunks.slice(1).map(e => e.seq))
    expect(h.of('turn/end')[0]!.data.reason.kind).toBe('completed')
  })

  it('A-5/A-6: an error finish without retry ends the turn with the failure and no assistant/message', async () => {
    const h = await loopHarness({ responses: [errorFinish('AUTH', 'simulated provider error (HTTP 401)')] })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('assistant/message')).toHaveLength(0)
    expect(h.types().slice(-3)).toEqual(['assistant/chunk', 'step/end', 'turn/end'])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'error', error: { code: 'AUTH', message: 'simulated provider error (HTTP 401)' } })
  })

  it('A-7: max-tokens drops the truncated tool calls and stays sticky for the rest of the turn', async () => {
    const truncated: StreamChunk[] = [
      ...toolCalls([{ id: 't1', name: 'echo', arguments: '{"text":"hal' }]).slice(0, -1),
      { type: 'finish', reason: { kind: 'max-tokens' } },
    ]
    const h = await loopHarness({ tools: [echo], responses: [truncated, text('after steer')] })
    let steered = false
    h.ctx.on('agent/turn-stopping', async ({ steer }) => {
      if (!steered) { steered = true; steer('keep going') }
    })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('tool/call')).toHaveLength(0)
    expect(h.of('assistant/message')[0]!.data.message.content).toEqual([])
    expect(h.of('step/start')).toHaveLength(2)
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'max-tokens' })
  })

  it('A-8: agent/turn-stopping is serial and a steer keeps the turn going', async () => {
    const h = await loopHarness({ responses: [text('one'), text('two')] })
    const order: string[] = []
    let calls = 0
    h.ctx.on('agent/turn-stopping', async () => { order.push('first') })
    h.ctx.on('agent/turn-stopping', async ({ steer, turn }) => {
      order.push('second')
      expect(turn).toBe(1)
      if (calls++ === 0) steer('one more step')
    })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(order).toEqual(['first', 'second', 'first', 'second'])
    expect(h.of('turn/start')).toHaveLength(1)
    expect(h.of('step/start')).toHaveLength(2)
    expect(h.of('user/message').map(e => (e.data.content[0] as { text: string }).text)).toEqual(['go', 'one more step'])
  })

  it('A-8: a value an agent/turn-stopping listener returns is never mistaken for a hook failure', async () => {
    const h = await loopHarness({ responses: [text('one')] })
    h.ctx.on('agent/turn-stopping', (async () => ({ failure: { code: 'X', message: 'just data' } })) as never)
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'completed' })
  })

  it('A-4: a pre-step reject ends the turn blocked; the claimed messages are consumed', async () => {
    const h = await loopHarness({ responses: [] })
    h.ctx.on('agent/pre-step', async (): Promise<PreStepDecision> => ({ kind: 'reject', message: 'policy' }))
    h.agent.followup('blocked input')
    await h.agent.whenIdle()
    expect(h.types()).toEqual(['agent/inbox/spliced', 'turn/start', 'agent/inbox/spliced', 'turn/end'])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'blocked', message: 'policy' })
    expect(h.agent.inbox.nextTurn).toHaveLength(0)
    expect(h.model.requests).toHaveLength(0)
  })

  it('A-4: a reject in a later step also ends the turn blocked, after the earlier step closed', async () => {
    const h = await loopHarness({ tools: [echo], responses: [toolCalls([{ id: 'c1', name: 'echo', arguments: { text: 'x' } }])] })
    h.ctx.on('agent/pre-step', async (payload, next) => payload.step === 2 ? { kind: 'reject' } : next())
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.types().slice(-3)).toEqual(['tool/result', 'step/end', 'turn/end'])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'blocked' })
    expect(h.model.requests).toHaveLength(1)
  })

  it('A-4: an empty first step closes the turn completed without a model call', async () => {
    const h = await loopHarness({ responses: [] })
    h.ctx.on('agent/pre-step', async (_payload, next) => {
      await next()
      return { kind: 'enter', messages: [] }
    })
    h.agent.followup('rewritten away')
    await h.agent.whenIdle()
    expect(h.types()).toEqual(['agent/inbox/spliced', 'turn/start', 'agent/inbox/spliced', 'turn/end'])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'completed' })
    expect(h.model.requests).toHaveLength(0)
  })

  it('K-4: agent/pre-step is a waterfall whose default enters the claimed messages', async () => {
    const h = await loopHarness({ responses: [text('ok')] })
    const seen: string[] = []
    h.ctx.on('agent/pre-step', async (payload, next) => {
      seen.push(`outer ${payload.turn}.${payload.step} ${payload.messages.length}`)
      const decision = await next()
      seen.push(`outer got ${decision.kind}`)
      return decision
    })
    h.ctx.on('agent/pre-step', async (_payload, next) => { seen.push('inner'); return next() })
    h.agent.followup('hello')
    await h.agent.whenIdle()
    expect(seen).toEqual(['outer 1.1 1', 'inner', 'outer got enter'])
    expect(h.of('user/message')).toHaveLength(1)
  })
})

describe('agent loop: inbox and input (A-1..A-3)', () => {
  it('A-2: steer during a step lands in the next step of the same turn', async () => {
    const streaming = deferred()
    const proceed = deferred()
    const h = await loopHarness({
      responses: [
        async function* () {
          yield { type: 'text-delta', index: 0, text: 'working' } as StreamChunk
          streaming.resolve()
          await proceed.promise
          yield { type: 'finish', reason: { kind: 'stop' } } as StreamChunk
        },
        text('saw the steer'),
      ],
    })
    h.agent.followup('start')
    await streaming.promise
    h.agent.steer('also do this')
    proceed.resolve()
    await h.agent.whenIdle()
    expect(h.of('turn/start')).toHaveLength(1)
    expect(h.of('step/start')).toHaveLength(2)
    const steps = h.of('user/message').map(e => [h.session.events.slice(0, e.seq).filter(x => x.type === 'step/start').length, (e.data.content[0] as { text: string }).text])
    expect(steps).toEqual([[1, 'start'], [2, 'also do this']])
  })

  it('A-2: inject queues on next-step without waking; followup wakes', async () => {
    const h = await loopHarness({ responses: [text('ok')] })
    h.agent.inject('quiet note')
    expect(h.agent.status).toBe('idle')
    expect(h.of('turn/start')).toHaveLength(0)
    expect(h.agent.inbox.nextStep).toHaveLength(1)
    h.agent.followup('now go')
    await h.agent.whenIdle()
    // Claim at a turn boundary takes all of next-step plus the first next-turn message.
    expect(h.of('user/message').map(e => (e.data.content[0] as { text: string }).text)).toEqual(['quiet note', 'now go'])
  })

  it('A-3: claim happens before assembly; input arriving during assembly waits for the next step', async () => {
    const h = await loopHarness({
      responses: [text('first'), text('second')],
      setup: async (ctx) => { await ctx.plugin(SystemPromptPlugin).await() },
    })
    let sent = false
    h.ctx.on('system-prompt/assemble', async (assembly, next) => {
      if (!sent) { sent = true; h.agent.steer('late') }
      return next()
    })
    h.agent.followup('early')
    await h.agent.whenIdle()
    const texts = h.of('user/message').map(e => [e.data.content[0]!.type === 'text' ? (e.data.content[0] as { text: string }).text : '', h.session.events.slice(0, e.seq).filter(x => x.type === 'step/start').length])
    expect(texts).toEqual([['early', 1], ['late', 2]])
  })

  it('A-1: every mutation is logged first, and the inbox rebuilds from the log', async () => {
    const h = await loopHarness({ responses: [] })
    h.agent.send('a', 'next-turn', false)
    h.agent.send('b', 'next-turn', false)
    h.agent.inject('c')
    const splices = h.of('agent/inbox/spliced')
    expect(splices.map(e => e.data)).toEqual([
      { target: 'next-turn', start: 0, inserted: [h.agent.inbox.nextTurn[0]] },
      { target: 'next-turn', start: 1, inserted: [h.agent.inbox.nextTurn[1]] },
      { target: 'next-step', start: 0, inserted: [h.agent.inbox.nextStep[0]] },
    ])
    // The live lists hold the logged objects themselves.
    expect(h.agent.inbox.nextTurn[0]).toBe(splices[0]!.data.inserted[0])
    const { Inbox } = await import('./inbox.js')
    const rebuilt = Inbox.fromLog(h.session)
    expect(rebuilt.nextTurn).toEqual(h.agent.inbox.nextTurn)
    expect(rebuilt.nextStep).toEqual(h.agent.inbox.nextStep)
  })

  it('A-1: a restarted agent resumes the queued inbox from the log', async () => {
    const h = await loopHarness({ responses: [text('resumed')] })
    h.agent.send('queued before restart', 'next-turn', false)
    await h.agent.dispose()
    const again = h.ctx.agents.create(h.session.id)
    expect(again.inbox.nextTurn.map(m => (m.content[0] as { text: string }).text)).toEqual(['queued before restart'])
    again.followup('and this')
    await again.whenIdle()
    expect(h.of('turn/start')).toHaveLength(2)
  })

  it('A-1/S-14: a fork child replays only splices after its seed', async () => {
    const h = await loopHarness({ responses: [text('ok')] })
    h.agent.followup('first')
    await h.agent.whenIdle()
    h.agent.send('pending in parent', 'next-turn', false)
    const child = h.ctx.sessions.fork(h.session.id, h.of('turn/end')[0]!.seq)
    const { Inbox } = await import('./inbox.js')
    expect(Inbox.fromLog(child).nextTurn).toHaveLength(0)
  })

  it('A-3: the runtime-context message is entered only when the rendered contexts change', async () => {
    let where = '/a'
    const h = await loopHarness({
      responses: [text('1'), text('2'), text('3'), text('4')],
      setup: async (ctx) => {
        await ctx.plugin(SystemPromptPlugin).await()
        ctx.systemPrompt.context({ name: 'cwd', render: () => where })
      },
    })
    const contextTexts = () => h.of('user/message').filter(e => e.data.source.kind === 'plugin').map(e => (e.data.content[0] as { text: string }).text)
    h.agent.followup('t1')
    await h.agent.whenIdle()
    expect(contextTexts()).toHaveLength(1)
    expect(contextTexts()[0]).toMatch(/^Current runtime context\./)
    expect(contextTexts()[0]).toContain('/a')
    h.agent.followup('t2')
    await h.agent.whenIdle()
    expect(contextTexts()).toHaveLength(1)
    where = '/b'
    h.agent.followup('t3')
    await h.agent.whenIdle()
    expect(contextTexts()).toHaveLength(2)
    expect(contextTexts()[1]).toContain('/b')
    // The message follows the claimed input in the same step.
    const lastUser = h.of('user/message').slice(-2).map(e => e.data.source.kind)
    expect(lastUser).toEqual(['user', 'plugin'])
  })

  it('A-3: the runtime-context message is decided inside the default, after a pre-step listener compacted the surface', async () => {
    const h = await loopHarness({
      responses: [text('1'), text('2')],
      setup: async (ctx) => {
        await ctx.plugin(SystemPromptPlugin).await()
        ctx.systemPrompt.context({ name: 'cwd', render: () => '/a' })
      },
    })
    h.agent.followup('t1')
    await h.agent.whenIdle()
    // Like compaction in pre-step: the whole surface (with the snapshot) is replaced by a summary.
    h.ctx.on('agent/pre-step', async (payload, next) => {
      const surface = h.session.surface()
      h.session.append('user/message', {
        id: 'summary', role: 'user', source: { kind: 'plugin', plugin: 'compaction', compactionId: 'c1' },
        content: [{ type: 'text', text: 'summary of earlier work' }],
      }, { surfaceOp: { op: 'replace', start: surface[0]!, end: surface[surface.length - 1]! }, sourceEventSeqs: [...surface] })
      return next()
    }, { prepend: true })
    h.agent.followup('t2')
    await h.agent.whenIdle()
    const sent = h.model.requests[1]!.messages
    const texts = sent.map(m => m.role === 'user' && m.content[0]?.type === 'text' ? m.content[0].text : m.role)
    expect(texts[0]).toBe('summary of earlier work')
    expect(texts.some(t => t.startsWith('Current runtime context.') && t.includes('/a'))).toBe(true)
  })
})

describe('agent loop: tools through the scheduler (T-3..T-7)', () => {
  it('T-4: results commit in model order when a later call finishes first', async () => {
    const g = gatedTool()
    const h = await loopHarness({ tools: [g.tool], responses: [toolCalls([{ id: 'a', name: 'gate', arguments: { id: 'a' } }, { id: 'b', name: 'gate', arguments: { id: 'b' } }]), text('done')] })
    h.agent.followup('go')
    await Promise.all([g.whenStarted('a'), g.whenStarted('b')])
    g.release('b')
    await new Promise(r => setImmediate(r))
    expect(h.of('tool/result')).toHaveLength(0)
    g.release('a')
    await h.agent.whenIdle()
    expect(h.types().filter(t => t.startsWith('tool/'))).toEqual(['tool/call', 'tool/call', 'tool/result', 'tool/result'])
    expect(resultsOf(h).map(r => r.id)).toEqual(['a', 'b'])
  })

  it('T-6/A-9: cancel during a parallel group drains started bodies and closes unstarted calls', async () => {
    const g = gatedTool()
    const exclusive: Tool = { name: 'exclusive', description: 'barrier', parameters: { type: 'object' }, execute: () => ({ content: [{ type: 'text', text: 'never' }] }) }
    const h = await loopHarness({
      tools: [g.tool, exclusive],
      responses: [toolCalls([{ id: 'a', name: 'gate', arguments: { id: 'a' } }, { id: 'b', name: 'gate', arguments: { id: 'b' } }, { id: 'x', name: 'exclusive' }])],
    })
    h.agent.followup('go')
    await Promise.all([g.whenStarted('a'), g.whenStarted('b')])
    h.agent.cancel()
    g.release('a')
    g.release('b')
    await h.agent.whenIdle()
    expect(resultsOf(h).map(r => [r.id, r.code])).toEqual([['a', 'ABORTED'], ['b', 'ABORTED'], ['x', 'ABORTED_BEFORE_DISPATCH']])
    expect(h.types().slice(-2)).toEqual(['step/end', 'turn/end'])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
  })

  it('T-7: invalid JSON arguments become an error result and the loop goes on', async () => {
    const h = await loopHarness({ tools: [echo], responses: [toolCalls([{ id: 'bad', name: 'echo', arguments: '{"text": ' }]), text('recovered')] })
    h.agent.followup('go')
    await h.agent.whenIdle()
    const [result] = resultsOf(h)
    expect(result!.isError).toBe(true)
    expect(result!.text).toMatch(/^Error: /)
    expect(h.of('turn/end')[0]!.data.reason.kind).toBe('completed')
    expect(h.model.requests).toHaveLength(2)
  })

  it('T-7: a tool that throws becomes an error result', async () => {
    const thrower: Tool = { name: 'boom', description: 'throws', parameters: { type: 'object' }, execute: () => { throw new Error('kaput') } }
    const h = await loopHarness({ tools: [thrower], responses: [toolCalls([{ id: 'b', name: 'boom' }]), text('ok')] })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(resultsOf(h)[0]).toMatchObject({ isError: true, text: 'Error: kaput' })
    expect(h.of('turn/end')[0]!.data.reason.kind).toBe('completed')
  })

  it('T-7: a tool that hangs past its timeout gets a TIMEOUT result', async () => {
    // It stops only when signalled: the timeout aborts it and waits for it (T-6).
    const stuck: Tool = { name: 'stuck', description: 'returns only when signalled', parameters: { type: 'object' }, timeoutMs: 20,
      execute: (_args, context) => new Promise((_resolve, reject) => { context.signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }) }) }
    const h = await loopHarness({ tools: [stuck], responses: [toolCalls([{ id: 's', name: 'stuck' }]), text('moving on')] })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(resultsOf(h)[0]).toMatchObject({ isError: true, code: 'TIMEOUT' })
    expect(h.of('turn/end')[0]!.data.reason.kind).toBe('completed')
  })

  it('T-7: an unknown tool is an error result, not a crash', async () => {
    const h = await loopHarness({ responses: [toolCalls([{ id: 'u', name: 'nope' }]), text('ok')] })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(resultsOf(h)[0]).toMatchObject({ isError: true })
  })
})

describe('agent loop: cancellation (A-9)', () => {
  it('A-9: cancel mid-stream writes the interrupted prefix, then step/end, then turn/end aborted', async () => {
    const ready = deferred()
    const h = await loopHarness({
      responses: [hang([
        { type: 'block-start', index: 0, blockType: 'text' },
        { type: 'text-delta', index: 0, text: 'partial' },
        { type: 'block-start', index: 1, blockType: 'tool-call' },
        { type: 'tool-call-delta', index: 1, id: 'half', name: 'echo', argumentsDelta: '{"te' },
      ], () => ready.resolve())],
    })
    h.agent.followup('long task')
    await ready.promise
    h.agent.cancel()
    await h.agent.whenIdle()
    const message = h.of('assistant/message')[0]!
    expect(message.data.interrupted).toBe(true)
    expect(message.data.message.content).toEqual([{ type: 'text', text: 'partial' }])
    expect(message.sourceEventSeqs).toEqual(h.of('assistant/chunk').map(e => e.seq))
    expect(h.of('assistant/chunk').some(e => e.data.chunk.type === 'finish')).toBe(false)
    expect(h.types().slice(-3)).toEqual(['assistant/message', 'step/end', 'turn/end'])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    expect(h.agent.status).toBe('idle')
  })

  it('A-9: cancel clears the inbox through splices marked canceled; keepInbox keeps it', async () => {
    const ready = deferred()
    const h = await loopHarness({ responses: [hang([], () => ready.resolve())] })
    h.agent.followup('one')
    await ready.promise
    h.agent.send('queued', 'next-turn', false)
    h.agent.cancel()
    await h.agent.whenIdle()
    const last = h.of('agent/inbox/spliced').at(-1)!
    expect(last.data).toEqual({ target: 'next-turn', start: 0, removedCount: 1, inserted: [], outcome: 'canceled' })
    expect(h.agent.inbox.nextTurn).toHaveLength(0)

    const ready2 = deferred()
    h.model.push(hang([], () => ready2.resolve()))
    h.agent.followup('two')
    await ready2.promise
    h.agent.send('kept', 'next-turn', false)
    h.agent.cancel({ keepInbox: true })
    await h.agent.whenIdle()
    expect(h.agent.inbox.nextTurn.map(m => (m.content[0] as { text: string }).text)).toEqual(['kept'])
  })

  it('A-2/A-9: a wake during abort is forced to next-turn, latched, and replayed when idle', async () => {
    const ready = deferred()
    const h = await loopHarness({
      responses: [
        // This adapter ignores the abort entirely: the loop must not wait for it.
        async function* () {
          ready.resolve()
          await new Promise<void>(() => {})
          yield { type: 'finish', reason: { kind: 'stop' } } as StreamChunk
        },
        text('second turn'),
      ],
    })
    h.agent.followup('first')
    await ready.promise
    h.agent.cancel()
    expect(h.agent.status).toBe('running')
    h.agent.steer('after cancel')
    expect(h.of('agent/inbox/spliced').at(-1)!.data).toMatchObject({ target: 'next-turn' })
    await h.agent.whenIdle()
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['aborted', 'completed'])
    expect(h.of('user/message').map(e => (e.data.content[0] as { text: string }).text)).toEqual(['first', 'after cancel'])
  })

  it('A-9: a wake during maintenance is latched (status stays idle) and runs once maintenance ends', async () => {
    const h = await loopHarness({ responses: [text('after maintenance')] })
    const gate = deferred()
    const statuses: string[] = []
    h.ctx.on('agent/status', (_agent, status) => { statuses.push(status) })
    const { ReactLoop } = await import('./loop.js')
    const loop = (h.agent as unknown as { loop: InstanceType<typeof ReactLoop> }).loop
    const maintenance = loop.maintain(async () => { await gate.promise })
    h.agent.steer('while maintaining')
    expect(h.agent.status).toBe('idle')
    expect(h.of('turn/start')).toHaveLength(0)
    gate.resolve()
    await maintenance
    await h.agent.whenIdle()
    expect(h.of('turn/end').map(e => e.data.reason.kind)).toEqual(['completed'])
    expect(statuses).toEqual(['running', 'idle'])
  })

  it('A-9: dispose cancels with reason disposed and never replays a latched wake', async () => {
    const ready = deferred()
    const h = await loopHarness({ responses: [hang([], () => ready.resolve())] })
    const agent = h.agent
    agent.followup('first')
    await ready.promise
    agent.cancel()
    agent.followup('latched')
    await agent.dispose()
    expect(h.of('turn/end').map(e => e.data.reason)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    expect(h.of('turn/start')).toHaveLength(1)
    expect(() => agent.followup('late')).toThrow(/disposed/)
  })

  it('A-9: dispose during a turn ends it aborted {kind:disposed}', async () => {
    const ready = deferred()
    const h = await loopHarness({ responses: [hang([], () => ready.resolve())] })
    h.agent.followup('first')
    await ready.promise
    await h.agent.dispose()
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'aborted', reason: { kind: 'disposed' } })
    expect(h.ctx.agents.get(h.session.id)).toBeUndefined()
  })
})

describe('agent loop: request header and context (A-10)', () => {
  it('A-10: initial on a fresh log, nothing when unchanged, change when tools change, resume for a new loop', async () => {
    const h = await loopHarness({ responses: [text('1'), text('2'), text('3'), text('4')] })
    const reasons = () => h.of('request/header').map(e => e.data.reason)
    h.agent.followup('t1')
    await h.agent.whenIdle()
    expect(reasons()).toEqual(['initial'])
    expect(h.of('request/context').map(e => e.data)).toEqual([{ provider: 'scripted', model: 'scripted-1', contextWindow: 128000 }])
    h.agent.followup('t2')
    await h.agent.whenIdle()
    expect(reasons()).toEqual(['initial'])
    h.ctx.tools.register(echo)
    h.agent.followup('t3')
    await h.agent.whenIdle()
    expect(reasons()).toEqual(['initial', 'change'])
    expect(h.of('request/header')[1]!.data.header.tools).toEqual([{ name: 'echo', description: echo.description, parameters: echo.parameters }])
    await h.agent.dispose()
    const again = h.ctx.agents.create(h.session.id)
    again.followup('t4')
    await again.whenIdle()
    expect(reasons()).toEqual(['initial', 'change', 'resume'])
    expect(h.of('request/context')).toHaveLength(1)
  })

  it('A-10: the header records the prepared config (maxTokens from the catalogue)', async () => {
    const h = await loopHarness({ responses: [text('1')], loop: { maxTokens: 100 } })
    h.agent.followup('t1')
    await h.agent.whenIdle()
    expect(h.of('request/header')[0]!.data.header.config).toEqual({ provider: 'scripted', model: 'scripted-1', maxTokens: 100 })
    expect(h.model.requests[0]!.maxTokens).toBe(100)
  })
})

describe('agent loop: runtime context and route changes (A-3, A-10)', () => {
  it('A-3: when every runtime context disappears a single "none" snapshot is entered', async () => {
    let dispose!: () => void
    const h = await loopHarness({
      responses: [text('1'), text('2'), text('3')],
      setup: async (ctx) => {
        await ctx.plugin(SystemPromptPlugin).await()
        dispose = ctx.systemPrompt.context({ name: 'policy', render: () => 'strict' })
      },
    })
    const snapshots = () => h.of('user/message').filter(e => e.data.source.kind === 'plugin').map(e => (e.data.content[0] as { text: string }).text)
    h.agent.followup('t1')
    await h.agent.whenIdle()
    dispose()
    h.agent.followup('t2')
    await h.agent.whenIdle()
    h.agent.followup('t3')
    await h.agent.whenIdle()
    expect(snapshots()).toHaveLength(2)
    expect(snapshots()[1]).toMatch(/^Current runtime context\.\n\nNone/)
  })

  it('A-10: request/context is appended when the route changes (a new loop on another model)', async () => {
    const h = await loopHarness({ responses: [text('1'), text('2')] })
    h.ctx.llm.register({ adapter: { provider: 'other', stream: h.model.stream.bind(h.model) }, models: [{ provider: 'other', model: 'big', contextWindow: 1_000_000, defaultMaxTokens: 100, reasoningEfforts: [], imageInput: false }] })
    h.agent.followup('t1')
    await h.agent.whenIdle()
    await h.agent.dispose()
    const again = h.ctx.agents.create({ sessionId: h.session.id, loop: { provider: 'other', model: 'big' } })
    again.followup('t2')
    await again.whenIdle()
    expect(h.of('request/context').map(e => e.data)).toEqual([
      { provider: 'scripted', model: 'scripted-1', contextWindow: 128000 },
      { provider: 'other', model: 'big', contextWindow: 1000000 },
    ])
    expect(h.of('request/header').map(e => [e.data.reason, e.data.header.config.provider])).toEqual([['initial', 'scripted'], ['resume', 'other']])
  })
})

describe('agent invariant (A-11)', () => {
  it('A-11: a marked request whose messages differ from the log is vetoed loudly', async () => {
    const h = await loopHarness({ responses: [text('1')] })
    h.agent.followup('t1')
    await h.agent.whenIdle()
    const header = h.of('request/header')[0]!.data.header
    const bogus = h.ctx.llm.stream({
      provider: 'scripted', model: 'scripted-1', system: header.system, tools: [], maxTokens: header.config.maxTokens,
      messages: [Object.freeze({ id: 'x', role: 'user', content: Object.freeze([]), source: Object.freeze({ kind: 'user' }) })],
      meta: { sessionId: h.session.id, agentLoop: true },
    })
    await expect(async () => { for await (const _ of bogus) { /* drain */ } }).rejects.toThrow(LoopInvariantError)
  })

  it('A-11: a temperature or stop list that differs from the folded header is vetoed', async () => {
    const h = await loopHarness({ responses: [text('1')], loop: { temperature: 0.5 } })
    h.agent.followup('t1')
    await h.agent.whenIdle()
    const header = h.of('request/header')[0]!.data.header
    expect(header.config.temperature).toBe(0.5)
    const ask = (extra: { temperature?: number; stop?: string[] }) => h.ctx.llm.stream({
      provider: 'scripted', model: 'scripted-1', system: header.system, tools: [], maxTokens: header.config.maxTokens,
      messages: h.session.deriveMessages(), meta: { sessionId: h.session.id, agentLoop: true }, ...extra,
    })
    const drain = async (stream: AsyncIterable<unknown>) => { for await (const _ of stream) { /* drain */ } }
    await expect(drain(ask({ temperature: 0.9 }))).rejects.toThrow(/temperature/)
    await expect(drain(ask({}))).rejects.toThrow(/temperature/)
    await expect(drain(ask({ temperature: 0.5, stop: ['END'] }))).rejects.toThrow(/stop/)
  })

  it('A-11: a system prompt that differs from the folded header is vetoed', async () => {
    const h = await loopHarness({ responses: [text('1')] })
    h.agent.followup('t1')
    await h.agent.whenIdle()
    const bogus = h.ctx.llm.stream({
      provider: 'scripted', model: 'scripted-1', system: 'something else', tools: [], maxTokens: 4096,
      messages: h.session.deriveMessages(), meta: { sessionId: h.session.id, agentLoop: true },
    })
    await expect(async () => { for await (const _ of bogus) { /* drain */ } }).rejects.toThrow(/system prompt/)
  })

  it('A-11: a folded request/header without tools (recorded tool-less logs) matches a request with none', async () => {
    const h = await loopHarness({ responses: [text('1'), text('2')] })
    h.agent.followup('t1')
    await h.agent.whenIdle()
    const { tools: _tools, ...header } = h.of('request/header')[0]!.data.header
    h.session.append('turn/start', { turn: 2 })
    h.session.append('request/header', { header, reason: 'change' })
    const request = h.ctx.llm.stream({
      provider: 'scripted', model: 'scripted-1', system: header.system, tools: [], maxTokens: header.config.maxTokens,
      messages: h.session.deriveMessages(), meta: { sessionId: h.session.id, agentLoop: true },
    })
    const chunks: string[] = []
    for await (const chunk of request) chunks.push(chunk.type)
    expect(chunks).toContain('finish')
  })

  /** The scripted model with thinking and two reasoning efforts, so the loop's request carries both. */
  const reasoning = { loop: { thinking: true, reasoningEffort: 'high' as const }, models: [{ ...SCRIPTED_MODEL_INFO, reasoningEfforts: ['low', 'high'] as const }] }

  it('A-11: a request whose thinking or reasoningEffort differs from the folded header is vetoed', async () => {
    const h = await loopHarness({ responses: [text('1'), text('2')], ...reasoning })
    h.agent.followup('t1')
    await h.agent.whenIdle()
    const header = h.of('request/header')[0]!.data.header
    expect(header.config).toMatchObject({ thinking: true, reasoningEffort: 'high' })
    const drain = async (stream: AsyncIterable<unknown>) => { for await (const _ of stream) { /* drain */ } }
    const ask = (extra: { thinking?: boolean; reasoningEffort?: 'low' | 'high' }) => h.ctx.llm.stream({
      provider: 'scripted', model: 'scripted-1', system: header.system, tools: [], maxTokens: header.config.maxTokens,
      messages: h.session.deriveMessages(), meta: { sessionId: h.session.id, agentLoop: true }, thinking: true, reasoningEffort: 'high', ...extra,
    })
    await expect(drain(ask({ thinking: false }))).rejects.toThrow(/thinking/)
    await expect(drain(ask({ reasoningEffort: 'low' }))).rejects.toThrow(/reasoningEffort/)
    // The same request with the header's values passes.
    await drain(ask({}))
    expect(h.model.requests).toHaveLength(2)
  })

  for (const [field, change] of [
    ['thinking', (o: Record<string, unknown>) => { o.thinking = false }],
    ['reasoningEffort', (o: Record<string, unknown>) => { o.reasoningEffort = 'low' }],
    ['maxTokens', (o: Record<string, unknown>) => { o.maxTokens = 7 }],
    ['messages', (o: Record<string, unknown>) => { (o.messages as unknown[]).pop() }],
  ] as const) {
    it(`A-11: a plugin that changes ${field} after the loop built the request is caught as the request leaves for the adapter`, async () => {
      const h = await loopHarness({ responses: [text('1')], ...reasoning })
      // Registered without prepend: it runs inside every prepended listener, after their checks.
      h.ctx.on('llm/stream', (options, next) => {
        change(options as unknown as Record<string, unknown>)
        return next()
      })
      h.agent.followup('t1')
      await expect(h.agent.whenIdle()).rejects.toThrow(LoopInvariantError)
      // Vetoed before the adapter saw it.
      expect(h.model.requests).toHaveLength(0)
    })
  }

  it('A-11: a loop whose request breaks the invariant stops and whenIdle rejects', async () => {
    const h = await loopHarness({ responses: [text('1')] })
    // Simulate a loop bug: an observer sneaks an extra message onto the surface after derivation.
    h.ctx.on('llm/stream', (options, next) => {
      (options.messages as unknown as unknown[]).push(Object.freeze({ id: 'ghost', role: 'user', content: [], source: { kind: 'user' } }))
      return next()
    }, { prepend: true })
    h.agent.followup('t1')
    await expect(h.agent.whenIdle()).rejects.toThrow(LoopInvariantError)
  })
})

describe('agent loop: failing extension points', () => {
  it('a throwing agent/pre-step listener ends the turn with an error naming the hook; the agent keeps working', async () => {
    const h = await loopHarness({ responses: [text('later')] })
    let fail = true
    h.ctx.on('agent/pre-step', async (_payload, next) => {
      if (fail) { fail = false; throw new Error('policy plugin crashed') }
      return next()
    })
    h.agent.followup('first')
    await h.agent.whenIdle()
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'error', error: { code: 'PRE_STEP_FAILED', message: 'agent/pre-step failed: policy plugin crashed' } })
    h.agent.followup('second')
    await h.agent.whenIdle()
    expect(h.of('turn/end')[1]!.data.reason.kind).toBe('completed')
  })

  it('a throwing llm/stream listener (e.g. a failed checkpoint flush) goes through agent/request-error, then closes the step', async () => {
    const h = await loopHarness({ responses: [] })
    h.ctx.on('llm/stream', () => { throw new Error('disk full') })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.types().slice(-3)).toEqual(['request/context', 'step/end', 'turn/end'])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'error', error: { code: 'LLM_STREAM_FAILED', message: 'disk full' } })
  })

  it('a throwing agent/turn-stopping listener ends the turn with an error', async () => {
    const h = await loopHarness({ responses: [text('ok')] })
    h.ctx.on('agent/turn-stopping', async () => { throw new Error('nope') })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('turn/end')[0]!.data.reason).toMatchObject({ kind: 'error', error: { code: 'TURN_STOPPING_FAILED' } })
  })
})

describe('agents registry and scope (K-2, P-1, K-4)', () => {
  it('P-1: a tool registered through agent.ctx is visible to that agent only and dies with it', async () => {
    const h = await loopHarness({ responses: [toolCalls([{ id: 'e', name: 'echo', arguments: { text: 'scoped' } }]), text('ok')] })
    h.agent.ctx.tools.register(echo)
    const other = h.ctx.agents.create({ cwd: process.cwd() })
    expect(h.ctx.tools.get('echo', h.agent.scope)).toBeDefined()
    expect(h.ctx.tools.get('echo', other.scope)).toBeUndefined()
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(resultsOf(h)[0]).toMatchObject({ isError: false, text: 'scoped' })
    await h.agent.dispose()
    expect(h.ctx.tools.get('echo', h.agent.scope)).toBeUndefined()
    expect(h.ctx.agents.list()).toEqual([other])
  })

  it('K-4: agent/status and agent/turn-end are contained emits (a throwing observer cannot break the loop)', async () => {
    const h = await loopHarness({ responses: [text('ok')] })
    const statuses: string[] = []
    const ends: string[] = []
    const stderr = process.stderr.write
    process.stderr.write = (() => true) as typeof process.stderr.write
    try {
      h.ctx.on('agent/status', () => { throw new Error('observer bug') })
      h.ctx.on('agent/status', (_agent, status) => { statuses.push(status) })
      h.ctx.on('agent/turn-end', () => { throw new Error('observer bug') })
      h.ctx.on('agent/turn-end', (_agent, turn, reason) => { ends.push(`${turn} ${reason.kind}`) })
      h.agent.followup('go')
      await h.agent.whenIdle()
    } finally {
      process.stderr.write = stderr
    }
    expect(statuses).toEqual(['running', 'idle'])
    expect(ends).toEqual(['1 completed'])
  })

  it('P-4: a listener registered through agent.ctx hears only its own agent; untagged listeners hear all', async () => {
    const h = await loopHarness({ responses: [text('a'), text('b')] })
    const other = h.ctx.agents.create({ cwd: process.cwd() })
    const scoped: string[] = []
    const global: string[] = []
    h.agent.ctx.on('agent/pre-step', async (payload, next) => { scoped.push(payload.agent.id); return next() })
    h.ctx.on('agent/pre-step', async (payload, next) => { global.push(payload.agent.id); return next() })
    h.agent.followup('mine')
    await h.agent.whenIdle()
    other.followup('theirs')
    await other.whenIdle()
    expect(scoped).toEqual([h.agent.id])
    expect(global).toEqual([h.agent.id, other.id])
  })

  it('K-4: agent/created and agent/disposed are contained emits', async () => {
    const h = await loopHarness({ responses: [] })
    const seen: string[] = []
    h.ctx.on('agent/created', () => { throw new Error('observer bug') })
    h.ctx.on('agent/created', (agent) => { seen.push(`created ${agent.id}`) })
    h.ctx.on('agent/disposed', (agent) => { seen.push(`disposed ${agent.id}`) })
    const stderr = process.stderr.write
    process.stderr.write = (() => true) as typeof process.stderr.write
    let agent
    try {
      agent = h.ctx.agents.create({ cwd: process.cwd() })
    } finally {
      process.stderr.write = stderr
    }
    await h.ctx.agents.dispose(agent.id)
    expect(seen).toEqual([`created ${agent.id}`, `disposed ${agent.id}`])
    expect(h.ctx.agents.get(agent.id)).toBeUndefined()
  })

  it('K-2: the loop driver is a replaceable service; ctx.agents builds agents on whichever agentLoop is loaded', async () => {
    const { Context, Service } = await import('cordis')
    const { AgentsServicePlugin } = await import('./index.js')
    const { SessionsServicePlugin } = await import('../session/index.js')
    const sent: string[] = []
    class EchoLoopPlugin extends Service {
      constructor(ctx: InstanceType<typeof Context>) { super(ctx, 'agentLoop') }
      create(): import('./api.js').AgentLoop {
        return {
          status: 'idle', inbox: { nextTurn: [], nextStep: [] },
          send: (message) => { sent.push((message.content[0] as { text: string }).text); return message },
          cancel: () => {}, maintain: async () => {}, whenIdle: async () => {}, dispose: async () => {},
        }
      }
    }
    const ctx = new Context()
    for (const fiber of [ctx.plugin(SessionsServicePlugin), ctx.plugin(EchoLoopPlugin), ctx.plugin(AgentsServicePlugin, { loop: { provider: 'x', model: 'y' } })]) await fiber.await()
    const agent = ctx.agents.create({})
    agent.followup('through the custom driver')
    expect(sent).toEqual(['through the custom driver'])
  })

  it('agent/status announces changes only: back-to-back turns stay running', async () => {
    const h = await loopHarness({ responses: [text('1'), text('2')] })
    const statuses: string[] = []
    h.ctx.on('agent/status', (_agent, status) => { statuses.push(status) })
    h.agent.send('queued first', 'next-turn', false)
    h.agent.followup('then this')
    await h.agent.whenIdle()
    expect(h.of('turn/end')).toHaveLength(2)
    expect(statuses).toEqual(['running', 'idle'])
  })

  it('K-2: ctx.agents.create rejects a second agent for the same session and an unknown session', async () => {
    const h = await loopHarness({ responses: [] })
    expect(() => h.ctx.agents.create(h.session.id)).toThrow(/already has a live agent/)
    expect(() => h.ctx.agents.create('no-such-session')).toThrow(/no live session/)
    const crashed = h.ctx.sessions.create({})
    crashed.append('turn/start', { turn: 1 })
    expect(() => h.ctx.agents.create(crashed.id)).toThrow(/open turn/)
  })
})
