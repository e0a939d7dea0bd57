/**
 * The kernel is Cordis 4 (pinned, contracts K-1..K-7). This module re-exports what dsh uses and
 * adds the one dispatch helper Cordis lacks: a contained emit, where a throwing listener is
 * reported and skipped instead of reaching the emitter (K-3).
 */
import { Context } from 'cordis'

export { Context, Service } from 'cordis'
export type { Events, Plugin, Fiber } from 'cordis'

export type ListenerErrorReporter = (name: string, error: unknown) => void

const defaultReporter: ListenerErrorReporter = (name, error) => {
  process.stderr.write(`dsh: listener of ${name} failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
}

/**
 * Emit `name` to every listener admitted for `ctx`, each in its own try/catch, so one failing
 * observer never undoes the caller's work nor starves later observers. `target` is the `thisArg`
 * carrier (e.g. `scopeTarget(key)`) deciding admission; it defaults to `ctx`. An
 * `internal/dispatch` veto still throws to the caller, before any listener runs.
 */
export function emitContained(ctx: Context, name: string, args: unknown[], report: ListenerErrorReporter = defaultReporter, target: object = ctx): void {
  emitContainedVia(eventsOf(ctx), name, args, report, target)
}

/** `emitContained` through an events service already resolved (`eventsOf`), for hot paths. */
export function emitContainedVia(events: EventDispatch, name: string, args: unknown[], report: ListenerErrorReporter = defaultReporter, target: object): void {
  // `dispatch` resolves admission (scope filters, `internal/dispatch` veto) exactly like emit.
  const callbacks = events.dispatch('emit', [target, name, ...args])
  for (const callback of callbacks) {
    try {
      callback(...args)
    } catch (error) {
      report(name, error)
    }
  }
}

/**
 * Hot paths (a few calls per agent step) and Cordis' tracing proxies. Every `ctx.x` read that is
 * not a plain own property builds an `Error` (for its message, should the read fail) and a
 * tracing proxy; every method call through a traced service builds a shadow context and two more
 * proxies. That is ~10-30 µs per access, hundreds of accesses per step. The helpers below give
 * the objects behind the proxies, for call sites where the caller's context does not matter:
 * dispatching an event (admission depends only on the `thisArg` carrier passed) and calling a
 * service method that does not register anything through `this.ctx`.
 */
const ORIGINAL = Symbol.for('cordis.original')

/** The object behind Cordis' tracing proxy; anything else as it is. */
export function untraced<T>(value: T): T {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return value
  return ((value as Record<symbol, unknown>)[ORIGINAL] as T | undefined) ?? value
}

/** The dispatch methods of Cordis' events service, as called on the service itself. */
export interface EventDispatch {
  emit(...args: unknown[]): void
  parallel(...args: unknown[]): Promise<void>
  serial(...args: unknown[]): Promise<unknown>
  waterfall(...args: unknown[]): any
  dispatch(type: 'emit', args: unknown[]): ((...args: unknown[]) => unknown)[]
  readonly _hooks: Record<string, readonly unknown[] | undefined>
}

/**
 * The events service of `ctx`, untraced (one per root, never replaced). `events.waterfall(...)`
 * admits and orders listeners exactly like `ctx.waterfall(...)`: both resolve them from the
 * arguments (the optional `thisArg` carrier first), never from the calling context.
 */
export function eventsOf(ctx: Context): EventDispatch {
  return untraced(ctx.events) as unknown as EventDispatch
}

/** Bumped on every change of any service of a root (`internal/service`, `internal/set`). */
const serviceEpochs = new WeakMap<object, { value: number }>()

function serviceEpoch(ctx: Context): { value: number } {
  const root = untraced(ctx.root) as object
  let epoch = serviceEpochs.get(root)
  if (epoch === undefined) {
    const state = { value: 0 }
    serviceEpochs.set(root, epoch = state)
    // Root listeners: they live as long as the root, like the cache they invalidate.
    ctx.root.on('internal/service', () => { state.value++ }, { global: true })
    ctx.root.on('internal/set', (_ctx, _name, _value, _error, next) => {
      state.value++
      return next()
    }, { global: true })
  }
  return epoch
}

/**
 * `ctx.get(name)` for hot paths: the service behind the proxy, re-resolved through `ctx.get`
 * only after a service of the root was provided, disposed, replaced, assigned or changed state
 * (Cordis emits `internal/service` for each), so a disposed or replaced service is never used.
 * Call methods on the result only where `this.ctx` being the service's own context is right.
 */
export function serviceLookup<K extends keyof Context & string>(ctx: Context, name: K): () => Context[K] | undefined {
  const epoch = serviceEpoch(ctx)
  let seen = -1
  let value: Context[K] | undefined
  return () => {
    if (seen !== epoch.value) {
      seen = epoch.value
      value = untraced(ctx.get(name) as Context[K] | undefined)
    }
    return value
  }
}
