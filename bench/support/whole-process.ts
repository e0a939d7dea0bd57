/**
 * Shared by the whole-process benchmarks (cli.bench.ts, targets.bench.ts): running the built
 * `dsh` (or a peer) as a child with its own CPU time and peak RSS, reading the log's own clock,
 * and storing big realistic sessions where dsh looks for them.
 */
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { JsonlBackend } from '../../src/persistence/jsonl/backend.js'
import { appendTurn, prng } from '../../src/persistence/testing/workload.js'
import type { Session } from '../../src/session/api.js'
import { SessionsServicePlugin } from '../../src/session/service.js'

const peakRssPreload = join(import.meta.dirname, 'peak-rss.cjs')

export interface Run { ms: number; rssKb: number; cpuMs: number }

/**
 * Spawns `node <script> ...args` with the peak-RSS preload and resolves with its wall time
 * (spawn to exit), its own CPU time and its peak RSS. A non-zero exit rejects.
 */
export function runNode(script: string, args: readonly string[], env: Record<string, string>, options: { cwd?: string } = {}): Promise<Run> {
  const rssFile = join(tmpdir(), `dsh-bench-rss-${process.pid}-${Math.random().toString(36).slice(2)}`)
  writeFileSync(rssFile, '')
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(process.execPath, ['--require', peakRssPreload, script, ...args], {
      cwd: options.cwd,
      env: { ...process.env, ...env, DSH_BENCH_RSS_FILE: rssFile },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (text: string) => { stderr += text })
    child.on('error', reject)
    child.on('exit', code => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      const [rssKb, cpuUs] = readFileSync(rssFile, 'utf8').trim().split(' ').map(Number)
      rmSync(rssFile, { force: true })
      if (code !== 0) reject(new Error(`${script} ${args.join(' ')}: exit ${code}\n${stderr}`))
      else resolve({ ms, rssKb, cpuMs: cpuUs / 1000 })
    })
  })
}

/** The session.jsonl most recently written under `home`. */
export function newestLog(home: string): string {
  const root = join(home, 'sessions')
  const logs = readdirSync(root).filter(key => !key.startsWith('.')).flatMap(key =>
    readdirSync(join(root, key)).map(id => join(root, key, id, 'session.jsonl')))
  return logs.map(path => ({ path, mtime: statSync(path).mtimeMs })).sort((a, b) => b.mtime - a.mtime)[0].path
}

interface Phases { cycleMs: number; toolMs: number }

/**
 * Steady per-step cycle from the log's own clock: the time between the `step/start` of step 2
 * and that of the last step of the last turn, per step; and the mean `durationMs` the tool
 * reported for its calls in those steps (spawn to close of the process, measured by dsh).
 */
export function stepPhases(home: string): Phases {
  const starts: { turn: number; time: number }[] = []
  const durations: number[] = []
  for (const line of readFileSync(newestLog(home), 'utf8').split('\n')) {
    if (line.includes('"type":"step/start"')) {
      const event = JSON.parse(line) as { time: number; data: { turn: number } }
      starts.push({ turn: event.data.turn, time: event.time })
    } else if (line.includes('"type":"tool/result"')) {
      const event = JSON.parse(line) as { data: { meta?: { durationMs?: number } } }
      if (typeof event.data.meta?.durationMs === 'number') durations.push(event.data.meta.durationMs)
    }
  }
  const last = starts[starts.length - 1].turn
  const turn = starts.filter(start => start.turn === last)
  const steps = turn.length - 2
  const tool = durations.slice(-steps)
  return { cycleMs: (turn[turn.length - 1].time - turn[1].time) / steps, toolMs: tool.length === 0 ? 0 : tool.reduce((a, b) => a + b, 0) / tool.length }
}

export const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/**
 * Compacts the whole current surface into one summary message, the events the compaction plugin
 * writes after a summary call (start, summary, replacing user/message, end).
 */
function compactSurface(session: Session, surface: number[], id: string): number[] {
  const [first, last] = [surface[0], surface[surface.length - 1]]
  const turn = session.position.turn
  const start = session.append('compaction/start', { compactionId: id, turn })
  const summary = session.append('compaction/summary', {
    compactionId: id, summary: [{ type: 'text', text: `summary ${id}` }], shadowedRange: { start: first, end: last },
    shadowedSeqs: surface, shadowedTokenCount: surface.length * 40, provider: 'deepseek-official', model: 'deepseek-v4-flash', maxTokens: 4096,
  })
  const message = session.append('user/message', {
    id: `summary-${id}`, role: 'user', source: { kind: 'plugin', plugin: 'compaction', compactionId: id },
    content: [{ type: 'text', text: `Summary of the earlier conversation (${id}).` }],
  }, { surfaceOp: { op: 'replace', start: first, end: last }, sourceEventSeqs: [start.seq, summary.seq, ...surface] })
  session.append('compaction/end', { compactionId: id, turn })
  return [message.seq]
}

/**
 * Stores a realistic session of at least `count` events (whole turns) where dsh looks for it
 * (`<home>/sessions`, JSONL). With `compactEvery`, the surface is compacted each time that many
 * events were added since the last compaction (unless the log is nearly done), so the model
 * context stays about as large as a `compactEvery`-event session's while the log grows, as it
 * does in long real sessions. Returns the number of events.
 */
export async function storeSession(home: string, cwd: string, id: string, count: number, compactEvery?: number): Promise<number> {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin, {})
  const session = ctx.sessions.create({ id, cwd })
  const rng = prng(42)
  let surface: number[] = []
  let since = 0
  while (session.length < count) {
    const from = session.length
    await appendTurn(session, { rng })
    for (let seq = from; seq < session.length; seq += 1) if (session.events[seq].surfaceOp === 'append') surface.push(seq)
    since += session.length - from
    if (compactEvery !== undefined && since >= compactEvery && count - session.length > compactEvery) {
      surface = compactSurface(session, surface, `c${session.length}`)
      since = 0
    }
  }
  const backend = new JsonlBackend({ root: join(home, 'sessions') })
  await backend.create(session.header, [])
  for (let at = 0; at < session.length; at += 5000) await backend.appendBatch(session.header, session.events.slice(at, at + 5000))
  await backend.close()
  return session.length
}

/** One line of a target table: `figure  value  target  ok/over`. */
export function targetLine(figure: string, value: string, target: string, ok: boolean): string {
  return `${figure.padEnd(58)} ${value.padStart(12)}  ${target.padEnd(14)} ${ok ? 'ok' : 'over'}`
}
