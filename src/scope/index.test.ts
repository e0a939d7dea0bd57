import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { emitContained } from '../kernel/index.js'
import {
  bindScopeParent,
  contextScope,
  isScopeWithin,
  scopeChain,
  scopedContext,
  scopeParent,
  scopeTarget,
  ScopedLayers,
} from './index.js'

declare module 'cordis' {
  interface Events {
    /** @mode emit. Test-only event for scope admission. */
    'scope-test/ping'(label: string): void
    /** @mode serial. Test-only event for scope admission. */
    'scope-test/ask'(): string | undefined
  }
}

interface Entry {
  readonly name: string
  readonly value: string
}

describe('P-1 scope keys', () => {
  it('P-1: keys compare by identity, so equal-looking keys are distinct scopes', () => {
    const layers = new ScopedLayers<Entry>()
    const a = { id: 'x' }
    const b = { id: 'x' }
    layers.register({ name: 'tool', value: 'a' }, a)
    expect(layers.get('tool', a)?.value).toBe('a')
    expect(layers.get('tool', b)).toBeUndefined()
    expect(layers.view(b)).toEqual([])
  })

  it('P-1: a non-object key is refused with a clear error', () => {
    expect(() => bindScopeParent('agent' as unknown as object, {})).toThrow(/scope key must be an object/)
    expect(() => bindScopeParent({}, null as unknown as object)).toThrow(/parent scope key must be an object.*null/)
    expect(() => new ScopedLayers<Entry>().register({ name: 'n', value: '' }, 3 as unknown as object)).toThrow(/must be an object/)
    expect(() => scopeTarget(undefined as unknown as object)).toThrow(/must be an object/)
  })

  it('P-1: registrations made for a scope vanish with their disposer', () => {
    const layers = new ScopedLayers<Entry>()
    const agent = {}
    const dispose = layers.register({ name: 'tool', value: 'agent' }, agent)
    dispose()
    dispose()
    expect(layers.get('tool', agent)).toBeUndefined()
    // The name is free again after disposal.
    layers.register({ name: 'tool', value: 'again' }, agent)
    expect(layers.get('tool', agent)?.value).toBe('again')
  })

  it('P-1: a stale disposer does not remove a later entry of the same name', () => {
    const layers = new ScopedLayers<Entry>()
    const first = layers.register({ name: 'tool', value: 'first' })
    first()
    layers.register({ name: 'tool', value: 'second' })
    first()
    expect(layers.get('tool')?.value).toBe('second')
  })

  it('P-1: a duplicate name in the same layer is refused, naming the entry', () => {
    const layers = new ScopedLayers<Entry>('tool')
    const agent = {}
    layers.register({ name: 'read', value: 'g' })
    expect(() => layers.register({ name: 'read', value: 'g2' })).toThrow('tool "read" is already registered globally')
    layers.register({ name: 'read', value: 'a' }, agent)
    expect(() => layers.register({ name: 'read', value: 'a2' }, agent)).toThrow('tool "read" is already registered in this scope')
    expect(() => layers.register({ name: '', value: '' })).toThrow(/non-empty string name/)
  })
})

describe('P-2 parent binding', () => {
  it('P-2: a key binds once; scopeParent and scopeChain follow the binding', () => {
    const root = {}
    const mid = {}
    const leaf = {}
    bindScopeParent(mid, root)
    const binding = bindScopeParent(leaf, mid)
    expect(binding.key).toBe(leaf)
    expect(binding.parent).toBe(mid)
    expect(scopeParent(leaf)).toBe(mid)
    expect(scopeParent(root)).toBeUndefined()
    expect(scopeChain(leaf)).toEqual([leaf, mid, root])
    expect(scopeChain(leaf)[0]).toBe(leaf)
    expect(scopeChain(undefined)).toEqual([])
    expect(isScopeWithin(leaf, root)).toBe(true)
    expect(isScopeWithin(root, leaf)).toBe(false)
    expect(() => bindScopeParent(leaf, root)).toThrow(/already bound to a parent; re-linking requires the binding/)
    expect(scopeParent(leaf)).toBe(mid)
  })

  it('P-2: re-linking goes through the handle returned by the bind', () => {
    const a = {}
    const b = {}
    const child = {}
    const binding = bindScopeParent(child, a)
    binding.rebind(b)
    expect(scopeParent(child)).toBe(b)
    expect(binding.parent).toBe(b)
    expect(scopeChain(child)).toEqual([child, b])
  })

  it('P-2: cycles are rejected at bind and at rebind, leaving the old link in place', () => {
    const a = {}
    const b = {}
    const c = {}
    expect(() => bindScopeParent(a, a)).toThrow(/cycle/)
    expect(scopeParent(a)).toBeUndefined()
    bindScopeParent(b, a)
    const cBinding = bindScopeParent(c, b)
    expect(() => bindScopeParent(a, c)).toThrow(/cycle/)
    expect(scopeParent(a)).toBeUndefined()
    const aBinding = bindScopeParent(a, {})
    expect(() => aBinding.rebind(c)).toThrow(/cycle/)
    expect(() => cBinding.rebind(c)).toThrow(/cycle/)
    expect(scopeParent(c)).toBe(b)
  })
})

describe('P-3 registration views inherit downward', () => {
  it('P-3: a scope sees global entries plus its chain; the global view sees only global', () => {
    const layers = new ScopedLayers<Entry>()
    const parent = {}
    const child = {}
    bindScopeParent(child, parent)
    layers.register({ name: 'g', value: 'global' })
    layers.register({ name: 'p', value: 'parent' }, parent)
    layers.register({ name: 'c', value: 'child' }, child)
    expect(layers.view().map((e) => e.name)).toEqual(['g'])
    expect(layers.view(parent).map((e) => e.name)).toEqual(['g', 'p'])
    expect(layers.view(child).map((e) => e.name)).toEqual(['g', 'p', 'c'])
    expect(layers.get('p', child)?.value).toBe('parent')
    expect(layers.get('c', parent)).toBeUndefined()
    expect(layers.get('c')).toBeUndefined()
  })

  it('P-3: the nearest layer wins a name clash and keeps the global entry position', () => {
    const layers = new ScopedLayers<Entry>()
    const parent = {}
    const child = {}
    bindScopeParent(child, parent)
    layers.register({ name: 'a', value: 'global-a' })
    layers.register({ name: 'persona', value: 'global' })
    layers.register({ name: 'z', value: 'global-z' })
    layers.register({ name: 'persona', value: 'parent' }, parent)
    const disposeChild = layers.register({ name: 'persona', value: 'child' }, child)
    expect(layers.view(child).map((e) => `${e.name}=${e.value}`)).toEqual(['a=global-a', 'persona=child', 'z=global-z'])
    expect(layers.view(parent).map((e) => `${e.name}=${e.value}`)).toEqual(['a=global-a', 'persona=parent', 'z=global-z'])
    expect(layers.get('persona', child)?.value).toBe('child')
    disposeChild()
    expect(layers.get('persona', child)?.value).toBe('parent')
    expect(layers.view().find((e) => e.name === 'persona')?.value).toBe('global')
  })

  it('P-3: views follow a rebind', () => {
    const layers = new ScopedLayers<Entry>()
    const a = {}
    const b = {}
    const child = {}
    layers.register({ name: 'x', value: 'a' }, a)
    layers.register({ name: 'x', value: 'b' }, b)
    const binding = bindScopeParent(child, a)
    expect(layers.get('x', child)?.value).toBe('a')
    binding.rebind(b)
    expect(layers.get('x', child)?.value).toBe('b')
  })
})

describe('P-4 event admission extends upward (through Cordis dispatch)', () => {
  function setup() {
    const root = new Context()
    const parent = {}
    const child = {}
    const sibling = {}
    bindScopeParent(child, parent)
    bindScopeParent(sibling, parent)
    const seen: string[] = []
    root.on('scope-test/ping', (label) => void seen.push(`untagged:${label}`))
    scopedContext(root, parent).on('scope-test/ping', (label) => void seen.push(`parent:${label}`))
    scopedContext(root, child).on('scope-test/ping', (label) => void seen.push(`child:${label}`))
    scopedContext(root, sibling).on('scope-test/ping', (label) => void seen.push(`sibling:${label}`))
    return { root, parent, child, sibling, seen }
  }

  it('P-4: an ancestor-tagged listener receives events for a descendant; untagged receive everything', () => {
    const { root, child, seen } = setup()
    root.emit(scopeTarget(child), 'scope-test/ping', 'c')
    expect(seen).toEqual(['untagged:c', 'parent:c', 'child:c'])
  })

  it('P-4: never the reverse: a descendant-tagged listener misses events for its ancestor', () => {
    const { root, parent, seen } = setup()
    root.emit(scopeTarget(parent), 'scope-test/ping', 'p')
    expect(seen).toEqual(['untagged:p', 'parent:p'])
  })

  it('P-4: an event for an unrelated scope reaches only untagged listeners', () => {
    const { root, seen } = setup()
    root.emit(scopeTarget({}), 'scope-test/ping', 'x')
    expect(seen).toEqual(['untagged:x'])
  })

  it('P-4: a dispatch without a carrier is not filtered at all', () => {
    const { root, seen } = setup()
    root.emit('scope-test/ping', 'bare')
    expect(seen).toHaveLength(4)
  })

  it('P-4: global listeners receive every scoped dispatch', () => {
    const { root, parent, seen } = setup()
    const other = {}
    scopedContext(root, other).on('scope-test/ping', (label) => void seen.push(`global:${label}`), { global: true })
    root.emit(scopeTarget(parent), 'scope-test/ping', 'p')
    expect(seen).toContain('global:p')
  })

  it('P-4: plugins loaded through a tagged context inherit the tag', async () => {
    const root = new Context()
    const agent = {}
    const seen: string[] = []
    const agentCtx = scopedContext(root, agent)
    expect(contextScope(agentCtx)).toBe(agent)
    expect(contextScope(root)).toBeUndefined()
    await agentCtx.plugin((ctx: Context) => {
      expect(contextScope(ctx)).toBe(agent)
      ctx.on('scope-test/ping', (label) => void seen.push(label))
    })
    root.emit(scopeTarget({}), 'scope-test/ping', 'other')
    root.emit(scopeTarget(agent), 'scope-test/ping', 'mine')
    expect(seen).toEqual(['mine'])
  })

  it('P-4: a contained emit with a scope carrier admits the same listeners', () => {
    const { root, child, seen } = setup()
    emitContained(root, 'scope-test/ping', ['contained'], () => {}, scopeTarget(child))
    expect(seen).toEqual(['untagged:contained', 'parent:contained', 'child:contained'])
  })

  it('P-4: admission applies to serial dispatch too', async () => {
    const root = new Context()
    const parent = {}
    const child = {}
    bindScopeParent(child, parent)
    scopedContext(root, child).on('scope-test/ask', () => 'child')
    scopedContext(root, parent).on('scope-test/ask', () => 'parent')
    expect(await root.serial(scopeTarget(parent), 'scope-test/ask')).toBe('parent')
    expect(await root.serial(scopeTarget(child), 'scope-test/ask')).toBe('child')
  })
})
