/**
 * Permission rules at work (docs/security.md, "Permission rules"):
 *
 * - a deny rule refuses a matching call in `tools/pre-execute`, before anything runs, with an
 *   error naming the rule; an ask rule makes a call that would run ask (`{kind: "ask"}`), and an
 *   escalation it covers asks as escalations do, never granted by an allow rule;
 * - every approval request (`ctx.approval.rules`) is ruled on: deny rejects, a grant the user
 *   gave for this session or an allow rule grants without asking (escalations included, so a
 *   headless run goes on), an ask rule asks; a request that is asked offers the rule "for this
 *   session" (logged in `approval/decided`, so a resumed session keeps it: the grants are folded
 *   from the log) and "always" (written to the user's settings.yaml).
 *
 * With no rule configured nothing listens on the tool pipeline; requests still offer the wider
 * grants.
 */
import type { Context } from 'cordis'
import type { ApprovalRequest, ApprovalRuling, ApprovalScope, ApprovalService, ApprovalSession } from '../approval/api.js'
import type { PreExecuteDecision, ToolExecution } from '../tools/api.js'
import { evaluate, type RuleSet, type Verdict } from './match.js'
import { rememberAllowRule } from './remember.js'
import { parseRule, type PermissionRule } from './rules.js'
import { loadRules, type RuleSources } from './sources.js'
import { suggestRule } from './suggest.js'

export interface PermissionsConfig extends RuleSources {
  /** The user's settings.yaml, where "always allow" writes; absent: "always" is not offered. */
  readonly settingsFile?: string
  /** One line for the user (notices at start, a rule that could not be saved). */
  readonly log?: (line: string) => void
}

/** Tools whose escalation parameters ask through `ctx.approval` themselves. */
const ESCALATING = new Set(['bash', 'write', 'edit'])

function parsedArgs(raw: string | undefined): Record<string, unknown> {
  if (raw === undefined || raw.trim() === '') return {}
  try {
    const value: unknown = JSON.parse(raw)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
  } catch {
    return {}
  }
}

const named = (rule: PermissionRule) => `${rule.text} (${rule.source})`

export class PermissionRules {
  private rules: RuleSet
  private readonly sessionGrants = new WeakMap<object, { scanned: number; rules: PermissionRule[] }>()

  /** `register`: listen on the tool pipeline (when a rule needs it) and rule on approvals; false for a caller that registers itself. */
  constructor(private readonly ctx: Context, private readonly config: PermissionsConfig, register = true) {
    const loaded = loadRules(config)
    this.rules = loaded.rules
    for (const line of loaded.notices) config.log?.(line)
    if (!register) return
    if (this.rules.deny.length > 0 || this.rules.ask.length > 0) {
      ctx.on('tools/pre-execute', (execution, next) => this.preExecute(execution, next))
    }
    ;(ctx.get('approval') as ApprovalService | undefined)?.rules({ ruling: request => this.ruling(request), granted: (request, rule, scope) => this.granted(request, rule, scope) })
  }

  /** The rules in force (for `/permissions` style listings and tests). */
  list(): RuleSet {
    return this.rules
  }

  private async preExecute(execution: ToolExecution, next: () => Promise<PreExecuteDecision>): Promise<PreExecuteDecision> {
    const verdict = evaluate(this.rules, { tool: execution.name, args: execution.arguments, cwd: this.cwdOf(execution) })
    if (verdict?.kind === 'deny') {
      const rule = named(verdict.rule)
      return { kind: 'deny', reason: `deny rule ${rule}`, message: `${execution.name} was refused by the permission rule ${rule}; nothing was run` }
    }
    const decision = await next()
    if (verdict?.kind !== 'ask' || decision?.kind !== 'allow') return decision
    // An escalation asks for itself, and the ask rule is named there.
    const args = parsedArgs(execution.arguments)
    if (ESCALATING.has(execution.name) && typeof args.sandbox_permissions === 'string') return decision
    return { kind: 'ask', reason: `the permission rule ${named(verdict.rule)} asks before every matching call` }
  }

  /** The folder the call's tool resolves paths against: its session's, else the launch folder. */
  private cwdOf(execution: ToolExecution): string {
    if (execution.scope === undefined) return this.config.root
    const agents = this.ctx.get('agents') as { list(): readonly { scope: unknown; session: { header: { cwd?: string } } }[] } | undefined
    return agents?.list().find(agent => agent.scope === execution.scope)?.session.header.cwd ?? this.config.root
  }

  /** Grants of "for this session" answers, folded from the session's `approval/decided` events. */
  private grantsOf(session: ApprovalSession): PermissionRule[] {
    let fold = this.sessionGrants.get(session)
    if (fold === undefined) this.sessionGrants.set(session, fold = { scanned: 0, rules: [] })
    const events = session.events
    for (; fold.scanned < events.length; fold.scanned += 1) {
      const event = events[fold.scanned]!
      if (event.type === 'session/imported') fold.rules = []
      if (event.type !== 'approval/decided') continue
      const data = event.data as { outcome?: string; rule?: { text?: string; source?: string } }
      if (data.outcome !== 'allowed-session' || data.rule?.source !== 'session' || typeof data.rule.text !== 'string') continue
      try {
        fold.rules.push(parseRule(data.rule.text, 'allow', 'session', { root: this.config.root, ...(this.config.home !== undefined ? { home: this.config.home } : {}) }))
      } catch {
        // A grant this version cannot read grants nothing.
      }
    }
    return fold.rules
  }

  private verdict(request: ApprovalRequest): Verdict | undefined {
    const call = { tool: request.toolName, args: request.arguments ?? '', cwd: request.session.header.cwd ?? this.config.root }
    const verdict = evaluate(this.rules, call)
    if (verdict?.kind === 'deny') return verdict
    const granted = evaluate({ deny: [], ask: [], allow: this.grantsOf(request.session) }, call)
    if (granted === undefined || verdict?.kind !== 'ask') return granted ?? verdict
    // A grant answers the ask rule it was given for; another ask rule the call matches still asks.
    const other = evaluate({ deny: [], ask: this.rules.ask.filter(rule => rule.text !== granted.rule.text), allow: [] }, call)
    return other?.kind === 'ask' ? other : granted
  }

  ruling(request: ApprovalRequest): ApprovalRuling | undefined {
    const verdict = this.verdict(request)
    const rule = verdict === undefined ? undefined : { text: verdict.rule.text, kind: verdict.kind, source: verdict.rule.source }
    if (verdict !== undefined && verdict.kind !== 'ask') return { rule: rule! }
    const suggested = suggestRule(request.toolName, parsedArgs(request.arguments), this.config.root, request.session.header.cwd ?? this.config.root)
    // Under an ask rule, "always" would write an allow rule the ask rule outranks: only the session is offered.
    const scopes: ApprovalScope[] = verdict?.kind === 'ask' || this.config.settingsFile === undefined ? ['session'] : ['session', 'always']
    return { ...(rule !== undefined ? { rule } : {}), ...(suggested !== undefined ? { offer: { rule: suggested, scopes } } : {}) }
  }

  granted(_request: ApprovalRequest, text: string, scope: ApprovalScope): void {
    if (scope !== 'always' || this.config.settingsFile === undefined) return
    const rule = parseRule(text, 'allow', 'user settings', { root: this.config.root, ...(this.config.home !== undefined ? { home: this.config.home } : {}) })
    this.rules = { ...this.rules, allow: [...this.rules.allow, rule] }
    try {
      rememberAllowRule(this.config.settingsFile, text)
    } catch (error) {
      this.config.log?.(`dsh: ${(error as Error).message}`)
    }
  }
}

export const PermissionRulesPlugin = {
  name: 'permissions',
  inject: ['approval'],
  apply(ctx: Context, config: PermissionsConfig): void {
    new PermissionRules(ctx, config)
  },
}
