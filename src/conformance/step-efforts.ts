/**
 * A recorded per-step effort policy: the original's product composition asked some steps of a
 * turn with another reasoning effort than the first (headless-profile: `high`, then `off` after
 * the tool result). The replay suite asks each step of such a turn with its recorded effort
 * through `agent/request-config`; turns whose steps all asked alike are left to the agent.
 */
import type { SessionEvent } from '../session/types.js'

/** `turn:step` -> the effort that step asked with, for every step of the turns whose effort changed. */
export function stepEfforts(events: readonly SessionEvent[]): Map<string, string | undefined> {
  const found = new Map<string, string | undefined>()
  let steps: string[] = []
  let efforts: (string | undefined)[] = []
  let current: string | undefined
  const closeTurn = () => {
    if (new Set(efforts).size > 1) steps.forEach((key, i) => found.set(key, efforts[i]))
    steps = []
    efforts = []
  }
  for (const event of events) {
    const data = event.data as { turn?: number; step?: number; header?: { config?: { reasoningEffort?: string } } }
    if (event.type === 'turn/start') closeTurn()
    else if (event.type === 'step/start') {
      steps.push(`${data.turn}:${data.step}`)
      efforts.push(current)
    } else if (event.type === 'request/header') {
      current = data.header?.config?.reasoningEffort
      // The header is written inside its step: it decides that step's effort.
      if (efforts.length > 0) efforts[efforts.length - 1] = current
    }
  }
  closeTurn()
  return found
}
