import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls, type ScriptedResponse } from '../../test-support/scripted-model.js'
import type { UserMessage } from '../llm/types.js'
import type { Tool } from '../tools/api.js'
import { detailedReminder, FIRST_REMINDER, previewArguments, RepeatToolReminderPlugin, REPEAT_TOOL_PLUGIN, type RepeatToolConfig } from './repeat-tool.js'

let h: LoopHarness | undefined
afterEach(async () => {
  await h?.dispose()
  h = undefined
})

const tool = (name: string): Tool => ({
  name, description: `${name} for tests`, parameters: { type: 'object' },
  execute: () => ({ content: [{ type: 'text', text: `${name} answered` }] }),
})
const TOOLS = [tool('probe'), tool('other'), tool('todo_write')]

let ids = 0
const call = (name: string, args: unknown = {}): ScriptedResponse => toolCalls([{ id: `c${++ids}`, name, arguments: args as Record<string, unknown> }])
const repeat = (n: number, name = 'probe', args: unknown = { path: 'a.txt' }): ScriptedResponse[] => Array.from({ length: n }, () => call(name, args))

async function harness(responses: ScriptedResponse[], config?: RepeatToolConfig, setup?: (ctx: Context) => Promise<void>): Promise<LoopHarness> {
  await h?.dispose()
  h = await loopHarness({
    responses, tools: TOOLS,
    setup: setup ?? (async (ctx) => { await ctx.plugin(RepeatToolReminderPlugin, config ?? {}).await() }),
  })
  return h
}

async function prompt(h: LoopHarness, input: string): Promise<void> {
  h.agent.followup(input)
  await h.agent.whenIdle()
}

const isReminder = (message: UserMessage) => (message.source as { plugin?: string }).plugin === REPEAT_TOOL_PLUGIN

/** The log as a list: `call N` for each tool call (numbered from 1) and `reminder(count)` where one was claimed. */
function trace(h: LoopHarness): string[] {
  const out: string[] = []
  let calls = 0
  for (const event of h.session.events) {
    if (event.type === 'tool/call') out.push(`call ${++calls}`)
    if (event.type === 'user/message' && isReminder(event.data as UserMessage)) out.push(`reminder(${(event.data as { source: { count: number } }).source.count})`)
  }
  return out
}

const reminders = (h: LoopHarness) => h.of('user/message').map(e => e.data as UserMessage).filter(isReminder)
const textOf = (message: UserMessage) => (message.content[0] as { text: string }).text

describe('the repeat-tool reminder (guard-repeat-tool)', () => {
  it('reminds at the 3rd, 5th and 8th identical call in a row and at no other, logged right after the call that reached the count', async () => {
    const h = await harness([...repeat(9), text('done')])
    await prompt(h, 'go')
    expect(trace(h)).toEqual([
      'call 1', 'call 2', 'call 3', 'reminder(3)', 'call 4', 'call 5', 'reminder(5)', 'call 6', 'call 7', 'call 8', 'reminder(8)', 'call 9',
    ])
    const [first, second, third] = reminders(h)
    expect(textOf(first!)).toBe(FIRST_REMINDER)
    expect(textOf(second!)).toBe(detailedReminder('probe', 5, '{"path":"a.txt"}'))
    expect(textOf(third!)).toContain('probe, 8 times in a row')
    expect(first!.source).toEqual({ kind: 'plugin', plugin: REPEAT_TOOL_PLUGIN, form: 'reminder', tool: 'probe', count: 3, summary: 'probe called 3 times in a row with the same arguments' })
    // The model read the first reminder in its 4th request, after the 3rd call's result, and not before.
    expect(JSON.stringify(h.model.requests[2]!.messages)).not.toContain(FIRST_REMINDER)
    const fourth = JSON.stringify(h.model.requests[3]!.messages)
    expect(fourth.indexOf(FIRST_REMINDER)).toBeGreaterThan(fourth.lastIndexOf('probe answered'))
    // The tool's own results are left alone.
    expect(h.of('tool/result').every(e => JSON.stringify(e.data).includes('probe answered'))).toBe(true)
  })

  it('arguments differing only in key order are the same call; other arguments or another tool start a new run', async () => {
    const h = await harness([
      call('probe', { a: 1, b: { c: 2, d: 3 } }), call('probe', { b: { d: 3, c: 2 }, a: 1 }),
      call('probe', { a: 2 }), call('probe', { a: 2 }), call('other', { a: 2 }), call('probe', { a: 2 }), call('probe', { a: 2 }),
      call('probe', { a: 1, b: { c: 2, d: 3 } }), text('done'),
    ])
    await prompt(h, 'go')
    expect(trace(h)).toEqual(['call 1', 'call 2', 'call 3', 'call 4', 'call 5', 'call 6', 'call 7', 'call 8'])
    const again = await harness([call('probe', { a: 1, b: [1, { y: 1, x: 2 }] }), call('probe', { b: [1, { x: 2, y: 1 }], a: 1 }), call('probe', { a: 1, b: [1, { x: 2, y: 1 }] }), text('done')])
    await prompt(again, 'go')
    expect(trace(again)).toEqual(['call 1', 'call 2', 'call 3', 'reminder(3)'])
  })

  it('an excluded tool (todo_write by default) between the calls neither counts nor breaks the run', async () => {
    const h = await harness([call('probe'), call('todo_write', { todos: [] }), call('probe'), call('todo_write', { todos: [] }), call('probe'), text('done')])
    await prompt(h, 'go')
    expect(trace(h)).toEqual(['call 1', 'call 2', 'call 3', 'call 4', 'call 5', 'reminder(3)'])
  })

  it('a message the user writes ends the run; a new turn without one does not', async () => {
    const h = await harness([...repeat(2), text('first'), ...repeat(2), text('second')])
    await prompt(h, 'one')
    await prompt(h, 'two')
    expect(reminders(h)).toEqual([])
    const more = await harness([...repeat(2), text('first'), ...repeat(1), text('second')])
    await prompt(more, 'one')
    // A turn a plugin opens (a notice that wakes the agent) is not the user's.
    more.agent.send({ id: 'wake', role: 'user', content: [{ type: 'text', text: 'a job ended' }], source: { kind: 'plugin', plugin: 'test' } }, 'next-turn', true)
    await more.agent.whenIdle()
    expect(trace(more)).toEqual(['call 1', 'call 2', 'call 3', 'reminder(3)'])
  })

  it('a plugin loaded afresh on a session (a resume) counts on from the log', async () => {
    let fiber: { dispose(): unknown } | undefined
    const h = await harness([...repeat(2), text('first'), ...repeat(1), text('second')], undefined, async (ctx) => {
      fiber = ctx.plugin(RepeatToolReminderPlugin, {})
      await (fiber as unknown as { await(): Promise<void> }).await()
    })
    await prompt(h, 'one')
    await fiber!.dispose()
    await h.ctx.plugin(RepeatToolReminderPlugin, {}).await()
    h.agent.send({ id: 'wake', role: 'user', content: [{ type: 'text', text: 'continue' }], source: { kind: 'plugin', plugin: 'test' } }, 'next-turn', true)
    await h.agent.whenIdle()
    expect(trace(h)).toEqual(['call 1', 'call 2', 'call 3', 'reminder(3)'])
  })

  it('include limits the tools counted; thresholds are configurable; the arguments quoted are cut', async () => {
    const long = { text: 'x'.repeat(40) }
    const h = await harness([...repeat(3, 'other'), ...repeat(4, 'probe', long), text('done')], { include: ['pro*'], thresholds: [4, 2], argumentsPreviewChars: 10 })
    await prompt(h, 'go')
    expect(trace(h)).toEqual(['call 1', 'call 2', 'call 3', 'call 4', 'call 5', 'reminder(2)', 'call 6', 'call 7', 'reminder(4)'])
    const [first, later] = reminders(h)
    expect(textOf(first!)).toBe(FIRST_REMINDER)
    expect(textOf(later!)).toContain(`\n{"text":"x… (+${JSON.stringify(long).length - 10} more chars)\n`)
    expect(previewArguments('abc', 3)).toBe('abc')
  })

  it('bad settings fail at load with a clear error', async () => {
    for (const [config, message] of [
      [{ thresholds: [] }, /thresholds must be a non-empty list/],
      [{ thresholds: [1] }, /integers of at least 2, not 1/],
      [{ thresholds: [2.5] }, /not 2.5/],
      [{ thresholds: [3, 3] }, /must not repeat/],
      [{ argumentsPreviewChars: 0 }, /argumentsPreviewChars must be an integer of at least 1/],
      [{ exclude: 'todo_write' }, /exclude must be a list/],
    ] as const) {
      expect(() => new RepeatToolReminderPlugin({ on: () => () => {} } as never, config as never)).toThrow(message)
    }
  })

  it('the base bundle has the row; a patch disabling it removes the reminder', async () => {
    const { compose, findRow, stripTracking } = await import('../config/rows.js')
    const { bundleLayer } = await import('../config/profile.js')
    const { loadRows } = await import('../cli/loader.js')
    const rowOf = (patch: object[]) => {
      const { rows } = compose([bundleLayer('base'), { source: 'test patch', kind: 'patch', items: patch }])
      return stripTracking(findRow(rows, 'guard-repeat-tool')!)
    }
    const kept = rowOf([])
    expect(kept).toMatchObject({ id: 'guard-repeat-tool', name: 'guard-repeat-tool' })
    const withRow = await harness([...repeat(3), text('done')], undefined, async (ctx) => { await loadRows(ctx, [kept]) })
    await prompt(withRow, 'go')
    expect(reminders(withRow)).toHaveLength(1)
    const removed = rowOf([{ id: 'guard-repeat-tool', disabled: true }])
    const without = await harness([...repeat(3), text('done')], undefined, async (ctx) => { await loadRows(ctx, [removed]) })
    await prompt(without, 'go')
    expect(reminders(without)).toEqual([])
  })
})
