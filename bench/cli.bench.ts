/**
 * Whole-process figures for the dsh command, as a user runs it:
 * - cold start of `dsh --version` and `dsh --profile headless --dump-config` (medians);
 * - a one-answer headless task against the local fake DeepSeek server (zero model latency);
 * - a headless task of 20 scripted steps, each a `bash` call of `true`: total wall time and
 *   the per-step overhead over the one-answer run.
 * Requires dist/ (npm ci builds it).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FakeDeepSeek, streamResponse, type FakeResponse } from '../test-support/fake-deepseek.js'
import { dshBin } from '../test-support/run-dsh.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 7)

interface Run { ms: number; rssKb: number; code: number | null }

function run(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    // /usr/bin/time is not everywhere; report peak RSS through the child's own resource usage.
    const child = spawn(process.execPath, [dshBin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
    child.on('error', reject)
    child.on('exit', code => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6
      resolve({ ms, rssKb: process.resourceUsage().maxRSS, code })
    })
  })
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function timed(label: string, args: string[], env: Record<string, string>, before?: () => void): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < RUNS; i += 1) {
    before?.()
    const result = await run(args, env)
    if (result.code !== 0) throw new Error(`${label}: exit ${result.code}`)
    times.push(result.ms)
  }
  console.log(`${label.padEnd(44)} median ${median(times).toFixed(1)} ms  (min ${Math.min(...times).toFixed(1)}, max ${Math.max(...times).toFixed(1)}, ${RUNS} runs)`)
  return median(times)
}

const usage = { prompt_tokens: 10, completion_tokens: 2 }
const answer = (): FakeResponse => streamResponse([{ text: 'done' }, { finish: 'stop', usage }])
const bashTrue = (i: number): FakeResponse => streamResponse([{ toolCall: { id: `call-${i}`, name: 'bash', arguments: '{"command":"true","description":"noop"}' } }, { finish: 'tool_calls', usage }])

const server = await FakeDeepSeek.start()
const home = mkdtempSync(join(tmpdir(), 'dsh-bench-home-'))
const cwd = mkdtempSync(join(tmpdir(), 'dsh-bench-work-'))
const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'bench' }
try {
  await timed('dsh --version', ['--version'], env)
  await timed('dsh --profile headless --dump-config', ['--profile', 'headless', '--dump-config'], env)
  const one = await timed('headless one-answer task', ['--profile', 'headless', '--cwd', cwd, 'say done'], env, () => server.enqueue(answer()))
  const steps = 20
  const twenty = await timed(`headless ${steps} bash steps`, ['--profile', 'headless', '--cwd', cwd, 'run true 20 times'], env, () => {
    for (let i = 0; i < steps; i += 1) server.enqueue(bashTrue(i))
    server.enqueue(answer())
  })
  console.log(`per-step overhead (incl. bash spawn and fsync checkpoints): ${((twenty - one) / steps).toFixed(2)} ms`)
} finally {
  await server.close()
}
