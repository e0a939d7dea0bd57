/**
 * `ctx.approval`: the two permission knobs of a session and the approval requests of tools
 * (AP-1..AP-6, SB-1, SB-7). See docs/security.md.
 *
 * - `mode(session)` / `policy(session)`: the sandbox mode and approval policy in force, folded
 *   from the log (`sandbox/mode`, `approval/policy`; last one wins) with the deployment default;
 *   `network(session)` the same way from `sandbox/network` (full, allowlist, none).
 *   The fold starts again after `session/imported`: knobs an imported file set never apply.
 * - `setMode`, `setPolicy`, `selectPreset`: append knob events only when a value changes (AP-5).
 * - `request({session, toolName, callId, reason, signal})`: logs `approval/asked`, asks the
 *   answerers (policy `ask`) or rejects at once (policy `never`), logs `approval/decided` with the
 *   same id, resolves to the outcome. Only `allowed-once` grants (AP-3), or a wider grant the
 *   request offered in `scopes` (`allowed-session`, `allowed-always`). Never throws except when
 *   asked outside an open turn (AP-2), before anything is logged.
 * - `answerer(fn)`: surfaces (ACP, web, SDK, a terminal) register one; the disposer removes it.
 *   An answerer returns `undefined` for requests that are not its own (another surface's
 *   session); the first answer wins; none ⇒ `unavailable`; a throw or a malformed answer ⇒
 *   `unavailable` (fail closed).
 * - `ask({session, callId, questions, signal})` / `questioner(fn)`: questions for the user
 *   (`ask_user_question`), answered by the surfaces' question answerers the same way (first
 *   answer wins; none, a throw or a malformed answer ⇒ `unavailable`). Nothing is logged here:
 *   the tool call and its result are the record.
 * - `rules(provider)`: permission rules (docs/security.md, "Permission rules") join every request:
 *   a deny rule rejects it and an allow rule grants it without asking (both logged with the rule),
 *   an ask rule asks; a request asked offers the rule to grant "for this session" or "always".
 *   Under policy `never` every request is still rejected.
 * - `delegate(parent, child)`: a child session inherits the parent's explicit mode
 *   (`source:"delegation"`) and runs with policy `never` (SB-7).
 *
 * The session is taken structurally (`ApprovalSession`) so this seam imports nothing but
 * `sandbox/` and stays below tools, agents and surfaces.
 */
import type {} from 'cordis'
import type { NetworkMode, SandboxMode } from '../sandbox/modes.js'

export type ApprovalPolicy = 'ask' | 'never'
export const APPROVAL_POLICIES: readonly ApprovalPolicy[] = ['ask', 'never']
/**
 * Wider grants a request may offer besides once (a network host: for the rest of the session, or
 * added to the user's settings). An answer names one only when its request offered it.
 */
export type ApprovalScope = 'session' | 'always'
export type ApprovalOutcome = 'allowed-once' | 'allowed-session' | 'allowed-always' | 'rejected' | 'cancelled' | 'unavailable'
/** What an answerer may say; `unavailable` is only ever the runtime's own conclusion. */
export type ApprovalAnswer = 'allowed-once' | 'allowed-session' | 'allowed-always' | 'rejected' | 'cancelled'
export type PresetName = 'read-only' | 'workspace-write' | 'danger-full-access'

export interface PermissionPreset {
  readonly name: PresetName
  readonly mode: SandboxMode
  readonly policy: ApprovalPolicy
}

/** The slice of a session log this seam needs (a `Session` satisfies it). */
export interface ApprovalSession {
  readonly id: string
  readonly header: { readonly cwd?: string; readonly parentSession?: string; readonly origin?: unknown; readonly delegationDepth?: number }
  readonly events: readonly { readonly type: string; readonly data: unknown }[]
  readonly position: { readonly turnOpen: boolean }
  append(type: string, data: unknown): unknown
}

export interface ApprovalRequest {
  readonly session: ApprovalSession
  readonly toolName: string
  readonly callId: string
  readonly reason: string
  /** The call's raw arguments, shown by surfaces ("what will run"). Not logged. */
  readonly arguments?: string
  /** Aborting it while the request is pending ends it as `cancelled`. */
  readonly signal?: AbortSignal
  /** Wider grants the answer may name (`allowed-session`, `allowed-always`); none by default. */
  readonly scopes?: readonly ApprovalScope[]
}

/** A permission rule as logged and shown: the rule as written, its kind and where it came from. */
export interface RuleRef {
  readonly text: string
  readonly kind: 'allow' | 'ask' | 'deny'
  readonly source: string
}

/** What the permission rules say about a request. */
export interface ApprovalRuling {
  /** The rule that decides it: `allow` grants without asking, `deny` rejects, `ask` asks. */
  readonly rule?: RuleRef
  /** The allow rule an answer "for this session" / "always" grants, and which of the two it offers. */
  readonly offer?: { readonly rule: string; readonly scopes: readonly ApprovalScope[] }
}

/** The permission rules' side of the seam (one provider; the disposer removes it). */
export interface ApprovalRules {
  ruling(request: ApprovalRequest): ApprovalRuling | undefined | Promise<ApprovalRuling | undefined>
  /** The user granted `rule` for the session (already in the log) or always (to be remembered). */
  granted(request: ApprovalRequest, rule: string, scope: ApprovalScope): void
}

/** A pending request as answerers see it. */
export interface PendingApproval {
  readonly id: string
  readonly sessionId: string
  readonly toolName: string
  readonly callId: string
  readonly reason: string
  readonly arguments?: string
  /** The wider grants this request offers (absent: once or not at all). */
  readonly scopes?: readonly ApprovalScope[]
  /** The session's working folder (shown with a command). */
  readonly cwd?: string
  /** The rule that made it ask (an ask rule), when one did. */
  readonly askedBy?: RuleRef
  /** The allow rule the wider grants (`scopes`) would add, shown to the user as it would be written. */
  readonly grants?: string
}

export type ApprovalAnswerer = (request: PendingApproval, signal: AbortSignal) =>
  ApprovalAnswer | undefined | Promise<ApprovalAnswer | undefined>

export type KnobSource = 'delegation'

/** One question for the user (`ask_user_question`). */
export interface UserQuestion {
  /** Stable id, echoed in the answer. */
  readonly id: string
  readonly question: string
  /** Optional short heading ("Confirm", "Choose mode"). */
  readonly header?: string
  readonly options?: readonly { readonly label: string; readonly description?: string }[]
  /** Whether more than one option may be chosen (default false). */
  readonly multiSelect?: boolean
}

/** The user's answer to one question: chosen option labels and/or free text. */
export interface QuestionAnswer {
  readonly id: string
  readonly selected?: readonly string[]
  readonly text?: string
}

export interface QuestionRequest {
  readonly session: ApprovalSession
  readonly callId: string
  readonly questions: readonly UserQuestion[]
  /** Aborting it while the question is pending ends it as `cancelled`. */
  readonly signal?: AbortSignal
}

/** A pending question as question answerers see it. */
export interface PendingQuestion {
  readonly id: string
  readonly sessionId: string
  readonly callId: string
  readonly questions: readonly UserQuestion[]
}

export type QuestionOutcome =
  | { readonly kind: 'answered'; readonly answers: readonly QuestionAnswer[] }
  | { readonly kind: 'cancelled' }
  /** Nobody can answer (no surface shows questions, or an answerer failed): fail closed. */
  | { readonly kind: 'unavailable' }

/**
 * A surface's question answerer: the answers, `cancelled` (the user dismissed it), or
 * `undefined` for questions that are not its own (another surface's session).
 */
export type QuestionAnswerer = (question: PendingQuestion, signal: AbortSignal) =>
  readonly QuestionAnswer[] | 'cancelled' | undefined | Promise<readonly QuestionAnswer[] | 'cancelled' | undefined>

export interface ApprovalService {
  mode(session: ApprovalSession): SandboxMode
  policy(session: ApprovalSession): ApprovalPolicy
  /** The network mode of confined commands, folded from `sandbox/network` like the mode. */
  network(session: ApprovalSession): NetworkMode
  /** The shipped preset both knobs match, else `custom`. */
  preset(session: ApprovalSession): PresetName | 'custom'
  presets(): readonly PermissionPreset[]
  /** The deployment defaults: what applies while a log sets no knob (or none since `session/imported`). */
  defaults(): { readonly mode: SandboxMode; readonly policy: ApprovalPolicy; readonly network: NetworkMode }
  setMode(session: ApprovalSession, mode: SandboxMode, source?: KnobSource): boolean
  /** Appends `sandbox/network` only when the value changes (or a source is given). */
  setNetwork(session: ApprovalSession, network: NetworkMode, source?: KnobSource): boolean
  setPolicy(session: ApprovalSession, policy: ApprovalPolicy, source?: KnobSource): boolean
  /** AP-5: `permission/preset` then the knobs that change; false (nothing appended) when already in force. */
  selectPreset(session: ApprovalSession, name: PresetName): boolean
  request(request: ApprovalRequest): Promise<ApprovalOutcome>
  answerer(answerer: ApprovalAnswerer): () => void
  /** Permission rules join every request (one provider at a time; the latest wins); the disposer removes them. */
  rules(rules: ApprovalRules): () => void
  /** Requests waiting for an answer (for surfaces that connect late). */
  pending(sessionId?: string): readonly PendingApproval[]
  delegate(parent: ApprovalSession, child: ApprovalSession): void
  /**
   * `to` runs with the mode and policy `from` runs with now (a user's copy of a session going
   * back to an earlier point keeps what is in force); knob events only for what differs.
   */
  adoptKnobs(from: ApprovalSession, to: ApprovalSession): void
  /**
   * Asks the user through the registered question answerers (first answer wins). None, a throw
   * or a malformed answer ⇒ `unavailable` (fail closed). Answers name only asked ids; chosen
   * labels must be offered options (one unless `multiSelect`).
   */
  ask(request: QuestionRequest): Promise<QuestionOutcome>
  /** Surfaces that can show questions to a person register one; the disposer removes it. */
  questioner(answerer: QuestionAnswerer): () => void
  /** Questions waiting for an answer (for surfaces that connect late). */
  pendingQuestions(sessionId?: string): readonly PendingQuestion[]
}

/** Log event data (exact shapes of the spec). */
export interface ApprovalEventMap {
  'approval/asked': { id: string; toolName: string; callId: string; reason: string; rule?: RuleRef }
  'approval/decided': { id: string; outcome: ApprovalOutcome; rule?: RuleRef }
  'approval/policy': { policy: ApprovalPolicy; source?: KnobSource }
  'sandbox/mode': { mode: SandboxMode; source?: KnobSource }
  'sandbox/network': { network: NetworkMode; source?: KnobSource }
  'permission/preset': { preset: PresetName }
}

declare module 'cordis' {
  interface Context {
    approval: ApprovalService
  }
  interface Events {
    /** @mode emit (contained). A request is waiting for an answer (UIs show it). */
    'approval/pending'(request: PendingApproval): void
    /** @mode emit (contained). A request was decided (UIs drop it). */
    'approval/settled'(request: PendingApproval, outcome: ApprovalOutcome): void
    /** @mode emit (contained). A question is waiting for the user (UIs show it). */
    'approval/question'(question: PendingQuestion): void
    /** @mode emit (contained). A question was answered, dismissed or given up (UIs drop it). */
    'approval/question-settled'(question: PendingQuestion, outcome: QuestionOutcome): void
  }
}
