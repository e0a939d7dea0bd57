/**
 * The terminal app asks before a stored key's first use with an endpoint (docs/security.md, "The
 * project .env"): every `llm/key-first-use` of this process (its session's turns, a title, a
 * subagent) waits on the approval box (approval-box.tsx) until `y` sends or `n` refuses. A
 * request cancelled meanwhile (Esc, leaving the app) refuses: nothing is sent.
 */
import type { KeyFirstUse, KeyUseAnswer } from '../llm/key-use.js'
import type { TuiStore } from './store.js'

export function keyUseAnswerer(store: TuiStore): (use: KeyFirstUse, signal?: AbortSignal) => Promise<KeyUseAnswer> {
  let asked = 0
  return (use, signal) => new Promise<KeyUseAnswer>(resolve => {
    if (signal?.aborted === true) return resolve('refuse')
    const id = `key-use-${++asked}`
    const settle = (answer: KeyUseAnswer) => {
      signal?.removeEventListener('abort', onAbort)
      store.removeApproval(id)
      resolve(answer)
    }
    const onAbort = () => settle('refuse')
    signal?.addEventListener('abort', onAbort, { once: true })
    store.addApproval({
      id, toolName: use.keyName, reason: `the stored ${use.keyName} is sent to ${use.endpoint} for the first time (${use.chosenBy})`,
      keyUse: { keyName: use.keyName, endpoint: use.endpoint, chosenBy: use.chosenBy },
      answer: outcome => settle(outcome === 'rejected' ? 'refuse' : 'send'),
    })
  })
}
