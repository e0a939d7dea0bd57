import { describe, expect, it } from 'vitest'
import { encodeHeader } from '../session/codec.js'
import { SessionLogChecker } from './session-logs.js'
import { CONFORMANCE_VOCABULARY, shapeValidator } from './vocabulary.js'

const header = encodeHeader({ type: 'session', version: 0, id: 'v-1', createdAt: 1, delegationDepth: 0 })
const log = (...lines: object[]) => [header, ...lines.map((l) => JSON.stringify(l))].join('\n') + '\n'

describe('conformance vocabulary', () => {
  it('S-2: registered extra types load and their data is checked', async () => {
    const checker = await SessionLogChecker.create()
    try {
      expect(() => checker.check(log({ type: 'approval/policy', data: { policy: 'never', source: 'delegation' } }))).not.toThrow()
      expect(() => checker.check(log({ type: 'approval/policy', data: { source: 'delegation' } })))
        .toThrow('hydrate (line 2): S-2 at seq 0: invalid approval/policy (owner approval): data.policy is missing')
    } finally {
      checker.dispose()
    }
  })

  it('S-3: an unregistered type is still refused unless ignorable', async () => {
    const checker = await SessionLogChecker.create()
    try {
      expect(() => checker.check(log({ type: 'mystery/event', data: {} }))).toThrow(/hydrate \(line 2\): S-3 at seq 0: unknown event type "mystery\/event"/)
      expect(() => checker.check(log({ type: 'mystery/event', data: {}, ignorable: true }))).not.toThrow()
    } finally {
      checker.dispose()
    }
  })

  it('shape validators: required, optional and kinds', () => {
    const check = shapeValidator({ a: 'string', 'b?': 'number', c: 'array' })
    expect(check({ a: 'x', c: [] })).toBeNull()
    expect(check({ a: 'x', b: 'no', c: [] })).toBe('data.b must be a number')
    expect(check({ a: 'x', c: {} })).toBe('data.c must be an array')
    expect(check([])).toBe('data must be an object')
    expect(Object.keys(CONFORMANCE_VOCABULARY)).toContain('subagent/descriptor')
  })
})
