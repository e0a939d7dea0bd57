/**
 * The model-facing delegation tools, thin consumers of `ctx.subagents`: one delegation tool per
 * configured row (`subagent` = spawn, `subagent_fork` = fork by default), plus `send_message`,
 * `interrupt_agent` and `list_agents` when a row is continuable. `report` is installed by the
 * service inside continuable children only.
 */
import type { Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import type { SubagentMode } from './api.js'
import { SubagentError } from './api.js'
import {
  BACKGROUND_PARAM, DESCRIPTION_PARAM, FORK_PROMPT_PARAM, INTERRUPT_DESCRIPTION, LIST_AGENTS_DESCRIPTION,
  PROMPT_PARAM, SEND_MESSAGE_DESCRIPTION, SUBAGENT_CONTINUABLE_DESCRIPTION, SUBAGENT_FORK_DESCRIPTION,
  SUBAGENT_ONE_SHOT_DESCRIPTION, interruptText, queuedText, startedText,
} from './texts.js'
import './api.js'
import '../tools/api.js'

export interface SubagentToolRow {
  /** Provider name (`spawn`, `fork`, or a registered one). */
  readonly provider: string
  /** Default `subagent`. */
  readonly toolName?: string
  /** Default `one-shot`. */
  readonly backgroundMode?: SubagentMode
  /** Continuable rows only: whether `run_in_background` is offered (default true). */
  readonly enableRunInBackground?: boolean
  /** SA-2: default 3; 0 forbids delegation. */
  readonly maxDepth?: number
}

export interface SubagentToolsConfig {
  readonly tools?: readonly SubagentToolRow[]
}

/** The shipped composition: continuable `subagent` (spawn) and foreground `subagent_fork`, depth 1. */
export const DEFAULT_TOOL_ROWS: readonly SubagentToolRow[] = [
  { provider: 'spawn', toolName: 'subagent', backgroundMode: 'continuable', maxDepth: 1 },
  { provider: 'fork', toolName: 'subagent_fork', backgroundMode: 'one-shot', enableRunInBackground: false, maxDepth: 1 },
]

const DEFAULT_MAX_DEPTH = 3
const text = (value: string, isError = false): ToolOutput => ({ content: value === '' ? [] : [{ type: 'text', text: value }], ...isError && { isError } })

function parentAgent(ctx: Context, context: ToolContext): Agent {
  const id = context.session?.id
  const agent = id === undefined ? undefined : ctx.agents.get(id)
  if (agent === undefined) throw new Error('delegation needs a live calling agent')
  return agent
}

interface DelegateArgs { readonly description: string; readonly prompt: string; readonly run_in_background?: boolean }

export function delegationTool(ctx: Context, row: SubagentToolRow): Tool<DelegateArgs> {
  const mode = row.backgroundMode ?? 'one-shot'
  const fork = row.provider === 'fork'
  const background = mode === 'continuable' && row.enableRunInBackground !== false
  const maxDepth = row.maxDepth ?? DEFAULT_MAX_DEPTH
  const description = fork ? SUBAGENT_FORK_DESCRIPTION : background ? SUBAGENT_CONTINUABLE_DESCRIPTION : SUBAGENT_ONE_SHOT_DESCRIPTION
  return {
    name: row.toolName ?? 'subagent',
    description,
    parameters: {
      type: 'object',
      properties: {
        description: { type: 'string', description: DESCRIPTION_PARAM },
        prompt: { type: 'string', description: fork ? FORK_PROMPT_PARAM : PROMPT_PARAM },
        ...background && { run_in_background: { type: 'boolean', description: BACKGROUND_PARAM } },
      },
      required: ['description', 'prompt'],
    },
    // SA-7: children overlap; the loop commits results in model order.
    isConcurrencySafe: () => true,
    async execute(args, context) {
      const parent = parentAgent(ctx, context)
      const options = { parent, provider: row.provider, prompt: args.prompt, label: args.description, maxDepth, callId: context.callId }
      try {
        if (background && args.run_in_background !== false) {
          const id = await ctx.subagents.start(options)
          return { ...text(startedText(id)), meta: { childSessionId: id } }
        }
        const result = await ctx.subagents.run(options, context.signal)
        return { ...text(result.output, result.isError), ...result.childSessionId !== '' && { meta: { childSessionId: result.childSessionId } } }
      } catch (error) {
        if (error instanceof SubagentError && error.code === 'DEPTH_EXCEEDED') return text(`Error: ${error.message}`, true)
        throw error
      }
    },
  }
}

export function sendMessageTool(ctx: Context): Tool<{ subagent_id: string; message: string }> {
  return {
    name: 'send_message',
    description: SEND_MESSAGE_DESCRIPTION,
    parameters: {
      type: 'object',
      properties: {
        subagent_id: { type: 'string', description: 'The subagent id returned when the background subagent was started.' },
        message: { type: 'string', description: 'The message to deliver to the subagent.' },
      },
      required: ['subagent_id', 'message'],
    },
    async execute({ subagent_id, message }, context) {
      await ctx.subagents.send(parentAgent(ctx, context), subagent_id, message)
      return text(queuedText(subagent_id))
    },
  }
}

export function interruptAgentTool(ctx: Context): Tool<{ agent_id: string }> {
  return {
    name: 'interrupt_agent',
    description: INTERRUPT_DESCRIPTION,
    parameters: {
      type: 'object',
      properties: { agent_id: { type: 'string', description: 'The agent id of the running agent to interrupt.' } },
      required: ['agent_id'],
    },
    execute({ agent_id }, context) {
      ctx.subagents.interrupt(parentAgent(ctx, context), agent_id)
      return text(interruptText(agent_id))
    },
  }
}

export function listAgentsTool(ctx: Context): Tool<{ scope?: 'children' | 'descendants' }> {
  return {
    name: 'list_agents',
    description: LIST_AGENTS_DESCRIPTION,
    parameters: {
      type: 'object',
      properties: {
        scope: {
          type: 'string',
          description: 'children (default) lists direct children only; descendants walks the complete tree below you.',
          enum: ['children', 'descendants'],
        },
      },
    },
    isConcurrencySafe: () => true,
    async execute({ scope }, context) {
      const lines = await ctx.subagents.list(parentAgent(ctx, context), scope ?? 'children')
      return text(lines.join('\n'))
    },
  }
}

/** Registers the delegation tools of `config` (every registration an effect of `ctx`). */
export class SubagentToolsPlugin {
  static readonly inject = ['subagents', 'tools', 'agents']

  constructor(ctx: Context, config: SubagentToolsConfig = {}) {
    const rows = config.tools ?? DEFAULT_TOOL_ROWS
    const names = new Set<string>()
    for (const row of rows) {
      const tool = delegationTool(ctx, row)
      if (names.has(tool.name)) throw new Error(`dsh-subagents: two delegation rows use the tool name "${tool.name}"`)
      names.add(tool.name)
      ctx.tools.register(tool)
    }
    if (rows.some(row => row.backgroundMode === 'continuable')) {
      ctx.tools.register(sendMessageTool(ctx))
      ctx.tools.register(interruptAgentTool(ctx))
      ctx.tools.register(listAgentsTool(ctx))
    }
  }
}
