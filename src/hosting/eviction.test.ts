import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { SessionsServicePlugin } from '../session/service.js'
import { SessionPersistence } from '../persistence/service.js'
import { JsonlBackend } from '../persistence/jsonl/backend.js'
import { appendTurn, prng } from '../persistence/testing/workload.js'
import { SessionEviction } from './eviction.js'

const dirs: string[] = []
const contexts: Context[] = []
afterEach(async () => {
  for (const ctx of contexts.splice(0)) await ctx.sessionPersistence.flushAll()
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function boot(config: { idleMs?: number; maxLive?: number }) {
  const dir = await mkdtemp(join(tmpdir(), 'dsh-evict-'))
  dirs.push(dir)
  let clock = 1_000_000
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin)
  await ctx.plugin(SessionPersistence, { backend: new JsonlBackend({ root: dir }), report: () => undefined })
  await ctx.plugin(SessionEviction, { ...config, now: () => clock })
  contexts.push(ctx)
  return { ctx, advance: (ms: number) => { clock += ms } }
}

describe('session eviction (many sessions in one server)', () => {
  it('keeps at most maxLive sessions live, unloading the least recently used idle ones; they reload from the store', async () => {
    const { ctx } = await boot({ maxLive: 2, idleMs: 1e9 })
    const sessions = []
    for (let i = 0; i < 3; i++) {
      const session = ctx.sessions.create({ id: `s${i}` })
      await appendTurn(session, { rng: prng(i) })
      sessions.push(session)
      // Creating a third live session starts a sweep at once (awaited here: same promise).
      await ctx.sessionEviction.sweep()
    }
    expect(ctx.sessions.list().map((s) => s.id).sort()).toEqual(['s1', 's2'])
    // s1 is used now, so the next one over the bound evicts s2 instead.
    sessions[1].append('session/title', { title: 'recent', messageSeqs: [], source: { kind: 'user' } })
    const s3 = ctx.sessions.create({ id: 's3' })
    expect(await ctx.sessionEviction.sweep()).toEqual(['s2'])
    expect(ctx.sessions.list().map((s) => s.id).sort()).toEqual(['s1', 's3'])
    expect(s3.live).toBe(true)
    const { session, repaired } = await ctx.sessionPersistence.load('s1')
    expect(repaired).toEqual([])
    expect(session.events.map((e) => e.seq)).toEqual(sessions[1].events.map((e) => e.seq))
  })

  it('never unloads a session with an open turn; idle ones go after idleMs', async () => {
    const { ctx, advance } = await boot({ maxLive: 100, idleMs: 60_000 })
    const open = ctx.sessions.create({ id: 'open' })
    await appendTurn(open, { rng: prng(1), stopAfter: 5 })
    const closed = ctx.sessions.create({ id: 'closed' })
    await appendTurn(closed, { rng: prng(2) })
    expect(await ctx.sessionEviction.sweep()).toEqual([])
    advance(60_000)
    expect(await ctx.sessionEviction.sweep()).toEqual(['closed'])
    expect(ctx.sessions.get('open')?.live).toBe(true)
    expect((await ctx.sessionPersistence.inspect('closed')).stored?.length).toBe(closed.length)
  })
})

describe('session eviction and background jobs (docs/jobs.md)', () => {
  it('an idle session whose background job still runs is kept (unloading would stop the job); it goes once the job has ended', async () => {
    const { ctx, advance } = await boot({ maxLive: 100, idleMs: 60_000 })
    let running = true
    ctx.provide('jobs', { list: (id: string) => id === 'serving' ? [{ id: 'bash-1', status: running ? 'running' : 'completed' }] : [] } as never)
    const serving = ctx.sessions.create({ id: 'serving' })
    await appendTurn(serving, { rng: prng(3) })
    const quiet = ctx.sessions.create({ id: 'quiet' })
    await appendTurn(quiet, { rng: prng(4) })
    advance(60_000)
    expect(await ctx.sessionEviction.sweep()).toEqual(['quiet'])
    expect(serving.live).toBe(true)
    running = false
    expect(await ctx.sessionEviction.sweep()).toEqual(['serving'])
  })
})
