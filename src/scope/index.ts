/**
 * Scope (P-1..P-4): every live agent owns a scope key; registrations made for a key are visible
 * to that key and its descendants (views inherit downward), and events dispatched for a key reach
 * listeners tagged with that key or an ancestor (admission extends upward).
 */
import { Context } from 'cordis'

/** A scope key is any object, compared by identity (P-1). */
export type ScopeKey = object

const parents = new WeakMap<ScopeKey, ScopeKey>()
/** Bumped whenever any key is (re)linked: a cached view of a scope chain is stale after that. */
let parentsRevision = 0

/** Changes whenever any scope chain may have changed (for caches of views). */
export function scopeRevision(): number {
  return parentsRevision
}

export interface ScopeParentBinding {
  readonly key: ScopeKey
  /** The parent currently linked through this binding. */
  readonly parent: ScopeKey
  /** Re-link `key` under `next` (cycle-checked). Only the holder of the original binding can. */
  rebind(next: ScopeKey): void
}

function assertKey(value: unknown, role: string): asserts value is ScopeKey {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) {
    throw new TypeError(`dsh-scope: ${role} must be an object (scope keys compare by identity), got ${value === null ? 'null' : typeof value}`)
  }
}

function link(key: ScopeKey, parent: ScopeKey): void {
  assertKey(parent, 'parent scope key')
  for (let cursor: ScopeKey | undefined = parent; cursor !== undefined; cursor = parents.get(cursor)) {
    if (cursor === key) {
      throw new Error('dsh-scope: binding this parent would create a cycle (the key is already an ancestor of the parent)')
    }
  }
  parents.set(key, parent)
  parentsRevision++
}

/**
 * Bind `key` under `parent` (P-2). A key can be bound once; re-linking needs the returned handle,
 * so no third party can move someone else's scope.
 */
export function bindScopeParent(key: ScopeKey, parent: ScopeKey): ScopeParentBinding {
  assertKey(key, 'scope key')
  if (parents.has(key)) {
    throw new Error('dsh-scope: scope key is already bound to a parent; re-linking requires the binding returned by the original bind')
  }
  link(key, parent)
  return {
    key,
    get parent() {
      return parents.get(key)!
    },
    rebind(next: ScopeKey) {
      link(key, next)
    },
  }
}

export function scopeParent(key: ScopeKey): ScopeKey | undefined {
  return parents.get(key)
}

/** `key` followed by its ancestors, nearest first; empty for no scope. */
export function scopeChain(key: ScopeKey | undefined): ScopeKey[] {
  const chain: ScopeKey[] = []
  for (let cursor = key; cursor !== undefined; cursor = parents.get(cursor)) chain.push(cursor)
  return chain
}

/** True when `ancestor` is `key` itself or one of its ancestors. */
export function isScopeWithin(key: ScopeKey, ancestor: ScopeKey): boolean {
  for (let cursor: ScopeKey | undefined = key; cursor !== undefined; cursor = parents.get(cursor)) {
    if (cursor === ancestor) return true
  }
  return false
}

/**
 * Registrations layered by scope (P-3): a view from a scope is the global layer plus the layers of
 * the scope's chain; on a name clash the nearest layer wins and keeps the global entry's position.
 */
export class ScopedLayers<T extends { readonly name: string }> {
  private readonly global = new Map<string, T>()
  private readonly layers = new WeakMap<ScopeKey, Map<string, T>>()
  private changes = 0

  /** Changes whenever an entry is added or removed (for caches of views; see `scopeRevision`). */
  get revision(): number {
    return this.changes
  }

  /** @param kind names the entries in error messages ("tool", "section"...). */
  constructor(private readonly kind = 'entry') {}

  /** Adds `entry` to the global layer or to `scope`'s layer; the disposer removes it (idempotent). */
  register(entry: T, scope?: ScopeKey): () => void {
    if (typeof entry?.name !== 'string' || entry.name === '') {
      throw new TypeError(`dsh-scope: a ${this.kind} needs a non-empty string name`)
    }
    let layer: Map<string, T>
    if (scope === undefined) {
      layer = this.global
    } else {
      assertKey(scope, 'scope key')
      layer = this.layers.get(scope) ?? new Map()
      this.layers.set(scope, layer)
    }
    if (layer.has(entry.name)) {
      throw new Error(`dsh-scope: ${this.kind} "${entry.name}" is already registered ${scope === undefined ? 'globally' : 'in this scope'}`)
    }
    layer.set(entry.name, entry)
    this.changes++
    return () => {
      if (layer.get(entry.name) === entry) {
        layer.delete(entry.name)
        this.changes++
      }
    }
  }

  /** Entries visible from `scope`: global order first, then new names from farthest ancestor to nearest. */
  view(scope?: ScopeKey): T[] {
    const merged = new Map(this.global)
    const chain = scopeChain(scope)
    for (let i = chain.length - 1; i >= 0; i--) {
      const layer = this.layers.get(chain[i])
      // Map.set on an existing key keeps its insertion position: that is the shadowing rule.
      if (layer) for (const [name, entry] of layer) merged.set(name, entry)
    }
    return [...merged.values()]
  }

  get(name: string, scope?: ScopeKey): T | undefined {
    for (const key of scopeChain(scope)) {
      const entry = this.layers.get(key)?.get(name)
      if (entry !== undefined) return entry
    }
    return this.global.get(name)
  }
}

/** Where a tagged context keeps its scope key. */
const scopeTag = Symbol.for('dsh.scope')

/**
 * A context tagged with `key`: listeners registered through it are admitted only for events
 * dispatched for `key` or its descendants, and scope-aware services default to `key`.
 * Plugins loaded through it inherit the tag.
 */
export function scopedContext<C extends Context>(ctx: C, key: ScopeKey): C {
  assertKey(key, 'scope key')
  return ctx.extend({ [scopeTag]: key })
}

/** The scope key a context was tagged with, if any. */
export function contextScope(ctx: Context): ScopeKey | undefined {
  return (ctx as unknown as Record<symbol, ScopeKey | undefined>)[scopeTag]
}

export interface ScopeTarget {
  readonly scope: ScopeKey
  [Context.filter](ctx: Context): boolean
}

/**
 * The `thisArg` carrier for dispatching an event for `key` (P-4):
 * `ctx.emit(scopeTarget(key), 'name', ...args)`. Admits untagged listeners and listeners tagged
 * with `key` or an ancestor, never a descendant's; `global: true` listeners bypass the filter.
 */
export function scopeTarget(key: ScopeKey): ScopeTarget {
  assertKey(key, 'scope key')
  return {
    scope: key,
    [Context.filter](ctx: Context) {
      const tag = contextScope(ctx)
      return tag === undefined || isScopeWithin(key, tag)
    },
  }
}
