import { Context } from 'cordis'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { SessionsServicePlugin } from '../session/service.js'
import type { SessionEvent, SessionHeader } from '../session/types.js'
import { OperationChains, SeqMismatchError, SessionExistsError, type PersistenceBackend, type StoredSession } from './api.js'
import { SessionPersistence } from './service.js'

/** In-memory backend recording every write attempt; `failNext` makes the next write reject. */
class MemoryBackend implements PersistenceBackend {
  readonly kind = 'memory'
  readonly stored = new Map<string, { header: SessionHeader; events: SessionEvent[] }>()
  readonly writes: { id: string; seqs: number[]; ok: boolean }[] = []
  failNext = 0
  /** The next write lands, then reports failure anyway (a lost acknowledgement). */
  landThenFail = false
  private waiters: (() => void)[] = []

  nextWrite(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  private async write(header: SessionHeader, events: readonly SessionEvent[], create: boolean): Promise<void> {
    await Promise.resolve()
    const ok = this.failNext === 0
    this.writes.push({ id: header.id, seqs: events.map((e) => e.seq), ok })
    for (const waiter of this.waiters.splice(0)) waiter()
    if (!ok) {
      this.failNext--
      throw new Error('disk full')
    }
    const entry = this.stored.get(header.id)
    if (create && entry) throw new SessionExistsError(`${header.id} exists`)
    if (entry && events.length && events[0].seq !== entry.events.length) throw new SeqMismatchError(`${header.id}: seq ${events[0].seq}`)
    if (!entry) this.stored.set(header.id, { header, events: [...events] })
    else entry.events.push(...events)
    if (this.landThenFail) {
      this.landThenFail = false
      throw new Error('acknowledgement lost')
    }
  }

  create(header: SessionHeader, events: readonly SessionEvent[]) { return this.write(header, events, true) }
  appendBatch(header: SessionHeader, events: readonly SessionEvent[]) { return this.write(header, events, false) }
  async loadStored(id: string): Promise<StoredSession | undefined> {
    const entry = this.stored.get(id)
    return entry && { ...entry, revision: String(entry.events.length) }
  }
  async readStoredRevision(id: string) { return this.stored.has(id) ? String(this.stored.get(id)!.events.length) : undefined }
  async commitRepair(): Promise<string> { throw new Error('not used') }
  async list() { return [] }
  async trash() { return false }
}

async function boot(backend: PersistenceBackend, maxDelayMs = 200) {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin, {})
  await ctx.plugin(SessionPersistence, { backend, maxDelayMs, report: () => undefined })
  return ctx
}

describe('write-behind (D-2)', () => {
  afterEach(() => { vi.useRealTimers() })

  it('D-2: the window runs from the first pending event, not the last', async () => {
    vi.useFakeTimers()
    const backend = new MemoryBackend()
    const ctx = await boot(backend, 200)
    const session = ctx.sessions.create({ id: 'w' })
    session.append('turn/start', { turn: 1 })
    await vi.advanceTimersByTimeAsync(150)
    expect(backend.writes).toEqual([])
    session.append('step/start', { turn: 1, step: 1 })
    const written = backend.nextWrite()
    await vi.advanceTimersByTimeAsync(50)
    await written
    expect(backend.writes).toEqual([{ id: 'w', seqs: [0, 1], ok: true }])
  })

  it('D-2: a failed batch stays at the head, writing pauses until the next event, which retries it first', async () => {
    vi.useFakeTimers()
    const backend = new MemoryBackend()
    const ctx = await boot(backend, 10)
    const session = ctx.sessions.create({ id: 'f' })
    session.append('turn/start', { turn: 1 })
    backend.failNext = 1
    const failed = backend.nextWrite()
    await vi.advanceTimersByTimeAsync(10)
    await failed
    await vi.advanceTimersByTimeAsync(0)
    expect(ctx.sessionPersistence.writeError('f')).toBeInstanceOf(Error)
    // Paused: no timer is armed, however long we wait.
    expect(vi.getTimerCount()).toBe(0)
    await vi.advanceTimersByTimeAsync(10_000)
    expect(backend.writes).toHaveLength(1)
    session.append('step/start', { turn: 1, step: 1 })
    const retried = backend.nextWrite()
    await vi.advanceTimersByTimeAsync(10)
    await retried
    await vi.advanceTimersByTimeAsync(0)
    expect(backend.writes.at(-1)).toEqual({ id: 'f', seqs: [0, 1], ok: true })
    expect(ctx.sessionPersistence.writeError('f')).toBeUndefined()
    expect(backend.stored.get('f')!.events.map((e) => e.seq)).toEqual([0, 1])
  })

  it('D-2: flush() retries a paused queue, rejects while the backend fails, and nothing is lost', async () => {
    const backend = new MemoryBackend()
    const ctx = await boot(backend, 1_000_000)
    const session = ctx.sessions.create({ id: 'r' })
    session.append('turn/start', { turn: 1 })
    backend.failNext = 2
    await expect(ctx.sessionPersistence.flush(session)).rejects.toThrow(/disk full/)
    await expect(ctx.sessionPersistence.flush(session)).rejects.toThrow(/disk full/)
    await ctx.sessionPersistence.flush(session)
    expect(backend.stored.get('r')!.events.map((e) => e.seq)).toEqual([0])
  })

  it('D-2: flush() is one shared barrier that writes until the queue is empty, including events appended meanwhile', async () => {
    const backend = new MemoryBackend()
    const ctx = await boot(backend, 1_000_000)
    const session = ctx.sessions.create({ id: 'b' })
    session.append('turn/start', { turn: 1 })
    const first = ctx.sessionPersistence.flush(session)
    const second = ctx.sessionPersistence.flush('b')
    expect(second).toBe(first)
    // Appended in the same tick (as an observer's append lands right after the event it saw):
    // joins the batch, which is taken once the write holds the writer lease.
    session.append('step/start', { turn: 1, step: 1 })
    // Appended while that batch is being written: the barrier writes it too before it resolves.
    void backend.nextWrite().then(() => session.append('step/end', { turn: 1, step: 1 }))
    await first
    expect(backend.stored.get('b')!.events.map((e) => e.seq)).toEqual([0, 1, 2])
    expect(backend.writes.map((w) => w.seqs)).toEqual([[0, 1], [2]])
    // K-4: session/flush is dispatched in parallel mode and awaits the barrier.
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await ctx.parallel('session/flush', session)
    expect(backend.stored.get('b')!.events).toHaveLength(4)
  })

  it('D-2, D-3: a flush with nothing to write leaves no barrier behind: the next flush still writes what came after (a second parallel call\'s checkpoint, loading a live session)', async () => {
    const backend = new MemoryBackend()
    const ctx = await boot(backend, 1_000_000)
    const session = ctx.sessions.create({ id: 'n' })
    session.append('turn/start', { turn: 1 })
    await ctx.sessionPersistence.flush(session)
    // Nothing pending now: this one has nothing to do.
    await ctx.sessionPersistence.flush(session)
    session.append('step/start', { turn: 1, step: 1 })
    await ctx.sessionPersistence.flush(session)
    expect(backend.stored.get('n')!.events.map((e) => e.seq)).toEqual([0, 1])
    session.append('step/end', { turn: 1, step: 1 })
    await ctx.sessionPersistence.flushAll()
    expect(backend.stored.get('n')!.events.map((e) => e.seq)).toEqual([0, 1, 2])
  })

  it('D-2: a write that landed but reported failure is reconciled on retry, not duplicated', async () => {
    const backend = new MemoryBackend()
    const ctx = await boot(backend, 1_000_000)
    const session = ctx.sessions.create({ id: 'lost' })
    session.append('turn/start', { turn: 1 })
    backend.landThenFail = true
    await expect(ctx.sessionPersistence.flush(session)).rejects.toThrow(/acknowledgement lost/)
    session.append('step/start', { turn: 1, step: 1 })
    await ctx.sessionPersistence.flush(session)
    expect(backend.stored.get('lost')!.events.map((e) => e.seq)).toEqual([0, 1])
    backend.landThenFail = true
    session.append('step/end', { turn: 1, step: 1 })
    await expect(ctx.sessionPersistence.flush(session)).rejects.toThrow(/acknowledgement lost/)
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    await ctx.sessionPersistence.flush(session)
    expect(backend.stored.get('lost')!.events.map((e) => e.seq)).toEqual([0, 1, 2, 3])
  })

  it('D-1: a new session whose id is already stored as another session never overwrites it', async () => {
    const backend = new MemoryBackend()
    const ctx = await boot(backend, 1_000_000)
    const other = { type: 'session', version: 0, id: 'taken', createdAt: 1, delegationDepth: 0 } as const
    backend.stored.set('taken', { header: other, events: [{ type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } }] })
    const session = ctx.sessions.create({ id: 'taken' })
    session.append('turn/start', { turn: 1 })
    await expect(ctx.sessionPersistence.flush(session)).rejects.toBeInstanceOf(SessionExistsError)
    expect(backend.stored.get('taken')!.header).toBe(other)
    expect(backend.stored.get('taken')!.events).toHaveLength(1)
  })

  it('D-2: a header-only session is materialised by flush()', async () => {
    const backend = new MemoryBackend()
    const ctx = await boot(backend, 1_000_000)
    ctx.sessions.create({ id: 'h' })
    await ctx.sessionPersistence.flushAll()
    expect(backend.stored.get('h')?.events).toEqual([])
  })
})

describe('OperationChains (D-1)', () => {
  it('D-1: per-key operations run in order and one failure does not poison the next', async () => {
    const chains = new OperationChains()
    const order: string[] = []
    const a = chains.run('k', async () => { order.push('a'); throw new Error('boom') })
    const b = chains.run('k', async () => { order.push('b'); return 2 })
    const other = chains.run('other', () => { order.push('o'); return 3 })
    await expect(a).rejects.toThrow('boom')
    expect(await b).toBe(2)
    expect(await other).toBe(3)
    expect(order.indexOf('a')).toBeLessThan(order.indexOf('b'))
    await chains.idle()
  })
})
