/**
 * A loaded runtime for agent-loop tests and benchmarks: sessions, llm, tools, the A-11 invariant
 * (always on), the default loop and the agent registry, with the scripted model registered.
 */
import { Context } from 'cordis'
import { AgentsServicePlugin, LoopInvariantPlugin, ReactLoopPlugin } from '../src/agent/index.js'
import type { Agent, AgentLoopConfig } from '../src/agent/api.js'
import { LlmServicePlugin } from '../src/llm/index.js'
import type { ModelInfo } from '../src/llm/types.js'
import { SessionsServicePlugin } from '../src/session/index.js'
import type { Session } from '../src/session/api.js'
import type { SessionEvent } from '../src/session/types.js'
import { ToolsPlugin } from '../src/tools/index.js'
import type { Tool } from '../src/tools/api.js'
import { SCRIPTED_MODEL, SCRIPTED_PROVIDER, ScriptedModel, type ScriptedResponse } from './scripted-model.js'

export interface LoopHarnessOptions {
  readonly responses?: readonly ScriptedResponse[]
  readonly tools?: readonly Tool[]
  readonly loop?: Partial<AgentLoopConfig>
  readonly cwd?: string
  /** Extra plugins loaded before the agent is created (e.g. a prompt service). */
  readonly setup?: (ctx: Context) => void | Promise<void>
  /** The A-11 invariant is on unless a benchmark turns it off to measure it. */
  readonly invariant?: boolean
  /** The scripted model's catalogue entries (default: one model without reasoning efforts). */
  readonly models?: readonly ModelInfo[]
}

export interface LoopHarness {
  readonly ctx: Context
  readonly model: ScriptedModel
  readonly agent: Agent
  readonly session: Session
  /** `type` of every event, in log order. */
  types(): string[]
  /** Events of one type. */
  of<T extends string>(type: T): SessionEvent<T>[]
  dispose(): Promise<void>
}

/** Sessions, LLM, tools, the loop and agents (default route: the scripted model, or `model`). */
export async function startCore(ctx: Context, model = SCRIPTED_MODEL): Promise<void> {
  for (const fiber of [
    ctx.plugin(SessionsServicePlugin),
    ctx.plugin(LlmServicePlugin),
    ctx.plugin(ToolsPlugin),
    ctx.plugin(ReactLoopPlugin),
    ctx.plugin(AgentsServicePlugin, { loop: { provider: SCRIPTED_PROVIDER, model } }),
  ]) await fiber.await()
}

export async function loopHarness(options: LoopHarnessOptions = {}): Promise<LoopHarness> {
  const ctx = new Context()
  await startCore(ctx)
  if (options.invariant !== false) await ctx.plugin(LoopInvariantPlugin).await()
  const model = new ScriptedModel(options.responses ?? [])
  model.register(ctx, options.models)
  for (const tool of options.tools ?? []) ctx.tools.register(tool)
  await options.setup?.(ctx)
  const agent = ctx.agents.create({ cwd: options.cwd ?? process.cwd(), ...(options.loop !== undefined ? { loop: options.loop } : {}) })
  const session = agent.session
  return {
    ctx, model, agent, session,
    types: () => session.events.map(e => e.type),
    of: <T extends string>(type: T) => session.events.filter(e => e.type === type) as SessionEvent<T>[],
    dispose: async () => {
      await agent.dispose()
    },
  }
}
