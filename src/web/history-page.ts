/**
 * One page of a session's history for `sessions.history` (docs/web.md, "History pages"): the
 * window of the log the page asked for, moved back to a turn start so a page holds whole turns,
 * and the `seed` — the few events before the window that the page's fold reads for state it
 * draws beside the messages (the plan, plan mode, the goal and its rounds, the latest prompt), so
 * a page folded on its own draws exactly what folding the whole log draws.
 */
import type { SessionEvent } from '../session/types.js'
import { scanEvents } from '../session/packed-run.js'

const SEED_TYPES: ReadonlySet<string> = new Set(['todo/write', 'plan/mode', 'user/message', 'goal/change', 'turn/start'])

export interface HistoryWindow {
  /** First seq of the window (a turn start, or 0, or the asked `from`). */
  readonly start: number
  /** One past the last seq. */
  readonly end: number
  /** State-carrying events before `start`, in seq order (empty when `start` is 0). */
  readonly seed: readonly SessionEvent[]
}

function stepKey(event: SessionEvent): string {
  const { turn, step } = event.data as { turn: number; step: number }
  return `${turn}:${step}`
}

/**
 * The start of the window that ends before `end` and holds about `limit` events as sent (the
 * `assistant/chunk`s of steps whose message is in the window do not count, they are not sent),
 * moved back to the `turn/start` at or before that point; never before `from`.
 */
export function windowStart(events: readonly SessionEvent[], end: number, limit: number, from: number): number {
  const finished = new Set<string>()
  let counted = 0
  let index = end
  while (index > from && counted < limit) {
    index -= 1
    const event = events[index]!
    if (event.type === 'assistant/message') finished.add(stepKey(event))
    else if (event.type === 'assistant/chunk' && finished.has(stepKey(event))) continue
    counted += 1
  }
  if (index <= from) return from
  while (index > from && events[index]!.type !== 'turn/start') index -= 1
  return index
}

/**
 * The events before `start` that the page's fold (web/src/fold.ts, session-state.ts) reads for
 * state that outlives a turn: the latest `todo/write` and `plan/mode`, the latest user prompt (a
 * failed goal round's Retry offers it), and the goal's history since it was last replaced or
 * cleared (its `goal/change`s and its highest round message; a completed goal is retired by
 * the next `turn/start`, and a page starts at one). Everything else the fold keeps lives within
 * one turn, and a page holds whole turns.
 */
export function seedBefore(events: readonly SessionEvent[], start: number): SessionEvent[] {
  let todo: SessionEvent | undefined
  let plan: SessionEvent | undefined
  let prompt: SessionEvent | undefined
  let goal: SessionEvent[] = []
  /** Of round messages that number their round, only the highest counts (rounds is a maximum). */
  let round: SessionEvent | undefined
  let goalId: string | undefined
  let complete = false
  // Only these types are visited: a stored log's packed chunk runs are skipped, not unpacked.
  scanEvents(events, 0, SEED_TYPES, event => {
    if (event.seq >= start) return
    const data = event.data as any
    switch (event.type) {
      case 'todo/write': todo = event; break
      case 'plan/mode': plan = event; break
      case 'user/message':
        if (data?.source?.kind === 'user') prompt = event
        else if (data?.source?.kind === 'goal' && goalId !== undefined && (data.source.goalId === undefined || data.source.goalId === goalId)) {
          if (typeof data.source.round !== 'number') goal.push(event)
          else if (round === undefined || data.source.round >= (round.data as any).source.round) round = event
        }
        break
      case 'goal/change':
        if (data?.operation !== 'clear' && typeof data?.goal?.id !== 'string') break
        if (data?.operation === 'clear') {
          goal = []
          round = undefined
          goalId = undefined
          complete = false
          break
        }
        if (data.goal.id !== goalId) {
          goal = []
          round = undefined
        }
        goalId = data.goal.id
        complete = data.goal.phase === 'complete'
        goal.push(event)
        break
      case 'turn/start':
        // A completed goal leaves with the next turn's start: what came before no longer counts.
        if (complete) {
          goal = []
          round = undefined
          goalId = undefined
          complete = false
        }
        break
    }
  })
  return [...goal, ...[round, todo, plan, prompt].filter((event): event is SessionEvent => event !== undefined)].sort((a, b) => a.seq - b.seq)
}

/** The window for `from` (first seq wanted), `before` (one past the last) and `limit` (events, about). */
export function historyWindow(events: readonly SessionEvent[], options: { from: number; before?: number; limit?: number }): HistoryWindow {
  const end = Math.min(options.before ?? events.length, events.length)
  const from = Math.min(options.from, end)
  if (options.limit === undefined) return { start: from, end, seed: [] }
  const start = windowStart(events, end, options.limit, from)
  return { start, end, seed: start === 0 ? [] : seedBefore(events, start) }
}
