import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  LogLineReader, readHeader, SessionFileError, decodeLine, encodeHeader, encodeLine, encodeSessionFile, parseSessionFile,
} from './codec.js'
import { SESSION_FORMAT_VERSION, type SessionEvent, type SessionHeader } from './types.js'

const header: SessionHeader = { type: 'session', version: 0, id: 's-1', createdAt: 1_700_000_000_000, cwd: '/w', delegationDepth: 0 }

function log(): SessionEvent[] {
  const drafts: [string, unknown, Record<string, unknown>?][] = [
    ['turn/start', { turn: 1 }],
    ['step/start', { turn: 1, step: 1 }],
    ['user/message', { id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }, { surfaceOp: 'append' }],
    ['assistant/chunk', { turn: 1, step: 1, chunk: { type: 'block-start', index: 0, blockType: 'text' } }],
    ['assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'he' } }],
    ['assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'll' } }],
    ['assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'o' } }],
    ['assistant/chunk', { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } }],
    ['step/end', { turn: 1, step: 1 }],
    ['turn/end', { turn: 1, reason: { kind: 'completed' } }],
  ]
  return drafts.map(([type, data, extra], seq) => ({ type, seq, time: 1_700_000_000_100 + seq * 3 - (seq === 5 ? 10 : 0), data, ...extra }) as SessionEvent)
}

const lineOf = (text: string, n: number): string => text.split('\n')[n - 1]

function errorOf(fn: () => unknown): SessionFileError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(SessionFileError)
    return error as SessionFileError
  }
  throw new Error('expected a SessionFileError')
}

describe('session file codec', () => {
  it('round-trips the persisted form, packed and unpacked', () => {
    const events = log()
    for (const packed of [true, false]) {
      const text = encodeSessionFile(header, events, { packed })
      expect(text.endsWith('\n')).toBe(true)
      expect(text.split('\n')).toHaveLength(packed ? 10 : 12)
      const parsed = parseSessionFile(text)
      expect(parsed.projected).toBe(false)
      expect(parsed.header).toEqual(header)
      expect(parsed.events).toEqual(events)
    }
    expect(lineOf(encodeSessionFile(header, events), 6)).toBe(
      '{"type":"text-chunks","seq0":4,"time0":1700000000112,"data":{"turn":1,"step":1,"index":0,"dt":[-7,13],"texts":["he","ll","o"]}}')
  })

  it('R-6: round-trips the projected form and detects it', () => {
    const events = log()
    const text = encodeSessionFile(header, events, { projected: true })
    expect(text).not.toMatch(/"seq|"time/)
    const parsed = parseSessionFile(text)
    expect(parsed.projected).toBe(true)
    expect(parsed.events.map((e) => e.seq)).toEqual(events.map((e) => e.seq))
    expect(parsed.events.map((e) => e.time)).toEqual([0, 0, 0, 0, 0, -7, 6, 0, 0, 0])
    expect(encodeSessionFile(parsed.header, parsed.events, { projected: true })).toBe(text)
    const unpacked = encodeSessionFile(header, events, { projected: true, packed: false })
    expect(parseSessionFile(unpacked).events.map((e) => e.type)).toEqual(events.map((e) => e.type))
  })

  it('a header-only file parses, in the form asked for', () => {
    const text = encodeHeader(header) + '\n'
    expect(parseSessionFile(text)).toMatchObject({ events: [], lines: [], projected: false })
    expect(parseSessionFile(text, { projected: true }).projected).toBe(true)
    expect(parseSessionFile(encodeHeader(header))).toMatchObject({ events: [] })
  })

  it('S-13: writes the header keys in a fixed order, delegationDepth always', () => {
    const { delegationDepth: _d, ...rest } = header
    expect(encodeHeader({ ...rest, agentPreset: 'p', origin: 'subagent', parentSession: 'p-1' } as SessionHeader))
      .toBe('{"type":"session","version":0,"id":"s-1","createdAt":1700000000000,"cwd":"/w","parentSession":"p-1","origin":"subagent","delegationDepth":0,"agentPreset":"p"}')
    // A header written without delegationDepth reads as depth 0.
    expect(readHeader({ type: 'session', version: 0, id: 'x', createdAt: 1 }).delegationDepth).toBe(0)
  })

  describe('errors name the line and what was wrong', () => {
    const good = encodeSessionFile(header, log(), { packed: false })
    const replaceLine = (n: number, text: string): string => good.split('\n').map((l, i) => (i === n - 1 ? text : l)).join('\n')

    it('unparsable JSON', () => {
      const error = errorOf(() => parseSessionFile(replaceLine(4, '{"type":"user/message",')))
      expect(error.line).toBe(4)
      expect(error.message).toMatch(/^line 4: unparsable JSON/)
    })

    it('missing header', () => {
      const body = good.split('\n').slice(1).join('\n')
      expect(errorOf(() => parseSessionFile(body)).message).toBe('line 1: missing session header: expected {"type":"session",...}, found a "turn/start" line')
      expect(errorOf(() => parseSessionFile('')).message).toMatch(/line 1: empty file/)
      expect(errorOf(() => parseSessionFile('[1,2]\n')).message).toMatch(/line 1: missing session header.*found \[1,2\]/)
    })

    it('wrong seq', () => {
      const events = log()
      const text = encodeSessionFile(header, [...events.slice(0, 3), ...events.slice(4)], { packed: false })
      expect(errorOf(() => parseSessionFile(text)).message).toBe('line 5: wrong seq: assistant/chunk event has seq 4, expected 3')
      const rowFirst = encodeSessionFile(header, [...events.slice(0, 4), ...events.slice(4).map((e) => ({ ...e, seq: e.seq + 1 }))])
      expect(errorOf(() => parseSessionFile(rowFirst)).message).toBe('line 6: wrong seq: text-chunks row starts at seq0 5, expected 4')
    })

    it('unknown top-level envelope key', () => {
      const error = errorOf(() => parseSessionFile(replaceLine(3, '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"meta":{}}')))
      expect(error.message).toMatch(/^line 3: unknown top-level key "meta" on a turn\/start event/)
    })

    it('S-1: time must be a safe integer; seq and time go together; ignorable only true; data required', () => {
      expect(errorOf(() => decodeLine('{"type":"a","seq":0,"time":1.5,"data":{}}', 7)).message).toMatch(/^line 7: a event: time must be a safe integer/)
      expect(errorOf(() => decodeLine('{"type":"a","seq":0,"data":{}}')).message).toBe('a event has seq without time')
      expect(errorOf(() => decodeLine('{"type":"a","seq":0,"time":0,"data":{},"ignorable":false}')).message).toMatch(/ignorable may only be true/)
      expect(errorOf(() => decodeLine('{"type":"a","seq":0,"time":0}')).message).toBe('a event has no "data"')
      expect(errorOf(() => decodeLine('{"seq":0,"time":0,"data":{}}')).message).toMatch(/missing or non-string "type"/)
      expect(errorOf(() => decodeLine('{"type":"session","version":0}', 9)).message).toMatch(/^line 9: a second session header/)
    })

    it('S-13: a different version is refused naming the direction, before the shape is looked at', () => {
      const newer = errorOf(() => parseSessionFile('{"type":"session","version":3}\n'))
      expect(newer.message).toMatch(new RegExp(`^line 1: S-13: session format version 3 is newer than this runtime supports \\(${SESSION_FORMAT_VERSION}\\)`))
      expect(errorOf(() => parseSessionFile('{"type":"session","version":-1,"bogus":true}\n')).message).toMatch(/version -1 is older/)
      expect(errorOf(() => parseSessionFile('{"type":"session","id":"x","createdAt":1}\n')).message).toBe('line 1: session header has no version')
      expect(errorOf(() => parseSessionFile('{"type":"session","version":"0"}\n')).message).toMatch(/version must be a number/)
    })

    it('S-13: header shape', () => {
      expect(errorOf(() => readHeader({ type: 'session', version: 0, createdAt: 1 })).message).toMatch(/line 1: S-13: header id must be a non-empty string/)
      expect(errorOf(() => readHeader({ type: 'session', version: 0, id: 'x', createdAt: '1' })).message).toMatch(/header createdAt must be a safe integer/)
      expect(errorOf(() => readHeader({ type: 'session', version: 0, id: 'x', createdAt: 1, delegationDepth: -1 })).message).toMatch(/header delegationDepth must be a non-negative integer/)
      expect(errorOf(() => readHeader({ type: 'session', version: 0, id: 'x', createdAt: 1, colour: 'red' })).message).toMatch(/unknown header key "colour"/)
    })

    it('blank lines and a change of form mid-file', () => {
      expect(errorOf(() => parseSessionFile(replaceLine(3, ''))).message).toBe('line 3: blank line')
      const mixed = replaceLine(4, '{"type":"step/start","data":{"turn":1,"step":1}}')
      expect(errorOf(() => parseSessionFile(mixed)).message).toBe('line 4: step/start line has no seq/time in a persisted log')
      const projected = encodeSessionFile(header, log(), { projected: true }).split('\n')
      projected[2] = '{"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":1}}'
      expect(errorOf(() => parseSessionFile(projected.join('\n'))).message).toBe('line 3: step/start line carries seq/time in a projected log (no other line does)')
      expect(errorOf(() => parseSessionFile(good, { projected: true })).message).toMatch(/^line 2: turn\/start line carries seq\/time/)
    })

    it('a malformed row', () => {
      const text = encodeSessionFile(header, log()).replace('"dt":[-7,13]', '"dt":[-7]')
      expect(errorOf(() => parseSessionFile(text)).message).toBe('line 6: text-chunks row: data.dt must hold 2 safe-integer gaps (one fewer than texts)')
      expect(errorOf(() => decodeLine('{"type":"text-chunks","seq0":0,"data":{}}', 2)).message).toMatch(/^line 2: text-chunks row: time0 must be a safe integer/)
      expect(errorOf(() => decodeLine('{"type":"reasoning-chunks","data":{},"x":1}')).message).toMatch(/unknown key "x"/)
    })
  })

  it('LogLineReader continues from a seq (backends reading a tail)', () => {
    const events = log()
    const reader = new LogLineReader({ startSeq: 3 })
    const lines = encodeSessionFile(header, events.slice(3)).split('\n').slice(1, -1)
    const read = lines.flatMap((line, i) => reader.read(line, i + 2).events)
    expect(read).toEqual(events.slice(3))
    expect(reader.nextSeq).toBe(events.length)
    expect(reader.projected).toBe(false)
    expect(encodeLine(events[0])).toBe(JSON.stringify(events[0]))
  })

  it('R-5/R-6: file round trips hold on random logs (persisted: same events; projected: same text)', () => {
    const chunk = fc.oneof(
      fc.record({ type: fc.constantFrom('text-delta', 'reasoning-delta'), index: fc.nat(2), text: fc.string({ maxLength: 3 }) }),
      fc.record({ type: fc.constant('tool-call-delta'), index: fc.nat(2), id: fc.constantFrom('a', 'b'), argumentsDelta: fc.string({ maxLength: 3 }) }),
      fc.record({ type: fc.constant('tool-call-delta'), index: fc.nat(2), id: fc.constantFrom('a', 'b'), name: fc.constantFrom('bash', 'read'), argumentsDelta: fc.string({ maxLength: 3 }) }),
      fc.record({ type: fc.constant('block-start'), index: fc.nat(2), blockType: fc.constant('text') }),
    )
    const draft = fc.oneof(
      { weight: 8, arbitrary: fc.record({ type: fc.constant('assistant/chunk'), data: fc.record({ turn: fc.constant(1), step: fc.nat({ max: 1 }), chunk }) }) },
      { weight: 1, arbitrary: fc.record({ type: fc.constant('x/odd'), data: fc.jsonValue({ maxDepth: 2 }), ignorable: fc.constant(true as const) }) },
    )
    const events = fc.record({
      drafts: fc.array(fc.tuple(draft, fc.integer({ min: 1, max: 4 })), { maxLength: 30 }),
      gaps: fc.array(fc.integer({ min: -100, max: 100 }), { maxLength: 120 }),
    }).map(({ drafts, gaps }) => {
      let time = 1_700_000_000_000
      return drafts.flatMap(([d, n]) => Array.from({ length: n }, () => d)).map((d, seq) => {
        time += gaps[seq] ?? 0
        const { type, ...rest } = d
        return { type, seq, time, ...rest } as SessionEvent
      })
    })
    fc.assert(fc.property(events, fc.boolean(), (log, packed) => {
      const persisted = parseSessionFile(encodeSessionFile(header, log, { packed }))
      expect(persisted.events.map((e) => JSON.stringify(e))).toEqual(log.map((e) => JSON.stringify(e)))
      const projectedText = encodeSessionFile(header, log, { packed, projected: true })
      const projected = parseSessionFile(projectedText)
      expect(projected.events.map((e) => e.seq)).toEqual(log.map((e) => e.seq))
      expect(encodeSessionFile(projected.header, projected.events, { packed, projected: true })).toBe(projectedText)
    }), { numRuns: 200 })
  })
})
