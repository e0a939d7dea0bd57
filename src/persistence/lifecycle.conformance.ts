/**
 * The session lifecycle over a real backend (docs/persistence.md, "Session lifecycle"), run by
 * every backend's conformance suite: closing a session makes its queued events durable, then
 * drops its tracking and gives its writer lock back, so a second store instance (or another
 * process) can open it while this one still runs.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { SessionsServicePlugin } from '../session/service.js'
import type { Session } from '../session/api.js'
import type { SessionEvent, SessionHeader } from '../session/types.js'
import { SessionInUseError, StaleRevisionError, type PersistenceBackend } from './api.js'
import { SessionPersistence } from './service.js'
import type { BackendHarness } from './conformance-support.js'
import { spawnWriter } from '../../test-support/writer-lock.js'

/** `backend` with some methods replaced; every other method runs on the real backend itself. */
function overriding(backend: PersistenceBackend, overrides: Partial<PersistenceBackend>): PersistenceBackend {
  return new Proxy(backend, {
    get(target, key) {
      if (Object.hasOwn(overrides, key)) return overrides[key as keyof PersistenceBackend]
      const value = Reflect.get(target, key, target) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** A backend whose appendBatch calls wait for `hold` while it is set, or fail while `fail` > 0. */
function controlled(backend: PersistenceBackend) {
  const control = { hold: undefined as Promise<void> | undefined, fail: 0, started: () => undefined as void }
  const wrapped = overriding(backend, {
    appendBatch: async (header: SessionHeader, events: readonly SessionEvent[]) => {
      control.started()
      if (control.hold !== undefined) await control.hold
      if (control.fail > 0) {
        control.fail--
        throw new Error('disk full')
      }
      return backend.appendBatch(header, events)
    },
  })
  return { backend: wrapped, control }
}

function turn(session: Session, n: number): void {
  session.append('turn/start', { turn: n })
  session.append('turn/end', { turn: n, reason: { kind: 'completed' } })
}

export function describeLifecycleConformance(harness: BackendHarness): void {
  describe(`${harness.name}: session lifecycle (#43)`, () => {
    const dirs: string[] = []
    const cleanups: (() => Promise<unknown>)[] = []
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
      for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
    })
    const store = async () => {
      const dir = await mkdtemp(join(tmpdir(), `dsh-life-${harness.name}-`))
      dirs.push(dir)
      return dir
    }
    const open = (dir: string) => {
      const backend = harness.open(dir)
      cleanups.push(async () => backend.close?.())
      return backend
    }
    const boot = async (backend: PersistenceBackend, report: (error: unknown) => void = () => undefined) => {
      const ctx = new Context()
      await ctx.plugin(SessionsServicePlugin, {})
      // A long window: only flushes and closes write, so the tests see what a close does.
      const fiber = ctx.plugin(SessionPersistence, { backend, maxDelayMs: 60_000, closeBackend: false, report: (_name, error) => report(error) })
      await fiber
      cleanups.push(() => fiber.dispose())
      return ctx
    }

    it('#43.2: close alone makes the queued events durable and gives the writer lock back: a second store instance and another process open the session while the first still runs', async () => {
      const dir = await store()
      const ctx = await boot(open(dir))
      const session = ctx.sessions.create({ id: 'closing', cwd: '/project' })
      // Materialised: this instance holds the lock from here on (a new session takes it at its first write).
      await ctx.sessionPersistence.flush(session)
      turn(session, 1)
      const second = open(dir)
      await expect(second.acquireWriter!('closing')).rejects.toBeInstanceOf(SessionInUseError)
      ctx.sessions.close('closing')
      expect(ctx.sessions.get('closing')).toBeUndefined()
      // Waits on the condition (the lock is free), not on time.
      const lease = await vi.waitFor(() => second.acquireWriter!('closing'), { timeout: 5_000, interval: 20 })
      expect((await second.loadStored('closing'))!.events.map((e) => e.type)).toEqual(['turn/start', 'turn/end'])
      await lease.release()
      const child = spawnWriter(harness.child.kind, harness.child.store(dir), 'closing', 'load')
      cleanups.push(async () => { child.kill(); await child.exit })
      expect(await child.line()).toBe(`held ${child.pid}`)
      expect(ctx.sessionPersistence.writeError('closing')).toBeUndefined()
    })

    it('#43.2 D-2: a close while a write is in flight loses nothing; the lock goes only after the last write landed', async () => {
      const dir = await store()
      const { backend, control } = controlled(open(dir))
      const ctx = await boot(backend)
      const session = ctx.sessions.create({ id: 'inflight', cwd: '/project' })
      await ctx.sessionPersistence.flush(session)
      let release!: () => void
      control.hold = new Promise<void>((resolve) => { release = resolve })
      const started = new Promise<void>((resolve) => { control.started = resolve })
      turn(session, 1)
      const first = ctx.sessionPersistence.flush(session)
      await started
      // Appended while the first batch is being written, then closed.
      turn(session, 2)
      ctx.sessions.close('inflight')
      const second = open(dir)
      await expect(second.acquireWriter!('inflight')).rejects.toBeInstanceOf(SessionInUseError)
      control.hold = undefined
      release()
      // Once the lock is free, everything appended before the close is stored.
      const lease = await vi.waitFor(() => second.acquireWriter!('inflight'), { timeout: 5_000, interval: 20 })
      await first
      await lease.release()
      expect((await second.loadStored('inflight'))!.events.map((e) => e.data)).toEqual([
        { turn: 1 }, { turn: 1, reason: { kind: 'completed' } }, { turn: 2 }, { turn: 2, reason: { kind: 'completed' } },
      ])
    })

    it('#43.2 D-2: a close whose last write fails is reported and keeps the queue and the lock; unload retries it, then gives the lock back', async () => {
      const dir = await store()
      const { backend, control } = controlled(open(dir))
      let reported!: (error: unknown) => void
      const failure = new Promise<unknown>((resolve) => { reported = resolve })
      const ctx = await boot(backend, reported)
      const session = ctx.sessions.create({ id: 'failing', cwd: '/project' })
      await ctx.sessionPersistence.flush(session)
      control.fail = 1
      turn(session, 1)
      ctx.sessions.close('failing')
      expect(String(await failure)).toContain('disk full')
      expect(String(ctx.sessionPersistence.writeError('failing'))).toContain('disk full')
      expect((await ctx.sessionPersistence.inspect('failing')).pendingEvents).toBe(2)
      const second = open(dir)
      await expect(second.acquireWriter!('failing')).rejects.toBeInstanceOf(SessionInUseError)
      await ctx.sessionPersistence.unload('failing')
      await (await second.acquireWriter!('failing')).release()
      expect((await second.loadStored('failing'))!.events.map((e) => e.type)).toEqual(['turn/start', 'turn/end'])
      expect((await ctx.sessionPersistence.inspect('failing')).pendingEvents).toBe(0)
    })

    it('#43.2 C-5: a load right after a close reads the closed session with its last events', async () => {
      const dir = await store()
      const ctx = await boot(open(dir))
      const session = ctx.sessions.create({ id: 'reopen', cwd: '/project' })
      await ctx.sessionPersistence.flush(session)
      turn(session, 1)
      ctx.sessions.close('reopen')
      const { session: loaded, wasLive } = await ctx.sessionPersistence.load('reopen')
      expect(wasLive).toBe(false)
      expect(loaded.events.map((e) => e.type)).toEqual(['turn/start', 'turn/end'])
      turn(loaded, 2)
      await ctx.sessionPersistence.unload('reopen')
      expect((await open(dir).loadStored('reopen'))!.events).toHaveLength(4)
    })

    it('#43.4 D-7: a cold load whose repair cannot commit gives the writer lock back and never announces the session', async () => {
      const dir = await store()
      const raw = open(dir)
      const header: SessionHeader = { type: 'session', version: 0, id: 'stale', createdAt: 1, cwd: '/project', delegationDepth: 0 }
      // An open turn: the cold load must append closers (C-1).
      await raw.create(header, [{ type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } }])
      const failing = overriding(raw, { commitRepair: async () => { throw new StaleRevisionError('stale: someone wrote since the read') } })
      const ctx = await boot(failing)
      const announced: string[] = []
      const closed: string[] = []
      ctx.on('session/created', (session) => { announced.push(session.id) })
      ctx.on('session/closed', (session) => { closed.push(session.id) })
      await expect(ctx.sessionPersistence.load('stale')).rejects.toBeInstanceOf(StaleRevisionError)
      expect(announced).toEqual([])
      expect(closed).toEqual([])
      expect(ctx.sessions.get('stale')).toBeUndefined()
      await (await open(dir).acquireWriter!('stale')).release()
    })
  })
}
