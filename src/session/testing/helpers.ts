/** Test helpers: a bare session (no kernel) and a way to capture a rule rejection. */
import { createEventTypeRegistry } from '../registry.js'
import { SessionLog } from '../session.js'
import { SessionRuleError, type SessionEvent } from '../types.js'
import { packEvents, type ChunkRow } from '../chunk-rows.js'
import { PackedRun, eventList, type EventSlot } from '../packed-run.js'

export function bareSession(id = 's'): SessionLog {
  let clock = 0
  return new SessionLog({ type: 'session', version: 0, id, createdAt: 0, delegationDepth: 0 }, { registry: createEventTypeRegistry(), now: () => clock++ })
}

/** Runs `fn`, expects a SessionRuleError and returns its rule, seq and message. */
export function ruleError(fn: () => unknown): { rule: string; seq: number | undefined; message: string } {
  try {
    fn()
  } catch (error) {
    if (!(error instanceof SessionRuleError)) throw error
    return { rule: error.rule, seq: error.seq, message: error.message }
  }
  throw new Error('expected a SessionRuleError, nothing was thrown')
}

/**
 * `events` as a store's reader hands them back: written as packed chunk rows (round-tripped
 * through JSON), then one list slot per member naming its run, as the JSONL and SQLite readers
 * build it. Folds must give the same on this list as on the live one.
 */
export function packedList(events: readonly SessionEvent[]): readonly SessionEvent[] {
  const slots: EventSlot[] = []
  for (const line of packEvents(events)) {
    if (line.type.endsWith('-chunks')) {
      const run = PackedRun.fromRow(JSON.parse(JSON.stringify(line)) as ChunkRow)
      for (let k = 0; k < run.length; k++) slots.push(run)
    } else slots.push(JSON.parse(JSON.stringify(line)) as SessionEvent)
  }
  return eventList(slots)
}
