/**
 * A stored key's first use with an endpoint (docs/security.md, "The project .env"). The host
 * knows where a key comes from and where it has been sent (`KeyUseGate`, built by the launcher);
 * the adapter asks the gate right before a request leaves, and on a first use the surfaces are
 * asked through `llm/key-first-use` (the terminal app asks the user). Nobody answers: the host
 * says it in one line and the request goes on. `send` records the pairing; `refuse` fails the
 * request before one byte of it is sent (`KEY_NOT_SENT`). The agent loop's next request (the
 * user's next prompt) asks again; until one is allowed, requests the loop did not make (a title,
 * a compaction summary) are refused without a question.
 */
import type { Context } from 'cordis'
import { LlmError } from './errors.js'
import type { LlmCallOptions } from './types.js'
import './api.js'

/** A stored key about to go to an endpoint it has not been sent to. */
export interface KeyFirstUse {
  /** The key's variable (`DEEPSEEK_API_KEY`). */
  readonly keyName: string
  /** Where it would go, as configured. */
  readonly endpoint: string
  /** Who chose the endpoint (`DEEPSEEK_BASE_URL from /repo/.env`). */
  readonly chosenBy: string
  /** The session whose request it is, when a session's (`meta.sessionId`). */
  readonly sessionId?: string
}

export type KeyUseAnswer = 'send' | 'refuse'

/** What the host gives an adapter (`keyUse` in its config). */
export interface KeyUseGate {
  /** The first use of the stored key with `endpoint`, if this request is one. */
  firstUse(endpoint: string): Omit<KeyFirstUse, 'sessionId'> | undefined
  /** It goes ahead: the pairing is recorded, and said in one line when nobody was asked. */
  allowed(use: KeyFirstUse, asked: boolean): void
}

export type KeyUseAsk = (use: KeyFirstUse, signal?: AbortSignal) => Promise<KeyUseAnswer | undefined>

/** The surfaces' answer (`llm/key-first-use`, the first one that answers). */
export function askSurfaces(ctx: Context): KeyUseAsk {
  return async (use, signal) => {
    const answer: unknown = await ctx.serial('llm/key-first-use', use, signal)
    return answer === 'send' || answer === 'refuse' ? answer : undefined
  }
}

/**
 * The check an adapter makes before each request: nothing to do once the pairing is known; on a
 * first use, one question for every request that waits on it at once (the turn's and a title's).
 */
export class KeyUseConsent {
  private readonly pending = new Map<string, Promise<KeyUseAnswer>>()
  /** Pairings refused and not allowed since. */
  private readonly refused = new Set<string>()

  constructor(private readonly gate: KeyUseGate, private readonly ask: KeyUseAsk) {}

  async check(endpoint: string, options: Pick<LlmCallOptions, 'signal' | 'meta'>, label: string): Promise<void> {
    const found = this.gate.firstUse(endpoint)
    if (found === undefined) return
    const sessionId = options.meta?.sessionId
    const use: KeyFirstUse = { ...found, ...typeof sessionId === 'string' ? { sessionId } : {} }
    const id = `${use.keyName}\0${use.endpoint}`
    const refusal = () => new LlmError('KEY_NOT_SENT', `${label}: the stored ${use.keyName} was not sent to ${use.endpoint} (${use.chosenBy}): its first use with that endpoint was declined, and the request was not made`)
    if (this.refused.has(id) && options.meta?.agentLoop !== true) throw refusal()
    let decision = this.pending.get(id)
    if (decision === undefined) {
      decision = this.decide(id, use, options.signal)
      this.pending.set(id, decision)
      const done = () => { this.pending.delete(id) }
      decision.then(done, done)
    }
    const answer = await decision
    // Cancelled while asked: the transport reports the cancel, and nothing is sent.
    if (options.signal?.aborted === true) return
    if (answer === 'refuse') throw refusal()
  }

  private async decide(id: string, use: KeyFirstUse, signal: AbortSignal | undefined): Promise<KeyUseAnswer> {
    const answer = await this.ask(use, signal)
    if (signal?.aborted === true) return 'refuse'
    if (answer === 'refuse') {
      this.refused.add(id)
      return 'refuse'
    }
    this.refused.delete(id)
    this.gate.allowed(use, answer === 'send')
    return 'send'
  }
}
