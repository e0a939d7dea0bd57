import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { SessionsServicePlugin, checkLogInvariants, interruptedTurnClosers, type SessionEvent, type SessionHeader } from './index.js'
import { assistantMessage, toolResultMessage, userMessage } from './testing/fixtures.js'
import { bareSession } from './testing/helpers.js'

const header: SessionHeader = { type: 'session', version: 0, id: 's', createdAt: 0, delegationDepth: 0 }

/** A log that crashed mid-step: call c1 answered, c2 logged but unanswered, c3 never started. */
function crashedMidTools() {
  const s = bareSession()
  s.append('turn/start', { turn: 1 }, { time: 10 })
  s.append('step/start', { turn: 1, step: 1 }, { time: 11 })
  s.append('user/message', userMessage('go'), { surfaceOp: 'append', time: 12 })
  s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a1', 'working', [{ id: 'c1' }, { id: 'c2', name: 'write' }, { id: 'c3', name: 'read' }]) }, { surfaceOp: 'append', sourceEventSeqs: [], time: 13 })
  s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' }, { time: 14 })
  s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'ok') }, { surfaceOp: 'append', sourceEventSeqs: [4], time: 15 })
  s.append('tool/call', { turn: 1, step: 1, callId: 'c2', name: 'write', arguments: '{}' }, { time: 9 }) // time may go backwards
  return s
}

async function rehydrate(events: readonly SessionEvent[]) {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin)
  return ctx.sessions.hydrate(header, JSON.parse(JSON.stringify(events)))
}

describe('crash repair (C-1..C-4)', () => {
  it('C-2: a run_code program cut mid-call: its open inner calls are closed before its result, committed ones stay (#36)', async () => {
    const s = bareSession()
    s.append('turn/start', { turn: 1 }, { time: 10 })
    s.append('step/start', { turn: 1, step: 1 }, { time: 11 })
    s.append('user/message', userMessage('go'), { surfaceOp: 'append', time: 12 })
    s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a1', 'working', [{ id: 'r1', name: 'run_code' }]) }, { surfaceOp: 'append', sourceEventSeqs: [], time: 13 })
    s.append('tool/call', { turn: 1, step: 1, callId: 'r1', name: 'run_code', arguments: '{}' }, { time: 14 })
    const ids = (n: number, name: string) => ({ rootCallId: 'r1', parentCallId: 'r1', subCallId: `r1:code:${n}`, name, arguments: { n } })
    s.append('tool/code-dispatch-start', ids(1, 'read'), { time: 15 })
    s.append('tool/code-dispatch', { ...ids(1, 'read'), isError: false, content: [{ type: 'text', text: 'ok' }] }, { time: 16 })
    s.append('tool/code-dispatch-start', ids(2, 'bash'), { time: 17 })
    const closers = interruptedTurnClosers(s.events)
    expect(closers.map((e) => e.type)).toEqual(['tool/code-dispatch', 'tool/result', 'step/end', 'turn/end'])
    expect(closers[0]!.data).toMatchObject({ ...ids(2, 'bash'), isError: true })
    expect(JSON.stringify(closers[0]!.data)).toContain('outcome is unknown')
    const repaired = await rehydrate([...s.events, ...closers])
    expect(repaired.position.turnOpen).toBe(false)
    expect(interruptedTurnClosers(repaired.events)).toEqual([])
  })

  it('C-2/C-3/C-4: unknown-outcome and not-started results in model order, then step/end, then turn/end interrupted', () => {
    const s = crashedMidTools()
    const closers = interruptedTurnClosers(s.events)
    expect(closers.map((e) => [e.type, e.seq, e.time])).toEqual([
      ['tool/result', 7, 9], ['tool/result', 8, 9], ['step/end', 9, 9], ['turn/end', 10, 9],
    ])
    const [unknown, notStarted, stepEnd, turnEnd] = closers as [SessionEvent<'tool/result'>, SessionEvent<'tool/result'>, SessionEvent, SessionEvent]
    expect(unknown.data.error).toEqual({ name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' })
    expect(unknown.sourceEventSeqs).toEqual([6])
    expect(unknown.surfaceOp).toBe('append')
    expect(unknown.data.message).toMatchObject({ id: 'interrupted-tool-result-c2-7', role: 'user', source: { kind: 'tool', callId: 'c2' } })
    expect(unknown.data.message.content[0]).toMatchObject({ type: 'tool-result', toolCallId: 'c2', isError: true })
    const unknownText = (unknown.data.message.content[0].content[0] as { text: string }).text
    expect(unknownText).toMatch(/outcome is unknown/)
    expect(unknownText).toMatch(/Verify the external state before retrying/)
    expect(notStarted.data.error).toEqual({ name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' })
    expect(notStarted.sourceEventSeqs).toBeUndefined()
    expect(notStarted.data.message.id).toBe('interrupted-tool-result-c3-8')
    expect((notStarted.data.message.content[0].content[0] as { text: string }).text).toMatch(/never ran/)
    expect(stepEnd.data).toEqual({ turn: 1, step: 1 })
    expect(turnEnd.data).toEqual({ turn: 1, reason: { kind: 'interrupted' } })
  })

  it('C-1: the closers make a valid log (every rule passes on hydrate) and nothing committed is dropped', async () => {
    const s = crashedMidTools()
    const closers = interruptedTurnClosers(s.events)
    const repaired = await rehydrate([...s.events, ...closers])
    expect(repaired.length).toBe(s.length + closers.length)
    expect(repaired.events.slice(0, s.length)).toEqual(s.events)
    expect(repaired.position).toEqual({ turn: 1, step: 1, turnOpen: false, stepOpen: false })
    expect(repaired.deriveMessages().map((m) => m.id)).toEqual(['u-go', 'a1', 'r-c1', 'interrupted-tool-result-c2-7', 'interrupted-tool-result-c3-8'])
    // The repaired session goes on normally.
    repaired.append('turn/start', { turn: 2 })
  })

  it('C-4: repair is idempotent and deterministic', () => {
    const s = crashedMidTools()
    const first = interruptedTurnClosers(s.events)
    expect(interruptedTurnClosers(s.events)).toEqual(first)
    expect(interruptedTurnClosers([...s.events, ...first])).toEqual([])
    expect(checkLogInvariants([...s.events, ...first]).turnOpen).toBe(false)
  })

  it('C-3: an open turn with no open step gets only turn/end', () => {
    const s = bareSession()
    s.append('turn/start', { turn: 1 }, { time: 5 })
    s.append('step/start', { turn: 1, step: 1 }, { time: 6 })
    s.append('step/end', { turn: 1, step: 1 }, { time: 7 })
    expect(interruptedTurnClosers(s.events)).toEqual([{ type: 'turn/end', seq: 3, time: 7, data: { turn: 1, reason: { kind: 'interrupted' } } }])
    const fresh = bareSession()
    fresh.append('turn/start', { turn: 1 }, { time: 5 })
    expect(interruptedTurnClosers(fresh.events).map((e) => e.type)).toEqual(['turn/end'])
  })

  it('C-3: an open step without an assistant message (crash mid-stream) gets step/end and turn/end', () => {
    const s = bareSession()
    s.append('turn/start', { turn: 1 })
    s.append('step/start', { turn: 1, step: 1 })
    s.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'partial' } })
    expect(interruptedTurnClosers(s.events).map((e) => e.type)).toEqual(['step/end', 'turn/end'])
  })

  it('C-1: nothing to close on an empty log, a closed turn, or a log with events but no turns', () => {
    expect(interruptedTurnClosers([])).toEqual([])
    const s = bareSession()
    s.append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [userMessage('q')] })
    expect(interruptedTurnClosers(s.events)).toEqual([])
    s.append('turn/start', { turn: 1 })
    s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    s.append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [userMessage('later')] })
    expect(interruptedTurnClosers(s.events)).toEqual([])
  })

  it('C-2: only the open step counts; results of earlier steps and calls fully answered need no closer', () => {
    const s = bareSession()
    s.append('turn/start', { turn: 1 })
    s.append('step/start', { turn: 1, step: 1 })
    s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a1', '', [{ id: 'c1' }]) }, { surfaceOp: 'append', sourceEventSeqs: [] })
    s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' })
    s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'ok') }, { surfaceOp: 'append', sourceEventSeqs: [3] })
    s.append('step/end', { turn: 1, step: 1 })
    s.append('step/start', { turn: 1, step: 2 })
    s.append('assistant/message', { turn: 1, step: 2, message: assistantMessage('a2', '', [{ id: 'c9' }]) }, { surfaceOp: 'append', sourceEventSeqs: [] })
    const closers = interruptedTurnClosers(s.events)
    expect(closers.map((e) => e.type)).toEqual(['tool/result', 'step/end', 'turn/end'])
    expect((closers[0] as SessionEvent<'tool/result'>).data).toMatchObject({ turn: 1, step: 2, error: { code: 'TOOL_NOT_STARTED' } })
    expect(closers[1].data).toEqual({ turn: 1, step: 2 })
  })
})
