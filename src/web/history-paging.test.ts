/**
 * History pages on the wire (docs/web.md, "History pages"): `sessions.history` with `limit` and
 * `before` answers whole turns from the end, with `from`, `more` and the `seed` of state-carrying
 * events before the page; the page's fold, started from the seed, draws what folding the whole
 * log draws.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../session/types.js'
import { LogFold } from '../../web/src/fold.js'
import { appendLongSession, registerLongSessionTypes } from '../../test-support/long-session.js'
import { apiClient, startWebApi, type WebApiHarness } from '../../test-support/web-api.js'
import { historyWindow, seedBefore } from './history-page.js'
import { withoutFinishedChunks } from './methods.js'

const TOKEN = 'paging-token-0123456789abcdef'
const TURNS = 120

/** What the conversation shows: items, the pinned plan, the goal bar and plan mode. */
function drawn(fold: LogFold) {
  return { items: fold.items, todos: fold.todos, goal: fold.state.goal, planMode: fold.state.planMode }
}

function foldWhole(events: readonly SessionEvent[]): LogFold {
  const fold = new LogFold()
  fold.apply(withoutFinishedChunks(events))
  return fold
}

describe('sessions.history pages', () => {
  let ctx: Context
  let home: string
  let port: number
  let harness: WebApiHarness
  const { call, ok } = apiClient(() => port, TOKEN)

  /** A stored session of TURNS turns (closed, read from disk as the page reads it). */
  async function stored(options: { openLastTurn?: boolean } = {}): Promise<{ id: string; events: readonly SessionEvent[] }> {
    const session = ctx.sessions.create({ cwd: home })
    appendLongSession(session, { turns: TURNS, ...options })
    const events = session.events.slice()
    await ctx.sessionPersistence.flush(session.id)
    ctx.sessions.close(session.id)
    return { id: session.id, events }
  }

  beforeEach(async () => {
    home = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-web-paging-')))
    harness = await startWebApi({ home, token: TOKEN })
    ;({ ctx, port } = harness)
    registerLongSessionTypes(ctx)
  })

  afterEach(async () => {
    await harness.stop()
    rmSync(home, { recursive: true, force: true })
  })

  it('without limit or before the answer is the whole log as before, from 0 with nothing more', async () => {
    const { id, events } = await stored()
    const whole = await ok('sessions.history', { id })
    expect(whole).toMatchObject({ from: 0, more: false, length: events.length, live: false })
    expect(whole.seed).toBeUndefined()
    expect(whole.events).toEqual(JSON.parse(JSON.stringify(withoutFinishedChunks(events))))
    const later = await ok('sessions.history', { id, from: events.length - 3 })
    expect(later).toMatchObject({ from: events.length - 3, more: false })
    expect(later.events).toHaveLength(3)
  })

  it('a short session asked with a limit larger than it comes whole in one answer', async () => {
    const session = ctx.sessions.create({ cwd: home })
    appendLongSession(session, { turns: 3 })
    const page = await ok('sessions.history', { id: session.id, limit: 1500 })
    expect(page).toMatchObject({ from: 0, more: false, length: session.length })
    expect(page.events).toHaveLength(withoutFinishedChunks(session.events).length)
  })

  it('limit answers whole turns from the end; before walks back page by page to seq 0 with no gap or overlap', async () => {
    const { id, events } = await stored()
    const pages: any[] = []
    let page = await ok('sessions.history', { id, limit: 100 })
    pages.push(page)
    while (page.more) {
      page = await ok('sessions.history', { id, before: page.from, limit: 100 })
      pages.push(page)
    }
    expect(pages.length).toBeGreaterThan(5)
    for (const [index, each] of pages.entries()) {
      expect(each.length).toBe(events.length)
      // Each page starts at a turn and holds at least the limit (whole turns), the last reaches seq 0.
      if (each.from > 0) expect(each.events[0]).toMatchObject({ type: 'turn/start', seq: each.from })
      expect(each.events.length).toBeGreaterThanOrEqual(index === pages.length - 1 ? 1 : 100)
      expect(each.more).toBe(each.from > 0)
      if (index > 0) expect(each.events.at(-1).seq).toBeLessThan(pages[index - 1].from)
    }
    expect(pages.at(-1).from).toBe(0)
    expect(pages.at(-1).seed).toBeUndefined()
    const joined = pages.reverse().flatMap(each => each.events)
    expect(joined).toEqual(JSON.parse(JSON.stringify(withoutFinishedChunks(events))))
  })

  it('folding each page from its seed and putting the earlier pages above draws what the whole log draws', async () => {
    const { id, events } = await stored({ openLastTurn: true })
    const whole = drawn(foldWhole(events))
    // The open last turn's approval is pending in the tail page.
    expect(whole.items.at(-1)).toMatchObject({ kind: 'approval', id: 'approval-last' })
    for (const limit of [1, 37, 400]) {
      let page = await ok('sessions.history', { id, limit })
      const fold = new LogFold()
      fold.seed(page.seed ?? [])
      fold.apply(page.events)
      // The tail alone already shows the right state: plan, plan mode and the goal bar.
      expect({ todos: fold.todos, goal: fold.state.goal, planMode: fold.state.planMode }, `limit ${limit}`)
        .toEqual({ todos: whole.todos, goal: whole.goal, planMode: whole.planMode })
      while (page.more) {
        page = await ok('sessions.history', { id, before: page.from, limit })
        const older = new LogFold()
        older.seed(page.seed ?? [])
        older.apply(page.events)
        fold.prepend(older)
      }
      expect(drawn(fold), `limit ${limit}`).toEqual(whole)
    }
  })

  it('the seed at every turn start gives the state folding everything before it gives', async () => {
    const { events } = await stored()
    const whole = new LogFold()
    for (const [index, event] of events.entries()) {
      whole.apply([event])
      if (event.type !== 'turn/start' || index === 0) continue
      const seeded = new LogFold()
      seeded.seed(seedBefore(events, index))
      seeded.apply([event])
      expect({ todos: seeded.todos, goal: seeded.state.goal, planMode: seeded.state.planMode }, `turn start at seq ${index}`)
        .toEqual({ todos: whole.todos, goal: whole.state.goal, planMode: whole.state.planMode })
      // The seed's own items are not drawn: they belong to earlier pages.
      expect(seeded.items).toEqual([])
    }
    // The seed is the state's events, not the log: a few per page however long the log is.
    expect(seedBefore(events, events.length).length).toBeLessThan(8)
  })

  it('a limit counts the events sent: chunks of finished steps do not fill a page', () => {
    const session = ctx.sessions.create({ cwd: home })
    appendLongSession(session, { turns: 10, chunks: 50 })
    const window = historyWindow(session.events, { from: 0, limit: 20 })
    const sent = withoutFinishedChunks(session.events.slice(window.start, window.end))
    // The 20th event sent from the end lies in turn 8 (counting the 50 chunks per step it would lie in turn 10).
    const twentieth = withoutFinishedChunks(session.events).at(-20)!
    const turnOf = session.events.slice(0, twentieth.seq + 1).filter(event => event.type === 'turn/start').at(-1)!
    expect(turnOf.data).toEqual({ turn: 8 })
    expect(window.start).toBe(turnOf.seq)
    expect(sent.length).toBeGreaterThanOrEqual(20)
    expect(sent.some(event => event.type === 'assistant/chunk')).toBe(false)
  })

  it('bad paging params are a 400 naming the param; before 0 is an empty page', async () => {
    const { id, events } = await stored()
    for (const params of [{ limit: 0 }, { limit: -1 }, { limit: 1.5 }, { limit: '10' }, { before: -1 }, { before: 'x' }, { before: events.length + 1 }]) {
      const reply = await call('sessions.history', { id, ...params })
      expect(reply.status, JSON.stringify(params)).toBe(400)
      expect(reply.json.error.code).toBe('BAD_PARAMS')
      expect(reply.json.error.message).toContain(Object.keys(params)[0])
    }
    expect(await ok('sessions.history', { id, before: 0, limit: 10 })).toMatchObject({ events: [], from: 0, more: false })
    expect(await ok('sessions.history', { id, before: events.length, limit: 10 })).toMatchObject({ more: true })
  })

  it('a live session pages too, and its tail page continues with the events appended after it', async () => {
    const created = await ok('sessions.create', { cwd: home })
    const session = ctx.sessions.get(created.id)!
    appendLongSession(session, { turns: 30 })
    const tail = await ok('sessions.history', { id: created.id, limit: 50 })
    expect(tail).toMatchObject({ live: true, more: true, length: session.length })
    session.append('session/title', { title: 'later', messageSeqs: [], source: { kind: 'user' } })
    const next = await ok('sessions.history', { id: created.id, from: tail.length })
    expect(next.events).toEqual([expect.objectContaining({ seq: tail.length, type: 'session/title' })])
  })
})
