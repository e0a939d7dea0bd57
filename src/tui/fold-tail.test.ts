/**
 * `foldTail`: the terminal app folds only the latest part of a resumed log. Its items must be the
 * full fold's last ones, with the same context in use, running state and status line, on live
 * logs and on stored ones read back with packed delta runs.
 */
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { ConversationFold, foldTail } from './fold.js'
import { SessionsServicePlugin } from '../session/service.js'
import { packedList } from '../session/testing/helpers.js'
import { appendTurn, prng } from '../persistence/testing/workload.js'
import { assistantMessage, userMessage } from '../session/testing/fixtures.js'
import type { Session } from '../session/api.js'
import type { SessionEvent } from '../session/types.js'


/** A turn with one model answer whose usage is `inputTokens`, no tools. */
function answeredTurn(session: Session, inputTokens: number): void {
  const turn = session.position.turn + 1
  session.append('turn/start', { turn })
  session.append('step/start', { turn, step: 1 })
  session.append('user/message', userMessage(`ask ${turn}`, `ask-${turn}`), { surfaceOp: 'append' })
  session.append('assistant/message', { turn, step: 1, message: assistantMessage(`answer-${turn}`, `answer ${turn}`), usage: { inputTokens, outputTokens: 3 } }, { surfaceOp: 'append' })
  session.append('step/end', { turn, step: 1 })
  session.append('turn/end', { turn, reason: { kind: 'completed' } })
}

/** A turn cancelled before the model answered: no usage in it. */
function cancelledTurn(session: Session): void {
  const turn = session.position.turn + 1
  session.append('turn/start', { turn })
  session.append('step/start', { turn, step: 1 })
  session.append('user/message', userMessage(`never answered ${turn}`, `never-${turn}`), { surfaceOp: 'append' })
  session.append('step/end', { turn, step: 1 })
  session.append('turn/end', { turn, reason: { kind: 'aborted', reason: { kind: 'user' } } })
}

function fullFold(events: readonly SessionEvent[]): ConversationFold {
  const fold = new ConversationFold()
  for (let seq = 0; seq < events.length; seq++) fold.apply(events[seq])
  return fold
}

describe('conversation fold of a resumed log', () => {
  it('foldTail holds the full fold\'s last items (at least the asked number), its context in use, running state and status', async () => {
    const ctx = new Context()
    let clock = 1_700_000_000_000
    await ctx.plugin(SessionsServicePlugin, { now: () => (clock += 3) })
    let checked = 0
    for (let seed = 1; seed <= 24; seed++) {
      const rng = prng(seed)
      const pick = (n: number) => Math.floor(rng() * n)
      const session = ctx.sessions.create({ id: `tail-${seed}` })
      const turns = pick(30)
      for (let turn = 0; turn < turns; turn++) {
        if (pick(5) === 0) answeredTurn(session, 1000 + seed * 10 + turn)
        else await appendTurn(session, { rng, chunks: () => 2 + pick(6) })
      }
      // Turns without a model answer at the end: the context in use comes from before them.
      for (let k = pick(7); k > 0; k--) cancelledTurn(session)
      // Sometimes a turn still open (a crash mid-stream or mid-tool).
      if (pick(2) === 0) await appendTurn(session, { rng, stopAfter: 1 + pick(40) })
      for (const events of [session.events, packedList(session.events)]) {
        const full = fullFold(events)
        for (const minItems of [1, 5, 12, 60]) {
          const { fold, hiddenTurns } = foldTail(events, minItems)
          expect(fold.items.length).toBeGreaterThanOrEqual(Math.min(minItems, full.items.length))
          expect(fold.items).toEqual(full.items.slice(full.items.length - fold.items.length))
          expect(fold.contextTokens).toBe(full.contextTokens)
          expect(fold.running).toBe(full.running)
          expect(fold.status).toBe(full.status)
          const ended = events.filter(event => event.type === 'turn/end').length
          expect(hiddenTurns).toBeLessThanOrEqual(ended)
          if (hiddenTurns > 0) expect(fold.items.length).toBeLessThan(full.items.length)
          checked += hiddenTurns > 0 ? 1 : 0
        }
      }
    }
    // The property held on logs where the fold really left turns out, not only whole folds.
    expect(checked).toBeGreaterThan(20)
  })
})
