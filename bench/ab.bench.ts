/**
 * Two builds of dsh side by side on the whole-process tasks of targets.bench.ts (one answer, and
 * 20 `bash true` steps), in pairs: each pair runs A then B, or B then A (alternating), against
 * the same fake model server, so a change of load hits both. Prints each build's medians and the
 * median of the pairs' differences (B - A), which is what to read on a noisy machine.
 *
 *   BENCH_A=/tmp/dsh-before/bin/dsh.js npx tsx bench/ab.bench.ts   # B defaults to this checkout
 *   BENCH_PAIRS=30 BENCH_TASKS=steps BENCH_A=... BENCH_B=... npx tsx bench/ab.bench.ts
 *
 * Build the other commit as docs/benchmarks.md, "Comparing two builds", says.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FakeDeepSeek, streamResponse, type FakeResponse } from '../test-support/fake-deepseek.js'
import { dshBin } from '../test-support/run-dsh.js'
import { median, runNode, type Run } from './support/whole-process.js'

const a = process.env.BENCH_A
const b = process.env.BENCH_B ?? dshBin
if (a === undefined) throw new Error('BENCH_A=path/to/bin/dsh.js names the build to compare with (B: BENCH_B, default this checkout)')
const PAIRS = Number(process.env.BENCH_PAIRS ?? 20)
const STEPS = Number(process.env.BENCH_STEPS ?? 20)
const tasks = (process.env.BENCH_TASKS ?? 'answer,steps').split(',')

const usage = { prompt_tokens: 10, completion_tokens: 2 }
const answer = (): FakeResponse => streamResponse([{ text: 'done' }, { finish: 'stop', usage }])
const bashTrue = (i: number): FakeResponse => streamResponse([{ toolCall: { id: `call-${i}`, name: 'bash', arguments: '{"command":"true","description":"noop"}' } }, { finish: 'tool_calls', usage }])

const server = await FakeDeepSeek.start()
const scratch = mkdtempSync(join(tmpdir(), 'dsh-bench-ab-'))
try {
  const run = (bin: string, which: string, responses: FakeResponse[], prompt: string): Promise<Run> => {
    const home = join(scratch, which)
    const cwd = join(scratch, `${which}-work`)
    mkdirSync(home, { recursive: true, mode: 0o700 })
    mkdirSync(cwd, { recursive: true })
    server.discardPending()
    server.enqueue(...responses)
    return runNode(bin, ['--profile', 'headless', '--cwd', cwd, prompt], { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'bench' })
  }
  const kinds: Record<string, { responses: () => FakeResponse[]; prompt: string }> = {
    answer: { responses: () => [answer()], prompt: 'say done' },
    steps: { responses: () => [...Array.from({ length: STEPS }, (_, i) => bashTrue(i)), answer()], prompt: `run true ${STEPS} times` },
  }
  for (const name of tasks) {
    const kind = kinds[name]
    if (kind === undefined) throw new Error(`unknown task ${name} (answer, steps)`)
    // One unmeasured run each: code caches written, files in the page cache.
    await run(a, 'a', kind.responses(), kind.prompt)
    await run(b, 'b', kind.responses(), kind.prompt)
    const runsA: Run[] = []
    const runsB: Run[] = []
    for (let i = 0; i < PAIRS; i++) {
      if (i % 2 === 0) {
        runsA.push(await run(a, 'a', kind.responses(), kind.prompt))
        runsB.push(await run(b, 'b', kind.responses(), kind.prompt))
      } else {
        runsB.push(await run(b, 'b', kind.responses(), kind.prompt))
        runsA.push(await run(a, 'a', kind.responses(), kind.prompt))
      }
    }
    const line = (label: string, runs: Run[]) => `${label}: ${median(runs.map(r => r.ms)).toFixed(0)} ms wall (min ${Math.min(...runs.map(r => r.ms)).toFixed(0)}), ${median(runs.map(r => r.cpuMs)).toFixed(0)} ms CPU, ${(median(runs.map(r => r.rssKb)) / 1024).toFixed(0)} MB`
    console.log(`-- ${name} (${PAIRS} pairs)`)
    console.log(line('A', runsA))
    console.log(line('B', runsB))
    const wall = median(runsA.map((r, i) => runsB[i]!.ms - r.ms))
    const cpu = median(runsA.map((r, i) => runsB[i]!.cpuMs - r.cpuMs))
    console.log(`B - A, median of pairs: wall ${wall >= 0 ? '+' : ''}${wall.toFixed(1)} ms, CPU ${cpu >= 0 ? '+' : ''}${cpu.toFixed(1)} ms`)
  }
} finally {
  await server.close()
  rmSync(scratch, { recursive: true, force: true })
}
