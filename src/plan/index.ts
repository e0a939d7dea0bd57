/**
 * Plan mode (PM-1, PM-2; docs/plan.md): a soft collaboration state. The only state is the last
 * `plan/mode {active}` event of the log (default off). While on, the `plan:policy` section asks
 * the model to explore and plan without changing anything; `exit_plan_mode` presents the plan for
 * the user's review through `ctx.approval` (approve = leave plan mode, reject = keep planning).
 *
 * Plan mode is guidance, not enforcement: sandbox mode and approval policy (the `read-only`
 * preset) are what stop edits.
 */
import { randomUUID } from 'node:crypto'
import { Context, Service } from 'cordis'
import type { Agent, PreStepDecision, PreStepPayload } from '../agent/api.js'
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import type { EventDataValidator } from '../session/types.js'
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import '../agent/api.js'
import '../tools/api.js'
import '../commands/api.js'
import '../approval/api.js'
import '../prompt/api.js'

const PLAN_MODE: ReadonlySet<string> = new Set(['plan/mode'])

export const PLAN_POLICY_SECTION = 'plan:policy'

export const PLAN_POLICY_TEXT = [
  '# Plan mode',
  'Plan mode is on. Explore, read and think, but do not change anything yet: no file edits, no commands that modify the workspace, no other side effects.',
  'Work out a concrete plan for what the user asked. When it is ready, call exit_plan_mode with the plan as markdown starting with a # heading; the user reviews it and either approves it (plan mode ends and you carry it out) or asks you to keep planning.',
].join('\n')

export const EXIT_PLAN_MODE_DESCRIPTION = 'Use only in plan mode. Present your plan for the user\'s review: a markdown plan starting with a # heading. If the user approves, plan mode ends and you carry out the plan; otherwise keep planning and present a revised plan.'

export const NOT_IN_PLAN_MODE = 'Error: not in plan mode'
export const PLAN_NEEDS_HEADING = 'Error: the plan must start with a markdown heading (#)'
export const KEEP_PLANNING = 'Error: the user wants you to keep planning; plan mode is still on. Refine the plan and present it again with exit_plan_mode.'
export const NO_REVIEWER = 'Error: nobody is available to review the plan; plan mode is still on.'
export const PLAN_ON_NOTICE = 'Plan mode is on: explore and plan, make no changes, and present the plan with exit_plan_mode.'
export const PLAN_OFF_NOTICE = 'Plan mode is off: you may now make changes and carry out the plan.'

export interface PlanModeData { readonly active: boolean }

export interface PlanModeConfig {
  /** The `plan:policy` text shown while plan mode is on (default `PLAN_POLICY_TEXT`). */
  readonly section?: string
}

export interface PlanModeService {
  /** The state the log says is in force (last `plan/mode`, default off). */
  active(session: Session): boolean
  /**
   * Selects a state. Between turns it is appended at once; during a turn at the next accepted
   * pre-step (PM-2). Returns false when nothing changes.
   */
  select(session: Session, active: boolean): boolean
}

declare module 'cordis' {
  interface Context {
    planMode: PlanModeService
  }
}

declare module '../session/types.js' {
  interface SessionEventMap {
    'plan/mode': PlanModeData
  }
}

const validate: EventDataValidator = (data) => {
  const d = data as { active?: unknown }
  if (typeof d !== 'object' || d === null || typeof d.active !== 'boolean') return 'plan/mode needs {active: boolean}'
  return null
}

interface Fold {
  active: boolean
  scanned: number
  /** A selection waiting for the next accepted pre-step. */
  pending?: boolean
  /** The state the last step's request described (undefined before the first step). */
  described?: boolean
}

export class PlanModePlugin extends Service implements PlanModeService {
  static readonly inject = ['sessions', 'tools']

  private readonly folds = new WeakMap<Session, Fold>()
  private readonly text: string

  constructor(ctx: Context, config: PlanModeConfig = {}) {
    super(ctx, 'planMode')
    if (config.section !== undefined && (typeof config.section !== 'string' || config.section.trim() === '')) {
      throw new TypeError('plan-mode: config.section must be a non-empty string')
    }
    this.text = config.section ?? PLAN_POLICY_TEXT
    ctx.effect(() => ctx.sessions.registerEventType({ type: 'plan/mode', owner: 'plan', validate }))
    ctx.effect(() => ctx.tools.register(this.tool()))
    ctx.on('agent/pre-step', (payload, next) => this.preStep(payload, next))
    const sections = new Map<object, () => void>()
    ctx.on('agent/created', (agent) => this.installSection(agent, sections))
    ctx.on('agent/disposed', (agent) => { sections.get(agent.scope)?.(); sections.delete(agent.scope) })
    ctx.effect(() => () => { for (const off of sections.values()) off(); sections.clear() })
    ctx.inject(['systemPrompt'], (inner) => {
      for (const agent of inner.get('agents')?.list() ?? []) this.installSection(agent, sections)
    })
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'plan',
        description: 'Plan mode: explore and plan before changing anything (/plan off leaves it)',
        argumentHint: '[off | request]',
        run: ({ agent, args }) => {
          const rest = args.trim()
          if (rest === 'off') {
            this.select(agent.session, false)
            return { kind: 'success', text: 'Plan mode off.' }
          }
          this.select(agent.session, true)
          if (rest === '') return { kind: 'success', text: 'Plan mode on.' }
          return { kind: 'prompt', input: [{ type: 'text', text: rest }], text: 'Plan mode on.' }
        },
      })
    })
  }

  active(session: Session): boolean {
    return this.fold(session).active
  }

  select(session: Session, active: boolean): boolean {
    const fold = this.fold(session)
    if (session.position.turnOpen) {
      const effective = fold.pending ?? fold.active
      if (effective === active) return false
      fold.pending = active === fold.active ? undefined : active
      return true
    }
    fold.pending = undefined
    if (fold.active === active) return false
    session.append('plan/mode', { active })
    this.fold(session)
    return true
  }

  private fold(session: Session): Fold {
    let fold = this.folds.get(session)
    if (fold === undefined) this.folds.set(session, fold = { active: false, scanned: 0 })
    const folding = fold
    fold.scanned = scanEvents(session.events, fold.scanned, PLAN_MODE, (event) => {
      folding.active = (event.data as PlanModeData).active
    })
    return fold
  }

  private installSection(agent: Agent, sections: Map<object, () => void>): void {
    const prompt = this.ctx.get('systemPrompt')
    if (prompt === undefined || sections.has(agent.scope)) return
    const session = agent.session
    sections.set(agent.scope, prompt.section({ name: PLAN_POLICY_SECTION, order: 50, fn: () => this.active(session) ? this.text : undefined }, agent.scope))
  }

  /** PM-2: a pending selection lands here; one notice when the last request described the other state. */
  private async preStep(payload: PreStepPayload, next: () => Promise<PreStepDecision>): Promise<PreStepDecision> {
    const decision = await next()
    if (decision.kind !== 'enter') return decision
    const session = payload.session
    const fold = this.fold(session)
    if (fold.pending !== undefined) {
      const pending = fold.pending
      fold.pending = undefined
      if (pending !== fold.active) {
        session.append('plan/mode', { active: pending })
        this.fold(session)
      }
    }
    const described = fold.described
    fold.described = fold.active
    if (described === undefined || described === fold.active) return decision
    const notice: UserMessage = {
      id: randomUUID(), role: 'user',
      content: [{ type: 'text', text: fold.active ? PLAN_ON_NOTICE : PLAN_OFF_NOTICE }],
      source: { kind: 'plugin', plugin: 'plan', form: 'notice', summary: fold.active ? 'plan mode on' : 'plan mode off' },
    }
    return { kind: 'enter', messages: [...decision.messages, notice] }
  }

  private tool(): Tool<{ plan: string }> {
    const fail = (text: string): ToolOutput => ({ content: [{ type: 'text', text }], isError: true })
    return {
      name: 'exit_plan_mode',
      description: EXIT_PLAN_MODE_DESCRIPTION,
      parameters: {
        type: 'object',
        properties: { plan: { type: 'string', description: 'The plan, as markdown starting with a # heading.' } },
        required: ['plan'],
      },
      parse: (args: unknown) => {
        const plan = (args as { plan?: unknown } | null)?.plan
        if (typeof plan !== 'string') throw new TypeError('exit_plan_mode needs {plan: string}')
        return { plan }
      },
      execute: async ({ plan }, context: ToolContext) => {
        const session = context.session
        if (session === undefined || !this.active(session)) return fail(NOT_IN_PLAN_MODE)
        if (!/^#/.test(plan.trimStart())) return fail(PLAN_NEEDS_HEADING)
        const approval = this.ctx.get('approval')
        if (approval === undefined) return fail(NO_REVIEWER)
        const outcome = await approval.request({ session, toolName: 'exit_plan_mode', callId: context.callId, reason: plan, arguments: JSON.stringify({ plan }), signal: context.signal })
        if (outcome === 'allowed-once') {
          this.select(session, false)
          return { content: [{ type: 'text', text: JSON.stringify({ approved: true }) }] }
        }
        if (outcome === 'unavailable') return fail(NO_REVIEWER)
        return fail(KEEP_PLANNING)
      },
    }
  }
}
