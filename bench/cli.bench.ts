/**
 * Whole-process figures for the dsh command, as a user runs it (each number is a median of
 * BENCH_RUNS runs, default 7; see docs/benchmarks.md):
 * - cold start of `dsh --version` and `dsh --profile headless --dump-config`;
 * - a one-answer headless task against the local fake DeepSeek server (zero model latency);
 * - a task of 20 (BENCH_STEPS) scripted steps, each a `bash` call of `true`, and the same with
 *   `read` of a small file (no process started): per-step cost as the whole-process difference
 *   to the one-answer run, and the steady step (the log's own step/start times, step 2 to the
 *   last), which leaves out start-up, cold load and exit and so is far less noisy;
 * - the same on a stored session already holding ~1k and ~100k events (`--session ID`): the
 *   one-time cold load (resume of one answer minus a fresh one answer) and the per-step
 *   overhead, which should not grow with the log;
 * - peak RSS of each kind of run (the child's own `maxRSS`, reported through a preload).
 * Requires dist/ (npm ci builds it). BENCH_DSH_BIN=path/to/bin/dsh.js measures another build (e.g. a
 * copy of an older commit) under the same conditions.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FakeDeepSeek, streamResponse, type FakeResponse } from '../test-support/fake-deepseek.js'
import { dshBin } from '../test-support/run-dsh.js'
import { median, newestLog, storeSession } from './support/whole-process.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 7)
const STEPS = Number(process.env.BENCH_STEPS ?? 20)
const bin = process.env.BENCH_DSH_BIN ?? dshBin
/** BENCH_RESUME=0 skips the stored-session runs (the fresh-session figures take seconds, not minutes). */
const RESUME = process.env.BENCH_RESUME !== '0'
const peakRssPreload = join(import.meta.dirname, 'support', 'peak-rss.cjs')

interface Run { ms: number; rssKb: number; cpuMs: number }

function run(args: string[], env: Record<string, string>): Promise<Run> {
  const rssFile = join(tmpdir(), `dsh-bench-rss-${process.pid}`)
  writeFileSync(rssFile, '')
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(process.execPath, ['--require', peakRssPreload, bin, ...args], {
      env: { ...process.env, ...env, DSH_BENCH_RSS_FILE: rssFile },
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    child.on('error', reject)
    child.on('exit', code => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      const [rssKb, cpuUs] = readFileSync(rssFile, 'utf8').trim().split(' ').map(Number)
      rmSync(rssFile, { force: true })
      if (code !== 0) reject(new Error(`dsh ${args.join(' ')}: exit ${code}`))
      else resolve({ ms, rssKb, cpuMs: cpuUs / 1000 })
    })
  })
}

/**
 * Steady per-step cycle from the log's own clock: the time between the `step/start` of step 2
 * and that of the last step of the last turn, per step. Leaves out process start, cold load,
 * the first request's connection set-up and exit, so it shows only what every further step costs.
 */
function stepCycleMs(home: string): number {
  const starts: { turn: number; time: number }[] = []
  for (const line of readFileSync(newestLog(home), 'utf8').split('\n')) {
    if (!line.includes('"type":"step/start"')) continue
    const event = JSON.parse(line) as { time: number; data: { turn: number } }
    starts.push({ turn: event.data.turn, time: event.time })
  }
  const last = starts[starts.length - 1].turn
  const turn = starts.filter(start => start.turn === last)
  return (turn[turn.length - 1].time - turn[1].time) / (turn.length - 2)
}

interface Timed { ms: number; cpuMs: number; rssMb: number; cycleMs?: number }

async function timed(label: string, args: string[], env: Record<string, string>, before?: () => void, cycles?: boolean): Promise<Timed> {
  const runs: Run[] = []
  const cycleTimes: number[] = []
  for (let i = 0; i < RUNS; i += 1) {
    before?.()
    runs.push(await run(args, env))
    if (cycles) cycleTimes.push(stepCycleMs(env.DSH_HOME))
  }
  const times = runs.map(r => r.ms)
  const cpuMs = median(runs.map(r => r.cpuMs))
  const rssMb = Math.max(...runs.map(r => r.rssKb)) / 1024
  const cycleMs = cycles ? median(cycleTimes) : undefined
  console.log(`${label.padEnd(46)} median ${median(times).toFixed(1).padStart(7)} ms  (min ${Math.min(...times).toFixed(1)}, max ${Math.max(...times).toFixed(1)}), CPU ${cpuMs.toFixed(0)} ms, peak RSS ${rssMb.toFixed(0)} MB` +
    (cycleMs === undefined ? '' : `, steady step ${cycleMs.toFixed(2)} ms`))
  return { ms: median(times), cpuMs, rssMb, cycleMs }
}

const usage = { prompt_tokens: 10, completion_tokens: 2 }
const answer = (): FakeResponse => streamResponse([{ text: 'done' }, { finish: 'stop', usage }])
const readFile = (i: number): FakeResponse => streamResponse([{ toolCall: { id: `read-${i}`, name: 'read', arguments: '{"file_path":"notes.txt"}' } }, { finish: 'tool_calls', usage }])
const bashTrue = (i: number): FakeResponse => streamResponse([{ toolCall: { id: `call-${i}`, name: 'bash', arguments: '{"command":"true","description":"noop"}' } }, { finish: 'tool_calls', usage }])

const server = await FakeDeepSeek.start()
const home = mkdtempSync(join(tmpdir(), 'dsh-bench-home-'))
const cwd = mkdtempSync(join(tmpdir(), 'dsh-bench-work-'))
const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'bench' }
const answerOnly = () => { server.requests.splice(0); server.enqueue(answer()) }
const steps = () => {
  server.requests.splice(0)
  for (let i = 0; i < STEPS; i += 1) server.enqueue(bashTrue(i))
  server.enqueue(answer())
}
const lastRequestBytes = () => Buffer.byteLength(server.requests[server.requests.length - 1]?.raw ?? '')
const reads = () => {
  server.requests.splice(0)
  for (let i = 0; i < STEPS; i += 1) server.enqueue(readFile(i))
  server.enqueue(answer())
}
const task = (session?: string) => ['--profile', 'headless', '--cwd', cwd, ...session === undefined ? [] : ['--session', session]]
try {
  await timed('dsh --version', ['--version'], env)
  await timed('dsh --profile headless --dump-config', ['--profile', 'headless', '--dump-config'], env)
  const one = await timed('headless one-answer task', [...task(), 'say done'], env, answerOnly)
  const many = await timed(`headless ${STEPS} bash steps`, [...task(), `run true ${STEPS} times`], env, steps, true)
  const fresh = (many.ms - one.ms) / STEPS
  console.log(`per step, fresh session: ${fresh.toFixed(2)} ms wall, ${((many.cpuMs - one.cpuMs) / STEPS).toFixed(2)} ms dsh CPU (whole-process differences); steady step ${many.cycleMs!.toFixed(2)} ms (bash spawn, HTTP round trip, fsync checkpoints included)`)

  // Each resumed run appends one more turn, so the logs grow slightly over the runs.
  // The same loop with a tool that starts no process: what the harness itself adds per step.
  writeFileSync(join(cwd, 'notes.txt'), 'a short file\n')
  const readMany = await timed(`headless ${STEPS} read steps (no process)`, [...task(), `read notes ${STEPS} times`], env, reads, true)
  console.log(`per step without a process: ${((readMany.ms - one.ms) / STEPS).toFixed(2)} ms wall, ${((readMany.cpuMs - one.cpuMs) / STEPS).toFixed(2)} ms dsh CPU; steady step ${readMany.cycleMs!.toFixed(2)} ms`)

  const perStep: Record<string, number> = {}
  const sessions = [
    ['1k', 1_000, undefined, '1k'],
    ['100k', 100_000, 1_000, '100k compacted'],
    ['100k-full', 100_000, undefined, '100k uncompacted'],
  ] as const
  for (const [key, count, compactEvery, label] of RESUME ? sessions : []) {
    const id = `bench-${key}`
    const events = await storeSession(home, cwd, id, count, compactEvery)
    const resumeOne = await timed(`resume ${label} (${events} events): one answer`, [...task(id), 'say done'], env, answerOnly)
    const resumeMany = await timed(`resume ${label}: ${STEPS} bash steps`, [...task(id), `run true ${STEPS} times`], env, steps, true)
    perStep[key] = resumeMany.cycleMs!
    console.log(`resume ${label}: cold load ${(resumeOne.ms - one.ms).toFixed(1)} ms wall, ${(resumeOne.cpuMs - one.cpuMs).toFixed(0)} ms CPU over a fresh session; ` +
      `per step: ${((resumeMany.ms - resumeOne.ms) / STEPS).toFixed(2)} ms wall, ${((resumeMany.cpuMs - resumeOne.cpuMs) / STEPS).toFixed(2)} ms CPU (whole-process differences), steady step ${perStep[key].toFixed(2)} ms; request body ${(lastRequestBytes() / 1024).toFixed(0)} KB`)
  }
  if (RESUME) console.log(`steady step 100k (compacted) / 1k: ${(perStep['100k'] / perStep['1k']).toFixed(2)}x; 100k uncompacted / 1k: ${(perStep['100k-full'] / perStep['1k']).toFixed(2)}x`)
} finally {
  await server.close()
  rmSync(home, { recursive: true, force: true })
  rmSync(cwd, { recursive: true, force: true })
}
