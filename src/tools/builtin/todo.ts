/**
 * `todo_write`: the model's task list. Each call replaces the whole list; the list lives in the
 * session log as `todo/write` snapshots (the latest one is the current list), so it survives
 * reloads and forks without any state in the tool.
 */
import { Context } from 'cordis'
import type { Tool, ToolOutput } from '../api.js'
import type { JsonSchema } from '../json-schema.js'
import type { TodoItem } from '../../session/types.js'

export interface TodoWriteArgs {
  readonly todos: readonly TodoItem[]
}

export const todoWriteParameters = {
  type: 'object',
  properties: {
    todos: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          content: { type: 'string', minLength: 1, description: 'What to do, in a few words.' },
          status: { type: 'string', enum: ['pending', 'in_progress', 'completed'], description: 'pending, in_progress (ideally one at a time) or completed.' },
        },
        required: ['content', 'status'],
      },
      description: 'The complete new list; it replaces the previous one.',
    },
  },
  required: ['todos'],
} as const satisfies JsonSchema

const marks: Record<TodoItem['status'], string> = { pending: '[ ]', in_progress: '[~]', completed: '[x]' }

/** The short rendering returned to the model. */
export function renderTodos(todos: readonly TodoItem[]): string {
  if (todos.length === 0) return 'Todo list cleared'
  const done = todos.filter((t) => t.status === 'completed').length
  const active = todos.filter((t) => t.status === 'in_progress').length
  const header = `Todo list updated: ${todos.length} item(s), ${done} completed, ${active} in progress, ${todos.length - done - active} pending`
  return [header, ...todos.map((t) => `${marks[t.status]} ${t.content}`)].join('\n')
}

export function createTodoWriteTool(): Tool<TodoWriteArgs> {
  return {
    name: 'todo_write',
    description: 'Replace the task list for the current work. Send the complete list every time (content and status: pending, in_progress or completed). Use it to plan multi-step tasks and to show progress; keep one item in_progress at a time.',
    parameters: todoWriteParameters,
    timeoutMs: 10_000,
    execute(args, context): ToolOutput {
      const todos = args.todos.map((t) => ({ content: t.content, status: t.status }))
      context.session?.append('todo/write', { todos })
      return { content: [{ type: 'text', text: renderTodos(todos) }], meta: { todos } }
    },
  }
}

export class TodoWriteToolPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context) {
    const tool = createTodoWriteTool()
    ctx.effect(() => ctx.tools.register(tool))
  }
}
