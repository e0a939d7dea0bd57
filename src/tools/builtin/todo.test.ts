import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SessionsServicePlugin } from '../../session/index.js'
import { resultText, toolsHarness, type ToolsHarness } from '../../../test-support/builtin-tools.js'

let h: ToolsHarness
beforeEach(async () => {
  h = await toolsHarness()
  await h.ctx.plugin(SessionsServicePlugin)
})
afterEach(async () => { await h.cleanup() })

const todos = [
  { content: 'Read the code', status: 'completed' },
  { content: 'Write the fix', status: 'in_progress' },
  { content: 'Run the tests', status: 'pending' },
]

describe('todo_write', () => {
  it('appends a todo/write event with the whole list and returns a short rendering', async () => {
    const session = h.ctx.sessions.create({ cwd: h.cwd })
    session.append('turn/start', { turn: 1 })
    const record = await h.call('todo_write', { todos }, { session })
    expect(record.isError).toBe(false)
    // TD-1: the original's wording.
    expect(resultText(record)).toBe('Updated todo list: 1 pending, 1 in progress, 1 completed.')
    const last = session.events[session.events.length - 1]
    expect(last.type).toBe('todo/write')
    expect(last.data).toEqual({ todos })
  })

  it('each call replaces the list: the latest todo/write is the current list', async () => {
    const session = h.ctx.sessions.create({ cwd: h.cwd })
    session.append('turn/start', { turn: 1 })
    await h.call('todo_write', { todos }, { session })
    await h.call('todo_write', { todos: [{ content: 'Only this', status: 'pending' }] }, { session })
    const writes = session.events.filter((event) => event.type === 'todo/write')
    expect(writes).toHaveLength(2)
    expect(writes[1].data).toEqual({ todos: [{ content: 'Only this', status: 'pending' }] })
    expect(resultText(await h.call('todo_write', { todos: [] }, { session }))).toBe('Updated todo list: 0 pending, 0 in progress, 0 completed.')
  })

  it('TD-1: items allow no extra keys; allowParallelInProgress only changes the description', async () => {
    const extra = await h.call('todo_write', { todos: [{ content: 'a', status: 'pending', priority: 'high' }] })
    expect(extra.isError).toBe(true)
    const { createTodoWriteTool } = await import('./todo.js')
    expect(createTodoWriteTool().description).toMatch(/several when work really runs in parallel/)
    expect(createTodoWriteTool({ allowParallelInProgress: false }).description).toMatch(/exactly one item in_progress/)
  })

  it('works without a session (rendering only) and rejects an unknown status', async () => {
    expect(resultText(await h.call('todo_write', { todos: [{ content: 'a', status: 'pending' }] }))).toBe('Updated todo list: 1 pending, 0 in progress, 0 completed.')
    const bad = await h.call('todo_write', { todos: [{ content: 'a', status: 'doing' }] })
    expect(bad.isError).toBe(true)
    expect(bad.error?.code).toBe('INVALID_ARGUMENTS')
    expect(resultText(bad)).toContain('todos.0.status')
  })
})
