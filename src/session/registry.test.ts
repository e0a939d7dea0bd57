import { describe, expect, it } from 'vitest'
import { EventTypeRegistry, RUNTIME_EVENT_TYPES, createEventTypeRegistry, registerCoreEventTypes, registerRuntimeEventTypes } from './registry.js'

const CORE = ['agent/inbox/spliced', 'assistant/chunk', 'assistant/message', 'request/context', 'request/header', 'session/end-seed',
  'step/end', 'step/start', 'todo/write', 'tool/call', 'tool/result', 'turn/end', 'turn/start', 'user/message']

describe('event-type registry (S-2)', () => {
  it('S-2: the core registration holds exactly the fourteen SessionEventMap types, each with a validator; its disposer removes them', () => {
    const registry = new EventTypeRegistry()
    const dispose = registerCoreEventTypes(registry)
    expect(registry.types()).toEqual(CORE)
    for (const type of CORE) expect(registry.get(type)?.validate).toBeTypeOf('function')
    dispose()
    expect(registry.types()).toEqual([])
  })

  it('S-2: duplicates are rejected naming the owner; a disposer only removes its own registration', () => {
    const registry = new EventTypeRegistry()
    const dispose = registry.register({ type: 'a/b', owner: 'first' })
    expect(() => registry.register({ type: 'a/b', owner: 'second' })).toThrow('S-2: event type "a/b" is already registered by first')
    dispose()
    const again = registry.register({ type: 'a/b', owner: 'second' })
    dispose() // stale disposer: must not remove the new registration
    expect(registry.get('a/b')?.owner).toBe('second')
    again()
    expect(registry.get('a/b')).toBeUndefined()
    expect(() => registry.register({ type: '' })).toThrow(/non-empty string/)
  })

  it('runtime plugin types are overridable defaults; `only` selects a subset; createEventTypeRegistry can leave them out', () => {
    const registry = new EventTypeRegistry()
    const dispose = registerRuntimeEventTypes(registry, ['session/title'])
    expect(registry.types()).toEqual(['session/title'])
    expect(registry.get('session/title')?.validate?.({ title: 't' })).toBeNull()
    expect(registry.get('session/title')?.validate?.([1])).toBe('data must be an object, got an array')
    const strict = registry.register({ type: 'session/title', owner: 'title', validate: () => 'strict says no' })
    expect(registry.get('session/title')?.validate?.({})).toBe('strict says no')
    strict()
    expect(registry.get('session/title')?.owner).toBe('session-title')
    dispose()
    expect(registry.get('session/title')).toBeUndefined()
    expect(createEventTypeRegistry().types()).toEqual([...CORE, ...RUNTIME_EVENT_TYPES.map((t) => t.type)].sort())
    expect(createEventTypeRegistry({ runtimeEventTypes: false }).types()).toEqual(CORE)
  })
})
