/**
 * Terminal round trips through the tools pipeline, in a real PTY: `terminal_open` (a shell up to
 * its first prompt), `terminal_send` of `echo x` to its result, and `terminal_close` until the
 * process tree is gone. The first open pays for loading node-pty and the emulator; it is shown
 * apart. Prints medians and the slowest run; no asserts.
 *
 *   npx tsx bench/pty.bench.ts            # BENCH_RUNS=20 by default
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { SessionsServicePlugin } from '../src/session/index.js'
import { ToolsPlugin } from '../src/tools/index.js'
import { PtyPlugin } from '../src/pty/index.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 20)
const cwd = mkdtempSync(join(tmpdir(), 'dsh-bench-pty-'))
const ctx = new Context()
const fibers = [ctx.plugin(SessionsServicePlugin), ctx.plugin(ToolsPlugin), ctx.plugin(PtyPlugin)]
for (const fiber of fibers) await fiber.await()
const session = ctx.sessions.create({ cwd })
let calls = 0
async function call(name: string, args: unknown): Promise<number> {
  const started = performance.now()
  const record = await ctx.tools.execute({ callId: `c${++calls}`, name, arguments: JSON.stringify(args) }, { cwd, signal: new AbortController().signal, session })
  if (record.isError) throw new Error(`${name} failed: ${JSON.stringify(record.content)}`)
  return performance.now() - started
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const max = (values: number[]) => Math.max(...values)
const fmt = (ms: number) => `${ms.toFixed(1)} ms`

try {
  const opens: number[] = []
  const sends: number[] = []
  const closes: number[] = []
  let first: number | undefined
  for (let i = 1; i <= RUNS + 1; i++) {
    const open = await call('terminal_open', { type: 'shell' })
    const id = `pty-${i}`
    const send = await call('terminal_send', { sessionId: id, text: 'echo x' })
    const close = await call('terminal_close', { sessionId: id })
    if (i === 1) { first = open; continue }
    opens.push(open); sends.push(send); closes.push(close)
  }
  console.log(`pty round trips (${RUNS} runs, shell backend, settleMs 60)`)
  console.log(`  first terminal_open (loads node-pty + @xterm/headless): ${fmt(first!)}`)
  console.log(`  terminal_open          median ${fmt(median(opens))}   max ${fmt(max(opens))}`)
  console.log(`  terminal_send echo x   median ${fmt(median(sends))}   max ${fmt(max(sends))}`)
  console.log(`  terminal_close         median ${fmt(median(closes))}   max ${fmt(max(closes))}`)
  console.log(`  open + send + close    median ${fmt(median(opens.map((o, i) => o + sends[i]! + closes[i]!)))}`)
} finally {
  for (const fiber of fibers.reverse()) await fiber.dispose()
  rmSync(cwd, { recursive: true, force: true })
}
