/**
 * The in-memory `Session`: an append-only log plus the folds every append updates in O(1)
 * (position, surface, derived messages). The pipeline (S-5): snapshot + freeze the data, build
 * the envelope, validate everything (envelope, type registry, S-15, surface) without touching
 * state, dispatch the `session/append` veto, push, then notify `session/event` listeners each in
 * its own try/catch.
 */
import type { Context } from 'cordis'
import type { ListenerErrorReporter } from '../kernel/index.js'
import type { Message } from '../llm/types.js'
import type { LogPosition, Session } from './api.js'
import { LogFolder, checkEnvelope, checkEventType } from './invariants.js'
import type { EventTypeRegistry } from './registry.js'
import { PackedRun, eventAt, eventList, type EventSlot } from './packed-run.js'
import { SnapshotError, adoptJson, adoptParsedJson, snapshotJson } from './snapshot.js'
import { SurfaceManager, deriveEventMessage, type SurfacePlan } from './surface.js'
import { SessionRuleError, type AppendOptions, type SessionEvent, type SessionHeader } from './types.js'
import { CORE_VALIDATORS } from './validators.js'

declare module 'cordis' {
  interface Events {
    /**
     * @mode emit (NOT contained). The append veto (S-5): dispatched after validation and before
     * the push. A throw from any listener, or from an `internal/dispatch` listener (K-5), rejects
     * the append and leaves the log untouched. Listeners must not append (that throws). Not
     * dispatched for hydrated or forked-seed events, which are already committed facts.
     */
    'session/append'(session: Session, event: SessionEvent): void
  }
}

export interface SessionDeps {
  readonly registry: EventTypeRegistry
  /** Where `session/append` and `session/event` are dispatched; none means no veto, no observers. */
  readonly ctx?: Context
  readonly now?: () => number
  readonly report?: ListenerErrorReporter
}

/**
 * How `admit` takes an event's values: copied (false), frozen in place (true: a tree handed
 * over, checked as a copy would be), or frozen in place straight from `JSON.parse` ('parsed':
 * only -0 can be wrong there).
 */
export type Adopt = boolean | 'parsed'

interface Checked { readonly known: boolean; readonly plan: SurfacePlan | null }

/** The slice of Cordis' events service used here (resolved once: each `ctx.x` access goes through proxies). */
interface Dispatcher {
  readonly _hooks: Record<string, readonly unknown[] | undefined>
  emit(thisArg: Context, name: string, ...args: unknown[]): void
  dispatch(type: 'emit', args: unknown[]): ((...args: unknown[]) => unknown)[]
}

export class SessionLog implements Session {
  readonly id: string
  /** One slot per seq: the event, or the packed run it is a member of (admitted from a stored row). */
  private readonly log: EventSlot[] = []
  /** What `events` returns: the log itself, or a view materialising runs once one is admitted. */
  private view: readonly SessionEvent[] = this.log as SessionEvent[]
  private readonly folder = new LogFolder()
  private readonly surfaceManager = new SurfaceManager()
  private readonly now: () => number
  /** Set while the veto or the observers run: appending then is re-entrant. */
  private busy: 'vetoing' | 'notifying' | null = null
  private isLive = true
  private cache: Message[] = []
  private cacheGeneration = 0
  private foldedNodes = 0
  /** Diagnostics for tests and benchmarks: full rebuilds and nodes folded by deriveMessages(). */
  readonly derivation = { rebuilds: 0, folded: 0 }
  private readonly dispatcher: Dispatcher | undefined
  /** Cordis' listener table (stable for the service's lifetime), to skip dispatches nobody hears. */
  private readonly hooks: Dispatcher['_hooks']
  private readonly report: ListenerErrorReporter
  /** `listeners()`'s last resolution and the registrations it was made from. */
  private resolved: { readonly hooks: readonly unknown[]; readonly entries: readonly unknown[]; readonly callbacks: ((...args: unknown[]) => unknown)[] } | undefined
  /** The event at a seq (made once: `check` runs for every event). */
  private readonly eventAtSeq = (seq: number): SessionEvent => eventAt(this.log[seq], seq)

  constructor(readonly header: SessionHeader, private readonly deps: SessionDeps) {
    this.id = header.id
    this.now = deps.now ?? Date.now
    this.dispatcher = deps.ctx?.events as unknown as Dispatcher | undefined
    this.hooks = this.dispatcher?._hooks ?? {}
    this.report = deps.report ?? reportToStderr
  }

  get events(): readonly SessionEvent[] {
    return this.view
  }

  get length(): number {
    return this.log.length
  }

  get position(): LogPosition {
    return this.folder.position
  }

  get replaceGeneration(): number {
    return this.surfaceManager.replaceGeneration
  }

  get live(): boolean {
    return this.isLive
  }

  append(type: string, data: unknown, options: AppendOptions = {}): SessionEvent {
    const seq = this.log.length
    if (!this.isLive) throw new Error(`session ${this.id} is not live; cannot append ${type}`)
    if (this.busy) throw new SessionRuleError('S-5', seq, `re-entrant append of ${type} while session ${this.id} is ${this.busy}`)
    const event = this.envelope(type, seq, options.time ?? this.now(), data, options)
    const checked = this.check(event)
    this.veto(event)
    this.commit(event, checked)
    this.notify(event)
    return event
  }

  /**
   * Admits an already-committed event (hydrate, fork seed): the same checks as append, without
   * the veto and without observers. The stored object is a frozen copy, or with `adopt` (the
   * caller hands over a tree nobody else holds, e.g. freshly parsed JSON) its data frozen in place.
   */
  admit(raw: unknown, adopt: Adopt = false): SessionEvent {
    const seq = this.log.length
    if (this.busy) throw new SessionRuleError('S-5', seq, `re-entrant admit while session ${this.id} is ${this.busy}`)
    checkEnvelope(raw, seq)
    // A parsed envelope already in the order `envelope` builds is frozen as it is, not copied.
    const event = adopt === 'parsed' && canonicalOrder(raw) ? this.adoptEnvelope(raw) : this.envelope(raw.type, raw.seq, raw.time, raw.data, raw, adopt)
    // The envelope was checked on `raw`; the rebuilt one holds the same values.
    this.commit(event, this.check(event, false))
    return event
  }

  /**
   * Admits a stored run of deltas (hydrate) without building its member events: the checks an
   * admit of each member would make, made once (the members differ only in seq, time and
   * payload string, which the row's shape check already covered). Any doubt (another
   * validator for `assistant/chunk`, a run from the wrong seq) admits the members one by one,
   * so a refusal reads exactly as it would for the unpacked events.
   */
  admitRun(run: PackedRun): void {
    const seq = this.log.length
    if (this.busy) throw new SessionRuleError('S-5', seq, `re-entrant admit while session ${this.id} is ${this.busy}`)
    if (run.seq0 !== seq || this.deps.registry.get('assistant/chunk')?.validate !== CORE_VALIDATORS['assistant/chunk']) {
      for (const member of run.members()) this.admit(member, 'parsed')
      return
    }
    const first = run.first()
    const checked = this.check(first)
    if (!checked.known || checked.plan !== null) throw new Error('unreachable: a delta is a known, non-surface event')
    this.folder.apply(first)
    for (let k = run.length; k > 0; k--) this.log.push(run)
    if (this.view === this.log) this.view = eventList(this.log)
  }

  surface(): readonly number[] {
    return this.surfaceManager.snapshot()
  }

  /** S-11: folds only surface nodes added since the last call; rebuilds after a replace. */
  deriveMessages(): Message[] {
    const surface = this.surfaceManager
    if (surface.replaceGeneration !== this.cacheGeneration) {
      this.cache = []
      this.foldedNodes = 0
      this.cacheGeneration = surface.replaceGeneration
      this.derivation.rebuilds++
    }
    for (; this.foldedNodes < surface.length; this.foldedNodes++) {
      const seq = surface.seqAt(this.foldedNodes)
      const message = deriveEventMessage(eventAt(this.log[seq], seq))
      if (message) this.cache.push(message)
      this.derivation.folded++
    }
    return this.cache.slice()
  }

  /** Called by the service on close/dispose: later appends throw. */
  markClosed(): void {
    this.isLive = false
  }

  private envelope(type: string, seq: number, time: number, data: unknown, options: AppendOptions, adopt: Adopt = false): SessionEvent {
    let frozenData: unknown
    let surfaceOp: unknown
    let sources: unknown
    const freeze = adopt === 'parsed' ? adoptParsedJson : adopt ? adoptJson : snapshotJson
    try {
      frozenData = freeze(data, 'data')
      if (options.surfaceOp !== undefined) surfaceOp = freeze(options.surfaceOp, 'surfaceOp')
      if (options.sourceEventSeqs !== undefined) sources = freeze(options.sourceEventSeqs, 'sourceEventSeqs')
    } catch (error) {
      if (error instanceof SnapshotError) throw new SessionRuleError('S-5', seq, `${type}: ${error.message}`)
      throw error
    }
    const event: Record<string, unknown> = { type, seq, time, data: frozenData }
    if (options.ignorable !== undefined) event.ignorable = options.ignorable
    if (sources !== undefined) event.sourceEventSeqs = sources
    if (surfaceOp !== undefined) event.surfaceOp = surfaceOp
    return Object.freeze(event) as unknown as SessionEvent
  }

  /** `envelope(..., 'parsed')` for an envelope whose keys are already in its order: frozen in place. */
  private adoptEnvelope(raw: SessionEvent): SessionEvent {
    const writable = raw as { -readonly [K in keyof SessionEvent]: SessionEvent[K] }
    try {
      writable.data = adoptParsedJson(raw.data, 'data')
      if (raw.surfaceOp !== undefined) writable.surfaceOp = adoptParsedJson(raw.surfaceOp, 'surfaceOp') as SessionEvent['surfaceOp']
      if (raw.sourceEventSeqs !== undefined) writable.sourceEventSeqs = adoptParsedJson(raw.sourceEventSeqs, 'sourceEventSeqs') as SessionEvent['sourceEventSeqs']
    } catch (error) {
      if (error instanceof SnapshotError) throw new SessionRuleError('S-5', raw.seq, `${raw.type}: ${error.message}`)
      throw error
    }
    return Object.freeze(raw)
  }

  /** Every rule, no mutation (S-10). */
  private check(event: SessionEvent, envelope = true): Checked {
    if (envelope) checkEnvelope(event, this.log.length)
    const known = checkEventType(this.deps.registry, event)
    if (!known) return { known, plan: null }
    this.folder.check(event)
    return { known, plan: this.surfaceManager.validate(event, this.eventAtSeq) }
  }

  private veto(event: SessionEvent): void {
    const ctx = this.deps.ctx
    if (!ctx || !this.dispatcher || !this.heard('session/append')) return
    this.busy = 'vetoing'
    try {
      this.dispatcher.emit(ctx, 'session/append', this, event)
    } finally {
      this.busy = null
    }
  }

  private commit(event: SessionEvent, { known, plan }: Checked): void {
    this.log.push(event)
    if (known) this.folder.apply(event)
    if (plan) this.surfaceManager.commit(plan)
  }

  private heard(name: string): boolean {
    return !!(this.hooks[name]?.length || this.hooks['internal/dispatch']?.length)
  }

  /**
   * The admitted `session/event` listeners, bound, as `dispatch` resolves them. Resolving filters
   * every listener through Cordis' context proxies (~10 µs per event), and a step appends a dozen
   * events, so the result is kept while the listener list holds the same registrations (a
   * registration or disposal changes it). With an `internal/dispatch` listener every dispatch is
   * resolved afresh, so it sees each one.
   */
  private listeners(ctx: Context, dispatcher: Dispatcher, event: SessionEvent): ((...args: unknown[]) => unknown)[] {
    const hooks = this.hooks['session/event']
    if (this.hooks['internal/dispatch']?.length || hooks === undefined) return dispatcher.dispatch('emit', [ctx, 'session/event', this, event])
    const kept = this.resolved
    if (kept !== undefined && kept.hooks === hooks && sameEntries(kept.entries, hooks)) return kept.callbacks
    const callbacks = dispatcher.dispatch('emit', [ctx, 'session/event', this, event])
    this.resolved = { hooks, entries: hooks.slice(), callbacks }
    return callbacks
  }

  /** A contained emit (same semantics as the kernel's `emitContained`, through the cached service). */
  private notify(event: SessionEvent): void {
    const ctx = this.deps.ctx
    if (!ctx || !this.dispatcher || !this.heard('session/event')) return
    this.busy = 'notifying'
    try {
      // Admission (scope filters, `internal/dispatch`) is resolved exactly like emit.
      for (const callback of this.listeners(ctx, this.dispatcher, event)) {
        try {
          callback(this, event)
        } catch (error) {
          this.report('session/event', error)
        }
      }
    } catch (error) {
      // Only an `internal/dispatch` listener can throw here; the event is committed regardless.
      this.report('session/event', error)
    } finally {
      this.busy = null
    }
  }
}

function sameEntries(kept: readonly unknown[], now: readonly unknown[]): boolean {
  if (kept.length !== now.length) return false
  for (let i = 0; i < kept.length; i++) if (kept[i] !== now[i]) return false
  return true
}

/** The key order `SessionLog.envelope` builds: type, seq, time, data, then those present of ignorable, sourceEventSeqs, surfaceOp. */
const ENVELOPE_ORDER = ['type', 'seq', 'time', 'data', 'ignorable', 'sourceEventSeqs', 'surfaceOp']

/** Whether a checked envelope is a plain, unfrozen object whose keys come in `ENVELOPE_ORDER`. */
function canonicalOrder(event: SessionEvent): boolean {
  if (Object.isFrozen(event) || Object.getPrototypeOf(event) !== Object.prototype) return false
  let next = 0
  for (const key in event) {
    while (next < ENVELOPE_ORDER.length && ENVELOPE_ORDER[next] !== key) next++
    if (next === ENVELOPE_ORDER.length) return false
    next++
  }
  return next >= 4
}

const reportToStderr: ListenerErrorReporter = (name, error) => {
  process.stderr.write(`dsh: dispatch of ${name} failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
}
