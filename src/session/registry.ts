/**
 * The event-type registry (S-2): the set of known event types is data, not a switch. Core types
 * are registered by the session service itself; plugins add theirs through
 * `ctx.sessions.registerEventType`, which returns a disposer.
 *
 * Runtime-shipped plugin types (`llm/retry`, `compaction/*`, `session/title`, `subagent/descriptor`, `tool/code-dispatch*`) are installed as
 * *defaults*: loose validators that keep logs containing them loadable even when the owner
 * plugin is absent, and that an explicit registration by the owner overrides (restored when
 * the owner's registration is disposed). Explicit registrations of one type never coexist.
 */
import { CORE_VALIDATORS, isPlainObject, looseObject } from './validators.js'
import type { EventDataValidator, EventTypeDefinition } from './types.js'

export const CORE_OWNER = 'session'

/**
 * `session/imported {from: {id, cwd?}}`: the log before it came from another home's export file
 * (`dsh sessions import`, the web's Import); `from` is what that file's header said. Folds of
 * permission knobs (sandbox mode, approval policy, presets, and any later knob) start again
 * after it: nothing a file sets grants rights in the home that imported it (docs/security.md).
 */
export const IMPORTED_EVENT = 'session/imported'

function importedProblem(data: unknown): string | null {
  if (!isPlainObject(data) || Object.keys(data).some(key => key !== 'from')) return 'data must be {from: {id, cwd?}}'
  const from = data.from
  if (!isPlainObject(from) || typeof from.id !== 'string' || from.id === '' || (from.cwd !== undefined && typeof from.cwd !== 'string')
    || Object.keys(from).some(key => key !== 'id' && key !== 'cwd')) return 'from must be {id: string, cwd?: string}'
  return null
}

/**
 * Plugin-owned types the runtime ships (S-1's last seven, the delegation descriptor and the
 * import marker), with their owner plugins; `validate` where the default is stricter than loose.
 */
export const RUNTIME_EVENT_TYPES: readonly { readonly type: string; readonly owner: string; readonly validate?: EventDataValidator }[] = [
  { type: 'llm/retry', owner: 'llm-retry' },
  { type: 'llm/retry-started', owner: 'llm-retry' },
  { type: 'compaction/start', owner: 'compaction' },
  { type: 'compaction/summary', owner: 'compaction' },
  { type: 'compaction/end', owner: 'compaction' },
  { type: 'compaction/prune', owner: 'compaction' },
  { type: 'session/title', owner: 'session-title' },
  { type: 'session/title-llm-request', owner: 'session-title' },
  { type: 'session/archived', owner: 'web-api' },
  { type: 'subagent/descriptor', owner: 'subagents' },
  { type: 'tool/code-dispatch-start', owner: 'code-mode' },
  { type: 'tool/code-dispatch', owner: 'code-mode' },
  { type: IMPORTED_EVENT, owner: 'persistence', validate: importedProblem },
]

export class EventTypeRegistry {
  private readonly explicit = new Map<string, EventTypeDefinition>()
  private readonly defaults = new Map<string, EventTypeDefinition>()

  /** Registers `definition`; throws when the type is already registered explicitly. */
  register(definition: EventTypeDefinition): () => void {
    const { type } = definition
    if (typeof type !== 'string' || type.length === 0) throw new TypeError('S-2: an event type needs a non-empty string name')
    const existing = this.explicit.get(type)
    if (existing) {
      throw new Error(`S-2: event type ${JSON.stringify(type)} is already registered${existing.owner ? ` by ${existing.owner}` : ''}`)
    }
    const entry = Object.freeze({ ...definition })
    this.explicit.set(type, entry)
    return () => {
      if (this.explicit.get(type) === entry) this.explicit.delete(type)
    }
  }

  /** A fallback definition, used while no explicit registration of the type exists. */
  registerDefault(definition: EventTypeDefinition): () => void {
    const entry = Object.freeze({ ...definition })
    if (this.defaults.has(definition.type)) throw new Error(`S-2: a default for ${JSON.stringify(definition.type)} already exists`)
    this.defaults.set(definition.type, entry)
    return () => {
      if (this.defaults.get(definition.type) === entry) this.defaults.delete(definition.type)
    }
  }

  get(type: string): EventTypeDefinition | undefined {
    return this.explicit.get(type) ?? this.defaults.get(type)
  }

  types(): string[] {
    return [...new Set([...this.explicit.keys(), ...this.defaults.keys()])].sort()
  }
}

/** Registers the fourteen core types of `SessionEventMap` with their data validators. */
export function registerCoreEventTypes(registry: EventTypeRegistry): () => void {
  const disposers = Object.entries(CORE_VALIDATORS).map(([type, validate]) =>
    registry.register({ type, validate, owner: CORE_OWNER }))
  return () => disposers.reverse().forEach((dispose) => dispose())
}

/**
 * Installs the runtime's plugin-owned types (or the subset named in `only`) as overridable
 * defaults with loose validators (data must be an object). Owner plugins that want a strict
 * validator register their own definition; it takes precedence while it exists.
 */
export function registerRuntimeEventTypes(registry: EventTypeRegistry, only?: readonly string[]): () => void {
  const disposers = RUNTIME_EVENT_TYPES
    .filter(({ type }) => !only || only.includes(type))
    .map(({ type, owner, validate }) => registry.registerDefault({ type, validate: validate ?? looseObject, owner }))
  return () => disposers.reverse().forEach((dispose) => dispose())
}

/** A registry holding the core types and the runtime defaults. */
export function createEventTypeRegistry(options: { runtimeEventTypes?: boolean } = {}): EventTypeRegistry {
  const registry = new EventTypeRegistry()
  registerCoreEventTypes(registry)
  if (options.runtimeEventTypes ?? true) registerRuntimeEventTypes(registry)
  return registry
}
