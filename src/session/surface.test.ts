import { describe, expect, it } from 'vitest'
import { deriveEventMessage, type SessionEvent } from './index.js'
import { assistantMessage, toolResultMessage, userMessage } from './testing/fixtures.js'
import { bareSession, ruleError } from './testing/helpers.js'

/** turn 1 / step 1: user message, assistant with one call, tool/call, tool/result. Seqs 0..5 */
function withToolStep() {
  const s = bareSession()
  s.append('turn/start', { turn: 1 })
  s.append('step/start', { turn: 1, step: 1 })
  s.append('user/message', userMessage('go'), { surfaceOp: 'append' }) // 2
  s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a1', 'ok', [{ id: 'c1' }]) }, { surfaceOp: 'append', sourceEventSeqs: [] }) // 3
  s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'bash', arguments: '{}' }) // 4
  s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'long output') }, { surfaceOp: 'append', sourceEventSeqs: [4] }) // 5
  return s
}

const snapshotState = (s: ReturnType<typeof bareSession>) => ({
  length: s.length, surface: s.surface(), generation: s.replaceGeneration, position: s.position, messages: s.deriveMessages(),
})

describe('surface ops (S-6..S-10)', () => {
  it('S-6: surfaceOp is required on user/message, assistant/message and tool/result', () => {
    const s = bareSession()
    expect(ruleError(() => s.append('user/message', userMessage('x')))).toEqual({
      rule: 'S-6', seq: 0, message: 'S-6 at seq 0: user/message requires a surfaceOp',
    })
  })

  it('S-6: surfaceOp and sourceEventSeqs are forbidden on other types', () => {
    const s = bareSession()
    expect(ruleError(() => s.append('turn/start', { turn: 1 }, { surfaceOp: 'append' })).message).toBe('S-6 at seq 0: surfaceOp is forbidden on turn/start')
    expect(ruleError(() => s.append('turn/start', { turn: 1 }, { sourceEventSeqs: [] })).message).toBe('S-6 at seq 0: sourceEventSeqs is forbidden on turn/start')
    expect(s.length).toBe(0)
  })

  it("S-6: surfaceOp must be 'append' or exactly {op:'replace', start, end}", () => {
    const s = withToolStep()
    for (const bad of ['prepend', { op: 'replace', start: 2 }, { op: 'replace', start: 2, end: 2, extra: 1 }, { op: 'splice', start: 2, end: 2 }, { op: 'replace', start: -1, end: 2 }]) {
      const e = ruleError(() => s.append('user/message', userMessage('x'), { surfaceOp: bad as never, sourceEventSeqs: [2] }))
      expect(e.rule).toBe('S-6')
      expect(e.seq).toBe(6)
      expect(e.message).toMatch(/surfaceOp must be 'append' or exactly \{op:'replace', start, end\}/)
    }
  })

  it('S-7: sourceEventSeqs must be unique, non-negative, below the own seq, and non-empty except on assistant/message', () => {
    const s = withToolStep()
    const append = (sources: number[]) => () => s.append('user/message', userMessage('x'), { surfaceOp: 'append', sourceEventSeqs: sources })
    expect(ruleError(append([1, 1])).message).toBe('S-7 at seq 6: sourceEventSeqs entry 1 is repeated')
    expect(ruleError(append([-1])).message).toBe('S-7 at seq 6: sourceEventSeqs entry -1 is not a non-negative integer')
    expect(ruleError(append([6])).message).toBe("S-7 at seq 6: sourceEventSeqs entry 6 is not below the event's own seq")
    expect(ruleError(append([])).message).toBe('S-7 at seq 6: sourceEventSeqs may be empty only on assistant/message, not on user/message')
    expect(s.length).toBe(6)
    // Empty is legal on assistant/message (a known-empty provider stream).
    s.append('step/end', { turn: 1, step: 1 })
    s.append('step/start', { turn: 1, step: 2 })
    s.append('assistant/message', { turn: 1, step: 2, message: assistantMessage('a2', '') }, { surfaceOp: 'append', sourceEventSeqs: [] })
  })

  it('S-8: replace start and end must be on the current surface, start not after end', () => {
    const s = withToolStep()
    const replace = (start: number, end: number, sources: number[]) => () =>
      s.append('user/message', userMessage('summary'), { surfaceOp: { op: 'replace', start, end }, sourceEventSeqs: sources })
    expect(ruleError(replace(1, 3, [1, 2, 3])).message).toBe('S-8 at seq 6: replace start 1 is not on the current surface')
    expect(ruleError(replace(2, 4, [2, 3, 4])).message).toBe('S-8 at seq 6: replace end 4 is not on the current surface')
    expect(ruleError(replace(5, 2, [2, 3, 5])).message).toBe('S-8 at seq 6: replace start 5 comes after end 2 in surface order')
  })

  it('S-8: every shadowed node must be cited in sourceEventSeqs (extra trace seqs allowed)', () => {
    const s = withToolStep()
    expect(ruleError(() => s.append('user/message', userMessage('summary'), { surfaceOp: { op: 'replace', start: 2, end: 5 }, sourceEventSeqs: [2, 5] })).message)
      .toBe('S-8 at seq 6: shadowed node 3 is missing from sourceEventSeqs')
    s.append('user/message', userMessage('summary'), { surfaceOp: { op: 'replace', start: 2, end: 5 }, sourceEventSeqs: [0, 2, 3, 5] })
    expect(s.surface()).toEqual([6])
    expect(s.replaceGeneration).toBe(1)
    // Shadowed events stay in the log forever.
    expect(s.events[3].type).toBe('assistant/message')
    // start === end replaces a single node.
    s.append('user/message', userMessage('summary 2'), { surfaceOp: { op: 'replace', start: 6, end: 6 }, sourceEventSeqs: [6] })
    expect(s.surface()).toEqual([7])
    expect(s.deriveMessages()).toEqual([userMessage('summary 2')])
  })

  it('S-8: a replace in the middle keeps order: the new event takes the range\'s place', () => {
    const s = withToolStep()
    s.append('user/message', userMessage('mid'), { surfaceOp: { op: 'replace', start: 3, end: 3 }, sourceEventSeqs: [3] })
    expect(s.surface()).toEqual([2, 6, 5])
    s.append('user/message', userMessage('tail'), { surfaceOp: 'append' })
    expect(s.surface()).toEqual([2, 6, 5, 7])
    // Index of the tail after the replace is correct (the next replace sees 5 before 7).
    s.append('user/message', userMessage('tail2'), { surfaceOp: { op: 'replace', start: 5, end: 7 }, sourceEventSeqs: [5, 7] })
    expect(s.surface()).toEqual([2, 6, 8])
  })

  it('S-9: a replacing tool/result may change only the result content', () => {
    const s = withToolStep()
    const compacted = toolResultMessage('c1', '[output pruned]')
    s.append('tool/result', { turn: 1, step: 1, message: compacted }, { surfaceOp: { op: 'replace', start: 5, end: 5 }, sourceEventSeqs: [5] })
    expect(s.surface()).toEqual([2, 3, 6])
    expect(s.deriveMessages().at(-1)).toEqual(compacted)
  })

  it('S-9: a replacing tool/result that changes anything else is refused, naming the field', () => {
    const s = withToolStep()
    const replaceWith = (data: unknown, start = 5, end = 5, sources = [5]) => () =>
      s.append('tool/result', data as never, { surfaceOp: { op: 'replace', start, end }, sourceEventSeqs: sources })
    expect(ruleError(replaceWith({ turn: 1, step: 1, message: toolResultMessage('c1', 'x', true) })).message)
      .toBe('S-9 at seq 6: a replacing tool/result may change only the result content; data.message.content[0].isError differs from seq 5')
    expect(ruleError(replaceWith({ turn: 1, step: 1, message: toolResultMessage('c1', 'x', false, 'other-id') })).message)
      .toBe('S-9 at seq 6: a replacing tool/result may change only the result content; data.message.id differs from seq 5')
    expect(ruleError(replaceWith({ turn: 1, step: 1, message: toolResultMessage('c1', 'x'), meta: { a: 1 } })).message)
      .toBe('S-9 at seq 6: a replacing tool/result may change only the result content; data.meta differs from seq 5')
    expect(ruleError(replaceWith({ turn: 1, step: 1, message: toolResultMessage('c1', 'x'), error: { name: 'E', code: 'E' } })).message)
      .toMatch(/data.error differs from seq 5/)
    expect(ruleError(replaceWith({ turn: 1, step: 1, message: toolResultMessage('c1', 'x') }, 3, 5, [3, 5])).message)
      .toBe('S-9 at seq 6: a replacing tool/result must shadow exactly one node, not 2')
    expect(ruleError(replaceWith({ turn: 1, step: 1, message: toolResultMessage('c1', 'x') }, 3, 3, [3])).message)
      .toBe('S-9 at seq 6: a replacing tool/result must shadow a tool/result, not the assistant/message at seq 3')
  })

  it('S-10: a rejected candidate leaves the log, surface, generation, position and derive cache unchanged', () => {
    const s = withToolStep()
    const before = snapshotState(s)
    const rebuilds = s.derivation.rebuilds
    ruleError(() => s.append('tool/result', { turn: 1, step: 1, message: toolResultMessage('c1', 'x', true) }, { surfaceOp: { op: 'replace', start: 5, end: 5 }, sourceEventSeqs: [5] }))
    ruleError(() => s.append('user/message', userMessage('s'), { surfaceOp: { op: 'replace', start: 2, end: 5 }, sourceEventSeqs: [2] }))
    ruleError(() => s.append('step/start', { turn: 1, step: 2 }))
    expect(snapshotState(s)).toEqual(before)
    expect(s.derivation.rebuilds).toBe(rebuilds)
    // The next valid event still gets the next seq.
    expect(s.append('step/end', { turn: 1, step: 1 }).seq).toBe(6)
  })
})

describe('derive (S-11, S-12)', () => {
  it('S-11: deriveEventMessage maps user/message, non-empty assistant/message and tool/result; nothing else', () => {
    const ev = (type: string, data: unknown) => ({ type, seq: 0, time: 0, data }) as SessionEvent
    const user = userMessage('u')
    const assistant = assistantMessage('a', 'text')
    const result = toolResultMessage('c', 'out')
    expect(deriveEventMessage(ev('user/message', user))).toBe(user)
    expect(deriveEventMessage(ev('assistant/message', { turn: 1, step: 1, message: assistant }))).toBe(assistant)
    expect(deriveEventMessage(ev('assistant/message', { turn: 1, step: 1, message: assistantMessage('e', '') }))).toBeNull()
    expect(deriveEventMessage(ev('tool/result', { turn: 1, step: 1, message: result }))).toBe(result)
    for (const type of ['assistant/chunk', 'tool/call', 'turn/start', 'agent/inbox/spliced', 'compaction/summary']) {
      expect(deriveEventMessage(ev(type, {}))).toBeNull()
    }
  })

  it('S-11: appends fold only the new nodes; a replace triggers one rebuild; each call returns a fresh array', () => {
    const s = withToolStep()
    const first = s.deriveMessages()
    expect(first.map((m) => m.id)).toEqual(['u-go', 'a1', 'r-c1'])
    expect(s.derivation).toEqual({ rebuilds: 0, folded: 3 })
    const second = s.deriveMessages()
    expect(second).toEqual(first)
    expect(second).not.toBe(first)
    second.push(userMessage('caller mutation'))
    expect(s.deriveMessages()).toHaveLength(3)
    expect(s.derivation).toEqual({ rebuilds: 0, folded: 3 })
    s.append('step/end', { turn: 1, step: 1 })
    s.append('step/start', { turn: 1, step: 2 })
    s.append('assistant/message', { turn: 1, step: 2, message: assistantMessage('a2', 'done') }, { surfaceOp: 'append', sourceEventSeqs: [] })
    expect(s.deriveMessages().map((m) => m.id)).toEqual(['u-go', 'a1', 'r-c1', 'a2'])
    expect(s.derivation).toEqual({ rebuilds: 0, folded: 4 })
    s.append('user/message', userMessage('summary'), { surfaceOp: { op: 'replace', start: 2, end: 5 }, sourceEventSeqs: [2, 3, 5] })
    expect(s.deriveMessages().map((m) => m.id)).toEqual(['u-summary', 'a2'])
    expect(s.derivation).toEqual({ rebuilds: 1, folded: 6 })
    s.deriveMessages()
    expect(s.derivation).toEqual({ rebuilds: 1, folded: 6 })
  })

  it('S-11: an empty assistant/message stays on the surface but yields no message', () => {
    const s = bareSession()
    s.append('turn/start', { turn: 1 })
    s.append('step/start', { turn: 1, step: 1 })
    s.append('assistant/message', { turn: 1, step: 1, message: assistantMessage('a', ''), usage: { outputTokens: 0 } }, { surfaceOp: 'append', sourceEventSeqs: [] })
    expect(s.surface()).toEqual([2])
    expect(s.deriveMessages()).toEqual([])
  })

  it('S-12: a tool/result must hold exactly one tool-result block whose id matches its tool source', () => {
    const s = withToolStep()
    s.append('step/end', { turn: 1, step: 1 })
    s.append('step/start', { turn: 1, step: 2 })
    s.append('assistant/message', { turn: 1, step: 2, message: assistantMessage('a2', '', [{ id: 'c2' }]) }, { surfaceOp: 'append', sourceEventSeqs: [] })
    s.append('tool/call', { turn: 1, step: 2, callId: 'c2', name: 'bash', arguments: '{}' })
    const two = { ...toolResultMessage('c2', 'x'), content: [toolResultMessage('c2', 'x').content[0], { type: 'text', text: 'y' }] }
    expect(ruleError(() => s.append('tool/result', { turn: 1, step: 2, message: two } as never, { surfaceOp: 'append', sourceEventSeqs: [9] })).message)
      .toBe('S-2 at seq 10: invalid tool/result (owner session): data.message.content must hold exactly one tool-result block (S-12)')
    const mismatched = { ...toolResultMessage('c2', 'x'), source: { kind: 'tool', callId: 'other' } }
    expect(ruleError(() => s.append('tool/result', { turn: 1, step: 2, message: mismatched } as never, { surfaceOp: 'append', sourceEventSeqs: [9] })).message)
      .toMatch(/S-2 at seq 10: .*data.message.source.callId "other" differs from the block's toolCallId "c2"/)
  })
})
