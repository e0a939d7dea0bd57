/**
 * ReactLoop: the default agent-loop driver (contracts A-1..A-10), a reactive "double while".
 * Input lands in the inbox and wakes the driver; `kick()` opens turns while work is pending,
 * `turn()` runs steps (one model request plus the tools it asked for) until the turn ends.
 * Every durable fact is appended to the session log before the live state changes.
 */
import type { Context } from 'cordis'
import { toFailure } from '../llm/errors.js'
import type { LlmService } from '../llm/api.js'
import type {
  FinishReason, LlmCallOptions, LlmFailure, ToolCallBlock, UserMessage,
} from '../llm/types.js'
import type { PromptAssembly, SystemPromptService } from '../prompt/api.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import type {
  AbortReason, EpochHeader, InboxTarget, JsonValue, RequestContext, TurnEndReason,
} from '../session/types.js'
import { scopeTarget } from '../scope/index.js'
import { emitContainedVia, eventsOf, serviceLookup, type EventDispatch } from '../kernel/index.js'
import type { ToolsService } from '../tools/api.js'
import type {
  Agent, AgentLoop, AgentStatus, CancelOptions, PreStepDecision, PreStepPayload, TurnStoppingPayload,
} from './api.js'
import { DEFAULT_MAX_PARALLEL_TOOL_CALLS } from './api.js'
import type { RequestConfig, RequestErrorDecision } from './events.js'
import { Inbox } from './inbox.js'
import { RuntimeContextTracker } from './runtime-context.js'
import { runStepTools } from './step-tools.js'
import { isFatal, streamAttempt } from './model-stream.js'
import { toUserMessage } from './messages.js'
import { frozenJson } from './frozen-json.js'

const REQUEST_EVENTS: ReadonlySet<string> = new Set(['request/header', 'request/context'])

type Phase =
  | { readonly kind: 'idle'; readonly lastTurn: number }
  | { readonly kind: 'maintenance'; readonly abort: AbortController; readonly lastTurn: number; readonly latched: string[] }
  | { readonly kind: 'running'; readonly abort: AbortController; readonly turn: number; step: number; wakeRequested: boolean; readonly latched: string[] }

/** How one step ended: `continue` means tool results wait for the model in a new step. */
type StepEnd =
  | { readonly kind: 'continue' }
  | { readonly kind: 'completed' }
  | { readonly kind: 'max-tokens' }
  | { readonly kind: 'aborted' }
  | { readonly kind: 'error'; readonly error: LlmFailure }

interface PreStep {
  readonly claimed: readonly UserMessage[]
  readonly assembly: PromptAssembly
  readonly decision: PreStepDecision
}

const COMPLETED: TurnEndReason = Object.freeze({ kind: 'completed' })

export class ReactLoop implements AgentLoop {
  readonly inbox: Inbox
  private phase: Phase
  private driver: Promise<void> | undefined
  private idleWaiters: { resolve(): void; reject(error: unknown): void }[] = []
  private disposed = false
  /** A loop bug (e.g. an A-11 violation): the loop stops and every waiter sees it. */
  private failure: unknown
  private abortReason: AbortReason = { kind: 'user' }
  private keepInboxOnAbort = false
  /** The turn failed before entering its claimed input and put it back: wait for the next wake. */
  private holdAfterError = false
  private readonly session: Session
  private readonly contexts: RuntimeContextTracker
  /** A-10: folded from the log once, then kept current by this instance's own appends. */
  private lastHeader: EpochHeader | undefined
  private headerSent = false
  private lastContext: RequestContext | undefined
  /**
   * The events service and the services a step uses, behind Cordis' tracing proxies: each
   * `ctx.x` access costs ~10-30 µs (docs/kernel.md, "Hot paths"). Lookups follow every service
   * change, so a disposed or replaced service is never called.
   */
  private readonly events: EventDispatch
  private readonly llmService: () => LlmService | undefined
  private readonly toolsService: () => ToolsService | undefined
  private readonly promptService: () => SystemPromptService | undefined
  /** The assembled tool list last found equal to `lastHeader`'s (A-10 by identity, see sameHeader). */
  private matchedTools: { readonly assembled: unknown; readonly logged: unknown } | undefined

  constructor(private readonly ctx: Context, readonly agent: Agent) {
    this.events = eventsOf(ctx)
    this.llmService = serviceLookup(ctx, 'llm')
    this.toolsService = serviceLookup(ctx, 'tools')
    this.promptService = serviceLookup(ctx, 'systemPrompt')
    this.session = agent.session
    this.inbox = Inbox.fromLog(this.session)
    this.phase = { kind: 'idle', lastTurn: this.session.position.turn }
    this.contexts = new RuntimeContextTracker(this.session)
    scanEvents(this.session.events, 0, REQUEST_EVENTS, (event) => {
      if (event.type === 'request/header') this.lastHeader = (event.data as { header: EpochHeader }).header
      else this.lastContext = event.data as RequestContext
    })
  }

  get status(): AgentStatus {
    return this.phase.kind === 'running' ? 'running' : 'idle'
  }

  // ---- input (A-2) ----

  send(message: UserMessage, target: InboxTarget, wake: boolean): UserMessage {
    if (this.disposed) throw new Error(`dsh-agent: agent ${this.agent.id} is disposed; input is refused`)
    this.assertHealthy()
    // Decided before the insert: a waking input cannot join an activity that is already aborted.
    const phase = this.phase
    const wakingAfterAbort = wake && phase.kind !== 'idle' && phase.abort.signal.aborted
    const queued = this.inbox.push(wakingAfterAbort ? 'next-turn' : target, message)
    if (wake) this.wake(queued)
    return queued
  }

  private wake(queued: UserMessage): void {
    if (this.disposed || this.failure !== undefined) return
    const phase = this.phase
    if (phase.kind === 'idle') {
      this.driver = this.kick()
      return
    }
    // Aborted or maintenance: latched for this message only, so input kept from before an
    // abort (cancel with keepInbox) never runs on its own.
    if (phase.kind === 'maintenance' || phase.abort.signal.aborted) phase.latched.push(queued.id)
    // Live: the turn picks the input up at its next boundary (or the driver replays it when the
    // wake lands after the turn's last look at the inbox).
    else phase.wakeRequested = true
  }

  /** A-9: whether the activity that just ended leaves a wake to replay. */
  private replayWanted(): boolean {
    const phase = this.phase
    if (phase.kind === 'idle') return false
    if (phase.latched.some(id => this.inbox.has(id))) return true
    return phase.kind === 'running' && !phase.abort.signal.aborted && phase.wakeRequested
  }

  // ---- the driver ----

  private async kick(): Promise<void> {
    let latched = false
    try {
      while (await this.turn()) { /* another turn while work is pending */ }
      latched = this.replayWanted()
    } catch (error) {
      this.failure = error
    }
    this.converge(latched)
  }

  /**
   * Back to idle, or replay a latched wake unless disposed or the wake's input is gone (A-9).
   * The replay is decided before `idle` is announced: a replayed wake goes straight into its
   * turn (status stays `running`), and a status listener that sends input starts the only driver.
   */
  private converge(latched: boolean): void {
    if (latched && !this.disposed && this.failure === undefined && this.inbox.hasPending) {
      this.driver = this.kick()
      return
    }
    const lastTurn = this.phase.kind === 'running' ? this.phase.turn : this.phase.lastTurn
    const wasRunning = this.phase.kind === 'running'
    this.phase = { kind: 'idle', lastTurn }
    this.driver = undefined
    if (wasRunning) this.emitStatus('idle')
    // A listener's input woke a new driver: the waiters wait for that one.
    if (this.driver !== undefined) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const waiter of waiters) {
      if (this.failure === undefined) waiter.resolve()
      else waiter.reject(this.failure)
    }
  }

  /** One turn; true when another should follow. */
  private async turn(): Promise<boolean> {
    if (this.disposed || !this.inbox.hasPending) return false
    const abort = new AbortController()
    const turn = this.session.position.turn + 1
    this.abortReason = { kind: 'user' }
    this.keepInboxOnAbort = false
    const wasRunning = this.phase.kind === 'running'
    this.phase = { kind: 'running', abort, turn, step: 0, wakeRequested: false, latched: [] }
    // Back-to-back turns stay `running`: only a change is announced.
    if (!wasRunning) this.emitStatus('running')
    this.session.append('turn/start', { turn })
    // The endpoint's connection opens while the first step is prepared (./llm/connections.ts).
    this.llmService()?.warm(this.agent.config.provider, this.agent.config.model)
    const reason = await this.steps(turn, abort.signal)
    this.session.append('turn/end', { turn, reason })
    this.notify('agent/turn-end', [this.agent, turn, reason])
    if (reason.kind === 'aborted') return false
    if (this.holdAfterError) {
      this.holdAfterError = false
      return false
    }
    return !this.disposed && this.inbox.hasPending
  }

  /** The inner while over steps. */
  private async steps(turn: number, signal: AbortSignal): Promise<TurnEndReason> {
    let target: InboxTarget = 'next-turn'
    let step = 0
    let maxTokens = false
    while (true) {
      if (signal.aborted) return this.aborted()
      const claim = this.inbox.claimFrom(target)
      const pre = await this.preStep([...claim.step, ...claim.turn], turn, step + 1, signal)
      target = 'next-step'
      if (signal.aborted) {
        // Claimed but never entered: with keepInbox each goes back to the front of its list.
        if (this.keepInboxOnAbort) this.inbox.unclaim(claim)
        return this.aborted()
      }
      if (pre instanceof HookFailed) {
        // Input is never lost: it waits at the front of its list for the next wake (no retry
        // loop against a hook that keeps failing).
        this.inbox.unclaim(claim)
        if (claim.step.length + claim.turn.length > 0) this.holdAfterError = true
        return { kind: 'error', error: pre.failure }
      }
      if (pre.decision.kind === 'reject') {
        return pre.decision.message === undefined ? { kind: 'blocked' } : { kind: 'blocked', message: pre.decision.message }
      }
      // A-4: an empty first step spends the turn boundary without a model call.
      if (step === 0 && pre.decision.messages.length === 0) return COMPLETED
      step++
      if (this.phase.kind === 'running') this.phase.step = step
      this.session.append('step/start', { turn, step })
      const end = await this.step(turn, step, pre, signal)
      this.session.append('step/end', { turn, step })
      if (end.kind === 'aborted') return this.aborted()
      if (end.kind === 'error') return { kind: 'error', error: end.error }
      // A-7: max-tokens is sticky for the rest of the turn.
      if (end.kind === 'max-tokens') maxTokens = true
      if (end.kind === 'continue') continue
      if (this.inbox.nextStep.length === 0) {
        const stopping = await hookFailure('TURN_STOPPING_FAILED', 'agent/turn-stopping', () => this.events.serial(scopeTarget(this.agent.scope), 'agent/turn-stopping', {
          session: this.session, agent: this.agent, turn, signal,
          steer: input => { this.send(toUserMessage(input), 'next-step', false) },
        } satisfies TurnStoppingPayload) as Promise<unknown>)
        if (stopping instanceof HookFailed) {
          return signal.aborted ? this.aborted() : { kind: 'error', error: stopping.failure }
        }
      }
      if (signal.aborted) return this.aborted()
      if (this.inbox.nextStep.length === 0) return maxTokens ? { kind: 'max-tokens' } : COMPLETED
    }
  }

  private aborted(): TurnEndReason {
    return { kind: 'aborted', reason: this.abortReason }
  }

  /** A-3: (claimed by the caller) assemble, then the `agent/pre-step` waterfall. */
  private async preStep(claimed: readonly UserMessage[], turn: number, step: number, signal: AbortSignal): Promise<PreStep | HookFailed> {
    const assembly = await hookFailure('PRE_STEP_FAILED', 'system prompt assembly', () => this.assemble())
    if (assembly instanceof HookFailed) return assembly
    const payload: PreStepPayload = { session: this.session, agent: this.agent, messages: [...claimed], turn, step, signal, assembly }
    // The runtime-context message is decided inside the default, against the surface as the
    // outer listeners left it (compaction in pre-step may have replaced the last snapshot).
    const decision = await hookFailure('PRE_STEP_FAILED', 'agent/pre-step', (): Promise<PreStepDecision> => this.events.waterfall(scopeTarget(this.agent.scope), 'agent/pre-step', payload,
      async (): Promise<PreStepDecision> => {
        const context = this.contexts.message(assembly.contexts)
        return { kind: 'enter', messages: context === undefined ? [...claimed] : [...claimed, context] }
      }))
    if (decision instanceof HookFailed) return decision
    return { claimed, assembly, decision }
  }

  private async assemble(): Promise<PromptAssembly> {
    const prompt = this.promptService()
    if (prompt !== undefined) return prompt.assemble(this.agent.scope)
    return { system: '', tools: this.tools()?.schemas(this.agent.scope) ?? [], contexts: [] }
  }

  /** A-5: one model request (retried in place by `agent/request-error`) and its tools. */
  private async step(turn: number, step: number, pre: PreStep, signal: AbortSignal): Promise<StepEnd> {
    if (pre.decision.kind !== 'enter') throw new Error('unreachable: step without an enter decision')
    for (const message of pre.decision.messages) {
      this.session.append('user/message', message, { surfaceOp: 'append' })
    }
    while (true) {
      let options: LlmCallOptions
      try {
        options = this.request(pre.assembly, signal, turn, step)
      } catch (error) {
        if (isFatal(error)) throw error
        // A request that cannot be built (unknown model...) fails like a provider error.
        const end = await this.requestError(turn, step, toFailure(error, 'INVALID_REQUEST'), signal)
        if (end === 'retry') continue
        return end
      }
      const streamed = await streamAttempt(this.llm(), this.session, turn, step, options, signal)
      if ('failure' in streamed) {
        if (signal.aborted) return { kind: 'aborted' }
        const end = await this.requestError(turn, step, streamed.failure, signal)
        if (end === 'retry') continue
        return end
      }
      const { assembler, chunkSeqs, cancelled } = streamed
      const source = { provider: options.provider, model: options.model }
      const usage = assembler.usage
      if (cancelled || signal.aborted) {
        // A-9: keep the streamed non-blank text/reasoning prefix, never a half tool call.
        if (assembler.interruptedPrefix().length > 0) {
          this.session.append('assistant/message', {
            turn, step, message: assembler.message(source, { interrupted: true }),
            ...(usage !== undefined ? { usage } : {}), interrupted: true,
          }, { surfaceOp: 'append', sourceEventSeqs: chunkSeqs })
        }
        return { kind: 'aborted' }
      }
      const finish: FinishReason = assembler.finishReason
      if (finish.kind === 'error' || finish.kind === 'aborted') {
        const end = await this.requestError(turn, step, finish.failure, signal)
        if (end === 'retry') continue
        return end
      }
      const message = assembler.message(source)
      this.session.append('assistant/message', { turn, step, message, ...(usage !== undefined ? { usage } : {}) },
        { surfaceOp: 'append', sourceEventSeqs: chunkSeqs })
      // A-7: the assembler already dropped the truncated message's tool calls.
      if (finish.kind === 'max-tokens') return { kind: 'max-tokens' }
      const calls = message.content.filter((block): block is ToolCallBlock => block.type === 'tool-call')
      if (calls.length === 0) return { kind: 'completed' }
      const tools = this.tools()
      const outcome = await runStepTools({
        ctx: this.ctx, session: this.session, tools, scope: this.agent.scope, turn, step, calls, signal,
        maxParallelToolCalls: () => this.agent.config.maxParallelToolCalls ?? DEFAULT_MAX_PARALLEL_TOOL_CALLS,
      })
      if (signal.aborted) return { kind: 'aborted' }
      // A-6: a concluding result ends the tool loop; otherwise the results open a new step.
      return outcome.concludesTurn ? { kind: 'completed' } : { kind: 'continue' }
    }
  }

  private async requestError(turn: number, step: number, failure: LlmFailure, signal: AbortSignal): Promise<StepEnd | 'retry'> {
    const { provider, model } = this.agent.config
    const decision = await hookFailure('REQUEST_ERROR_FAILED', 'agent/request-error', (): Promise<RequestErrorDecision> => this.events.waterfall(scopeTarget(this.agent.scope), 'agent/request-error',
      { session: this.session, turn, step, provider, model, failure, signal },
      async (): Promise<RequestErrorDecision> => ({ kind: 'fail' })))
    // L-10: cancellation during a retry wait wins over the retry.
    if (signal.aborted) return { kind: 'aborted' }
    if (decision instanceof HookFailed) return { kind: 'error', error: decision.failure }
    if (decision.kind === 'retry') return 'retry'
    return { kind: 'error', error: decision.failure ?? failure }
  }

  /** Builds the call and appends the header/context events it implies (A-10). */
  private request(assembly: PromptAssembly, signal: AbortSignal, turn: number, step: number): LlmCallOptions {
    const own = this.agent.config
    // A per-step policy may ask differently (agent/request-config); the route stays the agent's.
    const config = { ...this.events.waterfall(scopeTarget(this.agent.scope), 'agent/request-config',
      { session: this.session, turn, step, provider: own.provider, model: own.model }, (): RequestConfig => own), provider: own.provider, model: own.model }
    const llm = this.llm()
    const prepared = llm.prepareCall({
      provider: config.provider,
      model: config.model,
      system: assembly.system,
      messages: [],
      tools: assembly.tools,
      ...(config.maxTokens !== undefined ? { maxTokens: config.maxTokens } : {}),
      ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
      ...(config.thinking !== undefined ? { thinking: config.thinking } : {}),
      ...(config.reasoningEffort !== undefined ? { reasoningEffort: config.reasoningEffort } : {}),
    })
    const header: EpochHeader = {
      config: {
        provider: prepared.provider,
        model: prepared.model,
        ...(prepared.maxTokens !== undefined ? { maxTokens: prepared.maxTokens } : {}),
        ...(prepared.temperature !== undefined ? { temperature: prepared.temperature } : {}),
        ...(prepared.thinking !== undefined ? { thinking: prepared.thinking } : {}),
        ...(prepared.reasoningEffort !== undefined ? { reasoningEffort: prepared.reasoningEffort } : {}),
      },
      system: prepared.system ?? '',
      tools: (prepared.tools ?? []) as unknown as JsonValue,
    }
    if (!this.headerSent) {
      this.appendHeader(header, this.lastHeader === undefined ? 'initial' : 'resume')
    } else if (!this.sameHeader(header, this.lastHeader!)) {
      this.appendHeader(header, 'change')
    }
    const contextWindow = llm.model(prepared.provider, prepared.model)?.contextWindow
    const context: RequestContext = { provider: prepared.provider, model: prepared.model, ...(contextWindow !== undefined ? { contextWindow } : {}) }
    const last = this.lastContext
    if (last === undefined || last.provider !== context.provider || last.model !== context.model || last.contextWindow !== context.contextWindow) {
      this.session.append('request/context', context)
      this.lastContext = context
    }
    return {
      ...prepared,
      // The logged (frozen) tool list, equal to the assembled one: the request takes it from the
      // log, and the A-11 check compares it by identity instead of re-serialising it every step.
      ...(prepared.tools !== undefined ? { tools: this.lastHeader!.tools as unknown as NonNullable<LlmCallOptions['tools']> } : {}),
      messages: this.session.deriveMessages(),
      signal,
      meta: { sessionId: this.session.id, agentLoop: true },
      // Images are referenced by content hash; the adapter reads their bytes from the session's store.
      attachments: async (id) => this.ctx.get('sessions')?.attachments.read(this.session.id, id),
    }
  }

  /**
   * A-10's comparison with the logged header. The assembled tool list is usually the same frozen
   * array as at the last step (ctx.tools and the prompt keep one while nothing changes): once it
   * was found equal to the logged list, the same pair is equal without re-serialising it.
   */
  private sameHeader(header: EpochHeader, logged: EpochHeader): boolean {
    if (header === logged) return true
    if (header.system !== logged.system || JSON.stringify(header.config) !== JSON.stringify(logged.config)) return false
    const tools = header.tools
    if (tools === logged.tools) return true
    const matched = this.matchedTools
    if (matched !== undefined && matched.assembled === tools && matched.logged === logged.tools) return true
    if (JSON.stringify(tools) !== frozenJson(logged.tools)) return false
    // Only a frozen list keeps its content under the same identity.
    if (typeof tools === 'object' && tools !== null && Object.isFrozen(tools)) this.matchedTools = { assembled: tools, logged: logged.tools }
    return true
  }

  private appendHeader(header: EpochHeader, reason: 'initial' | 'resume' | 'change'): void {
    const event = this.session.append('request/header', { header, reason })
    this.lastHeader = event.data.header
    this.headerSent = true
  }

  // ---- cancellation, maintenance, lifecycle (A-9) ----

  cancel(options: CancelOptions = {}): void {
    const phase = this.phase
    if (phase.kind === 'idle') {
      if (options.keepInbox !== true && this.failure === undefined) this.inbox.clear()
      return
    }
    if (!phase.abort.signal.aborted) {
      this.abortReason = options.reason ?? { kind: 'user' }
      this.keepInboxOnAbort = options.keepInbox === true
      phase.abort.abort()
    }
    if (options.keepInbox !== true) this.inbox.clear()
  }

  async maintain(work: (signal: AbortSignal) => Promise<void>): Promise<void> {
    while (this.phase.kind !== 'idle') await this.whenIdle()
    if (this.disposed) throw new Error(`dsh-agent: agent ${this.agent.id} is disposed; maintenance is refused`)
    this.assertHealthy()
    const abort = new AbortController()
    this.phase = { kind: 'maintenance', abort, lastTurn: this.phase.lastTurn, latched: [] }
    let done!: () => void
    this.driver = new Promise<void>(resolve => { done = resolve })
    try {
      await work(abort.signal)
    } finally {
      const latched = this.replayWanted()
      done()
      this.converge(latched)
    }
  }

  whenIdle(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    if (this.phase.kind === 'idle' && this.driver === undefined) return Promise.resolve()
    return new Promise((resolve, reject) => { this.idleWaiters.push({ resolve, reject }) })
  }

  async dispose(): Promise<void> {
    if (this.disposed) return this.driver
    this.disposed = true
    // The inbox is durable input: disposal keeps it for whoever loads the session next.
    this.cancel({ keepInbox: true, reason: { kind: 'disposed' } })
    await this.driver?.catch(() => undefined)
  }

  // ---- helpers ----

  private assertHealthy(): void {
    if (this.failure !== undefined) {
      throw new Error(`dsh-agent: agent ${this.agent.id} stopped after a loop failure: ${String((this.failure as Error)?.message ?? this.failure)}`)
    }
  }

  private llm(): LlmService {
    const llm = this.llmService()
    if (llm === undefined) throw new Error('dsh-agent: no `llm` service is loaded; load LlmServicePlugin before running an agent')
    return llm
  }

  private tools(): ToolsService | undefined {
    return this.toolsService()
  }

  private emitStatus(status: AgentStatus): void {
    this.notify('agent/status', [this.agent, status])
  }

  /** A contained emit for this agent's scope: observers never break the loop (K-3). */
  private notify(name: string, args: unknown[]): void {
    emitContainedVia(this.events, name, args, undefined, scopeTarget(this.agent.scope))
  }
}

/** A hook that threw; a class so no value a listener returns can be mistaken for it. */
class HookFailed {
  constructor(readonly failure: LlmFailure) {}
}

async function hookFailure<T>(code: string, hook: string, run: () => Promise<T>): Promise<T | HookFailed> {
  try {
    return await run()
  } catch (error) {
    if (isFatal(error)) throw error
    return new HookFailed({ code, message: `${hook} failed: ${describeError(error)}` })
  }
}

/** A thrown value as a non-empty description: never a message that ends after a colon. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const message = error.message.trim()
    if (message !== '') return message
    // `ctx.parallel` (e.g. the session/flush barrier) rejects with an AggregateError whose own
    // message is empty: what failed is in its errors.
    if (error instanceof AggregateError && Array.isArray(error.errors) && error.errors.length > 0) {
      return error.errors.map(describeError).join('; ')
    }
    const at = error.stack?.split('\n').map(line => line.trim()).find(line => line.startsWith('at '))
    return `${error.name || 'Error'} with an empty message${at !== undefined ? ` (${at})` : ''}`
  }
  if (typeof error === 'string') return error.trim() !== '' ? error.trim() : 'an empty string was thrown'
  if (error === undefined || error === null) return `${String(error)} was thrown`
  let text: string | undefined
  try { text = JSON.stringify(error) } catch { /* cyclic: fall back to String() */ }
  return `a ${typeof error} was thrown: ${text ?? String(error)}`
}
