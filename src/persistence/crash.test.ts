/**
 * Real crash test (C-1..C-4, D-2..D-5): child processes run a session (a scripted workload, or
 * the real agent loop with a scripted model and the checkpoint policy) with write-behind, report
 * every durable write, and are SIGKILLed at seeded random points; each store is then cold-loaded.
 * Every event reported written before the kill must come back byte for byte, the log must pass
 * the invariants, an interrupted turn must be closed as C-2/C-3 say, and the session must accept
 * a new prompt through the real loop. Reproduce a run with DSH_CRASH_SEED; scale with DSH_CRASH_KILLS.
 */
import { spawn, execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AgentsServicePlugin, LoopInvariantPlugin, ReactLoopPlugin } from '../agent/index.js'
import { LlmServicePlugin } from '../llm/index.js'
import { ToolsPlugin } from '../tools/index.js'
import { SCRIPTED_MODEL, SCRIPTED_PROVIDER, ScriptedModel, text } from '../../test-support/scripted-model.js'
import { CheckpointPolicy } from './checkpoint.js'
import { SessionsServicePlugin } from '../session/service.js'
import { checkLogInvariants } from '../session/invariants.js'
import { createEventTypeRegistry } from '../session/registry.js'
import { interruptedTurnClosers } from '../session/repair.js'
import type { SessionEvent } from '../session/types.js'
import type { PersistenceBackend } from './api.js'
import { JsonlBackend } from './jsonl/backend.js'
import { encodeEvent } from './records.js'
import { SessionPersistence } from './service.js'
import { SqliteBackend } from './sqlite/backend.js'
import { appendTurn, prng } from './testing/workload.js'

const repoRoot = resolve(import.meta.dirname, '../..')
const KILLS = Number(process.env.DSH_CRASH_KILLS ?? 200)
const SEED = Number(process.env.DSH_CRASH_SEED ?? 20261202)
const CONCURRENCY = 6
const CLOCK_START = 1_750_000_000_000

/**
 * `held`: the child stops writing at its first write inside an open turn after `killAfterFlushes`
 * reports and is killed there, a crash point known in advance; otherwise the kill lands after a
 * random delay, wherever the child has got to.
 */
interface Run { index: number; mode: 'workload' | 'loop'; kind: 'jsonl' | 'sqlite'; seed: number; windowMs: number; killAfterFlushes: number; killDelayMs: number; held: boolean }
interface Crash { id: string; lastFlushed: number; hash: string; held?: boolean }

let work: string
let child: string

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'dsh-crash-'))
  // Plain node on a prebuilt bundle starts several times faster than tsx per spawn.
  const cache = join(repoRoot, 'node_modules', '.cache', 'dsh-persistence-crash')
  mkdirSync(cache, { recursive: true })
  child = join(cache, 'child.mjs')
  execFileSync(join(repoRoot, 'node_modules', '.bin', 'esbuild'), [
    join(repoRoot, 'test-support', 'persistence-crash-child.ts'),
    '--bundle', '--platform=node', '--format=esm', '--target=node20', '--packages=external', `--outfile=${child}`, '--log-level=warning',
  ], { cwd: repoRoot })
}, 60_000)

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true })
})

/** Spawns one child, kills it after its Nth durable-write report (plus a short random delay). */
function crashOnce(run: Run, store: string, id: string): Promise<Crash> {
  return new Promise((resolvePromise, reject) => {
    const args = [child, run.mode, run.kind, store, id, String(run.seed), String(run.windowMs), ...run.held ? [String(run.killAfterFlushes)] : []]
    const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let buffered = ''
    let flushes = 0
    const crash: Crash = { id, lastFlushed: -2, hash: '' }
    let killing = false
    let stderr = ''
    proc.stderr.on('data', (data: Buffer) => { stderr += data.toString() })
    proc.stdout.on('data', (data: Buffer) => {
      buffered += data.toString()
      let newline: number
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline)
        buffered = buffered.slice(newline + 1)
        if (line === 'held' && !killing) {
          killing = true
          crash.held = true
          proc.kill('SIGKILL')
          continue
        }
        const match = /^flushed (-?\d+) ([0-9a-f]{64})$/.exec(line)
        if (!match || killing) continue
        crash.lastFlushed = Number(match[1])
        crash.hash = match[2]
        if (!run.held && ++flushes >= run.killAfterFlushes) {
          killing = true
          setTimeout(() => proc.kill('SIGKILL'), run.killDelayMs)
        }
      }
    })
    proc.on('error', reject)
    proc.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`crash child ${run.mode}/${run.kind} exited ${code ?? signal} before the kill: ${stderr}`))
      else resolvePromise(crash)
    })
  })
}

function prefixHash(events: readonly SessionEvent[], through: number): string {
  const hash = createHash('sha256')
  for (let seq = 0; seq <= through; seq++) hash.update(`${encodeEvent(events[seq])}\n`)
  return hash.digest('hex')
}

/** The events the child produced, regenerated in process from the same seed and clock. */
async function reference(id: string, seed: number, length: number): Promise<SessionEvent[]> {
  const ctx = new Context()
  let clock = CLOCK_START
  await ctx.plugin(SessionsServicePlugin, { now: () => clock++ })
  const session = ctx.sessions.create({ id, cwd: '/crash/project' })
  const rng = prng(seed)
  while (session.length < length) await appendTurn(session, { rng })
  return [...session.events]
}

const open = (kind: Run['kind'], store: string): PersistenceBackend =>
  kind === 'sqlite' ? new SqliteBackend({ file: store }) : new JsonlBackend({ root: store })

async function verify(run: Run, store: string, crash: Crash): Promise<{ recovered: number; repaired: boolean }> {
  const { lastFlushed } = crash
  let id = crash.id
  if (run.mode === 'loop') {
    // The loop names its session itself: the store holds exactly one.
    const listing = open(run.kind, store)
    const ids = (await listing.list()).map((s) => s.id)
    await listing.close?.()
    expect(ids, `run ${run.index}: one stored session`).toHaveLength(1)
    id = ids[0]
  }
  const backend = open(run.kind, store)
  // A full runtime, so the recovered session can take a real prompt afterwards.
  const ctx = new Context()
  for (const fiber of [
    ctx.plugin(SessionsServicePlugin, {}),
    ctx.plugin(LlmServicePlugin),
    ctx.plugin(ToolsPlugin),
    ctx.plugin(ReactLoopPlugin),
    ctx.plugin(AgentsServicePlugin, { loop: { provider: SCRIPTED_PROVIDER, model: SCRIPTED_MODEL } }),
    ctx.plugin(LoopInvariantPlugin),
    ctx.plugin(SessionPersistence, { backend, maxDelayMs: 1_000_000, closeBackend: false }),
    ctx.plugin(CheckpointPolicy),
  ]) await fiber.await()
  new ScriptedModel([text('recovered')]).register(ctx)
  const before = await backend.loadStored(id)
  expect(before, `run ${run.index}: stored session`).toBeDefined()
  const kept = before!.events.length
  const { session, repaired } = await ctx.sessionPersistence.load(id)
  // Everything reported written is there, byte for byte.
  expect(kept, `run ${run.index}: kept ${kept} events, written through seq ${lastFlushed}`).toBeGreaterThan(lastFlushed)
  expect(prefixHash(before!.events, lastFlushed), `run ${run.index}: hash of events 0..${lastFlushed}`).toBe(crash.hash)
  if (run.mode === 'workload') {
    // The workload is deterministic: whatever else was stored is a true prefix of it too.
    const expected = await reference(id, run.seed, kept + 1)
    expect(session.events.slice(0, kept).map(encodeEvent)).toEqual(expected.slice(0, kept).map(encodeEvent))
  }
  // C-2/C-3: the closers are exactly those of the kept prefix.
  expect(repaired.map(encodeEvent)).toEqual(interruptedTurnClosers(before!.events).map(encodeEvent))
  if (repaired.length) expect(repaired.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'interrupted' } } })
  if (run.held) {
    // Killed where it held: exactly what it reported is stored, and that ends inside a turn.
    expect(crash.held, `run ${run.index}: the child held before the kill`).toBe(true)
    expect(kept, `run ${run.index}: nothing stored after the held write`).toBe(lastFlushed + 1)
    expect(repaired.length, `run ${run.index}: a turn cut open is closed`).toBeGreaterThan(0)
  }
  const position = checkLogInvariants(session.events, createEventTypeRegistry())
  expect(position.turnOpen).toBe(false)
  // The session is live again: the real loop takes a new prompt (A-11 checks the request
  // against the repaired log), and the turn survives another cold load.
  const agent = ctx.agents.create({ sessionId: session.id })
  agent.followup('are you back?')
  await agent.whenIdle()
  expect(session.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
  await ctx.sessionPersistence.flush(session)
  const again = await backend.loadStored(id)
  expect(again!.events.map(encodeEvent)).toEqual(session.events.map(encodeEvent))
  expect(again!.torn).toBeUndefined()
  await backend.close?.()
  return { recovered: kept, repaired: repaired.length > 0 }
}

describe('persistence crash test (SIGKILL)', () => {
  it(`C-1..C-4, D-2, D-5: ${KILLS} kills at seeded random points lose nothing flushed and recover`, async () => {
    const rng = prng(SEED)
    const runs: Run[] = Array.from({ length: KILLS }, (_, index) => ({
      index,
      kind: index % 2 === 0 ? 'jsonl' : 'sqlite',
      mode: index % 4 < 2 ? 'workload' : 'loop',
      seed: Math.floor(rng() * 1e9),
      windowMs: [0, 1, 5, 200][Math.floor(rng() * 4)],
      killAfterFlushes: 1 + Math.floor(rng() * 16),
      killDelayMs: Math.floor(rng() * 4),
      // Every fifth run, each kind and mode in turn, crashes at a known point inside a turn.
      held: index % 5 === 0,
    }))
    const totals = { kills: 0, held: 0, recovered: 0, repaired: 0, jsonl: 0, sqlite: 0, workload: 0, loop: 0, childMs: 0, verifyMs: 0 }
    const started = performance.now()
    let next = 0
    const worker = async () => {
      while (next < runs.length) {
        const run = runs[next++]
        const id = `crash-${run.index}`
        const store = run.kind === 'sqlite' ? join(work, `${id}.db`) : join(work, id)
        let at = performance.now()
        const crash = await crashOnce(run, store, id)
        totals.childMs += performance.now() - at
        at = performance.now()
        const { recovered, repaired } = await verify(run, store, crash)
        totals.verifyMs += performance.now() - at
        totals.kills++
        totals[run.kind]++
        totals[run.mode]++
        totals.recovered += recovered
        if (repaired) totals.repaired++
        if (run.held) totals.held++
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))
    console.log(`crash test (seed ${SEED}): ${totals.kills} kills (${totals.jsonl} jsonl, ${totals.sqlite} sqlite; ${totals.workload} workload, ${totals.loop} real loop), ` +
      `${totals.recovered} events recovered, ${totals.repaired} interrupted turns closed (${totals.held} at a held crash point), ${Math.round(performance.now() - started)} ms (children ${Math.round(totals.childMs)} ms, verification ${Math.round(totals.verifyMs)} ms summed over workers)`)
    expect(totals.kills).toBe(KILLS)
    // At least the held runs, whatever the timing of the others.
    expect(totals.repaired).toBeGreaterThanOrEqual(totals.held)
    expect(totals.held).toBe(Math.ceil(KILLS / 5))
    expect(existsSync(child)).toBe(true)
  }, 600_000)
})
