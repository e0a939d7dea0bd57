/**
 * The service half of the backend conformance suite: `ctx.sessionPersistence` over a backend
 * (write-behind, cold load and repair, list/fork/delete), run by backend.conformance.ts for each
 * backend with its store helpers.
 */
import { describe, expect, it } from 'vitest'
import type { PersistenceBackend } from './api.js'
import { checkLogInvariants } from '../session/invariants.js'
import { createEventTypeRegistry } from '../session/registry.js'
import { PackedRun, slotsOf } from '../session/packed-run.js'
import { isDeepFrozen } from '../session/snapshot.js'
import { appendTurn, prng } from './testing/workload.js'
import { boot, canonical, observeWrites, realisticLog, shutdown, testHeader as header } from './conformance-support.js'

export interface StoreHelpers {
  /** A backend on a new, empty store. */
  fresh(): Promise<PersistenceBackend>
  /** A backend on the store in `dir` (another instance when one is open already). */
  open(dir: string, durable?: boolean): PersistenceBackend
}

export function describeServiceConformance({ fresh, open }: StoreHelpers): void {
  describe('through ctx.sessionPersistence', () => {
    it('D-2: events are written behind in one batch after the window, or at once by flush()', async () => {
      const backend = await fresh()
      const ctx = await boot(backend)
      const session = ctx.sessions.create({ id: 'wb', cwd: '/p' })
      await appendTurn(session, { rng: prng(1) })
      expect(await backend.loadStored('wb')).toBeUndefined()
      await ctx.sessionPersistence.flush(session)
      expect(canonical((await backend.loadStored('wb'))!.events)).toEqual(canonical(session.events))
      await appendTurn(session, { rng: prng(2) })
      await ctx.parallel('session/flush', session)
      expect(canonical((await backend.loadStored('wb'))!.events)).toEqual(canonical(session.events))
    })

    it('D-2: the window timer writes without a flush', async () => {
      const observed = observeWrites(await fresh())
      const ctx = await boot(observed.backend, 5)
      const written = observed.nextWrite()
      const session = ctx.sessions.create({ id: 'timer' })
      session.append('turn/start', { turn: 1 })
      session.append('step/start', { turn: 1, step: 1 })
      await written
      expect((await observed.backend.loadStored('timer'))?.events.length).toBe(2)
    })

    it('C-1..C-3: a cold load closes an interrupted turn, commits the closers, and the session takes a new turn', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(1, 23, 60)
      await backend.create(h, events)
      const ctx = await boot(backend)
      const inspected = await ctx.sessionPersistence.inspect(h.id)
      expect(inspected).toMatchObject({ live: false, pendingEvents: 0, stored: { length: events.length } })
      expect(inspected.stored!.pendingClosers).toBeGreaterThan(0)
      const { session, repaired, wasLive } = await ctx.sessionPersistence.load(h.id)
      expect(repaired).toHaveLength(inspected.stored!.pendingClosers)
      expect(await ctx.sessionPersistence.inspect(h.id)).toMatchObject({ live: true, stored: { length: session.length, pendingClosers: 0 } })
      expect(wasLive).toBe(false)
      expect(repaired.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'interrupted' } } })
      expect(canonical((await backend.loadStored(h.id))!.events)).toEqual(canonical(session.events))
      await appendTurn(session, { rng: prng(3) })
      await ctx.sessionPersistence.flush(session)
      const stored = (await backend.loadStored(h.id))!
      expect(canonical(stored.events)).toEqual(canonical(session.events))
      expect(checkLogInvariants(stored.events, createEventTypeRegistry()).turnOpen).toBe(false)
      // C-4: a second cold load (after the first writer is gone) finds nothing to repair.
      const revision = await backend.readStoredRevision(h.id)
      await shutdown(ctx)
      const second = await boot(backend)
      const again = await second.sessionPersistence.load(h.id)
      expect(again.repaired).toEqual([])
      expect(canonical(again.session.events)).toEqual(canonical(session.events))
      expect(await backend.readStoredRevision(h.id)).toBe(revision)
    })

    it('R-5: a cold load keeps stored delta rows packed in memory and reads back exactly the stored events', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(3, 29)
      await backend.create(h, events)
      const ctx = await boot(backend)
      const { session } = await ctx.sessionPersistence.load(h.id)
      const runs = new Set(slotsOf(session.events).filter(slot => slot instanceof PackedRun))
      expect(runs.size).toBeGreaterThan(3)
      expect(canonical(session.events)).toEqual(canonical(events))
      expect(session.events.every(event => isDeepFrozen(event))).toBe(true)
      await appendTurn(session, { rng: prng(4) })
      await ctx.sessionPersistence.flush(session)
      expect(canonical((await backend.loadStored(h.id))!.events)).toEqual(canonical(session.events))
    })

    it('C-5: loading a live id flushes it and refuses while its turn is open; a closed turn returns the live session', async () => {
      const backend = await fresh()
      const ctx = await boot(backend)
      const session = ctx.sessions.create({ id: 'live' })
      await appendTurn(session, { rng: prng(4), stopAfter: 8 })
      await expect(ctx.sessionPersistence.load('live')).rejects.toThrow(/turn 1 open/)
      expect((await backend.loadStored('live'))!.events.length).toBe(8)
      session.append('step/end', { turn: 1, step: 1 })
      session.append('turn/end', { turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } })
      const result = await ctx.sessionPersistence.load('live')
      expect(result).toMatchObject({ wasLive: true, repaired: [] })
      expect(result.session).toBe(session)
    })

    it('S-3: a cold load refuses an unknown required type and accepts an ignorable one', async () => {
      const backend = await fresh()
      await backend.create(header('ign'), [{ type: 'plugin/x', seq: 0, time: 1, data: {}, ignorable: true }])
      await backend.create(header('req'), [{ type: 'plugin/x', seq: 0, time: 1, data: {} }])
      const ctx = await boot(backend)
      expect((await ctx.sessionPersistence.load('ign')).session.events).toHaveLength(1)
      await expect(ctx.sessionPersistence.load('req')).rejects.toThrow(/unknown event type "plugin\/x"/)
    })

    it('list: id, title from the last session/title, cwd, created, updated, turn count', async () => {
      const backend = await fresh()
      const ctx = await boot(backend)
      const session = ctx.sessions.create({ id: 'titled', cwd: '/w' })
      await appendTurn(session, { rng: prng(5) })
      session.append('session/title', { title: 'first', messageSeqs: [4], source: { kind: 'fallback' } })
      await appendTurn(session, { rng: prng(6) })
      session.append('session/title', { title: 'second', messageSeqs: [4], source: { kind: 'model' } })
      ctx.sessions.create({ id: 'untitled' })
      await ctx.sessionPersistence.flushAll()
      const listed = await ctx.sessionPersistence.list()
      expect(listed.find((s) => s.id === 'titled')).toMatchObject({ title: 'second', cwd: '/w', turns: 2, length: session.length, createdAt: session.header.createdAt })
      expect(listed.find((s) => s.id === 'untitled')).toMatchObject({ title: null, turns: 0, length: 0 })
      // Listing again after more appends sees them.
      await appendTurn(session, { rng: prng(7) })
      await ctx.sessionPersistence.flush(session)
      expect((await backend.list()).find((s) => s.id === 'titled')).toMatchObject({ turns: 3, length: session.length })
    })

    it('S-14: fork from a boundary materialises the child; delete moves to the trash and frees the id', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(2, 29)
      await backend.create(h, events)
      const ctx = await boot(backend)
      const boundary = events.findIndex((e) => e.type === 'turn/end')
      const child = await ctx.sessionPersistence.fork(h.id, boundary, 'child')
      const stored = (await backend.loadStored('child'))!
      expect(stored.header).toMatchObject({ parentSession: h.id, seedLength: boundary + 1 })
      expect(canonical(stored.events)).toEqual(canonical(child.events))
      expect(stored.events.at(-1)?.type).toBe('session/end-seed')
      expect(await ctx.sessionPersistence.delete('child')).toBe(true)
      expect(await backend.loadStored('child')).toBeUndefined()
      expect((await backend.list()).map((s) => s.id)).toEqual([h.id])
      expect(ctx.sessions.get('child')).toBeUndefined()
      await backend.create(header('child'), [])
      expect((await backend.loadStored('child'))!.events).toEqual([])
    })
  })
}
