/**
 * The `ctx.approval` provider (API and rules in ./api.ts). Load with
 * `ctx.plugin(ApprovalPlugin, { mode, policy })`; the config is the deployment default used while
 * a session's log has no knob event.
 */
import { randomUUID } from 'node:crypto'
import { Context, Service } from 'cordis'
import { emitContained } from '../kernel/index.js'
import { isNetworkMode, isSandboxMode, type NetworkMode, type SandboxMode } from '../sandbox/modes.js'
import { scanEvents } from '../session/packed-run.js'
import type {
  ApprovalAnswer, ApprovalAnswerer, ApprovalOutcome, ApprovalPolicy, ApprovalRequest, ApprovalRules, ApprovalRuling, ApprovalScope, ApprovalService, ApprovalSession,
  KnobSource, RuleRef, PendingApproval, PendingQuestion, PermissionPreset, PresetName, QuestionAnswer, QuestionAnswerer,
  QuestionOutcome, QuestionRequest, UserQuestion,
} from './api.js'
import { APPROVAL_POLICY_CONTEXT, approvalPolicyText, NETWORK_POLICY_CONTEXT, networkPolicyText, SANDBOX_POLICY_CONTEXT, sandboxPolicyText } from './texts.js'
import { PendingRequests } from './pending.js'

/**
 * After `session/imported` (the log before it came from another home's file) the knobs fold
 * from nothing again: a file's mode and policy never apply where it is imported. Any knob this
 * service folds later (a network knob...) resets there too. The name is the session seam's
 * `IMPORTED_EVENT`, spelled out since this seam imports nothing of it.
 */
export const KNOB_RESET_EVENT = 'session/imported'
const APPROVAL_FOLD_TYPES: ReadonlySet<string> = new Set(['sandbox/mode', 'approval/policy', 'sandbox/network', KNOB_RESET_EVENT])

export interface ApprovalConfig {
  /** Deployment default sandbox mode (default `workspace-write`). */
  readonly mode?: SandboxMode
  /** Deployment default approval policy (default `ask`). */
  readonly policy?: ApprovalPolicy
  /**
   * Deployment default network mode of confined commands (default `full`, the recorded
   * behaviour; the launcher passes `allowlist` unless told otherwise).
   */
  readonly network?: NetworkMode
  /** Register the `sandbox:policy` / `approval:policy` runtime contexts per agent (default true). */
  readonly runtimeContexts?: boolean
}

export const PERMISSION_PRESETS: readonly PermissionPreset[] = Object.freeze([
  { name: 'read-only', mode: 'read-only', policy: 'ask' },
  { name: 'workspace-write', mode: 'workspace-write', policy: 'ask' },
  { name: 'danger-full-access', mode: 'danger-full-access', policy: 'never' },
] as const)

const OUTCOMES: ReadonlySet<string> = new Set(['allowed-once', 'rejected', 'cancelled'])
/** A wider grant is a valid answer only when its request offered the scope. */
const SCOPED: Readonly<Record<string, ApprovalScope>> = { 'allowed-session': 'session', 'allowed-always': 'always' }
const ALL_OUTCOMES: ReadonlySet<string> = new Set([...OUTCOMES, ...Object.keys(SCOPED), 'unavailable'])
const SOURCES: ReadonlySet<unknown> = new Set([undefined, 'delegation'])
const PRESETS: ReadonlySet<unknown> = new Set(PERMISSION_PRESETS.map(p => p.name))

const isObject = (data: unknown): data is Record<string, unknown> => typeof data === 'object' && data !== null && !Array.isArray(data)
const nonEmpty = (value: unknown) => typeof value === 'string' && value.length > 0

const RULE_KINDS: ReadonlySet<unknown> = new Set(['allow', 'ask', 'deny'])
/** An optional `rule` of an approval event: the permission rule that decided it (docs/security.md, "Permission rules"). */
const badRule = (rule: unknown) => rule !== undefined && (!isObject(rule) || !nonEmpty(rule.text) || !RULE_KINDS.has(rule.kind) || !nonEmpty(rule.source))

/** Strict validators of the five log events (S-2). */
export const APPROVAL_EVENT_VALIDATORS: Readonly<Record<string, (data: unknown) => string | null>> = {
  'approval/asked': data => !isObject(data) ? 'data must be an object'
    : !nonEmpty(data.id) || !nonEmpty(data.toolName) || !nonEmpty(data.callId) || typeof data.reason !== 'string' ? 'needs string id, toolName, callId and reason'
    : badRule(data.rule) ? 'rule must be {text, kind: allow|ask|deny, source} when present' : null,
  'approval/decided': data => !isObject(data) ? 'data must be an object'
    : !nonEmpty(data.id) || !ALL_OUTCOMES.has(data.outcome as string) ? 'needs an id and an outcome allowed-once|allowed-session|allowed-always|rejected|cancelled|unavailable'
    : badRule(data.rule) ? 'rule must be {text, kind: allow|ask|deny, source} when present' : null,
  'approval/policy': data => !isObject(data) ? 'data must be an object'
    : data.policy !== 'ask' && data.policy !== 'never' ? 'policy must be ask or never' : !SOURCES.has(data.source) ? 'source must be "delegation" when present' : null,
  'sandbox/mode': data => !isObject(data) ? 'data must be an object'
    : !isSandboxMode(data.mode) ? 'mode must be read-only, workspace-write or danger-full-access' : !SOURCES.has(data.source) ? 'source must be "delegation" when present' : null,
  'sandbox/network': data => !isObject(data) ? 'data must be an object'
    : !isNetworkMode(data.network) ? 'network must be full, allowlist or none' : !SOURCES.has(data.source) ? 'source must be "delegation" when present' : null,
  'permission/preset': data => !isObject(data) ? 'data must be an object' : !PRESETS.has(data.preset) ? 'preset must be read-only, workspace-write or danger-full-access' : null,
}

/** Knob values folded from one log, incrementally (no rescan per step). */
interface Fold {
  scanned: number
  mode?: SandboxMode
  policy?: ApprovalPolicy
  network?: NetworkMode
}

/** Minimal views of optional services (this seam imports no other folder's code). */
interface PromptContexts {
  context(context: { name: string; order?: number; render(): string | undefined }, scope?: unknown): () => void
}
interface AgentLike { readonly session: ApprovalSession; readonly scope: unknown }
interface SessionsLike {
  registerEventType(definition: { type: string; validate: (data: unknown) => string | null; owner: string }): () => void
  get(id: string): ApprovalSession | undefined
}

export class ApprovalPlugin extends Service implements ApprovalService {
  private readonly folds = new WeakMap<object, Fold>()
  private readonly approvals: PendingRequests<ApprovalAnswerer, PendingApproval>
  private readonly questions: PendingRequests<QuestionAnswerer, PendingQuestion>
  private ruleProvider: ApprovalRules | undefined
  private readonly deployment: { mode: SandboxMode; policy: ApprovalPolicy; network: NetworkMode }

  constructor(ctx: Context, config: ApprovalConfig = {}) {
    super(ctx, 'approval')
    this.approvals = new PendingRequests(ctx, 'an answerer')
    this.questions = new PendingRequests(ctx, 'a question answerer')
    if (config.mode !== undefined && !isSandboxMode(config.mode)) throw new TypeError(`approval: config.mode must be read-only, workspace-write or danger-full-access, got ${JSON.stringify(config.mode)}`)
    if (config.policy !== undefined && config.policy !== 'ask' && config.policy !== 'never') throw new TypeError(`approval: config.policy must be ask or never, got ${JSON.stringify(config.policy)}`)
    if (config.network !== undefined && !isNetworkMode(config.network)) throw new TypeError(`approval: config.network must be full, allowlist or none, got ${JSON.stringify(config.network)}`)
    this.deployment = { mode: config.mode ?? 'workspace-write', policy: config.policy ?? 'ask', network: config.network ?? 'full' }
    // The event types exist while both this plugin and `ctx.sessions` are loaded.
    ctx.inject(['sessions'], (ctx) => {
      const sessions = ctx.get('sessions') as SessionsLike
      for (const [type, validate] of Object.entries(APPROVAL_EVENT_VALIDATORS)) sessions.registerEventType({ type, validate, owner: 'approval' })
    })
    if (config.runtimeContexts !== false) this.installContexts(ctx)
    ctx.effect(() => () => {
      // Unloading: nobody will answer any more.
      this.approvals.cancelAll()
      this.questions.cancelAll()
    }, 'approval: settle pending requests')
  }

  private installContexts(ctx: Context): void {
    const registered = new Map<string, () => void>()
    ctx.on('agent/created' as never, ((agent: AgentLike) => {
      const prompt = this.ctx.get('systemPrompt') as PromptContexts | undefined
      if (prompt === undefined) return
      const session = agent.session
      const root = session.header.cwd ?? ''
      const offs = [
        prompt.context({ name: SANDBOX_POLICY_CONTEXT, order: 50, render: () => sandboxPolicyText(this.mode(session), root) }, agent.scope),
        prompt.context({ name: APPROVAL_POLICY_CONTEXT, order: 51, render: () => approvalPolicyText(this.policy(session)) }, agent.scope),
        // Shown only when it differs from `full` (what recorded sessions ran with): byte-equal replays.
        prompt.context({ name: NETWORK_POLICY_CONTEXT, order: 52, render: () => networkPolicyText(this.network(session)) }, agent.scope),
      ]
      registered.set(session.id, () => offs.forEach(off => off()))
      // A subagent's child runs delegated (SB-7); a fork the user made (S-14: the web's Fork, the
      // terminal's /fork and rewind) is the user's own session and keeps the knobs of its log.
      if (session.header.parentSession !== undefined && session.header.origin === 'subagent') {
        const parent = (this.ctx.get('sessions') as SessionsLike | undefined)?.get(session.header.parentSession)
        if (parent !== undefined) this.delegate(parent, session)
      }
    }) as never)
    ctx.on('agent/disposed' as never, ((agent: AgentLike) => {
      registered.get(agent.session.id)?.()
      registered.delete(agent.session.id)
    }) as never)
    ctx.effect(() => () => { for (const off of registered.values()) off(); registered.clear() }, 'approval: runtime contexts')
  }

  private fold(session: ApprovalSession): Fold {
    let fold = this.folds.get(session)
    if (fold === undefined) this.folds.set(session, fold = { scanned: 0 })
    const folding = fold
    fold.scanned = scanEvents(session.events, fold.scanned, APPROVAL_FOLD_TYPES, (event) => {
      if (event.type === 'sandbox/mode') folding.mode = (event.data as { mode: SandboxMode }).mode
      else if (event.type === 'approval/policy') folding.policy = (event.data as { policy: ApprovalPolicy }).policy
      else if (event.type === 'sandbox/network') folding.network = (event.data as { network: NetworkMode }).network
      else {
        folding.mode = undefined
        folding.policy = undefined
        folding.network = undefined
      }
    })
    return fold
  }

  /** Whether the log (not the default) sets the mode. */
  private explicitMode(session: ApprovalSession): SandboxMode | undefined {
    return this.fold(session).mode
  }

  mode(session: ApprovalSession): SandboxMode {
    return this.fold(session).mode ?? this.deployment.mode
  }

  policy(session: ApprovalSession): ApprovalPolicy {
    return this.fold(session).policy ?? this.deployment.policy
  }

  network(session: ApprovalSession): NetworkMode {
    return this.fold(session).network ?? this.deployment.network
  }

  preset(session: ApprovalSession): PresetName | 'custom' {
    const mode = this.mode(session)
    const policy = this.policy(session)
    return PERMISSION_PRESETS.find(p => p.mode === mode && p.policy === policy)?.name ?? 'custom'
  }

  presets(): readonly PermissionPreset[] {
    return PERMISSION_PRESETS
  }

  defaults(): { readonly mode: SandboxMode; readonly policy: ApprovalPolicy; readonly network: NetworkMode } {
    return this.deployment
  }

  setMode(session: ApprovalSession, mode: SandboxMode, source?: KnobSource): boolean {
    if (!isSandboxMode(mode)) throw new TypeError(`unknown sandbox mode ${JSON.stringify(mode)} (expected read-only, workspace-write or danger-full-access)`)
    if (source === undefined && this.mode(session) === mode) return false
    session.append('sandbox/mode', source === undefined ? { mode } : { mode, source })
    return true
  }

  setNetwork(session: ApprovalSession, network: NetworkMode, source?: KnobSource): boolean {
    if (!isNetworkMode(network)) throw new TypeError(`unknown network mode ${JSON.stringify(network)} (expected full, allowlist or none)`)
    if (source === undefined && this.network(session) === network) return false
    session.append('sandbox/network', source === undefined ? { network } : { network, source })
    return true
  }

  setPolicy(session: ApprovalSession, policy: ApprovalPolicy, source?: KnobSource): boolean {
    if (policy !== 'ask' && policy !== 'never') throw new TypeError(`unknown approval policy ${JSON.stringify(policy)} (expected ask or never)`)
    if (source === undefined && this.policy(session) === policy) return false
    session.append('approval/policy', source === undefined ? { policy } : { policy, source })
    return true
  }

  selectPreset(session: ApprovalSession, name: PresetName): boolean {
    const preset = PERMISSION_PRESETS.find(p => p.name === name)
    if (preset === undefined) throw new TypeError(`unknown permission preset ${JSON.stringify(name)} (expected ${PERMISSION_PRESETS.map(p => p.name).join(', ')})`)
    if (this.mode(session) === preset.mode && this.policy(session) === preset.policy) return false
    session.append('permission/preset', { preset: preset.name })
    this.setMode(session, preset.mode)
    this.setPolicy(session, preset.policy)
    return true
  }

  delegate(parent: ApprovalSession, child: ApprovalSession): void {
    const fold = this.fold(child)
    if (fold.mode !== undefined || fold.policy !== undefined) return
    const mode = this.explicitMode(parent)
    if (mode !== undefined) this.setMode(child, mode, 'delegation')
    // A child never has more network than its parent: the parent's, when its log sets one.
    const network = this.fold(parent).network
    if (network !== undefined) this.setNetwork(child, network, 'delegation')
    this.setPolicy(child, 'never', 'delegation')
  }

  adoptKnobs(from: ApprovalSession, to: ApprovalSession): void {
    this.setMode(to, this.mode(from))
    this.setPolicy(to, this.policy(from))
    this.setNetwork(to, this.network(from))
  }

  answerer(answerer: ApprovalAnswerer): () => void {
    return this.approvals.register(answerer)
  }

  pending(sessionId?: string): readonly PendingApproval[] {
    return this.approvals.list(sessionId)
  }

  rules(rules: ApprovalRules): () => void {
    const dispose = this.ctx.effect(() => {
      this.ruleProvider = rules
      return () => { if (this.ruleProvider === rules) this.ruleProvider = undefined }
    }, 'approval: permission rules')
    return () => { void dispose() }
  }

  /** What the rules say; a provider that throws decides nothing (the request is asked as usual). */
  private async ruling(request: ApprovalRequest): Promise<ApprovalRuling | undefined> {
    try {
      return await this.ruleProvider?.ruling(request)
    } catch {
      return undefined
    }
  }

  async request(request: ApprovalRequest): Promise<ApprovalOutcome> {
    const { session } = request
    if (!session.position.turnOpen) throw new Error(`approval for tool "${request.toolName}" was requested outside an open turn (AP-2)`)
    const id = randomUUID()
    const ruling = this.ruleProvider === undefined ? undefined : await this.ruling(request)
    const rule = ruling?.rule
    session.append('approval/asked', { id, toolName: request.toolName, callId: request.callId, reason: request.reason, ...(rule !== undefined ? { rule } : {}) })
    // A request's own wider grants (a network host) stand; otherwise the rules may offer theirs.
    const offer = request.scopes === undefined || request.scopes.length === 0 ? ruling?.offer : undefined
    let outcome: ApprovalOutcome
    let decidedBy: RuleRef | undefined
    if (this.policy(session) === 'never') outcome = 'rejected'
    else if (rule?.kind === 'deny') outcome = 'rejected', decidedBy = rule
    else if (rule?.kind === 'allow') outcome = 'allowed-once', decidedBy = rule
    else outcome = await this.decide(id, request, rule, offer)
    const granted = offer !== undefined && (outcome === 'allowed-session' || outcome === 'allowed-always')
    if (granted) decidedBy = { text: offer.rule, kind: 'allow', source: outcome === 'allowed-session' ? 'session' : 'user settings' }
    try {
      session.append('approval/decided', { id, outcome, ...(decidedBy !== undefined ? { rule: decidedBy } : {}) })
    } catch (error) {
      // The turn closed under us (a cancel that already ended it): the call still does not run.
      if (outcome === 'allowed-once' || granted) return 'cancelled'
      void error
    }
    if (!granted) return outcome
    try { this.ruleProvider?.granted(request, offer.rule, outcome === 'allowed-session' ? 'session' : 'always') } catch { /* the grant holds for this call */ }
    // The caller offered no wider grant itself: to it this is a yes for this call.
    return 'allowed-once'
  }

  private async decide(id: string, request: ApprovalRequest, askedBy?: RuleRef, offer?: ApprovalRuling['offer']): Promise<ApprovalOutcome> {
    if (request.signal?.aborted) return 'cancelled'
    const scopes = offer !== undefined ? offer.scopes : request.scopes
    const cwd = request.session.header.cwd
    const view: PendingApproval = {
      id, sessionId: request.session.id, toolName: request.toolName, callId: request.callId, reason: request.reason,
      ...(request.arguments !== undefined ? { arguments: request.arguments } : {}),
      ...(scopes !== undefined && scopes.length > 0 ? { scopes: [...new Set(scopes)] } : {}),
      ...(cwd !== undefined ? { cwd } : {}),
      ...(askedBy !== undefined ? { askedBy } : {}),
      ...(offer !== undefined && offer.scopes.length > 0 ? { grants: offer.rule } : {}),
    }
    return this.approvals.settle<ApprovalOutcome>({
      view,
      signal: request.signal,
      ask: signal => this.askAnswerers(view, signal),
      cancelled: () => 'cancelled',
      otherwise: 'unavailable',
      // Contained: an observer's failure does not decide the request.
      opened: pending => emitContained(this.ctx, 'approval/pending', [pending]),
      settled: (pending, outcome) => emitContained(this.ctx, 'approval/settled', [pending, outcome]),
    })
  }

  // ---- questions for the user (ask_user_question) ----

  questioner(answerer: QuestionAnswerer): () => void {
    return this.questions.register(answerer)
  }

  pendingQuestions(sessionId?: string): readonly PendingQuestion[] {
    return this.questions.list(sessionId)
  }

  async ask(request: QuestionRequest): Promise<QuestionOutcome> {
    if (request.signal?.aborted) return { kind: 'cancelled' }
    const question: PendingQuestion = { id: randomUUID(), sessionId: request.session.id, callId: request.callId, questions: request.questions }
    return this.questions.settle<QuestionOutcome>({
      view: question,
      signal: request.signal,
      ask: signal => this.askQuestioners(question, signal),
      cancelled: () => ({ kind: 'cancelled' }),
      otherwise: { kind: 'unavailable' },
      opened: asked => emitContained(this.ctx, 'approval/question', [asked]),
      settled: (asked, outcome) => emitContained(this.ctx, 'approval/question-settled', [asked, outcome]),
    })
  }

  private async askQuestioners(question: PendingQuestion, signal: AbortSignal): Promise<QuestionOutcome> {
    for (const answerer of [...this.questions.answerers]) {
      let answer: readonly QuestionAnswer[] | 'cancelled' | undefined
      try {
        answer = await answerer(question, signal)
      } catch {
        return { kind: 'unavailable' }
      }
      if (answer === undefined) continue
      if (answer === 'cancelled') return { kind: 'cancelled' }
      const answers = validAnswers(question.questions, answer)
      return answers === undefined ? { kind: 'unavailable' } : { kind: 'answered', answers }
    }
    return { kind: 'unavailable' }
  }

  /** The composed answerers, in registration order; the first answer wins. */
  private async askAnswerers(request: PendingApproval, signal: AbortSignal): Promise<ApprovalOutcome> {
    for (const answerer of [...this.approvals.answerers]) {
      let answer: ApprovalAnswer | undefined
      try {
        answer = await answerer(request, signal)
      } catch {
        return 'unavailable'
      }
      if (answer === undefined) continue
      if (OUTCOMES.has(answer)) return answer
      const scope = SCOPED[answer]
      return scope !== undefined && request.scopes?.includes(scope) === true ? answer : 'unavailable'
    }
    return 'unavailable'
  }
}

/** The answers in the questions' order when every one names an asked id and offered labels; else undefined. */
function validAnswers(questions: readonly UserQuestion[], answers: unknown): readonly QuestionAnswer[] | undefined {
  if (!Array.isArray(answers)) return undefined
  const byId = new Map(questions.map(q => [q.id, q]))
  const out: QuestionAnswer[] = []
  const seen = new Set<string>()
  for (const answer of answers as unknown[]) {
    if (!isObject(answer) || typeof answer.id !== 'string' || seen.has(answer.id)) return undefined
    const question = byId.get(answer.id)
    if (question === undefined) return undefined
    seen.add(answer.id)
    const selected = answer.selected
    const text = answer.text
    if (selected !== undefined) {
      if (!Array.isArray(selected) || !selected.every(label => typeof label === 'string')) return undefined
      const labels = new Set((question.options ?? []).map(option => option.label))
      if (!selected.every(label => labels.has(label as string))) return undefined
      if (selected.length > 1 && question.multiSelect !== true) return undefined
    }
    if (text !== undefined && typeof text !== 'string') return undefined
    out.push({ id: answer.id, ...(selected !== undefined ? { selected: selected as string[] } : {}), ...(text !== undefined ? { text: text as string } : {}) })
  }
  return out
}
