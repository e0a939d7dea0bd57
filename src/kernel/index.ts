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
  // `dispatch` resolves admission (scope filters, `internal/dispatch` veto) exactly like emit.
  const callbacks = (ctx.events as unknown as { dispatch(type: string, args: unknown[]): ((...a: unknown[]) => unknown)[] })
    .dispatch('emit', [target, name, ...args])
  for (const callback of callbacks) {
    try {
      callback(...args)
    } catch (error) {
      report(name, error)
    }
  }
}
