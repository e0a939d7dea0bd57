/**
 * Rewind points (the terminal app's Esc Esc and `/rewind`): one per turn the user's own typing
 * started, newest first, each with a fork boundary that S-14 accepts and that leaves the prompt
 * and everything after it out of the copy.
 */
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { rewindPoints } from './rewind.js'
import { SessionsServicePlugin } from '../session/service.js'
import { packedList } from '../session/testing/helpers.js'
import { appendTurn, prng } from '../persistence/testing/workload.js'
import { assistantMessage, userMessage } from '../session/testing/fixtures.js'
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { SessionEvent } from '../session/types.js'


/** A turn whose first step carries `opening`, a second step carrying `steered` (if any). */
function turn(session: Session, opening: readonly UserMessage[], steered?: UserMessage): void {
  const number = session.position.turn + 1
  session.append('turn/start', { turn: number })
  session.append('step/start', { turn: number, step: 1 })
  for (const message of opening) session.append('user/message', message, { surfaceOp: 'append' })
  session.append('assistant/message', { turn: number, step: 1, message: assistantMessage(`a-${number}-1`, `answer ${number}`), usage: { inputTokens: 10, outputTokens: 3 } }, { surfaceOp: 'append' })
  session.append('step/end', { turn: number, step: 1 })
  if (steered !== undefined) {
    session.append('step/start', { turn: number, step: 2 })
    session.append('user/message', steered, { surfaceOp: 'append' })
    session.append('assistant/message', { turn: number, step: 2, message: assistantMessage(`a-${number}-2`, 'steered'), usage: { inputTokens: 12, outputTokens: 3 } }, { surfaceOp: 'append' })
    session.append('step/end', { turn: number, step: 2 })
  }
  session.append('turn/end', { turn: number, reason: { kind: 'completed' } })
}

const plugin = (text: string): UserMessage => ({ id: `p-${text}`, role: 'user', content: [{ type: 'text', text }], source: { kind: 'plugin', plugin: 'jobs' } as never })

describe('rewind points', () => {
  it('one per turn the user started, newest first: queued prompts together, steers and plugin turns left out, mentions and images as shown', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionsServicePlugin, {})
    const session = ctx.sessions.create({ id: 'rewind-kinds' })
    turn(session, [userMessage('first prompt')])
    turn(session, [userMessage('queued one', 'q1'), userMessage('queued two', 'q2')], userMessage('a steer mid-turn'))
    turn(session, [plugin('job finished')])
    const mention: UserMessage = {
      id: 'm', role: 'user', source: { kind: 'user' },
      content: [{ type: 'text', text: 'look at @a.ts' }, { type: 'text', text: '<file path="a.ts">\nbody\n</file>' }, { type: 'image', mimeType: 'image/png', data: 'AAAA' } as never],
    }
    turn(session, [mention])
    const points = rewindPoints(session.events)
    expect(points.map(point => point.turn)).toEqual([4, 2, 1])
    expect(points.map(point => point.text)).toEqual(['look at @a.ts', 'queued one\nqueued two', 'first prompt'])
    expect(points[0].label).toBe('look at @a.ts [1 image]')
    expect(points[1].label).toBe('queued one queued two')
    const ends = session.events.filter(event => event.type === 'turn/end').map(event => event.seq)
    expect(points.map(point => point.boundary)).toEqual([ends[2], ends[0], undefined])
    expect(points[2].time).toBe(session.events.find(event => event.type === 'turn/start')!.time)
  })

  it('S-14: forking at each point keeps every turn before it and nothing of its own, on live and packed logs', async () => {
    const ctx = new Context()
    await ctx.plugin(SessionsServicePlugin, {})
    let checked = 0
    for (let seed = 1; seed <= 8; seed++) {
      const rng = prng(seed)
      const session = ctx.sessions.create({ id: `rewind-${seed}` })
      const turns = 2 + Math.floor(rng() * 6)
      for (let k = 0; k < turns; k++) {
        if (rng() < 0.3) turn(session, [userMessage(`typed ${k}`, `typed-${seed}-${k}`)])
        else await appendTurn(session, { rng, chunks: () => 2 + Math.floor(rng() * 5) })
      }
      const live = rewindPoints(session.events)
      expect(rewindPoints(packedList(session.events))).toEqual(live)
      for (const point of live) {
        if (point.boundary === undefined) {
          expect(point.turn).toBe(1)
          continue
        }
        const child = ctx.sessions.fork(session.id, point.boundary)
        expect(child.position.turn).toBe(point.turn - 1)
        expect(child.position.turnOpen).toBe(false)
        // Everything up to the previous turn's end is there; the rewound turn's start is not.
        expect(child.events[point.boundary]).toEqual(session.events[point.boundary])
        expect(child.events.some(event => event.type === 'turn/start' && (event.data as { turn: number }).turn === point.turn)).toBe(false)
        checked += 1
      }
    }
    expect(checked).toBeGreaterThan(10)
  })
})
