import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { SessionsServicePlugin, SessionsError, type Session, type SessionEvent } from './index.js'
import { RECENTLY_CLOSED } from './service.js'
import { assistantMessage, userMessage } from './testing/fixtures.js'
import { isDeepFrozen } from './snapshot.js'

async function boot(config: ConstructorParameters<typeof SessionsServicePlugin>[1] = {}) {
  const ctx = new Context()
  let clock = 1000
  await ctx.plugin(SessionsServicePlugin, { now: () => clock++, ...config })
  return ctx
}

function completedTurn(session: Session, turn: number, text = `hi ${turn}`): void {
  session.append('turn/start', { turn })
  session.append('step/start', { turn, step: 1 })
  session.append('user/message', userMessage(text), { surfaceOp: 'append' })
  session.append('assistant/message', { turn, step: 1, message: assistantMessage(`a${turn}`, `reply ${turn}`) }, { surfaceOp: 'append', sourceEventSeqs: [] })
  session.append('step/end', { turn, step: 1 })
  session.append('turn/end', { turn, reason: { kind: 'completed' } })
}

describe('SessionsServicePlugin (ctx.sessions)', () => {
  it('K-2: provides ctx.sessions; create writes a version 0 header with delegationDepth 0 and a uuid id', async () => {
    const ctx = await boot()
    const session = ctx.sessions.create()
    expect(session.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(session.header).toEqual({ type: 'session', version: 0, id: session.id, createdAt: 1000, delegationDepth: 0 })
    expect(ctx.sessions.get(session.id)).toBe(session)
    expect(ctx.sessions.list()).toEqual([session])
    expect(session.live).toBe(true)
  })

  it('create refuses an id that is already live', async () => {
    const ctx = await boot()
    ctx.sessions.create({ id: 'a' })
    expect(() => ctx.sessions.create({ id: 'a' })).toThrow(/session a already exists/)
  })

  it('K-4: session/created is a contained emit (a throwing listener neither fails create nor starves later listeners)', async () => {
    const errors: unknown[] = []
    const ctx = await boot({ report: (_name, error) => errors.push(error) })
    const seen: string[] = []
    ctx.on('session/created', () => { throw new Error('observer broke') })
    ctx.on('session/created', (session) => { seen.push(session.id) })
    const session = ctx.sessions.create({ id: 's1' })
    expect(seen).toEqual(['s1'])
    expect(errors).toHaveLength(1)
    expect(ctx.sessions.get('s1')).toBe(session)
  })

  it('K-4 #43.2: session/closed is a contained emit, fired once the session left the live set; an id that is not live fires nothing', async () => {
    const errors: unknown[] = []
    const ctx = await boot({ report: (_name, error) => errors.push(error) })
    const seen: [string, boolean, boolean][] = []
    ctx.on('session/closed', () => { throw new Error('observer broke') })
    ctx.on('session/closed', (session) => { seen.push([session.id, session.live, ctx.sessions.get(session.id) !== undefined]) })
    const session = ctx.sessions.create({ id: 's1' })
    ctx.sessions.close('s1')
    ctx.sessions.close('s1')
    ctx.sessions.close('never')
    expect(seen).toEqual([['s1', false, false]])
    expect(errors).toHaveLength(1)
    expect(() => session.append('turn/start', { turn: 1 })).toThrow()
  })

  it('#43.9: only the last RECENTLY_CLOSED closed ids are remembered: older ones are "not found", recent ones "not live", a reopened id is forgotten', async () => {
    const ctx = await boot()
    const code = (id: string) => { try { ctx.sessions.fork(id); return 'no error' } catch (e) { return (e as SessionsError).code } }
    for (let i = 0; i <= RECENTLY_CLOSED; i++) {
      ctx.sessions.create({ id: `c${i}` })
      ctx.sessions.close(`c${i}`)
    }
    expect(code('c0')).toBe('NOT_FOUND')
    expect(code('c1')).toBe('NOT_LIVE')
    expect(code(`c${RECENTLY_CLOSED}`)).toBe('NOT_LIVE')
    // Closing an id again moves it to the newest end: it outlives ids closed before it.
    ctx.sessions.create({ id: 'c1' })
    expect(code('c1')).toBe('no error')
    ctx.sessions.close('c1')
    ctx.sessions.create({ id: 'extra' })
    ctx.sessions.close('extra')
    expect(code('c1')).toBe('NOT_LIVE')
    expect(code('c2')).toBe('NOT_FOUND')
  })

  it('#43.4: prepare checks everything at once but goes live (session/created) only at publish; a publish after the id became live is refused', async () => {
    const ctx = await boot()
    const created: string[] = []
    ctx.on('session/created', (session) => { created.push(session.id) })
    const header = { type: 'session', version: 0, id: 'p', createdAt: 1, delegationDepth: 0 } as const
    const events = [{ type: 'turn/start', seq: 0, time: 1, data: { turn: 1 } }]
    expect(() => ctx.sessions.prepare(header, [{ type: 'turn/end', seq: 0, time: 1, data: { turn: 1, reason: { kind: 'completed' } } }])).toThrow()
    const prepared = ctx.sessions.prepare(header, events)
    expect(prepared.session.length).toBe(1)
    expect(created).toEqual([])
    expect(ctx.sessions.get('p')).toBeUndefined()
    expect(prepared.publish()).toBe(prepared.session)
    expect(created).toEqual(['p'])
    expect(ctx.sessions.get('p')).toBe(prepared.session)
    expect(() => prepared.publish()).toThrow(/already published/)
    const late = ctx.sessions.prepare({ ...header, id: 'q' }, events)
    ctx.sessions.create({ id: 'q' })
    expect(() => late.publish()).toThrow(/already exists/)
    expect(created).toEqual(['p', 'q'])
  })

  it('K-4/S-5: session/event is a contained emit fired after the push; an observer failure never undoes the append', async () => {
    const errors: unknown[] = []
    const ctx = await boot({ report: (_name, error) => errors.push(error) })
    const seen: [number, number][] = []
    ctx.on('session/event', () => { throw new Error('observer broke') })
    ctx.on('session/event', (session, event) => { seen.push([event.seq, session.length]) })
    const session = ctx.sessions.create({ id: 's' })
    session.append('turn/start', { turn: 1 })
    expect(seen).toEqual([[0, 1]])
    expect(session.length).toBe(1)
    expect(errors).toHaveLength(1)
  })

  it('K-4: session/event reaches exactly the listeners registered at each append (added, disposed, replaced between appends), in order', async () => {
    const ctx = await boot()
    const seen: string[] = []
    ctx.on('session/event', (_s, e) => { seen.push(`a${e.seq}`) })
    const session = ctx.sessions.create({ id: 's' })
    session.append('turn/start', { turn: 1 })
    const disposeB = ctx.on('session/event', (_s, e) => { seen.push(`b${e.seq}`) })
    session.append('step/start', { turn: 1, step: 1 })
    session.append('step/end', { turn: 1, step: 1 })
    disposeB()
    // Same number of listeners as before, another registration: c is heard, b is not.
    ctx.on('session/event', (_s, e) => { seen.push(`c${e.seq}`) })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    // A listener in a plugin: gone with its plugin.
    const fiber = ctx.plugin({ name: 'observer', apply: (inner: Context) => { inner.on('session/event', (_s, e) => { seen.push(`d${e.seq}`) }) } })
    await fiber.await()
    session.append('turn/start', { turn: 2 })
    await fiber.dispose()
    session.append('turn/end', { turn: 2, reason: { kind: 'completed' } })
    expect(seen).toEqual(['a0', 'a1', 'b1', 'a2', 'b2', 'a3', 'c3', 'a4', 'c4', 'd4', 'a5', 'c5'])
  })

  it('K-5: an internal/dispatch listener sees every session/event dispatch, also after earlier ones were resolved', async () => {
    const ctx = await boot()
    ctx.on('session/event', () => {})
    const session = ctx.sessions.create({ id: 's' })
    session.append('turn/start', { turn: 1 })
    const dispatched: number[] = []
    ctx.on('internal/dispatch', (_mode, name, args) => { if (name === 'session/event') dispatched.push((args[1] as SessionEvent).seq) })
    session.append('step/start', { turn: 1, step: 1 })
    session.append('step/end', { turn: 1, step: 1 })
    expect(dispatched).toEqual([1, 2])
  })

  it('S-5/K-5: a session/append listener vetoes an append by throwing; the log stays untouched', async () => {
    const ctx = await boot()
    const notified: number[] = []
    ctx.on('session/event', (_s, e) => { notified.push(e.seq) })
    ctx.on('session/append', (_session, event) => {
      if (event.type === 'todo/write') throw new Error('todos are frozen')
    })
    const session = ctx.sessions.create()
    session.append('turn/start', { turn: 1 })
    expect(() => session.append('todo/write', { todos: [] })).toThrow('todos are frozen')
    expect(session.length).toBe(1)
    expect(notified).toEqual([0])
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    expect(session.events.map((e) => e.seq)).toEqual([0, 1])
  })

  it('K-4: session/append is a plain (not contained) emit: a throwing listener reaches the appender and skips later listeners', async () => {
    const ctx = await boot()
    const order: string[] = []
    ctx.on('session/append', () => { order.push('first'); throw new Error('no') })
    ctx.on('session/append', () => { order.push('second') })
    const session = ctx.sessions.create()
    expect(() => session.append('turn/start', { turn: 1 })).toThrow('no')
    expect(order).toEqual(['first'])
  })

  it('S-5/K-5: an internal/dispatch listener vetoes the session/append dispatch before any listener runs', async () => {
    const ctx = await boot()
    let appendListenerRan = false
    ctx.on('session/append', () => { appendListenerRan = true })
    ctx.on('internal/dispatch', (_mode, name, args) => {
      if (name === 'session/append' && (args[1] as SessionEvent).type === 'turn/start') throw new Error('vetoed by invariant')
    })
    const session = ctx.sessions.create()
    expect(() => session.append('turn/start', { turn: 1 })).toThrow('vetoed by invariant')
    expect(appendListenerRan).toBe(false)
    expect(session.length).toBe(0)
    expect(session.position.turnOpen).toBe(false)
  })

  it('S-5: an append from inside a session/event listener of the same session throws, and is reported, not committed', async () => {
    const errors: unknown[] = []
    const ctx = await boot({ report: (_n, error) => errors.push(error) })
    const session = ctx.sessions.create()
    ctx.on('session/event', (s) => {
      if (s === session && s.length === 1) s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    })
    session.append('turn/start', { turn: 1 })
    expect(session.length).toBe(1)
    expect(errors).toHaveLength(1)
    expect(String(errors[0])).toMatch(/S-5 at seq 1: re-entrant append of turn\/end/)
    // Another session may be appended to from the listener.
    const other = ctx.sessions.create()
    ctx.on('session/event', (s) => { if (s === session && other.length === 0) other.append('turn/start', { turn: 1 }) })
    session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    expect(other.length).toBe(1)
  })

  it('S-5: a session/append listener that appends is refused as re-entrant', async () => {
    const ctx = await boot()
    const session = ctx.sessions.create()
    ctx.on('session/append', (s) => { s.append('turn/start', { turn: 9 }) })
    expect(() => session.append('turn/start', { turn: 1 })).toThrow(/S-5 at seq 0: re-entrant append/)
    expect(session.length).toBe(0)
  })

  it('S-2: registerEventType is an effect of the registering plugin; duplicates are rejected', async () => {
    const ctx = await boot()
    const fiber = ctx.plugin({
      inject: ['sessions'],
      apply: (c: Context) => { c.sessions.registerEventType({ type: 'goal/set', owner: 'goals', validate: (d) => (typeof d === 'object' && d !== null && 'goal' in d ? null : 'data.goal is missing') }) },
    })
    await fiber
    expect(ctx.sessions.eventType('goal/set')?.owner).toBe('goals')
    expect(() => ctx.sessions.registerEventType({ type: 'goal/set' })).toThrow(/S-2: event type "goal\/set" is already registered by goals/)
    const session = ctx.sessions.create()
    expect(() => session.append('goal/set', {})).toThrow(/S-2 at seq 0: invalid goal\/set \(owner goals\): data.goal is missing/)
    session.append('goal/set', { goal: 'ship' })
    await fiber.dispose()
    expect(ctx.sessions.eventType('goal/set')).toBeUndefined()
    expect(() => session.append('goal/set', { goal: 'again' })).toThrow(/S-3 at seq 1: unknown event type "goal\/set"/)
  })

  it('S-2: core types cannot be re-registered; runtime plugin types are overridable defaults', async () => {
    const ctx = await boot()
    expect(() => ctx.sessions.registerEventType({ type: 'turn/start' })).toThrow(/already registered by session/)
    expect(ctx.sessions.eventType('llm/retry')?.owner).toBe('llm-retry')
    const dispose = ctx.sessions.registerEventType({ type: 'llm/retry', owner: 'my-retry', validate: () => 'strict' })
    expect(ctx.sessions.eventType('llm/retry')?.owner).toBe('my-retry')
    dispose()
    expect(ctx.sessions.eventType('llm/retry')?.owner).toBe('llm-retry')
  })

  it('closing a session makes it not live: appends throw and get() forgets it', async () => {
    const ctx = await boot()
    const session = ctx.sessions.create({ id: 'c' })
    ctx.sessions.close('c')
    expect(session.live).toBe(false)
    expect(ctx.sessions.get('c')).toBeUndefined()
    expect(() => session.append('turn/start', { turn: 1 })).toThrow(/session c is not live/)
  })

  it('unloading the service ends every live session', async () => {
    const ctx = new Context()
    const fiber = ctx.plugin(SessionsServicePlugin)
    await fiber
    const session = ctx.sessions.create()
    await fiber.dispose()
    expect(session.live).toBe(false)
  })
})

describe('hydrate (S-13, S-3)', () => {
  it('rebuilds a session from stored events without notifying observers, then emits session/created', async () => {
    const ctx = await boot()
    const source = ctx.sessions.create({ id: 'src' })
    completedTurn(source, 1)
    const stored = JSON.parse(JSON.stringify({ header: source.header, events: source.events }))
    ctx.sessions.close('src')
    const notified: number[] = []
    const created: string[] = []
    ctx.on('session/append', () => { throw new Error('the veto does not apply to committed facts') })
    ctx.on('session/event', (_s, e) => { notified.push(e.seq) })
    ctx.on('session/created', (s) => { created.push(s.id) })
    const session = ctx.sessions.hydrate(stored.header, stored.events)
    expect(notified).toEqual([])
    expect(created).toEqual(['src'])
    expect(session.events).toEqual(source.events)
    expect(session.deriveMessages()).toEqual(source.deriveMessages())
    expect(session.position).toEqual({ turn: 1, step: 1, turnOpen: false, stepOpen: false })
    expect(Object.isFrozen(session.events[2].data)).toBe(true)
  })

  it('S-5: hydrate copies the events it is given; with adopt it freezes their data in place, checked the same way', async () => {
    const ctx = await boot()
    const source = ctx.sessions.create({ id: 'src' })
    completedTurn(source, 1)
    const json = JSON.stringify(source.events)
    ctx.sessions.close('src')
    const copied = JSON.parse(json) as { data: object }[]
    const session = ctx.sessions.hydrate({ ...source.header, id: 'copied' }, copied as never)
    expect(session.events[2].data).not.toBe(copied[2].data)
    expect(Object.isFrozen(copied[2].data)).toBe(false)
    const adopted = JSON.parse(json) as { data: object }[]
    const same = ctx.sessions.hydrate({ ...source.header, id: 'adopted' }, adopted as never, { adopt: true })
    expect(same.events[2].data).toBe(adopted[2].data)
    expect(Object.isFrozen(adopted[2].data)).toBe(true)
    expect(same.events).toEqual(session.events)
    const bad = JSON.parse(json) as { data: Record<string, unknown> }[]
    bad[2].data = { ...bad[2].data, odd: JSON.parse('-0') }
    expect(() => ctx.sessions.hydrate({ ...source.header, id: 'bad' }, bad as never, { adopt: true })).toThrow(/S-5.*data\.odd is -0/)
  })

  it('S-5: hydrate with adopt "parsed" keeps each envelope it is given when its keys are in envelope order, and rebuilds the others: the same events either way', async () => {
    const ctx = await boot()
    const source = ctx.sessions.create({ id: 'src' })
    completedTurn(source, 1)
    source.append('x/note', { n: 1 }, { ignorable: true })
    const json = JSON.stringify(source.events)
    ctx.sessions.close('src')
    const copied = ctx.sessions.hydrate({ ...source.header, id: 'copied' }, JSON.parse(json) as never)
    // As stored on disk: surfaceOp before sourceEventSeqs, the reverse of the envelope order.
    const stored = (JSON.parse(json) as Record<string, unknown>[]).map(({ type, seq, time, data, ignorable, surfaceOp, sourceEventSeqs }) =>
      JSON.parse(JSON.stringify({ type, seq, time, data, ignorable, surfaceOp, sourceEventSeqs })) as Record<string, unknown>)
    const given = JSON.parse(json) as Record<string, unknown>[]
    for (const [id, events] of [['as-built', given], ['as-stored', stored]] as const) {
      const session = ctx.sessions.hydrate({ ...source.header, id }, events as never, { adopt: 'parsed' })
      expect(JSON.stringify(session.events)).toBe(JSON.stringify(copied.events))
      expect(session.events.map((event) => Object.keys(event))).toEqual(copied.events.map((event) => Object.keys(event)))
      session.events.forEach((event) => expect(isDeepFrozen(event)).toBe(true))
    }
    const both = given.findIndex((event) => 'surfaceOp' in event && 'sourceEventSeqs' in event)
    expect(both).toBeGreaterThan(0)
    expect(ctx.sessions.get('as-built')!.events[both]).toBe(given[both])
    expect(ctx.sessions.get('as-stored')!.events[both]).not.toBe(stored[both])
    const bad = JSON.parse(json) as Record<string, unknown>[]
    bad[1] = { ...bad[1], data: { ...(bad[1].data as object), odd: JSON.parse('-0') } }
    expect(() => ctx.sessions.hydrate({ ...source.header, id: 'bad' }, bad as never, { adopt: 'parsed' })).toThrow(/S-5.*data\.odd is -0/)
  })

  it('S-13: the version is checked before the shape, and the message names newer or older', async () => {
    const ctx = await boot()
    expect(() => ctx.sessions.hydrate({ version: 1 } as never, [])).toThrow(/S-13: session format version 1 is newer than this runtime supports \(0\)/)
    expect(() => ctx.sessions.hydrate({ version: -1, junk: true } as never, [])).toThrow(/S-13: session format version -1 is older/)
    expect(() => ctx.sessions.hydrate({ type: 'session', id: 'x', createdAt: 1, delegationDepth: 0 } as never, [])).toThrow(/S-13: session header version must be a number/)
    expect(() => ctx.sessions.hydrate({ type: 'session', version: 0, id: 'x', createdAt: 1 } as never, [])).toThrow(/S-13: header delegationDepth/)
    expect(() => ctx.sessions.hydrate({ type: 'session', version: 0, id: 'x', createdAt: 1, delegationDepth: 0, extra: 1 } as never, [])).toThrow(/S-13: unknown header key "extra"/)
  })

  it('S-3: an unknown type is refused unless ignorable; an ignorable one is kept and skipped', async () => {
    const ctx = await boot()
    const header = { type: 'session' as const, version: 0, id: 'h', createdAt: 1, delegationDepth: 0 }
    const unknown = { type: 'future/thing', seq: 0, time: 5, data: { x: 1 } }
    expect(() => ctx.sessions.hydrate(header, [unknown] as SessionEvent[])).toThrow(/S-3 at seq 0: unknown event type "future\/thing"/)
    expect(ctx.sessions.get('h')).toBeUndefined()
    const session = ctx.sessions.hydrate(header, [
      { ...unknown, ignorable: true },
      { type: 'turn/start', seq: 1, time: 6, data: { turn: 1 } },
    ] as SessionEvent[])
    expect(session.events.map((e) => e.type)).toEqual(['future/thing', 'turn/start'])
    expect(session.position.turnOpen).toBe(true)
    expect(session.deriveMessages()).toEqual([])
  })

  it('S-1: hydrate refuses unknown envelope keys, non-integer time and non-contiguous seqs, naming the seq', async () => {
    const ctx = await boot()
    const header = { type: 'session' as const, version: 0, id: 'h', createdAt: 1, delegationDepth: 0 }
    const ok = { type: 'turn/start', seq: 0, time: 5, data: { turn: 1 } }
    expect(() => ctx.sessions.hydrate(header, [{ ...ok, extra: 1 }] as never)).toThrow(/S-1 at seq 0: unknown top-level key "extra"/)
    expect(() => ctx.sessions.hydrate(header, [{ ...ok, time: 1.5 }] as never)).toThrow(/S-1 at seq 0: time must be a safe integer, got 1.5/)
    expect(() => ctx.sessions.hydrate(header, [{ ...ok, seq: 1 }] as never)).toThrow(/S-1 at seq 0: seq 1 is not contiguous \(expected 0\)/)
    expect(() => ctx.sessions.hydrate(header, [{ ...ok, ignorable: false }] as never)).toThrow(/S-3 at seq 0: ignorable may only be true/)
  })

  it('hydrate validates every event exactly like append (S-15 here)', async () => {
    const ctx = await boot()
    const header = { type: 'session' as const, version: 0, id: 'h', createdAt: 1, delegationDepth: 0 }
    expect(() => ctx.sessions.hydrate(header, [{ type: 'step/start', seq: 0, time: 1, data: { turn: 1, step: 1 } }] as never))
      .toThrow(/S-15 at seq 0: step\/start: needs an open turn/)
  })
})

describe('fork (S-14)', () => {
  it('copies up to the last event by default, appends session/end-seed unpublished, and fills the child header', async () => {
    const ctx = await boot()
    const source = ctx.sessions.create({ id: 'p', cwd: '/proj', delegationDepth: 1 })
    completedTurn(source, 1)
    const notified: string[] = []
    ctx.on('session/event', (s) => { notified.push(s.id) })
    const child = ctx.sessions.fork('p', undefined, 'c')
    expect(notified).toEqual([])
    expect(child.header).toMatchObject({ type: 'session', version: 0, id: 'c', parentSession: 'p', cwd: '/proj', seedLength: 6, delegationDepth: 1 })
    expect(child.events.slice(0, 6)).toEqual(source.events)
    expect(child.events[6]).toMatchObject({ type: 'session/end-seed', seq: 6, data: {} })
    expect(child.deriveMessages()).toEqual(source.deriveMessages())
    // The child is a normal live session.
    completedTurn(child, 2)
    expect(child.length).toBe(13)
    expect(source.length).toBe(6)
  })

  it('an inclusive boundary copies events 0..boundary; a copy ending with session/end-seed gets no second marker', async () => {
    const ctx = await boot()
    const source = ctx.sessions.create({ id: 'p' })
    completedTurn(source, 1)
    completedTurn(source, 2)
    const child = ctx.sessions.fork('p', 5, 'c')
    expect(child.header.seedLength).toBe(6)
    expect(child.events.map((e) => e.type).slice(-2)).toEqual(['turn/end', 'session/end-seed'])
    const grandchild = ctx.sessions.fork('c', undefined, 'g')
    expect(grandchild.length).toBe(7)
    expect(grandchild.events.filter((e) => e.type === 'session/end-seed')).toHaveLength(1)
    expect(grandchild.header.seedLength).toBe(7)
  })

  it('errors: not found, not live, already exists, invalid boundary, open turn', async () => {
    const ctx = await boot()
    const source = ctx.sessions.create({ id: 'p' })
    completedTurn(source, 1)
    source.append('turn/start', { turn: 2 })
    ctx.sessions.create({ id: 'taken' })
    const code = (fn: () => unknown) => { try { fn(); return 'no error' } catch (e) { return `${(e as SessionsError).code}: ${(e as Error).message}` } }
    expect(code(() => ctx.sessions.fork('nope'))).toMatch(/^NOT_FOUND: fork: session nope not found/)
    expect(code(() => ctx.sessions.fork('p', 3, 'taken'))).toMatch(/^ALREADY_EXISTS/)
    expect(code(() => ctx.sessions.fork('p', 99))).toMatch(/^INVALID_BOUNDARY: fork: boundary 99/)
    expect(code(() => ctx.sessions.fork('p', -1))).toMatch(/^INVALID_BOUNDARY/)
    expect(code(() => ctx.sessions.fork('p', 1.5))).toMatch(/^INVALID_BOUNDARY/)
    expect(code(() => ctx.sessions.fork('p', 3))).toMatch(/^OPEN_TURN: fork: boundary 3 of session p is inside open turn 1/)
    expect(code(() => ctx.sessions.fork('p'))).toMatch(/^OPEN_TURN: .*open turn 2/)
    expect(code(() => ctx.sessions.fork('p', 5, 'ok'))).toBe('no error')
    ctx.sessions.close('p')
    expect(code(() => ctx.sessions.fork('p', 5))).toMatch(/^NOT_LIVE: fork: session p is not live/)
  })

  it('a fork keeps replaced surfaces: the child derives the same messages', async () => {
    const ctx = await boot()
    const source = ctx.sessions.create({ id: 'p' })
    completedTurn(source, 1)
    source.append('user/message', userMessage('summary'), { surfaceOp: { op: 'replace', start: 2, end: 3 }, sourceEventSeqs: [2, 3] })
    const child = ctx.sessions.fork('p', undefined, 'c')
    expect(child.surface()).toEqual([6])
    expect(child.deriveMessages()).toEqual([userMessage('summary')])
  })
})
