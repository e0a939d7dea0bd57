/**
 * What both protocol servers do with agents: pick a model route, open an agent on a new,
 * live or stored session, and read the final answer of a turn.
 */
import { statSync } from 'node:fs'
import type { Context } from 'cordis'
import type { Agent, AgentLoopConfig } from '../agent/api.js'
import { clip, ErrorCodes, RpcError } from './jsonrpc.js'
import '../agent/api.js'
import '../host/index.js'
import '../llm/api.js'
import type { PresetsService } from '../llm/presets/index.js'
import '../persistence/api.js'
import '../prompt/api.js'

export interface RouteRequest {
  readonly provider?: string
  readonly model?: string
  readonly maxTokens?: number
}

/**
 * The loop overrides for a request: an explicit model (or `DSH_MODEL`, or settings
 * `model.default`) must be in the catalogue; nothing named leaves the agents row's default.
 */
export function resolveRoute(ctx: Context, request: RouteRequest): Partial<AgentLoopConfig> {
  const host = ctx.get('host')
  const settingsModel = host?.settings.model?.default
  const name = request.model ?? (host?.env.value('DSH_MODEL') || undefined) ?? (typeof settingsModel === 'string' ? settingsModel : undefined)
  const route: { provider?: string; model?: string; maxTokens?: number } = {}
  if (request.maxTokens !== undefined) route.maxTokens = request.maxTokens
  if (name === undefined && request.provider === undefined) return route
  const models = ctx.llm.models()
  const found = models.find(info => (request.provider === undefined || info.provider === request.provider)
    && (name === undefined || info.model === name || `${info.provider}/${info.model}` === name))
    // A provider preset's model (docs/llm.md), registered when asked for.
    ?? (name === undefined ? undefined : presetRoute(ctx, request.provider === undefined ? name : `${request.provider}/${name}`))
  if (found === undefined) {
    const wanted = [request.provider, name].filter(Boolean).join('/')
    throw new RpcError(ErrorCodes.invalidParams, `invalid params: unknown model route "${clip(wanted)}" (available: ${models.map(info => `${info.provider}/${info.model}`).join(', ') || 'none'})`)
  }
  return { ...route, provider: found.provider, model: found.model }
}

function presetRoute(ctx: Context, name: string): { provider: string; model: string } | undefined {
  try {
    return (ctx.get('llmPresets') as PresetsService | undefined)?.resolve(name)
  } catch (error) {
    throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${(error as Error).message}`)
  }
}

function isNotStored(error: unknown): boolean {
  return error instanceof Error && error.name === 'SessionNotStoredError'
}

/**
 * The live agent of `sessionId`; otherwise the stored session loaded (crash repair included),
 * otherwise a new session with that id (or a fresh id when none is given) in `cwd`.
 */
export async function openAgent(ctx: Context, options: { sessionId?: string; cwd: string; loop: Partial<AgentLoopConfig>; create?: boolean }): Promise<{ agent: Agent; created: boolean }> {
  const id = options.sessionId
  const live = id === undefined ? undefined : ctx.agents.get(id)
  if (live !== undefined) return { agent: live, created: false }
  if (id === undefined) return open(ctx, options)
  // Two prompts for one new id at once: the second waits for the first to open it. Keyed by the
  // root context: a plugin's context (and a service reached through it) may be a new proxy on
  // every access, so it cannot identify the runtime.
  let inFlight = opening.get(ctx.root)
  if (inFlight === undefined) opening.set(ctx.root, inFlight = new Map())
  const pending = inFlight.get(id)
  if (pending !== undefined) return { agent: (await pending).agent, created: false }
  const opened = open(ctx, options)
  inFlight.set(id, opened)
  try {
    return await opened
  } finally {
    inFlight.delete(id)
  }
}

const opening = new WeakMap<Context, Map<string, Promise<{ agent: Agent; created: boolean }>>>()

async function open(ctx: Context, options: { sessionId?: string; cwd: string; loop: Partial<AgentLoopConfig>; create?: boolean }): Promise<{ agent: Agent; created: boolean }> {
  const opened = await openNewAgent(ctx, options)
  await followSessionCwd(ctx, opened.agent)
  return opened
}

async function openNewAgent(ctx: Context, options: { sessionId?: string; cwd: string; loop: Partial<AgentLoopConfig>; create?: boolean }): Promise<{ agent: Agent; created: boolean }> {
  const { agents, sessions } = ctx
  const id = options.sessionId
  if (id !== undefined) {
    if (sessions.get(id) !== undefined) return { agent: agents.create({ sessionId: id, loop: options.loop }), created: false }
    const persistence = ctx.get('sessionPersistence')
    if (persistence !== undefined) {
      try {
        const { session } = await persistence.load(id)
        return { agent: agents.create({ sessionId: session.id, loop: options.loop }), created: false }
      } catch (error) {
        if (!isNotStored(error)) throw error
      }
    }
    if (options.create === false) throw new RpcError(ErrorCodes.invalidParams, `invalid params: no session "${clip(id)}" (neither live nor stored)`)
    const session = sessions.create({ id, cwd: options.cwd })
    return { agent: agents.create({ sessionId: session.id, loop: options.loop }), created: true }
  }
  return { agent: agents.create({ cwd: options.cwd, loop: options.loop }), created: true }
}

/**
 * The `cwd` runtime context renders the folder dsh was started in; an agent whose session lives
 * elsewhere (ACP `session/new {cwd}`, SDK `initialize {cwd}`) gets the same wording with its own
 * folder, registered in its scope (P-3: it shadows the global entry, in the same position).
 */
export async function followSessionCwd(ctx: Context, agent: Agent): Promise<void> {
  const cwd = agent.session.header.cwd
  const hostCwd = ctx.get('host')?.cwd
  const prompt = ctx.get('systemPrompt')
  if (cwd === undefined || hostCwd === undefined || prompt === undefined || cwd === hostCwd) return
  const global = (await prompt.assemble()).contexts.find(context => context.name === 'cwd')
  if (global === undefined || !global.text.includes(hostCwd)) return
  const text = global.text.split(hostCwd).join(cwd)
  const dispose = prompt.context({ name: 'cwd', order: 0, render: () => text }, agent.scope)
  agent.ctx.effect(() => dispose)
}

/** A session folder must be an existing directory (tools run there). */
export function checkFolder(cwd: string): void {
  let folder = false
  try {
    folder = statSync(cwd).isDirectory()
  } catch {
    folder = false
  }
  if (!folder) throw new RpcError(ErrorCodes.invalidParams, `invalid params: cwd ${clip(JSON.stringify(cwd))} is not an existing folder`)
}

/** Refuses a turn the model adapter cannot serve (a missing API key...) before any work starts. */
export function checkReadiness(ctx: Context, agent: Agent): void {
  const problem = ctx.llm.adapter(agent.config.provider)?.readiness?.()
  if (problem !== undefined) throw new RpcError(ErrorCodes.serverError, problem)
  if (ctx.llm.adapter(agent.config.provider) === undefined) {
    throw new RpcError(ErrorCodes.serverError, `no model adapter for provider "${agent.config.provider}"`)
  }
}

export { finalResponse, messageText } from './final-response.js'
