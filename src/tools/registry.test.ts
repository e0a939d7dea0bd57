import { Context } from 'cordis'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { bindScopeParent, scopedContext } from '../scope/index.js'
import type { ApprovalOutcome, ApprovalRequest, ApprovalService } from '../approval/api.js'
import type { Session } from '../session/api.js'
import type { PreExecuteDecision, Tool, ToolContext, ToolExecution, ToolResultRecord } from './api.js'
import { defineTool } from './define.js'
import { abortedBeforeDispatchRecord, ToolError, TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH } from './errors.js'
import { ToolsPlugin } from './registry.js'
import { runToolCalls } from '../agent/tool-calls.js'

async function setup(): Promise<Context> {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  return ctx
}

function call(name: string, args = '{}', scope?: object, callId = 'c1'): ToolExecution {
  return { callId, name, arguments: args, ...(scope ? { scope } : {}) }
}

function text(record: ToolResultRecord): string {
  return record.content.map((block) => (block.type === 'text' ? block.text : `[image]`)).join('')
}

/**
 * One call the way the agent loop makes it: through the scheduler, which takes the pipeline's
 * halves from ctx.tools (`start`, then `finish` at the ordered commit), with the loop's callbacks
 * reduced to capturing what would be committed.
 */
async function run(ctx: Context, execution: ToolExecution, signal = new AbortController().signal, session?: Session): Promise<ToolResultRecord> {
  let committed: ToolResultRecord | undefined
  await runToolCalls({
    calls: [execution],
    tools: ctx.tools,
    signal,
    context: { cwd: '/work', ...(session !== undefined ? { session } : {}) },
    startCall: async () => 0,
    commitResult: (_execution, record) => { committed = record },
    // As the loop does (src/agent/step-tools.ts) for a call the scheduler never started.
    abortedBeforeDispatch: async () => { committed = abortedBeforeDispatchRecord() },
  })
  if (committed === undefined) throw new Error('the scheduler closed the call without a result')
  return committed
}

function echoTool(name = 'echo', extra: Partial<Tool> = {}): Tool {
  return {
    name,
    description: `echoes (${name})`,
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    execute: (args: { text: string }) => ({ content: [{ type: 'text', text: args.text }] }),
    ...extra,
  }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('T-1 registration', () => {
  it('T-1: list and schemas are sorted by name and never carry timeoutMs', async () => {
    const ctx = await setup()
    ctx.tools.register(echoTool('zeta', { timeoutMs: 5 }))
    ctx.tools.register(echoTool('alpha'))
    ctx.tools.register(echoTool('Mid'))
    expect(ctx.tools.list().map((tool) => tool.name)).toEqual(['Mid', 'alpha', 'zeta'])
    const schemas = ctx.tools.schemas()
    expect(schemas.map((schema) => Object.keys(schema).sort())).toEqual(Array(3).fill(['description', 'name', 'parameters']))
    expect(JSON.stringify(schemas)).not.toContain('timeoutMs')
  })

  it('T-1/A-10: schemas() is one frozen list while nothing changes, and a new one after any change', async () => {
    const ctx = await setup()
    let sandboxed = false
    const plain = { type: 'object', properties: {} }
    const wide = { type: 'object', properties: { sandbox_permissions: { type: 'string' } } }
    ctx.tools.register({ ...echoTool('getter'), get description() { return sandboxed ? 'sandboxed' : 'plain' }, get parameters() { return sandboxed ? wide : plain } })
    const first = ctx.tools.schemas()
    expect(Object.isFrozen(first)).toBe(true)
    expect(first.every(schema => Object.isFrozen(schema))).toBe(true)
    expect(ctx.tools.schemas()).toBe(first)
    // A tool that gives another description or parameters object: a new list.
    sandboxed = true
    const second = ctx.tools.schemas()
    expect(second).not.toBe(first)
    expect(second[0]).toMatchObject({ description: 'sandboxed', parameters: wide })
    expect(ctx.tools.schemas()).toBe(second)
    // A registration and its disposal: a new list each time.
    const dispose = ctx.tools.register(echoTool('added'))
    const third = ctx.tools.schemas()
    expect(third.map(schema => schema.name)).toEqual(['added', 'getter'])
    dispose()
    expect(ctx.tools.schemas().map(schema => schema.name)).toEqual(['getter'])
    // A scope re-linked under another parent sees that parent's tools at once.
    const parentA = {}
    const parentB = {}
    const child = {}
    const binding = bindScopeParent(child, parentA)
    ctx.tools.register(echoTool('only-b'), parentB)
    expect(ctx.tools.schemas(child).map(schema => schema.name)).toEqual(['getter'])
    binding.rebind(parentB)
    expect(ctx.tools.schemas(child).map(schema => schema.name)).toEqual(['getter', 'only-b'])
  })

  it('T-1: a scoped registration is visible to that scope and its descendants only', async () => {
    const ctx = await setup()
    const parent = {}
    const child = {}
    const other = {}
    bindScopeParent(child, parent)
    ctx.tools.register(echoTool('shared'))
    ctx.tools.register(echoTool('mine'), parent)
    expect(ctx.tools.list(parent).map((t) => t.name)).toEqual(['mine', 'shared'])
    expect(ctx.tools.list(child).map((t) => t.name)).toEqual(['mine', 'shared'])
    expect(ctx.tools.list(other).map((t) => t.name)).toEqual(['shared'])
    expect(ctx.tools.list().map((t) => t.name)).toEqual(['shared'])
    const hidden = await run(ctx, call('mine', '{"text":"x"}', other))
    expect(hidden.error?.code).toBe('UNKNOWN_TOOL')
    expect(text(await run(ctx, call('mine', '{"text":"x"}', child)))).toBe('x')
  })

  it('T-1: the nearest scope wins on a name clash', async () => {
    const ctx = await setup()
    const agent = {}
    ctx.tools.register(echoTool('read'))
    ctx.tools.register({ ...echoTool('read'), description: 'agent read' }, agent)
    expect(ctx.tools.get('read', agent)?.description).toBe('agent read')
    expect(ctx.tools.get('read')?.description).toBe('echoes (read)')
  })

  it('T-1: registering through a scope-tagged context (agent.ctx) scopes the tool', async () => {
    const ctx = await setup()
    const agent = {}
    scopedContext(ctx, agent).tools.register(echoTool('private'))
    expect(ctx.tools.get('private')).toBeUndefined()
    expect(ctx.tools.get('private', agent)?.name).toBe('private')
  })

  it('T-1: the disposer and unloading the registering plugin both remove the tool', async () => {
    const ctx = await setup()
    const dispose = ctx.tools.register(echoTool('once'))
    dispose()
    expect(ctx.tools.get('once')).toBeUndefined()
    const fiber = ctx.plugin({ name: 'adds-tool', inject: ['tools'], apply: (inner: Context) => void inner.tools.register(echoTool('plugged')) })
    await fiber
    expect(ctx.tools.get('plugged')?.name).toBe('plugged')
    await fiber.dispose()
    expect(ctx.tools.get('plugged')).toBeUndefined()
  })

  it('T-1: a malformed tool or a duplicate name is refused with a clear error', async () => {
    const ctx = await setup()
    expect(() => ctx.tools.register({ ...echoTool(), name: 'has space' })).toThrow(/tool name "has space" must match/)
    expect(() => ctx.tools.register({ ...echoTool(), parameters: undefined as never })).toThrow(/parameters must be a JSON Schema object/)
    expect(() => ctx.tools.register({ ...echoTool(), timeoutMs: 0 })).toThrow(/timeoutMs must be a positive number/)
    ctx.tools.register(echoTool('dup'))
    expect(() => ctx.tools.register(echoTool('dup'))).toThrow(/"dup" is already registered/)
  })
})

describe('T-2 fail-closed classification', () => {
  const safe = (verdict: (args: any) => unknown) => echoTool('probe', { isConcurrencySafe: verdict })

  it('T-2: parallel only when the classifier returns exactly true', async () => {
    const ctx = await setup()
    const verdicts: unknown[] = [true, 'true', 1, {}, undefined, null, false]
    const modes = verdicts.map((verdict) => {
      const dispose = ctx.tools.register(safe(() => verdict))
      const mode = ctx.tools.executionMode(call('probe', '{"text":"a"}')).kind
      dispose()
      return mode
    })
    expect(modes).toEqual(['parallel', 'exclusive', 'exclusive', 'exclusive', 'exclusive', 'exclusive', 'exclusive'])
  })

  it('T-2: unknown, hidden, unclassified, throwing and unparsable calls are exclusive', async () => {
    const ctx = await setup()
    const agent = {}
    ctx.tools.register(safe(() => true), agent)
    ctx.tools.register(echoTool('plain'))
    ctx.tools.register(echoTool('thrower', { isConcurrencySafe: () => { throw new Error('boom') } }))
    expect(ctx.tools.executionMode(call('probe', '{"text":"a"}', agent)).kind).toBe('parallel')
    expect(ctx.tools.executionMode(call('nope')).kind).toBe('exclusive')
    expect(ctx.tools.executionMode(call('probe', '{"text":"a"}', {})).kind).toBe('exclusive')
    expect(ctx.tools.executionMode(call('plain', '{"text":"a"}')).kind).toBe('exclusive')
    expect(ctx.tools.executionMode(call('thrower', '{"text":"a"}')).kind).toBe('exclusive')
    expect(ctx.tools.executionMode(call('probe', '{"text":', agent)).kind).toBe('exclusive')
    expect(ctx.tools.executionMode(call('probe', '{"text":3}', agent)).kind).toBe('exclusive')
  })

  it('T-2: the classifier gets the parsed arguments (zod defaults applied)', async () => {
    const ctx = await setup()
    const seen: unknown[] = []
    ctx.tools.register(defineTool({
      name: 'read',
      description: 'reads',
      schema: z.object({ path: z.string(), mode: z.enum(['peek', 'write']).default('peek') }),
      execute: () => ({ content: [] }),
      isConcurrencySafe: (args) => { seen.push(args); return args.mode === 'peek' },
    }))
    expect(ctx.tools.executionMode(call('read', '{"path":"a"}')).kind).toBe('parallel')
    expect(ctx.tools.executionMode(call('read', '{"path":"a","mode":"write"}')).kind).toBe('exclusive')
    expect(seen).toEqual([{ path: 'a', mode: 'peek' }, { path: 'a', mode: 'write' }])
  })
})

describe('T-7 errors are results', () => {
  it('T-7: empty arguments mean {}', async () => {
    const ctx = await setup()
    const seen: unknown[] = []
    ctx.tools.register({ ...echoTool('noargs'), parameters: { type: 'object' }, execute: (args) => { seen.push(args); return { content: [] } } })
    await run(ctx, call('noargs', ''))
    await run(ctx, call('noargs', '  \n'))
    expect(seen).toEqual([{}, {}])
  })

  it('T-7: invalid JSON arguments become an error result, not an exception', async () => {
    const ctx = await setup()
    const body = vi.fn()
    ctx.tools.register({ ...echoTool(), execute: body })
    const record = await run(ctx, call('echo', '{"text": "unterminated'))
    expect(record.isError).toBe(true)
    expect(text(record)).toMatch(/^Error: invalid JSON arguments: /)
    expect(record.error).toEqual({ name: 'ToolError', code: 'INVALID_ARGUMENTS' })
    expect(body).not.toHaveBeenCalled()
  })

  it('T-7: arguments failing the JSON Schema name the offending property', async () => {
    const ctx = await setup()
    ctx.tools.register(echoTool())
    expect(text(await run(ctx, call('echo', '{}')))).toBe('Error: invalid arguments for echo: text: required')
    expect(text(await run(ctx, call('echo', '{"text":3}')))).toBe('Error: invalid arguments for echo: text: expected string, got integer')
    expect(text(await run(ctx, call('echo', '[]')))).toBe('Error: invalid arguments for echo: (arguments): expected object, got array')
  })

  it('T-7: defineTool validation messages are readable and list each problem', async () => {
    const ctx = await setup()
    ctx.tools.register(defineTool({
      name: 'grep',
      description: 'search',
      schema: z.object({ pattern: z.string(), limit: z.number().int().positive().optional() }),
      execute: () => ({ content: [] }),
    }))
    const record = await run(ctx, call('grep', '{"pattern":1,"limit":-2}'))
    expect(record.error?.code).toBe('INVALID_ARGUMENTS')
    expect(text(record)).toMatch(/^Error: invalid arguments for grep: pattern: .*string.*; limit: .*>0/)
  })

  it('T-7: a tool that throws yields an error record; a ToolError chooses the code', async () => {
    const ctx = await setup()
    ctx.tools.register({ ...echoTool('crash'), execute: () => { throw new RangeError('bad range') } })
    ctx.tools.register({ ...echoTool('missing'), execute: async () => { throw new ToolError('no such file: a.txt', 'NOT_FOUND') } })
    ctx.tools.register({ ...echoTool('junk'), execute: () => 'not an output' as never })
    expect(await run(ctx, call('crash', '{"text":""}'))).toEqual({
      content: [{ type: 'text', text: 'Error: bad range' }],
      isError: true,
      error: { name: 'RangeError', code: 'TOOL_FAILED' },
    })
    expect(await run(ctx, call('missing', '{"text":""}'))).toMatchObject({ isError: true, error: { name: 'ToolError', code: 'NOT_FOUND' } })
    expect(await run(ctx, call('junk', '{"text":""}'))).toMatchObject({ isError: true, error: { code: 'INVALID_OUTPUT' } })
  })

  it('T-7: an unknown tool is an error result', async () => {
    const ctx = await setup()
    const record = await run(ctx, call('ghost'))
    expect(text(record)).toBe('Error: unknown tool "ghost"')
    expect(record.error?.code).toBe('UNKNOWN_TOOL')
  })

  it('T-1/T-7: a tool hanging past its timeoutMs is aborted and yields TIMEOUT', async () => {
    vi.useFakeTimers()
    const ctx = await setup()
    let toolSignal: AbortSignal | undefined
    ctx.tools.register({
      ...echoTool('hang'),
      timeoutMs: 1000,
      // Returns only when signalled; the timeout waits for it (T-6).
      execute: (_args, context: ToolContext) => {
        toolSignal = context.signal
        return new Promise((resolve) => { context.signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'stopped' }] }), { once: true }) })
      },
    })
    const pending = run(ctx, call('hang', '{"text":""}'))
    await vi.advanceTimersByTimeAsync(999)
    expect(toolSignal?.aborted).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    const record = await pending
    expect(toolSignal?.aborted).toBe(true)
    expect(record).toMatchObject({ isError: true, error: { name: 'TimeoutError', code: 'TIMEOUT' } })
    expect(text(record)).toBe('Error: tool hang timed out after 1000 ms')
  })

  it('T-1: a tool finishing within its timeout is unaffected', async () => {
    vi.useFakeTimers()
    const ctx = await setup()
    ctx.tools.register({ ...echoTool('quick'), timeoutMs: 1000 })
    expect(text(await run(ctx, call('quick', '{"text":"ok"}')))).toBe('ok')
    expect(vi.getTimerCount()).toBe(0)
  })
})

describe('T-5 pipeline events', () => {
  it('T-5: tools/pre-execute deny becomes an error result and the body never runs', async () => {
    const ctx = await setup()
    const body = vi.fn()
    ctx.tools.register({ ...echoTool(), execute: body })
    ctx.on('tools/pre-execute', async (): Promise<PreExecuteDecision> => ({ kind: 'deny', reason: 'read-only session' }))
    const record = await run(ctx, call('echo', '{"text":"x"}'))
    expect(text(record)).toBe('Error: tool call denied: read-only session')
    expect(record.error).toEqual({ name: 'PermissionError', code: 'DENIED' })
    expect(body).not.toHaveBeenCalled()
  })

  it('T-7/AP-3: ask without an approval service fails closed with the recorded text', async () => {
    const ctx = await setup()
    const body = vi.fn()
    ctx.tools.register({ ...echoTool(), execute: body })
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'writes files' }))
    const record = await run(ctx, call('echo', '{"text":"x"}'))
    expect(text(record)).toBe('Error: tool "echo" requires approval, but no approval channel is available')
    expect(record.error?.code).toBe('DENIED')
    expect(body).not.toHaveBeenCalled()
  })

  it('T-7/AP-3: ask goes through ctx.approval; only allowed-once runs the call, each outcome has its text', async () => {
    const ctx = await setup()
    const asked: [string, string][] = []
    let answer: ApprovalOutcome = 'allowed-once'
    const approval = { request: async (request: ApprovalRequest) => { asked.push([request.callId, request.reason]); return answer } } as unknown as ApprovalService
    ctx.provide('approval', approval)
    ctx.tools.register(echoTool())
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask', reason: 'why' }))
    const session = { id: 's' } as unknown as Session
    const go = (id: string) => run(ctx, call('echo', '{"text":"yes"}', undefined, id), undefined, session)
    expect(text(await go('a'))).toBe('yes')
    answer = 'rejected'
    expect(text(await go('b'))).toBe('Error: the user rejected tool "echo"')
    answer = 'cancelled'
    expect(text(await go('c'))).toBe('Error: approval for tool "echo" was cancelled')
    answer = 'unavailable'
    expect(text(await go('d'))).toBe('Error: tool "echo" requires approval, but no approval channel is available')
    expect(asked).toEqual([['a', 'why'], ['b', 'why'], ['c', 'why'], ['d', 'why']])
  })

  it('T-5: a throwing or nonsensical pre-execute listener fails closed', async () => {
    const ctx = await setup()
    const body = vi.fn()
    ctx.tools.register({ ...echoTool(), execute: body })
    const off = ctx.on('tools/pre-execute', async () => { throw new Error('policy down') })
    expect(await run(ctx, call('echo', '{"text":"x"}'))).toMatchObject({ isError: true, error: { code: 'POLICY_FAILED' } })
    off()
    ctx.on('tools/pre-execute', async () => ({ kind: 'maybe' }) as never)
    expect(await run(ctx, call('echo', '{"text":"x"}'))).toMatchObject({ isError: true, error: { code: 'POLICY_FAILED' } })
    expect(body).not.toHaveBeenCalled()
  })

  it('K-4/T-5: tools/execute is a waterfall around the body; tools/post-execute rewrites the record', async () => {
    const ctx = await setup()
    const order: string[] = []
    ctx.tools.register({ ...echoTool(), execute: (args: { text: string }) => { order.push('body'); return { content: [{ type: 'text', text: args.text }] } } })
    ctx.on('tools/execute', async (execution, context, next) => {
      order.push(`outer:${context.callId}`)
      const record = await next()
      order.push('outer-after')
      return record
    })
    ctx.on('tools/execute', async (_execution, _context, next) => { order.push('inner'); return next() })
    ctx.on('tools/post-execute', async (_execution, record, next) => {
      const inner = await next()
      return { ...inner, content: [{ type: 'text', text: `${text(record)}!` }] }
    })
    expect(text(await run(ctx, call('echo', '{"text":"hi"}', undefined, 'c9')))).toBe('hi!')
    expect(order).toEqual(['outer:c9', 'inner', 'body', 'outer-after'])
  })

  it('K-4/T-5: a tools/execute listener may short-circuit the body', async () => {
    const ctx = await setup()
    const body = vi.fn()
    ctx.tools.register({ ...echoTool(), execute: body })
    ctx.on('tools/execute', async () => ({ content: [{ type: 'text', text: 'cached' }], isError: false }))
    expect(text(await run(ctx, call('echo', '{"text":"x"}')))).toBe('cached')
    expect(body).not.toHaveBeenCalled()
  })

  it('T-5: a crashing post-execute listener fails closed instead of leaking the raw record', async () => {
    const ctx = await setup()
    ctx.tools.register(echoTool())
    ctx.on('tools/post-execute', async () => { throw new Error('redactor down') })
    const record = await run(ctx, call('echo', '{"text":"secret"}'))
    expect(text(record)).toBe('Error: redactor down')
    expect(record.error?.code).toBe('POLICY_FAILED')
  })

  it('K-4/T-5: tools/result is a contained emit admitted by scope', async () => {
    const ctx = await setup()
    const agent = {}
    const seen: string[] = []
    ctx.on('tools/result', () => { throw new Error('bad observer') })
    ctx.on('tools/result', (execution) => void seen.push(`untagged:${execution.callId}`))
    scopedContext(ctx, {}).on('tools/result', (execution) => void seen.push(`other:${execution.callId}`))
    scopedContext(ctx, agent).on('tools/result', (execution) => void seen.push(`agent:${execution.callId}`))
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    let reported: unknown[][]
    try {
      ctx.tools.committed(call('echo', '{}', agent, 'r1'), { content: [], isError: false })
    } finally {
      reported = [...stderr.mock.calls]
      stderr.mockRestore()
    }
    expect(seen).toEqual(['untagged:r1', 'agent:r1'])
    expect(reported).toEqual([[expect.stringContaining('bad observer')]])
  })

  it('T-5: scoped pipeline listeners only see calls of their scope', async () => {
    const ctx = await setup()
    const agent = {}
    ctx.tools.register(echoTool())
    scopedContext(ctx, agent).on('tools/pre-execute', async () => ({ kind: 'deny', reason: 'agent policy' }))
    expect((await run(ctx, call('echo', '{"text":"x"}'))).isError).toBe(false)
    expect((await run(ctx, call('echo', '{"text":"x"}', agent))).error?.code).toBe('DENIED')
  })
})

describe('T-6 signals', () => {
  it('T-6: the per-call signal is fused with the caller signal', async () => {
    const ctx = await setup()
    const caller = new AbortController()
    let started!: () => void
    const running = new Promise<void>((resolve) => { started = resolve })
    let toolSignal: AbortSignal | undefined
    ctx.tools.register({
      ...echoTool('wait'),
      execute: (_args, context: ToolContext) => {
        toolSignal = context.signal
        started()
        return new Promise((resolve) => context.signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'stopped' }] })))
      },
    })
    const pending = run(ctx, call('wait', '{"text":""}'), caller.signal)
    await running
    expect(toolSignal).not.toBe(caller.signal)
    caller.abort()
    const record = await pending
    expect(toolSignal?.aborted).toBe(true)
    // T-6: the body was awaited; its successful outcome became ABORTED.
    expect(record.error?.code).toBe(TOOL_ABORTED)
  })

  it('T-6: a caller already aborted before dispatch never runs the body', async () => {
    const ctx = await setup()
    const body = vi.fn()
    ctx.tools.register({ ...echoTool(), execute: body })
    const caller = new AbortController()
    caller.abort()
    expect((await run(ctx, call('echo', '{"text":"x"}'), caller.signal)).error?.code).toBe(TOOL_ABORTED_BEFORE_DISPATCH)
    expect(body).not.toHaveBeenCalled()
  })

  it('T-6: cancelling while approval is pending settles the call as aborted before dispatch', async () => {
    const ctx = await setup()
    const body = vi.fn()
    let asked!: () => void
    const askedPromise = new Promise<void>((resolve) => { asked = resolve })
    ctx.provide('approval', { request: (request: ApprovalRequest) => {
      asked()
      return new Promise<ApprovalOutcome>(resolve => request.signal?.addEventListener('abort', () => resolve('cancelled')))
    } } as unknown as ApprovalService)
    ctx.tools.register({ ...echoTool(), execute: body })
    ctx.on('tools/pre-execute', async () => ({ kind: 'ask' }))
    const caller = new AbortController()
    const pending = run(ctx, call('echo', '{"text":"x"}'), caller.signal, { id: 's' } as unknown as Session)
    await askedPromise
    caller.abort()
    expect((await pending).error?.code).toBe(TOOL_ABORTED_BEFORE_DISPATCH)
    expect(body).not.toHaveBeenCalled()
  })
})

describe('ctx.tools.execute', () => {
  it('T-5/T-6/T-7: execute runs the scheduler\'s pipeline for one call: the same record for every kind of outcome', async () => {
    const ctx = await setup()
    ctx.tools.register(echoTool())
    ctx.tools.register({ ...echoTool('crash'), execute: () => { throw new ToolError('gone', 'NOT_FOUND') } })
    let bodyStarted = (): void => {}
    ctx.tools.register({ ...echoTool('slow'), execute: (_args, context: ToolContext) => new Promise((resolve) => {
      context.signal.addEventListener('abort', () => resolve({ content: [{ type: 'text', text: 'late' }] }))
      bodyStarted()
    }) })
    ctx.on('tools/pre-execute', async (execution, next) => execution.callId === 'deny' ? { kind: 'deny', reason: 'no' } : next())
    ctx.on('tools/post-execute', async (_execution, record, next) => { const out = await next(); return { ...out, meta: { seen: true } } })
    const cases: [ToolExecution, boolean][] = [
      [call('echo', '{"text":"hi"}'), false], [call('echo', '{"text":'), false], [call('ghost'), false],
      [call('crash', '{"text":""}'), false], [call('echo', '{"text":"x"}', undefined, 'deny'), false], [call('slow', '{"text":""}'), true],
    ]
    for (const [execution, cancel] of cases) {
      const outcomes: ToolResultRecord[] = []
      for (const way of [(signal: AbortSignal) => ctx.tools.execute(execution, { cwd: '/work', signal }), (signal: AbortSignal) => run(ctx, execution, signal)]) {
        const caller = new AbortController()
        const started = new Promise<void>((resolve) => { bodyStarted = resolve })
        const pending = way(caller.signal)
        if (cancel) {
          await started
          caller.abort()
        }
        outcomes.push(await pending)
      }
      expect(outcomes[0], execution.name).toEqual(outcomes[1])
      expect(outcomes[0]!.meta).toEqual({ seen: true })
    }
  })
})

describe('defineTool', () => {
  it('T-1: derives the JSON Schema from zod without $schema, with defaults optional', () => {
    const tool = defineTool({
      name: 'read',
      description: 'Read a file',
      schema: z.object({ path: z.string().describe('file path'), offset: z.number().int().default(0) }),
      timeoutMs: 10,
      execute: () => ({ content: [] }),
    })
    expect(tool.parameters).toEqual({
      type: 'object',
      properties: { path: { type: 'string', description: 'file path' }, offset: expect.objectContaining({ type: 'integer', default: 0 }) },
      required: ['path'],
    })
    expect(tool.timeoutMs).toBe(10)
    expect(tool.parse!({ path: 'a' })).toEqual({ path: 'a', offset: 0 })
  })

  it('T-1: a schema that is not an object is refused when the tool is defined', () => {
    expect(() => defineTool({ name: 'bad', description: '', schema: z.string(), execute: () => ({ content: [] }) }))
      .toThrow('dsh-tools: tool bad: schema must describe an object (providers take named arguments), got "string"')
  })
})
