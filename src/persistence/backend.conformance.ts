/**
 * The shared backend conformance suite (D-1): every `PersistenceBackend` runs it through a small
 * harness that knows how to open a store in a folder and how to damage its raw records. It pins
 * the contract (round trip, atomic materialisation, seq checks, torn tails, stale repair, modes,
 * ids that try to escape, unknown types, versions) and the service behaviour on top of it
 * (write-behind, cold load and repair, list/fork/delete).
 */
import { writeFileSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { hostname } from 'node:os'
import { afterEach, describe, expect, it } from 'vitest'
import { checkLogInvariants } from '../session/invariants.js'
import { createEventTypeRegistry } from '../session/registry.js'
import { SESSION_FORMAT_VERSION, type SessionEvent } from '../session/types.js'
import {
  CorruptSessionError, FormatVersionError, SeqMismatchError, SessionExistsError, SessionInUseError, StaleRevisionError,
  type PersistenceBackend, type WriterLease,
} from './api.js'
import { spawnWriter } from '../../test-support/writer-lock.js'
import { describeLifecycleConformance } from './lifecycle.conformance.js'
import { describeServiceConformance } from './service.conformance.js'
import { boot, canonical, realisticLog, repairClosers, testHeader as header, type BackendHarness } from './conformance-support.js'

export function describeBackendConformance(harness: BackendHarness): void {
  describeLifecycleConformance(harness)
  describe(`${harness.name} backend conformance (D-1)`, () => {
    const dirs: string[] = []
    const backends: PersistenceBackend[] = []
    const tempDir = async () => {
      const dir = await mkdtemp(join(tmpdir(), `dsh-${harness.name}-`))
      dirs.push(dir)
      return dir
    }
    const open = (dir: string, durable = true) => {
      const backend = harness.open(dir, durable)
      backends.push(backend)
      return backend
    }
    const fresh = async () => open(await tempDir())
    afterEach(async () => {
      for (const backend of backends.splice(0)) await backend.close?.()
      for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
    })

    it('D-1: round trip of a realistic log in several batches, byte for byte, with a seek read', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(4, 7)
      await backend.create(h, events.slice(0, 10))
      await backend.appendBatch(h, events.slice(10, 200))
      await backend.appendBatch(h, events.slice(200))
      const stored = await backend.loadStored(h.id)
      expect(stored?.header).toEqual(h)
      expect(canonical(stored!.events)).toEqual(canonical(events))
      expect(stored!.torn).toBeUndefined()
      expect(stored!.revision).toBe(await backend.readStoredRevision(h.id))
      if (backend.loadStoredFrom) {
        for (const from of [0, 11, 57, events.length - 1, events.length]) {
          expect(canonical(await backend.loadStoredFrom(h.id, from))).toEqual(canonical(events.slice(from)))
        }
      }
      // Another instance on the same store sees the same log.
      const dir = dirs[dirs.length - 1]
      const other = open(dir)
      expect(canonical((await other.loadStored(h.id))!.events)).toEqual(canonical(events))
    })

    it('D-1: any split of a log into batches round-trips (property)', async () => {
      const dir = await tempDir()
      const { header: h, events } = await realisticLog(2, 37)
      let run = 0
      await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: events.length - 1 }), { maxLength: 12 }), async (cuts) => {
        const backend = open(join(dir, `p${run++}`), false)
        const bounds = [0, ...[...cuts].sort((a, b) => a - b), events.length]
        await backend.create({ ...h }, events.slice(0, bounds[1]))
        for (let i = 1; i < bounds.length - 1; i++) await backend.appendBatch(h, events.slice(bounds[i], bounds[i + 1]))
        const stored = (await backend.loadStored(h.id))!
        expect(canonical(stored.events)).toEqual(canonical(events))
        expect(stored.torn).toBeUndefined()
        await backend.close?.()
      }), { numRuns: 15, seed: 4242 })
    })

    it('D-1: an empty create materialises a header-only session; unknown ids load as undefined', async () => {
      const backend = await fresh()
      await backend.create(header('empty'), [])
      const stored = await backend.loadStored('empty')
      expect(stored?.events).toEqual([])
      expect(await backend.loadStored('missing')).toBeUndefined()
      expect(await backend.readStoredRevision('missing')).toBeUndefined()
    })

    it('D-1: a batch must start at the stored next seq and be contiguous; a refused batch writes nothing', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(1, 3)
      await backend.create(h, events.slice(0, 5))
      await expect(backend.appendBatch(h, events.slice(6, 8))).rejects.toBeInstanceOf(SeqMismatchError)
      await expect(backend.appendBatch(h, events.slice(0, 3))).rejects.toBeInstanceOf(SeqMismatchError)
      await expect(backend.appendBatch(h, [events[5], events[7]])).rejects.toBeInstanceOf(SeqMismatchError)
      // One failure does not poison the session's later operations.
      await backend.appendBatch(h, events.slice(5))
      expect(canonical((await backend.loadStored(h.id))!.events)).toEqual(canonical(events))
    })

    it('D-1: two instances on one store: each judges seqs against the real stored end', async () => {
      const dir = await tempDir()
      const a = open(dir)
      const b = open(dir)
      const { header: h, events } = await realisticLog(1, 31)
      await a.create(h, events.slice(0, 10))
      await b.appendBatch(h, events.slice(10, 20))
      await expect(a.appendBatch(h, events.slice(10, 15))).rejects.toBeInstanceOf(SeqMismatchError)
      await a.appendBatch(h, events.slice(20, 30))
      await b.appendBatch(h, events.slice(30))
      expect(canonical((await a.loadStored(h.id))!.events)).toEqual(canonical(events))
      expect(await a.readStoredRevision(h.id)).toBe(await b.readStoredRevision(h.id))
    })

    it('D-1: concurrent materialisation of one id: exactly one writer wins', async () => {
      const dir = await tempDir()
      const writers = [open(dir), open(dir), open(dir), open(dir)]
      const { header: h, events } = await realisticLog(1, 5)
      const results = await Promise.allSettled(writers.map((w, i) => w.create(h, events.slice(0, 3 + i))))
      const won = results.filter((r) => r.status === 'fulfilled')
      expect(won).toHaveLength(1)
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(SessionExistsError)
      const winner = results.findIndex((r) => r.status === 'fulfilled')
      expect(canonical((await open(dir).loadStored(h.id))!.events)).toEqual(canonical(events.slice(0, 3 + winner)))
    })

    it.skipIf(harness.modes === undefined)('D-4/D-6: store folders are 0700 and files 0600', async () => {
      const dir = await tempDir()
      const backend = open(join(dir, 'store'))
      const { header: h, events } = await realisticLog(1, 2)
      await backend.create(h, events)
      const paths = await harness.modes!(backend, join(dir, 'store'), h.id)
      expect(paths.length).toBeGreaterThan(0)
      for (const { path, mode } of paths) expect({ path, mode: (await stat(path)).mode & 0o777 }).toEqual({ path, mode })
    })

    it('D-4: ids that try to escape the store stay inside it and round trip', async () => {
      const dir = await tempDir()
      const backend = open(join(dir, 'store'))
      const ids = ['..', '.', '../../etc/passwd', 'a/b', '/abs', 'x\\y', '%2E%2E', 'ünï cödé', '.hidden', 'a'.repeat(300)]
      for (const id of ids) await backend.create(header(id, { cwd: id === '..' ? undefined : '../../..' }), [])
      for (const id of ids) expect((await backend.loadStored(id))?.header.id).toBe(id)
      if (harness.modes !== undefined) expect(await readdir(dir)).toEqual(['store'])
      expect((await backend.list()).map((s) => s.id).sort()).toEqual([...ids].sort())
    })

    it('S-3: unknown event types are stored verbatim (ignorable flag included)', async () => {
      const backend = await fresh()
      const events: SessionEvent[] = [
        { type: 'plugin/future', seq: 0, time: 5, data: { x: [1, { y: null }] }, ignorable: true },
        { type: 'plugin/required', seq: 1, time: 4, data: 'text' },
      ]
      await backend.create(header('u'), events)
      expect(canonical((await backend.loadStored('u'))!.events)).toEqual(canonical(events))
    })

    it('S-13: a stored header of a newer or older format version is refused naming the direction', async () => {
      const backend = await fresh()
      await backend.create(header('v'), [])
      await harness.setHeaderVersion(backend, 'v', SESSION_FORMAT_VERSION + 1)
      await expect(backend.loadStored('v')).rejects.toThrow(FormatVersionError)
      await expect(backend.loadStored('v')).rejects.toThrow(/newer/)
      await harness.setHeaderVersion(backend, 'v', SESSION_FORMAT_VERSION - 1)
      await expect(backend.loadStored('v')).rejects.toThrow(/older/)
    })

    it('list: how the last turn ended (its turn/end reason kind), `open` for a started turn without an end, nothing before any turn', async () => {
      const backend = await fresh()
      const done = await realisticLog(2, 41)
      const ended = done.events.findLast((e) => e.type === 'turn/end')!.data as { reason: { kind: string } }
      await backend.create(done.header, done.events)
      const open = await realisticLog(1, 42, 4)
      await backend.create(open.header, open.events)
      await backend.create(header('no-turns'), [])
      const listed = await backend.list()
      expect(listed.find((s) => s.id === done.header.id)?.lastTurn).toBe(ended.reason.kind)
      expect(listed.find((s) => s.id === open.header.id)?.lastTurn).toBe('open')
      expect(listed.find((s) => s.id === 'no-turns')?.lastTurn).toBeUndefined()
      // A later turn/end moves it on (appended in its own batch).
      const start = { type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } }
      await backend.create(header('aborted'), [start])
      expect((await backend.list()).find((s) => s.id === 'aborted')?.lastTurn).toBe('open')
      await backend.appendBatch(header('aborted'), [{ type: 'turn/end', seq: 1, time: 2, data: { turn: 1, reason: { kind: 'aborted', source: 'user' } } }])
      expect((await backend.list()).find((s) => s.id === 'aborted')?.lastTurn).toBe('aborted')
    })

    it('S-13: a session of a newer format version is listed as unreadable, naming why (counts 0), not dropped', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(1, 44)
      await backend.create(h, events)
      await backend.create(header('readable'), [])
      await harness.setHeaderVersion(backend, h.id, SESSION_FORMAT_VERSION + 1)
      const listed = await backend.list()
      expect(listed.find((s) => s.id === 'readable')?.unreadable).toBeUndefined()
      const newer = listed.find((s) => s.id === h.id)
      expect(newer).toMatchObject({ turns: 0, length: 0 })
      expect(newer?.unreadable).toMatch(/newer/)
      expect(newer?.lastTurn).toBeUndefined()
      await expect(backend.loadStored(h.id)).rejects.toThrow(FormatVersionError)
    })

    it('D-5: a bad record followed by a turn/end is corruption of the committed region', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(3, 11)
      await backend.create(h, events)
      const firstTurnEnd = events.findIndex((e) => e.type === 'turn/end')
      await harness.corrupt(backend, h.id, firstTurnEnd - 3)
      await expect(backend.loadStored(h.id)).rejects.toBeInstanceOf(CorruptSessionError)
      await expect(backend.loadStored(h.id)).rejects.toThrow(/: unparsable: .*a valid record follows at .*the log is corrupt, not torn by a crash/)
    })

    it('D-5/D-7: a bad last record is a crash tail: reported, cut by repair, appends continue', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(2, 13, 30)
      await backend.create(h, events)
      const cut = events.length - 1
      await harness.corrupt(backend, h.id, cut)
      const stored = (await backend.loadStored(h.id))!
      expect(stored.torn).toMatchObject({ reason: 'unparsable' })
      // The prefix kept ends at the first record of the damaged one (a packed row may span seqs).
      expect(stored.torn!.fromSeq).toBeLessThanOrEqual(cut)
      expect(stored.torn!.fromSeq).toBe(stored.events.length)
      expect(stored.torn!.droppedRecords).toBe(1)
      expect(canonical(stored.events)).toEqual(canonical(events.slice(0, stored.events.length)))
      const closers = repairClosers(stored.events)
      const revision = await backend.commitRepair(h.id, closers, stored.revision)
      expect(revision).toBe(await backend.readStoredRevision(h.id))
      const repaired = (await backend.loadStored(h.id))!
      expect(repaired.torn).toBeUndefined()
      expect(canonical(repaired.events)).toEqual(canonical([...stored.events, ...closers]))
      expect(() => checkLogInvariants(repaired.events, createEventTypeRegistry())).not.toThrow()
      const next = { type: 'turn/start', seq: repaired.events.length, time: 9, data: { turn: repaired.events.filter((e) => e.type === 'turn/start').length + 1 } }
      await backend.appendBatch(h, [next])
      expect((await backend.loadStored(h.id))!.events.at(-1)).toEqual(next)
    })

    it('D-5: a bad record anywhere with a valid record after it (an open last turn too) is refused, never cut; salvage writes a copy', async () => {
      const dir = await tempDir()
      let runs = 0
      await fc.assert(fc.asyncProperty(
        fc.integer({ min: 0, max: 2 }), fc.integer({ min: 5, max: 40 }), fc.integer({ min: 1, max: 1_000 }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        async (turns, openTail, seed, where) => {
          const backend = open(dir)
          const { header: base, events } = await realisticLog(turns, seed, openTail)
          const h = { ...base, id: `damaged-${runs++}` }
          await backend.create(h, events)
          // Any record but the last: at least one whole valid record follows it.
          const lastRecordSeq = await lastRecordStart(backend, h.id, events.length)
          const seq = Math.floor(where * lastRecordSeq)
          await harness.corrupt(backend, h.id, seq)
          const before = await storedText(backend, h.id)
          const refusal = await backend.loadStored(h.id).then(() => undefined, (error: unknown) => error)
          expect(refusal).toBeInstanceOf(CorruptSessionError)
          expect(String((refusal as Error).message)).toMatch(/(line|row seq) \d+: unparsable: .*valid record follows .*dsh sessions repair/)
          expect((refusal as Error).message).not.toContain('\n')
          // Through the service: refused as well, nothing written, nothing left live.
          const ctx = await boot(backend)
          await expect(ctx.sessionPersistence.load(h.id)).rejects.toBeInstanceOf(CorruptSessionError)
          expect(ctx.sessions.get(h.id)).toBeUndefined()
          expect(await storedText(backend, h.id)).toEqual(before)
          // Salvage keeps the intact prefix in a new session and leaves the original as it was.
          const copy = await ctx.sessionPersistence.salvage(h.id)
          expect(copy.id).not.toBe(h.id)
          expect(copy.kept).toBeLessThanOrEqual(seq)
          expect(copy.skipped.join('\n')).toMatch(/not a valid record/)
          const salvaged = (await backend.loadStored(copy.id))!
          expect(salvaged.torn).toBeUndefined()
          expect(canonical(salvaged.events.slice(0, copy.kept))).toEqual(canonical(events.slice(0, copy.kept)))
          expect(() => checkLogInvariants(salvaged.events, createEventTypeRegistry())).not.toThrow()
          expect(checkLogInvariants(salvaged.events, createEventTypeRegistry()).turnOpen).toBe(false)
          expect(await storedText(backend, h.id)).toEqual(before)
        }), { numRuns: 12 })
    }, 120_000)

    /** Seq of the first event of the last stored record (a packed row may hold several). */
    async function lastRecordStart(backend: PersistenceBackend, id: string, length: number): Promise<number> {
      let seq = length - 1
      const probe = (await backend.loadStored(id))!.events
      // Chunk events at the end may share one packed row: step back over the run of their type.
      while (seq > 0 && probe[seq].type === probe[seq - 1].type && /chunk/.test(probe[seq].type)) seq--
      return seq
    }

    /** Every stored event, as canonical text, read without classification (salvage sees all). */
    async function storedText(backend: PersistenceBackend, id: string): Promise<string[]> {
      const all = await backend.salvageStored!(id)
      return [...canonical(all!.events), ...all!.skipped]
    }

    describe('one writer per session (D-7: a second writer would repair a live turn)', () => {
      const IN_USE = /^session (\S+) is in use by another writer \(pid (\d+) on (\S+), since (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\)$/

      it('D-7: the backend provides the writer lock; a second holder is refused naming pid, host and since; release lets the next one in', async () => {
        const dir = await tempDir()
        const a = open(dir)
        const b = open(dir)
        expect(a.acquireWriter).toBeTypeOf('function')
        const lease = await a.acquireWriter!('busy')
        expect(lease.holder.pid).toBe(process.pid)
        const refusal = await b.acquireWriter!('busy').then(() => undefined, (error: unknown) => error as Error)
        expect(refusal).toBeInstanceOf(SessionInUseError)
        const [, id, pid, host, since] = IN_USE.exec(refusal!.message)!
        expect([id, Number(pid), host, since]).toEqual(['busy', process.pid, hostname(), lease.holder.since])
        // Another id is independent; a released lock can be taken by the other instance.
        await (await b.acquireWriter!('other')).release()
        await lease.release()
        await lease.release()
        const next = await b.acquireWriter!('busy')
        await next.release()
      })

      it('D-7: racing acquirers of one id (ids of every shape): exactly one wins', async () => {
        const dir = await tempDir()
        const backends = [open(dir), open(dir), open(dir)]
        await fc.assert(fc.asyncProperty(fc.string({ minLength: 1, maxLength: 40 }), async (id) => {
          const results = await Promise.allSettled(backends.map((backend) => backend.acquireWriter!(id)))
          const won = results.filter((r): r is PromiseFulfilledResult<WriterLease> => r.status === 'fulfilled')
          expect(won).toHaveLength(1)
          for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(SessionInUseError)
          await won[0].value.release()
        }), { numRuns: 40 })
      })

      it('D-7: with real processes: a second writer is refused before it repairs anything, readers still read, a killed holder is stale and taken over', async () => {
        const dir = await tempDir()
        const store = harness.child.store(dir)
        const first = spawnWriter(harness.child.kind, store, 'shared', 'create')
        const held = await first.line()
        expect(held).toBe(`held ${first.pid}`)
        // The first writer's turn is open; a second process must not close it as interrupted.
        const second = spawnWriter(harness.child.kind, store, 'shared', 'load')
        const refused = await second.line()
        expect(refused.startsWith('refused ')).toBe(true)
        const [, id, pid, host] = IN_USE.exec(refused.slice('refused '.length))!
        expect([id, Number(pid), host]).toEqual(['shared', first.pid, hostname()])
        expect(await second.exit).toBe(3)
        const reader = spawnWriter(harness.child.kind, store, 'shared', 'read')
        expect(await reader.line()).toBe('read 1')
        // The holder dies without releasing: its lock is stale, the next writer takes it over
        // and repairs the open turn.
        first.kill()
        await first.exit
        const third = spawnWriter(harness.child.kind, store, 'shared', 'load')
        expect(await third.line()).toBe(`held ${third.pid}`)
        third.send('release')
        expect(await third.line()).toBe('released')
        expect(await third.exit).toBe(0)
        const check = open(dir)
        expect((await check.loadStored('shared'))!.events.map((e) => e.type)).toEqual(['turn/start', 'turn/end'])
        // Released cleanly: the next writer needs no takeover.
        await (await check.acquireWriter!('shared')).release()
      }, 60_000)
    })

    it('D-7: a repair against a stale revision is refused and writes nothing', async () => {
      const backend = await fresh()
      const { header: h, events } = await realisticLog(1, 17, 12)
      await backend.create(h, events.slice(0, 20))
      const stored = (await backend.loadStored(h.id))!
      await backend.appendBatch(h, events.slice(20))
      await expect(backend.commitRepair(h.id, repairClosers(stored.events), stored.revision)).rejects.toBeInstanceOf(StaleRevisionError)
      expect(canonical((await backend.loadStored(h.id))!.events)).toEqual(canonical(events))
      // A second instance's write makes the first instance's token stale too.
      const fresh2 = (await backend.loadStored(h.id))!
      const other = open(dirs[dirs.length - 1])
      await other.appendBatch(h, [])
      await other.commitRepair(h.id, repairClosers(fresh2.events), fresh2.revision)
      await expect(backend.commitRepair(h.id, [], fresh2.revision)).rejects.toBeInstanceOf(StaleRevisionError)
    })

    if (harness.bytes) {
      const bytes = harness.bytes
      it('D-5: truncating a real log at every byte offset loads the whole-record prefix, repairs and accepts a new turn', async () => {
        const dir = await tempDir()
        const { header: h, events } = await realisticLog(1, 19, 22, () => 2, 1)
        const backend = open(dir, false)
        await backend.create(h, events.slice(0, 40))
        await backend.appendBatch(h, events.slice(40))
        const path = await bytes.file(backend, h.id)
        const full = await readFile(path)
        const headerEnd = full.indexOf(0x0a) + 1
        let torn = 0
        const prefixesChecked = new Set<string>()
        for (let size = headerEnd; size <= full.length; size++) {
          writeFileSync(path, full.subarray(0, size))
          const stored = (await backend.loadStored(h.id))!
          expect(canonical(stored.events)).toEqual(canonical(events.slice(0, stored.events.length)))
          // Only a whole last line is committed; a cut inside a line drops exactly that line.
          const kept = full.subarray(0, size).lastIndexOf(0x0a) + 1
          expect(stored.torn === undefined).toBe(kept === size)
          if (stored.torn) {
            torn++
            expect(stored.torn).toMatchObject({ reason: 'no-newline', cutAt: kept, droppedBytes: size - kept, droppedRecords: 1 })
          }
          // Repair and what follows depend only on the kept prefix and on whether a tail is cut:
          // run them once per such pair.
          const key = `${stored.events.length}:${stored.torn !== undefined}`
          if (prefixesChecked.has(key)) continue
          prefixesChecked.add(key)
          const closers = repairClosers(stored.events)
          if (stored.torn || closers.length) await backend.commitRepair(h.id, closers, stored.revision)
          const after = (await backend.loadStored(h.id))!
          expect(after.torn).toBeUndefined()
          expect(checkLogInvariants(after.events, createEventTypeRegistry()).turnOpen).toBe(false)
          const next = { type: 'turn/start', seq: after.events.length, time: 1, data: { turn: after.events.filter((e) => e.type === 'turn/start').length + 1 } }
          await backend.appendBatch(h, [next])
          expect((await backend.loadStored(h.id))!.events.length).toBe(after.events.length + 1)
        }
        console.log(`D-5 byte-offset sweep: ${full.length - headerEnd + 1} offsets, ${torn} torn, ${prefixesChecked.size} (prefix, torn) cases repaired and extended`)
        expect(torn).toBeGreaterThan(full.length / 2)
      }, 120_000)
    }

    describeServiceConformance({ fresh, open })

  })
}

export { canonical, realisticLog, testHeader, type BackendHarness } from './conformance-support.js'
