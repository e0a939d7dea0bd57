import { describe, expect, it } from 'vitest'
import { checkLogInvariants, type SessionEvent } from './index.js'
import { assistantMessage, toolResultMessage, userMessage } from './testing/fixtures.js'
import { bareSession, ruleError } from './testing/helpers.js'

function openStep() {
  const s = bareSession()
  s.append('turn/start', { turn: 1 })
  s.append('step/start', { turn: 1, step: 1 })
  return s
}

describe('log invariants (S-15)', () => {
  it('S-15: turns start at 1 and are contiguous', () => {
    const s = bareSession()
    expect(ruleError(() => s.append('turn/start', { turn: 2 })).message)
      .toBe('S-15 at seq 0: turn/start: turn 2 does not follow turn 0 (turns start at 1 and are contiguous)')
    s.append('turn/start', { turn: 1 })
    expect(ruleError(() => s.append('turn/start', { turn: 2 })).message).toBe('S-15 at seq 1: turn/start: turn 1 is still open')
    s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    expect(ruleError(() => s.append('turn/start', { turn: 3 })).rule).toBe('S-15')
    s.append('turn/start', { turn: 2 })
    expect(s.position).toEqual({ turn: 2, step: 0, turnOpen: true, stepOpen: false })
  })

  it('S-15: steps restart at 1 per turn; step/start needs an open turn and no open step', () => {
    const s = bareSession()
    expect(ruleError(() => s.append('step/start', { turn: 1, step: 1 })).message).toBe('S-15 at seq 0: step/start: needs an open turn')
    s.append('turn/start', { turn: 1 })
    expect(ruleError(() => s.append('step/start', { turn: 1, step: 2 })).message)
      .toBe('S-15 at seq 1: step/start: step 2 does not follow step 0 (steps restart at 1 per turn)')
    expect(ruleError(() => s.append('step/start', { turn: 2, step: 1 })).message).toBe('S-15 at seq 1: step/start: names turn 2 but the open turn is 1')
    s.append('step/start', { turn: 1, step: 1 })
    expect(ruleError(() => s.append('step/start', { turn: 1, step: 2 })).message).toBe('S-15 at seq 2: step/start: step 1 is still open')
    s.append('step/end', { turn: 1, step: 1 })
    s.append('step/start', { turn: 1, step: 2 })
    s.append('step/end', { turn: 1, step: 2 })
    s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    s.append('turn/start', { turn: 2 })
    expect(ruleError(() => s.append('step/start', { turn: 2, step: 3 })).rule).toBe('S-15')
    s.append('step/start', { turn: 2, step: 1 })
  })

  it('S-15: turn/end needs an open turn, the same turn number and no open step', () => {
    const s = openStep()
    expect(ruleError(() => s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })).message).toBe('S-15 at seq 2: turn/end: step 1 is still open')
    s.append('step/end', { turn: 1, step: 1 })
    expect(ruleError(() => s.append('turn/end', { turn: 2, reason: { kind: 'completed' } })).message).toBe('S-15 at seq 3: turn/end: names turn 2 but the open turn is 1')
    s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    expect(ruleError(() => s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })).message).toBe('S-15 at seq 4: turn/end: no turn is open')
  })

  it('S-15: chunk, message, call and result events name the open step', () => {
    const s = openStep()
    const chunk = { type: 'text-delta', index: 0, text: 'x' }
    expect(ruleError(() => s.append('assistant/chunk', { turn: 1, step: 2, chunk })).message)
      .toBe('S-15 at seq 2: assistant/chunk: names turn 1 step 2 but the open step is turn 1 step 1')
    s.append('assistant/chunk', { turn: 1, step: 1, chunk })
    s.append('step/end', { turn: 1, step: 1 })
    expect(ruleError(() => s.append('assistant/chunk', { turn: 1, step: 1, chunk })).message).toBe('S-15 at seq 4: assistant/chunk: needs an open step')
    expect(ruleError(() => s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a', 'x') }, { surfaceOp: 'append' })).rule).toBe('S-15')
    expect(ruleError(() => s.append('tool/call', { turn: 1, step: 1, callId: 'c', name: 'n', arguments: '' })).message).toBe('S-15 at seq 4: tool/call: needs an open step')
    expect(ruleError(() => s.append('step/end', { turn: 1, step: 1 })).message).toBe('S-15 at seq 4: step/end: needs an open step')
  })

  it('S-15: every tool/result follows its tool/call in the same step', () => {
    const s = openStep()
    s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a', '', [{ id: 'c1' }, { id: 'c2' }]) }, { surfaceOp: 'append', sourceEventSeqs: [] })
    expect(ruleError(() => s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'x') }, { surfaceOp: 'append' })).message)
      .toBe('S-15 at seq 3: tool/result: no tool/call "c1" precedes it in step 1')
    s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' })
    expect(ruleError(() => s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' })).message)
      .toBe('S-15 at seq 4: tool/call: call "c1" was already logged at seq 3')
    s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'x') }, { surfaceOp: 'append', sourceEventSeqs: [3] })
    expect(ruleError(() => s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'y', false, 'r2') }, { surfaceOp: 'append', sourceEventSeqs: [3] })).message)
      .toBe('S-15 at seq 5: tool/result: call "c1" already has a result in step 1')
    // A call from an earlier step does not pair with a result in a later step.
    s.append('step/end', { turn: 1, step: 1 })
    s.append('step/start', { turn: 1, step: 2 })
    expect(ruleError(() => s.append('tool/result', { turn: 1, step: 2, message: toolResultMessage('c1', 'z', false, 'r3') }, { surfaceOp: 'append' })).message)
      .toBe('S-15 at seq 7: tool/result: no tool/call "c1" precedes it in step 2')
  })

  it('S-15: a synthetic TOOL_NOT_STARTED result needs no tool/call (but still an open step)', () => {
    const s = openStep()
    s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a', '', [{ id: 'c1' }]) }, { surfaceOp: 'append', sourceEventSeqs: [] })
    s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'never ran', true), error: { name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' } }, { surfaceOp: 'append' })
    expect(s.length).toBe(4)
  })

  it('S-15: a replacing tool/result needs only an open turn', () => {
    const s = openStep()
    s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a', '', [{ id: 'c1' }]) }, { surfaceOp: 'append', sourceEventSeqs: [] })
    s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' })
    s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'big') }, { surfaceOp: 'append', sourceEventSeqs: [3] })
    s.append('step/end', { turn: 1, step: 1 })
    s.append('step/start', { turn: 1, step: 2 })
    // Step 2 is open, the replacement still names step 1 (S-9 keeps turn/step equal).
    s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'pruned') }, { surfaceOp: { op: 'replace', start: 4, end: 4 }, sourceEventSeqs: [4] })
    s.append('step/end', { turn: 1, step: 2 })
    s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    expect(ruleError(() => s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'again') }, { surfaceOp: { op: 'replace', start: 7, end: 7 }, sourceEventSeqs: [7] })).message)
      .toBe('S-15 at seq 10: tool/result: a replacing tool/result needs an open turn')
  })

  it('S-15: todo/write, request/header and request/context happen inside an open turn', () => {
    const s = bareSession()
    const header = { config: { provider: 'p', model: 'm' }, system: 'sys', tools: [] }
    expect(ruleError(() => s.append('todo/write', { todos: [] })).message).toBe('S-15 at seq 0: todo/write: must happen inside an open turn')
    expect(ruleError(() => s.append('request/header', { header, reason: 'initial' })).rule).toBe('S-15')
    expect(ruleError(() => s.append('request/context', { provider: 'p', model: 'm' })).rule).toBe('S-15')
    s.append('turn/start', { turn: 1 })
    s.append('todo/write', { todos: [{ content: 'a', status: 'pending' }] })
    s.append('request/header', { header, reason: 'initial' })
    // Tool-less sessions may omit header.tools (as recorded logs do).
    s.append('request/header', { header: { config: header.config, system: 'sys' } as never, reason: 'change' })
    s.append('request/context', { provider: 'p', model: 'm', contextWindow: 1000 })
    // Inbox splices and user messages may happen outside a turn.
    s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    s.append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [userMessage('queued')] })
    s.append('user/message', userMessage('x'), { surfaceOp: 'append' })
  })

  it('S-3: append refuses an unknown type unless ignorable; an ignorable unknown event is kept and skipped', () => {
    const s = bareSession()
    expect(ruleError(() => s.append('mystery/event', {})).message)
      .toBe('S-3 at seq 0: unknown event type "mystery/event" (not registered and not marked ignorable)')
    const kept = s.append('mystery/event', { turn: 5 }, { ignorable: true })
    expect(kept.ignorable).toBe(true)
    expect(s.position.turn).toBe(0)
    s.append('turn/start', { turn: 1 })
    expect(s.events.map((e) => e.seq)).toEqual([0, 1])
  })

  it('S-1: core data shapes are validated, naming the path (tool/result error, turn/end reason, request/header reason, inbox)', () => {
    const s = openStep()
    s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a', '', [{ id: 'c1' }]) }, { surfaceOp: 'append', sourceEventSeqs: [] })
    s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' })
    expect(ruleError(() => s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'x', true), error: { name: 'E' } } as never, { surfaceOp: 'append', sourceEventSeqs: [3] })).message)
      .toBe('S-2 at seq 4: invalid tool/result (owner session): data.error.code is missing')
    expect(ruleError(() => s.append('turn/end', { turn: 1, reason: { kind: 'aborted', reason: { kind: 'boom' } } } as never)).message)
      .toBe('S-2 at seq 4: invalid turn/end (owner session): data.reason.reason.kind must be one of "user", "parent", "disposed", "legacy", "hook", got the string "boom"')
    expect(ruleError(() => s.append('turn/end', { turn: 1, reason: { kind: 'aborted', reason: { kind: 'hook' } } } as never)).message)
      .toMatch(/data.reason.reason.reason is missing/)
    expect(ruleError(() => s.append('turn/end', { turn: 1, reason: { kind: 'error', error: { message: 'm' } } } as never)).message)
      .toMatch(/data.reason.error.code is missing/)
    expect(ruleError(() => s.append('request/header', { header: { config: { provider: 'p', model: 'm' }, system: '', tools: [] }, reason: 'restart' } as never)).message)
      .toBe('S-2 at seq 4: invalid request/header (owner session): data.reason must be "initial" or "resume" or "change", got the string "restart"')
    expect(ruleError(() => s.append('agent/inbox/spliced', { target: 'next-step', start: 0, inserted: [], outcome: 'cancelled' } as never)).message)
      .toMatch(/data.outcome must be "canceled"/)
    expect(ruleError(() => s.append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0 } } as never)).message)
      .toMatch(/data.chunk.text is missing/)
    expect(ruleError(() => s.append('session/end-seed', { x: 1 } as never)).message).toMatch(/data must be empty, has "x"/)
    expect(ruleError(() => s.append('user/message', { ...userMessage('x'), role: 'assistant' } as never, { surfaceOp: 'append' })).message)
      .toMatch(/data.role must be "user"/)
    expect(s.length).toBe(4)
    for (const reason of [{ kind: 'completed' }, { kind: 'blocked' }, { kind: 'blocked', message: 'no' }, { kind: 'max-tokens' }, { kind: 'interrupted' },
      { kind: 'aborted', reason: { kind: 'user' } }, { kind: 'aborted', reason: { kind: 'hook', reason: 'r' } }, { kind: 'error', error: { message: 'm', code: 'SERVER', status: 500 } }]) {
      expect(ruleError(() => s.append('turn/end', { turn: 1, reason } as never)).rule).toBe('S-15') // shape ok; the step is still open
    }
  })

  it('S-1: the message source axis is open (plugin kinds like goal), but core kinds are checked; images may be attachment references', () => {
    const s = bareSession()
    s.append('user/message', { ...userMessage('g'), source: { kind: 'goal', goalId: 'x' } } as never, { surfaceOp: 'append' })
    const image = { type: 'image', attachment: { attachmentId: 'sha256:ab', mediaType: 'image/png', bytes: 69 } }
    s.append('user/message', { ...userMessage('i'), content: [{ type: 'text', text: 'look' }, image] } as never, { surfaceOp: 'append' })
    s.append('user/message', { ...userMessage('j'), content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] }, { surfaceOp: 'append' })
    expect(ruleError(() => s.append('user/message', { ...userMessage('k'), content: [{ type: 'image', mimeType: 'image/png' }] } as never, { surfaceOp: 'append' })).message)
      .toMatch(/S-2 at seq 3: .*data.content\[0\].data is missing/)
    // A reference must name what AttachedImageBlock promises (adapters print attachmentId).
    expect(ruleError(() => s.append('user/message', { ...userMessage('a'), content: [{ type: 'image', attachment: { mediaType: 'image/png' } }] } as never, { surfaceOp: 'append' })).message)
      .toMatch(/data.content\[0\].attachment.attachmentId is missing/)
    expect(ruleError(() => s.append('user/message', { ...userMessage('t'), source: { kind: 'tool' } } as never, { surfaceOp: 'append' })).message)
      .toMatch(/data.source.callId is missing/)
    // A kind named like an Object.prototype member is just another open kind.
    expect(s.append('user/message', { ...userMessage('t'), source: { kind: 'constructor' } } as never, { surfaceOp: 'append' }).seq).toBe(3)
    expect(ruleError(() => s.append('user/message', { ...userMessage('t'), source: { kind: 7 } } as never, { surfaceOp: 'append' })).message)
      .toMatch(/data.source.kind must be a string/)
  })

  it('runtime plugin types are accepted with loose validators', () => {
    const s = openStep()
    s.append('llm/retry', { attempt: 1 })
    s.append('session/title', { title: 'x' })
    expect(ruleError(() => s.append('compaction/start', 'not an object')).message)
      .toBe('S-2 at seq 4: invalid compaction/start (owner compaction): data must be an object, got the string "not an object"')
  })
})

describe('checkLogInvariants (whole logs)', () => {
  const ev = (seq: number, type: string, data: unknown, extra: object = {}) => ({ type, seq, time: seq, data, ...extra }) as SessionEvent

  it('returns the final position of a valid log', () => {
    expect(checkLogInvariants([ev(0, 'turn/start', { turn: 1 }), ev(1, 'step/start', { turn: 1, step: 1 })]))
      .toEqual({ turn: 1, step: 1, turnOpen: true, stepOpen: true })
  })

  it('throws the first violation with its rule and seq', () => {
    expect(ruleError(() => checkLogInvariants([ev(0, 'turn/start', { turn: 1 }), ev(1, 'turn/end', { turn: 1, reason: { kind: 'completed' } }), ev(2, 'turn/end', { turn: 1, reason: { kind: 'completed' } })])).message)
      .toBe('S-15 at seq 2: turn/end: no turn is open')
    expect(ruleError(() => checkLogInvariants([ev(0, 'turn/start', { turn: 1 }), ev(2, 'turn/start', { turn: 2 })])).message)
      .toBe('S-1 at seq 1: seq 2 is not contiguous (expected 1)')
    expect(ruleError(() => checkLogInvariants([ev(0, 'x/y', {})])).rule).toBe('S-3')
    expect(checkLogInvariants([ev(0, 'x/y', { turn: 9 }, { ignorable: true }), ev(1, 'turn/start', { turn: 1 })]).turn).toBe(1)
  })
})
