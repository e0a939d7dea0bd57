import { describe, expect, it } from 'vitest'
import { SnapshotError, adoptJson, isDeepFrozen, snapshotJson } from './snapshot.js'
import { SessionLog, createEventTypeRegistry, type SessionRuleError } from './index.js'

const reject = (value: unknown, walk: (value: unknown) => unknown = snapshotJson): string => {
  try {
    walk(value)
  } catch (error) {
    expect(error).toBeInstanceOf(SnapshotError)
    return (error as Error).message
  }
  throw new Error('expected a rejection')
}

describe('adoptJson (S-5, frozen in place for a tree handed over whole)', () => {
  it('S-5: freezes the very tree it is given, deep', () => {
    const input = JSON.parse('{"a":[1,"x",{"b":null,"c":true}],"d":{"e":-1.5},"__proto__":{"p":1}}')
    const out = adoptJson(input)
    expect(out).toBe(input)
    expect(isDeepFrozen(out)).toBe(true)
    expect(Object.keys(out as object)).toEqual(['a', 'd', '__proto__'])
  })

  it('S-5: refuses exactly what snapshotJson refuses, with the same path and message', () => {
    const cyclic: Record<string, unknown> = { a: {} }
    ;(cyclic.a as Record<string, unknown>).back = cyclic
    const cases: unknown[] = [
      { message: { content: [{ text: undefined }] } }, { n: 10n }, { f: () => 1 }, { z: JSON.parse('-0') }, { x: [NaN] },
      // eslint-disable-next-line no-sparse-arrays
      { list: [1, , 3] }, { when: new Date(0) }, { [Symbol('k')]: 1 }, cyclic,
    ]
    for (const value of cases) expect(reject(value, adoptJson)).toBe(reject(value))
  })
})

describe('snapshotJson (S-5)', () => {
  it('S-5: copies plain JSON and deep-freezes the copy', () => {
    const input = { a: [1, 'x', { b: null, c: true }], d: { e: -1.5 } }
    const out = snapshotJson(input)
    expect(out).toEqual(input)
    expect(out).not.toBe(input)
    expect(isDeepFrozen(out)).toBe(true)
    input.a.push(2)
    expect((out as { a: unknown[] }).a).toHaveLength(3)
  })

  it('S-5: rejects each non-JSON value and names its path', () => {
    expect(reject({ message: { content: [{ text: undefined }] } })).toBe('data.message.content[0].text is undefined (omit the key instead)')
    expect(reject({ n: 10n })).toBe('data.n is a BigInt')
    expect(reject({ f: () => 1 })).toBe('data.f is a function')
    expect(reject({ s: Symbol('x') })).toBe('data.s is a symbol')
    expect(reject({ z: -0 })).toBe('data.z is -0, which JSON cannot represent')
    expect(reject({ x: [NaN] })).toBe('data.x[0] is NaN, which JSON cannot represent')
    expect(reject({ x: Infinity })).toBe('data.x is Infinity, which JSON cannot represent')
    expect(reject({ list: [1, undefined] })).toBe('data.list[1] is undefined (omit the key instead)')
    // eslint-disable-next-line no-sparse-arrays
    expect(reject({ list: [1, , 3] })).toBe('data.list[1] is a hole (undefined)')
    expect(reject({ when: new Date(0) })).toBe('data.when is a class instance (Date), not a plain object')
    expect(reject({ m: new Map() })).toBe('data.m is a class instance (Map), not a plain object')
    expect(reject({ [Symbol('k')]: 1 })).toBe('data has symbol keys')
    expect(reject({ 'odd key': { v: undefined } })).toBe('data["odd key"].v is undefined (omit the key instead)')
  })

  it('S-5: rejects cycles but accepts shared (acyclic) references', () => {
    const cyclic: Record<string, unknown> = { a: {} }
    ;(cyclic.a as Record<string, unknown>).back = cyclic
    expect(reject(cyclic)).toBe('data.a.back is a cycle back to an enclosing value')
    const shared = { v: 1 }
    expect(snapshotJson({ x: shared, y: [shared] })).toEqual({ x: { v: 1 }, y: [{ v: 1 }] })
  })

  it('accepts null-prototype objects and keeps an own "__proto__" key as data', () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}}')
    const out = snapshotJson(parsed) as Record<string, unknown>
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype)
    expect(Object.keys(out)).toEqual(['__proto__'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(snapshotJson(Object.assign(Object.create(null), { a: 1 }))).toEqual({ a: 1 })
  })

  it('S-5: append rejects non-JSON data with the rule, the seq and the path, and leaves the log untouched', () => {
    const session = new SessionLog({ type: 'session', version: 0, id: 's', createdAt: 0, delegationDepth: 0 }, { registry: createEventTypeRegistry() })
    session.append('turn/start', { turn: 1 })
    let error: SessionRuleError | undefined
    try {
      session.append('todo/write', { todos: [{ content: 'x', status: 'pending', due: new Date(0) }] } as never)
    } catch (e) { error = e as SessionRuleError }
    expect(error?.rule).toBe('S-5')
    expect(error?.seq).toBe(1)
    expect(error?.message).toBe('S-5 at seq 1: todo/write: data.todos[0].due is a class instance (Date), not a plain object')
    expect(session.length).toBe(1)
  })

  it('S-5: the appended data is a frozen copy, so later mutation by the caller cannot change history', () => {
    const session = new SessionLog({ type: 'session', version: 0, id: 's', createdAt: 0, delegationDepth: 0 }, { registry: createEventTypeRegistry() })
    const data = { turn: 1 }
    const event = session.append('turn/start', data)
    data.turn = 7
    expect(event.data).toEqual({ turn: 1 })
    expect(Object.isFrozen(event)).toBe(true)
    expect(() => { (event.data as { turn: number }).turn = 3 }).toThrow(TypeError)
  })
})
