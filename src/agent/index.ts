/**
 * The agent seam: `ctx.agents` (AgentsServicePlugin, the live registry) and `ctx.agentLoop`
 * (ReactLoopPlugin, the default driver; replace it by providing another `agentLoop` service).
 */
import { Context, Service } from 'cordis'
import type { UserMessage } from '../llm/types.js'
import type { Session, SessionsService } from '../session/api.js'
import type { InboxTarget } from '../session/types.js'
import { emitContained } from '../kernel/index.js'
import { bindScopeParent, scopedContext, type ScopeKey } from '../scope/index.js'
import type {
  Agent, AgentInput, AgentLoop, AgentLoopConfig, AgentLoopService, AgentsService, AgentStatus,
  CancelOptions, CreateAgentOptions, InboxView,
} from './api.js'
import { ReactLoop } from './loop.js'
import { toUserMessage } from './messages.js'

export * from './api.js'
export type { RequestErrorDecision, RequestErrorPayload } from './events.js'
export { Inbox, InboxError } from './inbox.js'
export { ReactLoop } from './loop.js'
export { toUserMessage } from './messages.js'
export { isRuntimeContextMessage, RUNTIME_CONTEXT_PLUGIN } from './runtime-context.js'
export { LoopInvariantPlugin, LoopInvariantError } from './invariant.js'

const SCOPED_SERVICES = ['tools', 'systemPrompt'] as const

/** `ctx.agentLoop`: builds one ReactLoop per agent. */
export class ReactLoopPlugin extends Service implements AgentLoopService {
  static inject = ['llm']

  constructor(ctx: Context) {
    super(ctx, 'agentLoop')
  }

  create(agent: Agent): AgentLoop {
    return new ReactLoop(this.ctx, agent)
  }
}

export interface AgentsConfig {
  /** Default model route for agents created without their own. */
  readonly loop?: AgentLoopConfig
}

class AgentHandle implements Agent {
  loop!: AgentLoop
  constructor(
    readonly session: Session,
    readonly scope: ScopeKey,
    readonly ctx: Context,
    readonly config: AgentLoopConfig,
    private readonly release: () => Promise<void>,
  ) {}

  get id(): string { return this.session.id }
  get status(): AgentStatus { return this.loop.status }
  get inbox(): InboxView { return this.loop.inbox }

  send(input: AgentInput, target: InboxTarget, wake = true): UserMessage {
    return this.loop.send(toUserMessage(input), target, wake)
  }
  followup(input: AgentInput): UserMessage { return this.send(input, 'next-turn', true) }
  steer(input: AgentInput): UserMessage { return this.send(input, 'next-step', true) }
  inject(input: AgentInput): UserMessage { return this.send(input, 'next-step', false) }
  cancel(options?: CancelOptions): void { this.loop.cancel(options) }
  whenIdle(): Promise<void> { return this.loop.whenIdle() }
  dispose(): Promise<void> { return this.release() }
}

/** `ctx.agents`: one live agent per session; each owns a scope key and a tagged context. */
export class AgentsServicePlugin extends Service implements AgentsService {
  static inject = ['sessions', 'agentLoop']
  private readonly agents = new Map<string, AgentHandle>()

  constructor(ctx: Context, private readonly config: AgentsConfig = {}) {
    super(ctx, 'agents')
    // Unloading waits until every loop has drained (its turn closed in the log).
    ctx.effect(() => async () => {
      await Promise.allSettled([...this.agents.values()].map(agent => agent.dispose()))
    })
  }

  get defaultLoop(): Partial<AgentLoopConfig> | undefined {
    return this.config.loop
  }

  create(options: string | CreateAgentOptions = {}): Agent {
    const opts: CreateAgentOptions = typeof options === 'string' ? { sessionId: options } : options
    const sessions = this.ctx.get('sessions') as SessionsService
    let session: Session
    if (opts.sessionId !== undefined) {
      const found = sessions.get(opts.sessionId)
      if (found === undefined) throw new Error(`dsh-agents: no live session "${opts.sessionId}" (load or create it first)`)
      session = found
    } else {
      session = sessions.create(opts.cwd !== undefined ? { cwd: opts.cwd } : {})
    }
    if (this.agents.has(session.id)) throw new Error(`dsh-agents: session "${session.id}" already has a live agent`)
    if (session.position.turnOpen) {
      throw new Error(`dsh-agents: session "${session.id}" ends inside an open turn (turn ${session.position.turn}); load it through persistence so crash repair closes it first`)
    }
    const route = { ...this.config.loop, ...opts.loop }
    if (typeof route.provider !== 'string' || typeof route.model !== 'string') {
      throw new Error('dsh-agents: an agent needs a model route {provider, model} (agents config `loop` or create options `loop`)')
    }
    const config = Object.freeze({ ...route }) as AgentLoopConfig
    const scope: ScopeKey = Object.freeze({ agent: session.id })
    if (opts.parentScope !== undefined) bindScopeParent(scope, opts.parentScope)
    // Everything registered through agent.ctx is an effect of this fiber and dies with it (P-1).
    // rc.10 has no optional inject: the agent context injects the scoped registries present now,
    // so `agent.ctx.tools` / `agent.ctx.systemPrompt` work (others: `agent.ctx.get(name)`).
    const inject = SCOPED_SERVICES.filter(name => this.ctx.get(name) !== undefined)
    const fiber = this.ctx.plugin({ name: `agent:${session.id}`, inject, apply: () => {} })
    const agentCtx = scopedContext(fiber.ctx, scope)
    let released: Promise<void> | undefined
    const agent: AgentHandle = new AgentHandle(session, scope, agentCtx, config, () => released ??= (async () => {
      try {
        await agent.loop.dispose()
      } finally {
        this.agents.delete(session.id)
        await fiber.dispose()
        emitContained(this.ctx, 'agent/disposed', [agent])
      }
    })())
    agent.loop = (this.ctx.get('agentLoop') as AgentLoopService).create(agent)
    this.agents.set(session.id, agent)
    emitContained(this.ctx, 'agent/created', [agent])
    return agent
  }

  get(id: string): Agent | undefined {
    return this.agents.get(id)
  }

  list(): readonly Agent[] {
    return [...this.agents.values()]
  }

  async dispose(id: string): Promise<void> {
    await this.agents.get(id)?.dispose()
  }
}
