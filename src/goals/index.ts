/**
 * Goals (GL-1..GL-4, docs/goals.md): a same-session objective the agent keeps working on in
 * automatic rounds until it is complete, paused, blocked or out of rounds. The state is the
 * latest `goal/change` snapshot in the log; the round driver queues one `<goal_round>` message
 * each time the agent goes idle with an active goal and rounds left.
 */
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { EventDataValidator, TurnEndReason } from '../session/types.js'
import { scanEvents } from '../session/packed-run.js'

const GOAL_FOLD_TYPES: ReadonlySet<string> = new Set(['goal/change', 'user/message'])
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import '../agent/api.js'
import '../tools/api.js'
import '../commands/api.js'
import '../prompt/api.js'

/** The system-prompt section (`tool:goal`, before the workflow's) that says when goals fit. */
export function goalSection(blockedAfter: number): string {
  return [
    'Goal tools keep one long objective going across turns of this session. Create a goal only when the human asks for sustained, multi-turn work toward a finish line (in whatever words or language); ordinary requests answered in one turn need none.',
    'Before update_goal, call get_goal and pass its goal_id and revision exactly.',
    'A resumed or forked session holds its goal disarmed: when the human asks to carry on, rearm it with update_goal action resume.',
    'Complete a goal only once its objective is really met.',
    `Mark it blocked only when the same concrete obstacle has stopped ${blockedAfter} or more goal rounds in a row, and name that obstacle in blocked_reason; hard, uncertain or unfinished work is not blocked.`,
  ].join(' ')
}

export type GoalPhase = 'active' | 'paused' | 'blocked' | 'complete'

export interface Goal {
  readonly id: string
  readonly revision: number
  readonly objective: string
  readonly phase: GoalPhase
  readonly maxGoalRounds: number
  readonly blockedReason?: string
}

export interface GoalChange {
  readonly kind: 'goal/change'
  readonly version: 1
  readonly operation: 'create' | 'edit' | 'pause' | 'resume' | 'complete' | 'blocked'
  readonly goal: Goal
  readonly roundsStarted: number
  readonly createdAt: number
  readonly updatedAt: number
}

export interface GoalsConfig {
  readonly defaultMaxGoalRounds?: number
  readonly blockedAfterConsecutiveRounds?: number
  /**
   * Queue the next round when a turn ends (default true). The headless composition sets false:
   * a one-shot run ends with its task, and a goal created in it stays armed for a later session
   * (as the recorded headless `goal-tools` run shows). `/goal <objective>` still starts round 1.
   */
  readonly autoRounds?: boolean
}

declare module '../session/types.js' {
  interface SessionEventMap {
    'goal/change': GoalChange | { kind: 'goal/change'; version: 1; operation: 'clear'; cleared: { id: string; revision: number } }
  }
}

const validate: EventDataValidator = (data) => {
  const d = data as { kind?: unknown; operation?: unknown; version?: unknown }
  if (typeof d !== 'object' || d === null || d.kind !== 'goal/change' || typeof d.operation !== 'string' || d.version !== 1) return 'goal/change needs kind "goal/change", version 1 and an operation'
  return null
}

function roundText(goal: Goal, round: number): string {
  return `<goal_round>\nObjective: ${JSON.stringify(goal.objective)}\nRound: ${round}/${goal.maxGoalRounds}\n\nKeep working toward the objective in this session. When it is fully achieved, call update_goal with action "complete"; if you cannot make progress, say why.\n</goal_round>`
}

function completeText(goal: Goal): string {
  return `<goal_complete>\nObjective: ${JSON.stringify(goal.objective)}\nThe goal is complete and this automatic run ends here. Write a short closing message for the user summarising what was done.\n</goal_complete>`
}

/** What the log says about the current goal. */
interface GoalState {
  change: GoalChange | undefined
  /** Rounds whose message was entered, for the current goal. */
  rounds: number
  scanned: number
}

export class GoalsPlugin {
  static readonly inject = ['sessions', 'tools']

  private readonly states = new WeakMap<Session, GoalState>()
  /** Sessions whose goal is disarmed (loaded from disk) until a human resumes it. */
  private readonly armed = new WeakSet<Session>()
  private readonly maxRounds: number
  private readonly blockedAfter: number
  private readonly autoRounds: boolean

  constructor(private readonly ctx: Context, config: GoalsConfig = {}) {
    this.maxRounds = config.defaultMaxGoalRounds ?? 256
    this.blockedAfter = config.blockedAfterConsecutiveRounds ?? 3
    this.autoRounds = config.autoRounds !== false
    ctx.effect(() => ctx.sessions.registerEventType({ type: 'goal/change', owner: 'goals', validate }))
    for (const tool of this.tools()) ctx.effect(() => ctx.tools.register(tool))
    ctx.on('agent/turn-end', (agent, turn, reason) => this.turnEnded(agent, turn, reason, this.autoRounds))
    const section = goalSection(this.blockedAfter)
    ctx.inject(['systemPrompt'], (inner) => {
      inner.systemPrompt.section({ name: 'tool:goal', order: 114, text: section })
    })
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'goal',
        description: 'Set an objective the agent works on in automatic rounds (/goal pause, /goal resume, /goal)',
        argumentHint: '[objective | pause | resume]',
        run: ({ agent, args }) => this.command(agent, args.trim()),
      })
    })
  }

  /** The current goal of `session` (folded incrementally). */
  state(session: Session): GoalState {
    let state = this.states.get(session)
    if (state === undefined) this.states.set(session, state = { change: undefined, rounds: 0, scanned: 0 })
    state.scanned = scanEvents(session.events, state.scanned, GOAL_FOLD_TYPES, (event) => {
      if (event.type === 'goal/change') {
        const data = event.data as GoalChange | { operation: 'clear' }
        if (data.operation === 'clear') { state!.change = undefined; state!.rounds = 0 } else {
          if (state!.change?.goal.id !== (data as GoalChange).goal.id) state!.rounds = 0
          state!.change = data as GoalChange
        }
      } else if (event.type === 'user/message') {
        const source = (event.data as UserMessage).source as { kind: string; goalId?: string }
        if (source.kind === 'goal' && source.goalId === state!.change?.goal.id) state!.rounds++
      }
    })
    return state
  }

  private append(session: Session, operation: GoalChange['operation'], goal: Goal, createdAt?: number): GoalChange {
    const state = this.state(session)
    const now = Date.now()
    // A new goal has entered no round yet: the count so far belongs to the previous goal.
    const rounds = state.change?.goal.id === goal.id ? state.rounds : 0
    const change: GoalChange = { kind: 'goal/change', version: 1, operation, goal, roundsStarted: rounds, createdAt: createdAt ?? state.change?.createdAt ?? now, updatedAt: now }
    session.append('goal/change', change)
    this.state(session)
    return change
  }

  private create(session: Session, objective: string, max: number | undefined): GoalChange {
    const goal: Goal = { id: `goal-${randomUUID()}`, revision: 1, objective, phase: 'active', maxGoalRounds: max ?? this.maxRounds }
    this.armed.add(session)
    return this.append(session, 'create', goal, Date.now())
  }

  /** GL-2: idle, active, armed, rounds left -> exactly one round message. GL-3: a cancelled round pauses. */
  private turnEnded(agent: Agent, turn: number, reason: TurnEndReason, queue = true): void {
    const session = agent.session
    const state = this.state(session)
    const change = state.change
    if (change === undefined || change.goal.phase !== 'active') return
    if (reason.kind === 'aborted') {
      if (this.turnHadRound(session, turn)) {
        this.armed.delete(session)
        this.append(session, 'pause', { ...change.goal, revision: change.goal.revision + 1, phase: 'paused' })
      }
      return
    }
    if (!queue || !this.armed.has(session) || agent.inbox.nextTurn.length > 0) return
    if (state.rounds >= change.goal.maxGoalRounds) return
    const round = state.rounds + 1
    const message: UserMessage = {
      id: randomUUID(), role: 'user', content: [{ type: 'text', text: roundText(change.goal, round) }],
      source: { kind: 'goal', goalId: change.goal.id, revision: change.goal.revision, round } as unknown as UserMessage['source'],
    }
    agent.followup(message)
  }

  /**
   * `armed` while the goal is active and rounds may run from this process: a goal read back from
   * a stored log (resume) or copied by a fork stays disarmed until a human resumes it.
   */
  private activation(session: Session, change: GoalChange): 'armed' | 'disarmed' {
    return change.goal.phase === 'active' && this.armed.has(session) ? 'armed' : 'disarmed'
  }

  private turnHadRound(session: Session, turn: number): boolean {
    const events = session.events
    for (let seq = events.length - 1; seq >= 0; seq--) {
      const event = events[seq]!
      if (event.type === 'turn/start' && (event.data as { turn: number }).turn === turn) return false
      if (event.type === 'user/message' && ((event.data as UserMessage).source as { kind: string }).kind === 'goal') return true
    }
    return false
  }

  private async command(agent: Agent, args: string) {
    const session = agent.session
    const current = this.state(session).change
    if (args === '') {
      return current === undefined ? { kind: 'success' as const, text: 'No goal.' } : { kind: 'success' as const, text: describe(current) }
    }
    if (args === 'pause' || args === 'resume') {
      if (current === undefined) return { kind: 'error' as const, text: 'No goal.' }
      const phase = args === 'pause' ? 'paused' : 'active'
      if (args === 'resume') this.armed.add(session)
      else this.armed.delete(session)
      const change = this.append(session, args, { ...current.goal, revision: current.goal.revision + 1, phase })
      if (args === 'resume' && agent.status === 'idle') this.turnEnded(agent, session.position.turn, { kind: 'completed' })
      return { kind: 'success' as const, text: describe(change) }
    }
    const change = this.create(session, args, undefined)
    // Round 1 starts at once when the agent is idle.
    if (agent.status === 'idle') this.turnEnded(agent, session.position.turn, { kind: 'completed' })
    return { kind: 'success' as const, text: `Goal created\n${describe(change)}` }
  }

  private tools(): Tool[] {
    const result = (session: Session | undefined, change: GoalChange | undefined): ToolOutput => ({
      content: [{ type: 'text', text: JSON.stringify(change === undefined || session === undefined ? { goal: null } : {
        goal: { id: change.goal.id, revision: change.goal.revision, objective: change.goal.objective, phase: change.goal.phase, roundsStarted: change.roundsStarted, maxGoalRounds: change.goal.maxGoalRounds },
        activation: this.activation(session, change),
      }) }],
    })
    const notFound = () => ({ content: [{ type: 'text' as const, text: 'Error: no current goal' }], isError: true, error: { name: 'GoalError', code: 'GOAL_NOT_FOUND' } })
    const fail = (text: string, code: string) => ({ content: [{ type: 'text' as const, text: `Error: ${text}` }], isError: true, error: { name: 'GoalError', code } })
    const sessionOf = (context: ToolContext) => context.session
    // GL-4: a direct human turn, not in a subagent. A fork the user made (the web's or the
    // terminal's /fork) names its parent too, but is the user's own session: its goal, disarmed
    // by the fork, is rearmed there by update_goal resume.
    const humanTurn = (session: Session) => {
      if (isSubagent(session)) return false
      const events = session.events
      for (let seq = events.length - 1; seq >= 0; seq--) {
        const event = events[seq]!
        if (event.type === 'user/message' && ((event.data as UserMessage).source as { kind: string }).kind === 'user') return true
        if (event.type === 'turn/start') return false
      }
      return false
    }
    // complete / blocked: also from the current goal's own round.
    const goalRound = (session: Session, goal: Goal) => {
      const source = turnStartedBy(session)
      return !isSubagent(session) && source.kind === 'goal' && source.goalId === goal.id
    }
    const filler = <T>(value: T | '' | 0 | undefined): T | undefined => (value === '' || value === 0 ? undefined : value ?? undefined)
    return [
      {
        name: 'create_goal',
        description: 'Set a goal for this session: an objective you keep working on in automatic rounds until it is complete. Only when the user asks for it.',
        parameters: { type: 'object', properties: { objective: { type: 'string' }, max_goal_rounds: { type: 'integer' } }, required: ['objective'] },
        execute: (args: { objective: string; max_goal_rounds?: number }, context: ToolContext) => {
          const session = sessionOf(context)
          if (session === undefined) return fail('goals need a session', 'GOAL_NO_SESSION')
          if (!humanTurn(session)) return fail('a goal can only be created in a turn started by the user', 'GOAL_NOT_ALLOWED')
          return result(session, this.create(session, args.objective, filler(args.max_goal_rounds)))
        },
      },
      {
        name: 'get_goal',
        description: 'The current goal of this session, if any.',
        parameters: { type: 'object', properties: {} },
        execute: (_args: unknown, context: ToolContext) => {
          const session = sessionOf(context)
          return result(session, session === undefined ? undefined : this.state(session).change)
        },
      },
      {
        name: 'update_goal',
        description: 'Change the current goal: complete it when the objective is achieved, or edit, pause, resume or mark it blocked. Pass its id and current revision.',
        parameters: {
          type: 'object',
          properties: {
            goal_id: { type: 'string' }, revision: { type: 'integer' },
            action: { type: 'string', enum: ['edit', 'pause', 'resume', 'complete', 'blocked'] },
            objective: { type: 'string' }, max_goal_rounds: { type: 'integer' }, blocked_reason: { type: 'string' },
          },
          required: ['goal_id', 'revision', 'action'],
        },
        execute: (args: { goal_id: string; revision: number; action: GoalChange['operation']; objective?: string; max_goal_rounds?: number; blocked_reason?: string }, context: ToolContext) => {
          const session = sessionOf(context)
          const current = session === undefined ? undefined : this.state(session).change
          if (session === undefined || current === undefined) return notFound()
          if (current.goal.id !== args.goal_id || current.goal.revision !== args.revision) return fail(`stale goal: the current goal is ${current.goal.id} at revision ${current.goal.revision}`, 'GOAL_STALE')
          if (['edit', 'pause', 'resume'].includes(args.action) && !humanTurn(session)) return fail(`${args.action} needs a turn started by the user`, 'GOAL_NOT_ALLOWED')
          if ((args.action === 'complete' || args.action === 'blocked') && !humanTurn(session) && !goalRound(session, current.goal)) {
            return fail(`${args.action} needs a turn started by the user or one of this goal's rounds`, 'GOAL_NOT_ALLOWED')
          }
          // The anti-flapping gate of the original (tool-goal): a round may report its goal blocked
          // only once the goal has started `blockedAfterConsecutiveRounds` rounds; a human may at once.
          if (args.action === 'blocked' && !humanTurn(session)) {
            const rounds = this.state(session).rounds
            if (rounds < this.blockedAfter) return fail(`blocked requires at least ${this.blockedAfter} consecutive goal rounds; current round is ${rounds}`, 'GOAL_TOOL_BLOCK_THRESHOLD')
          }
          const phase: GoalPhase = args.action === 'complete' ? 'complete' : args.action === 'blocked' ? 'blocked' : args.action === 'pause' ? 'paused' : 'active'
          const reason = filler(args.blocked_reason)
          const goal: Goal = {
            id: current.goal.id, revision: current.goal.revision + 1, objective: filler(args.objective) ?? current.goal.objective, phase,
            maxGoalRounds: filler(args.max_goal_rounds) ?? current.goal.maxGoalRounds, ...(phase === 'blocked' && reason !== undefined ? { blockedReason: reason } : {}),
          }
          // Only an active goal a human started or resumed in this process runs rounds.
          if (phase === 'active') { if (args.action === 'resume') this.armed.add(session) } else this.armed.delete(session)
          const change = this.append(session, args.action, goal)
          if (args.action === 'complete') {
            // One more step for the closing message; no further round.
            this.ctx.get('agents')?.get(session.id)?.inject({
              id: randomUUID(), role: 'user', content: [{ type: 'text', text: completeText(goal) }],
              source: { kind: 'plugin', plugin: 'tool-goal', form: 'notice', summary: `complete: ${goal.objective}` },
            })
          }
          return result(session, change)
        },
      },
    ] as Tool[]
  }
}

/** What started the current turn: the source of its first message. */
function turnStartedBy(session: Session): { kind: string; goalId?: string } {
  const events = session.events
  let first: { kind: string; goalId?: string } = { kind: 'none' }
  for (let seq = events.length - 1; seq >= 0; seq--) {
    const event = events[seq]!
    if (event.type === 'user/message') first = (event.data as UserMessage).source as { kind: string; goalId?: string }
    if (event.type === 'turn/start') return first
  }
  return first
}

/** A delegated child (spawned or forked by the subagent tools), as against a fork the user made. */
function isSubagent(session: Session): boolean {
  return session.header.origin === 'subagent'
}

function describe(change: GoalChange): string {
  return `Status: ${change.goal.phase}\nObjective: ${change.goal.objective}\nRounds: ${change.roundsStarted}/${change.goal.maxGoalRounds}`
}
