/** Test helpers: a bare session (no kernel) and a way to capture a rule rejection. */
import { createEventTypeRegistry } from '../registry.js'
import { SessionLog } from '../session.js'
import { SessionRuleError } from '../types.js'

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
