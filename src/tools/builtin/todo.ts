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
        additionalProperties: false,
        properties: {
          content: { type: 'string', minLength: 1, description: 'What to do, in a few words.' },
          status: { type: 'string', enum: ['pending', 'in_progress', 'completed'], description: 'pending (not started), in_progress (being worked on) or completed (done).' },
        },
        required: ['content', 'status'],
      },
      description: 'The complete new list; it replaces the previous one.',
    },
  },
  required: ['todos'],
} as const satisfies JsonSchema

export interface TodoWriteConfig {
  /**
   * Whether several items may be `in_progress` at once (work that really runs in parallel:
   * background commands, subagents). Only the description changes; default true.
   */
  readonly allowParallelInProgress?: boolean
}

/** TD-1: the result the model sees, counts only (the list itself is in the call it made). */
export function renderTodos(todos: readonly TodoItem[]): string {
  const count = (status: TodoItem['status']) => todos.filter((t) => t.status === status).length
  return `Updated todo list: ${count('pending')} pending, ${count('in_progress')} in progress, ${count('completed')} completed.`
}

export function todoWriteDescription(allowParallelInProgress = true): string {
  const progress = allowParallelInProgress
    ? 'Mark what you are working on now as in_progress: one item for sequential work, several when work really runs in parallel (background commands, subagents).'
    : 'Keep exactly one item in_progress while work remains.'
  return `Replace the task list for the current work. Every call sends the complete list (content and status); it replaces the previous one, there are no partial updates. Use it to plan multi-step tasks and to show progress, one item per concrete step; skip it for trivial one-step tasks. ${progress} Mark an item completed as soon as it is done.`
}

export function createTodoWriteTool(config: TodoWriteConfig = {}): Tool<TodoWriteArgs> {
  return {
    name: 'todo_write',
    description: todoWriteDescription(config.allowParallelInProgress ?? true),
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
  constructor(ctx: Context, config: TodoWriteConfig = {}) {
    const tool = createTodoWriteTool(config)
    ctx.effect(() => ctx.tools.register(tool))
  }
}
