/**
 * Session state the conversation shows besides messages: the current goal (`goal/change`
 * snapshots, GL-1; rounds entered as `user/message`s with source `{kind: "goal"}`, GL-2) and
 * plan mode (`plan/mode`, PM-1). Folded from the log in seq order, O(1) per event, with no DOM
 * so the fold runs in Node tests too.
 */
import type { SessionEvent } from './types'

export type GoalPhase = 'active' | 'paused' | 'blocked' | 'complete'

export interface GoalView {
  readonly id: string
  readonly revision: number
  readonly objective: string
  readonly phase: GoalPhase
  readonly maxGoalRounds: number
  /** Rounds entered so far (the round in progress while the goal is active). */
  readonly rounds: number
  readonly blockedReason?: string
}

/** A line in the conversation: a goal round began, or the goal changed (created, paused, completed, ...). */
export interface GoalItem {
  readonly kind: 'goal'
  readonly key: string
  readonly seq: number
  readonly time: number
  readonly event: 'round' | 'create' | 'edit' | 'pause' | 'resume' | 'complete' | 'blocked' | 'clear'
  readonly objective: string
  readonly round?: number
  readonly maxGoalRounds?: number
  readonly reason?: string
}

export class SessionState {
  goal: GoalView | undefined
  planMode = false

  /**
   * Applies one event: `changed` when the goal or plan mode changed, and the item to draw for it
   * (a round start or a goal change). Events of unexpected shape are ignored, never thrown on.
   */
  apply(event: SessionEvent): { changed: boolean; item?: GoalItem } {
    const data = event.data
    if (data === null || typeof data !== 'object') return { changed: false }
    switch (event.type) {
      case 'turn/start':
        // A completed goal leaves the bar above the composer when the next turn starts (its line stays).
        if (this.goal?.phase !== 'complete') return { changed: false }
        this.goal = undefined
        return { changed: true }
      case 'plan/mode': {
        const active = data.active === true
        const changed = active !== this.planMode
        this.planMode = active
        return { changed }
      }
      case 'goal/change': {
        if (data.operation === 'clear') {
          const objective = this.goal?.objective ?? ''
          this.goal = undefined
          return { changed: true, item: { kind: 'goal', key: `goal:${event.seq}`, seq: event.seq, time: event.time, event: 'clear', objective } }
        }
        const goal = data.goal
        if (goal === null || typeof goal !== 'object' || typeof goal.id !== 'string') return { changed: false }
        const sameGoal = this.goal?.id === goal.id
        const rounds = Math.max(typeof data.roundsStarted === 'number' ? data.roundsStarted : 0, sameGoal ? this.goal!.rounds : 0)
        this.goal = {
          id: goal.id, revision: Number(goal.revision) || 0, objective: String(goal.objective ?? ''),
          phase: (['active', 'paused', 'blocked', 'complete'] as const).includes(goal.phase) ? goal.phase : 'active',
          maxGoalRounds: Number(goal.maxGoalRounds) || 0, rounds,
          ...typeof goal.blockedReason === 'string' ? { blockedReason: goal.blockedReason } : {},
        }
        const operation = typeof data.operation === 'string' ? data.operation : 'edit'
        const known = ['create', 'edit', 'pause', 'resume', 'complete', 'blocked'].includes(operation) ? operation as GoalItem['event'] : 'edit'
        return {
          changed: true,
          item: {
            kind: 'goal', key: `goal:${event.seq}`, seq: event.seq, time: event.time, event: known, objective: this.goal.objective,
            maxGoalRounds: this.goal.maxGoalRounds, round: rounds, ...this.goal.blockedReason === undefined ? {} : { reason: this.goal.blockedReason },
          },
        }
      }
      case 'user/message': {
        const source = data.source
        if (source?.kind !== 'goal') return { changed: false }
        const round = typeof source.round === 'number' ? source.round : (this.goal?.rounds ?? 0) + 1
        if (this.goal !== undefined && (source.goalId === undefined || source.goalId === this.goal.id)) this.goal = { ...this.goal, rounds: Math.max(this.goal.rounds, round) }
        return {
          changed: true,
          item: {
            kind: 'goal', key: `goal:${event.seq}`, seq: event.seq, time: event.time, event: 'round', objective: this.goal?.objective ?? '',
            round, ...this.goal === undefined ? {} : { maxGoalRounds: this.goal.maxGoalRounds },
          },
        }
      }
      default:
        return { changed: false }
    }
  }
}

/** The conversation's words for a goal line. */
export function describeGoalItem(item: GoalItem): string {
  const of = item.maxGoalRounds ? ` of ${item.maxGoalRounds}` : ''
  switch (item.event) {
    case 'round': return `Goal round ${item.round}${of}`
    case 'create': return `Goal set: ${item.objective}`
    case 'edit': return `Goal edited: ${item.objective}`
    case 'pause': return `Goal paused after ${item.round} round${item.round === 1 ? '' : 's'}`
    case 'resume': return 'Goal resumed'
    case 'complete': return `Goal complete after ${item.round} round${item.round === 1 ? '' : 's'}: ${item.objective}`
    case 'blocked': return `Goal blocked${item.reason ? `: ${item.reason}` : ''}`
    case 'clear': return 'Goal cleared'
  }
}
