import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { Message } from '../llm/types.js'
import { deriveEventMessage, type SessionEvent } from './index.js'
import { assistantMessage, toolResultMessage, userMessage } from './testing/fixtures.js'
import { bareSession } from './testing/helpers.js'

type Op =
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; empty: boolean }
  | { kind: 'tool' }
  | { kind: 'replace'; a: number; b: number }
  | { kind: 'prune' ; at: number }
  | { kind: 'derive' }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('user' as const), text: fc.string({ maxLength: 4 }) }),
  fc.record({ kind: fc.constant('assistant' as const), empty: fc.boolean() }),
  fc.record({ kind: fc.constant('tool' as const) }),
  fc.record({ kind: fc.constant('replace' as const), a: fc.nat(), b: fc.nat() }),
  fc.record({ kind: fc.constant('prune' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('derive' as const) }),
)

/** The reference: replay surface ops naively over a plain array, then project. */
function foldFromScratch(events: readonly SessionEvent[]): Message[] {
  const surface: number[] = []
  for (const event of events) {
    const surfaceOp = event.surfaceOp
    if (surfaceOp === undefined) continue
    if (surfaceOp === 'append') { surface.push(event.seq); continue }
    const start = surface.indexOf(surfaceOp.start)
    const end = surface.indexOf(surfaceOp.end)
    surface.splice(start, end - start + 1, event.seq)
  }
  return surface.map((seq) => deriveEventMessage(events[seq])).filter((m): m is Message => m !== null)
}

describe('deriveMessages property (S-11)', () => {
  it('S-11: after random appends and replaces, the incremental deriveMessages() equals a from-scratch fold', () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
      const s = bareSession()
      s.append('turn/start', { turn: 1 })
      s.append('step/start', { turn: 1, step: 1 })
      let n = 0
      for (const o of ops) {
        n++
        switch (o.kind) {
          case 'user':
            s.append('user/message', userMessage(o.text, `u${n}`), { surfaceOp: 'append' })
            break
          case 'assistant':
            s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage(`a${n}`, o.empty ? '' : `t${n}`) }, { surfaceOp: 'append', sourceEventSeqs: [] })
            break
          case 'tool': {
            const callId = `c${n}`
            s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage(`a${n}`, '', [{ id: callId }]) }, { surfaceOp: 'append', sourceEventSeqs: [] })
            const call = s.append('tool/call', { turn: 1, step: 1, callId, name: 'bash', arguments: '{}' })
            s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage(callId, `out${n}`) }, { surfaceOp: 'append', sourceEventSeqs: [call.seq] })
            break
          }
          case 'replace': {
            const surface = s.surface()
            if (surface.length === 0) break
            const [i, j] = [o.a % surface.length, o.b % surface.length].sort((x, y) => x - y)
            s.append('user/message', userMessage(`summary ${n}`, `s${n}`), { surfaceOp: { op: 'replace', start: surface[i], end: surface[j] }, sourceEventSeqs: surface.slice(i, j + 1) })
            break
          }
          case 'prune': {
            const results = s.surface().filter((seq) => s.events[seq].type === 'tool/result')
            if (results.length === 0) break
            const target = s.events[results[o.at % results.length]] as SessionEvent<'tool/result'>
            const block = target.data.message.content[0]
            const message = { ...target.data.message, content: [{ ...block, content: [{ type: 'text' as const, text: `pruned ${n}` }] }] as const }
            s.append('tool/result', { ...target.data, message }, { surfaceOp: { op: 'replace', start: target.seq, end: target.seq }, sourceEventSeqs: [target.seq] })
            break
          }
          case 'derive':
            expect(s.deriveMessages()).toEqual(foldFromScratch(s.events))
            break
        }
      }
      expect(s.deriveMessages()).toEqual(foldFromScratch(s.events))
      expect(JSON.stringify(s.deriveMessages())).toBe(JSON.stringify(foldFromScratch(s.events)))
    }), { numRuns: 300 })
  })
})
