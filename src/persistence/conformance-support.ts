/**
 * What the shared persistence conformance suites (backend.conformance.ts, service.conformance.ts,
 * lifecycle.conformance.ts) share: the harness a backend provides, a booted sessions context,
 * realistic logs and the canonical form logs are compared in.
 */
import { Context, type Fiber } from 'cordis'
import { SessionsServicePlugin } from '../session/service.js'
import { SESSION_FORMAT_VERSION, type SessionEvent, type SessionHeader } from '../session/types.js'
import type { PersistenceBackend } from './api.js'
import { encodeEvent } from './records.js'
import { SessionPersistence } from './service.js'
import { interruptedTurnClosers } from '../session/repair.js'
import { appendTurn, prng } from './testing/workload.js'

export interface BackendHarness {
  readonly name: string
  /** Opens the store kept in `dir`; a second call on the same dir acts like another process. */
  open(dir: string, durable?: boolean): PersistenceBackend
  /**
   * Paths that must exist with exactly these permission bits after `id` is stored. Absent for a
   * store that keeps nothing in `dir` (a database server): `dir` then only names the store.
   */
  modes?(backend: PersistenceBackend, dir: string, id: string): Promise<readonly { path: string; mode: number }[]>
  /** Makes the stored record holding `seq` unreadable (unparsable). */
  corrupt(backend: PersistenceBackend, id: string, seq: number): Promise<void>
  /** Rewrites the stored header's version. */
  setHeaderVersion(backend: PersistenceBackend, id: string, version: number): Promise<void>
  /** How a separate process opens this store (test-support/writer-lock-child.mjs). */
  readonly child: { readonly kind: string; store(dir: string): string }
  /** The raw file of a store on a sequential medium (JSONL), to cut at every byte offset. */
  readonly bytes?: {
    file(backend: PersistenceBackend, id: string): Promise<string>
  }
}

export const canonical = (events: readonly SessionEvent[]): string[] => events.map(encodeEvent)

export function testHeader(id: string, extra: Partial<SessionHeader> = {}): SessionHeader {
  return { type: 'session', version: SESSION_FORMAT_VERSION, id, createdAt: 1_700_000_000_000, cwd: '/work/project', delegationDepth: 0, ...extra }
}

export async function boot(backend?: PersistenceBackend, maxDelayMs = 1_000_000) {
  const ctx = new Context()
  let clock = 1_700_000_000_000
  await ctx.plugin(SessionsServicePlugin, { now: () => clock++ })
  if (backend) {
    const fiber = ctx.plugin(SessionPersistence, { backend, maxDelayMs, closeBackend: false, report: () => undefined })
    await fiber
    persistenceFibers.set(ctx, fiber)
  }
  return ctx
}

const persistenceFibers = new WeakMap<Context, Fiber>()

/** Unloads a booted context's persistence (flush, then its writer locks are released). */
export async function shutdown(ctx: Context): Promise<void> {
  await persistenceFibers.get(ctx)?.dispose()
}

/** A live session with `turns` realistic turns (plus, optionally, an open partial turn). */
export async function realisticLog(turns: number, seed = 1, openTail = 0, chunks?: () => number, toolRounds?: number): Promise<{ header: SessionHeader; events: SessionEvent[] }> {
  const ctx = await boot()
  const session = ctx.sessions.create({ id: `gen-${seed}`, cwd: '/work/project', createdAt: 1_700_000_000_000 })
  const rng = prng(seed)
  for (let t = 0; t < turns; t++) await appendTurn(session, { rng, chunks, toolRounds })
  if (openTail > 0) await appendTurn(session, { rng, chunks, stopAfter: openTail, toolRounds: 1 })
  return { header: session.header, events: [...session.events] }
}

/** Closers as the session core computes them (C-2..C-4). */
export const repairClosers = (events: readonly SessionEvent[]): SessionEvent[] => interruptedTurnClosers(events)

/** Wraps a backend so a test can await its next successful write (no sleeping). */
export function observeWrites(backend: PersistenceBackend): { backend: PersistenceBackend; nextWrite(): Promise<void> } {
  let waiters: (() => void)[] = []
  const done = <T>(promise: Promise<T>) => promise.then((value) => { for (const w of waiters.splice(0)) w(); return value })
  const wrapped: PersistenceBackend = Object.create(backend)
  wrapped.create = (h, events) => done(backend.create(h, events))
  wrapped.appendBatch = (h, events) => done(backend.appendBatch(h, events))
  return { backend: wrapped, nextWrite: () => new Promise<void>((resolve) => waiters.push(resolve)) }
}
