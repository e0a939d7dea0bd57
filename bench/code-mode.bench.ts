/**
 * Code mode (docs/code-mode.md): what one inner tool call costs through `run_code` against the
 * same call made directly (target: at most 2 ms more per call), and what starting a program
 * costs (an empty program) on each runtime: the worker, and the confined process under
 * bubblewrap when it works here. Prints numbers only.
 * Run: npx tsx bench/code-mode.bench.ts [calls]
 */
import { Context } from 'cordis'
import { SessionsServicePlugin } from '../src/session/index.js'
import { ToolsPlugin } from '../src/tools/registry.js'
import { CodeModePlugin } from '../src/code-mode/index.js'
import { workerCodeRuntime } from '../src/code-runtime/worker.js'
import { confinedCodeRuntime } from '../src/code-runtime/confined.js'
import { bwrapRunner, probeRunner } from '../src/sandbox/runner.js'
import type { CodeRuntime } from '../src/code-runtime/api.js'

const calls = Number(process.argv[2] ?? 500)
const signal = new AbortController().signal

async function runtimeContext(runtime: CodeRuntime) {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin).await()
  await ctx.plugin(ToolsPlugin).await()
  await ctx.plugin(CodeModePlugin, { mode: 'both', codeRuntime: runtime }).await()
  ctx.tools.register({ name: 'noop', description: 'Nothing.', parameters: { type: 'object', properties: {} }, isConcurrencySafe: () => true, execute: () => ({ content: [{ type: 'text', text: 'ok' }], value: 1 }) })
  const session = ctx.sessions.create({ cwd: process.cwd() })
  let n = 0
  const execute = (name: string, args: unknown) => ctx.tools.execute({ callId: `c${++n}`, name, arguments: JSON.stringify(args) }, { cwd: process.cwd(), signal, session })
  return { ctx, execute }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

async function timeIt(fn: () => Promise<unknown>, repeat: number): Promise<number> {
  await fn()
  const samples: number[] = []
  for (let i = 0; i < repeat; i++) {
    const start = performance.now()
    await fn()
    samples.push(performance.now() - start)
  }
  return median(samples)
}

const line = (label: string, ms: number, unit = 'ms') => console.log(`${label.padEnd(52)} ${ms.toFixed(3).padStart(9)} ${unit}`)

const worker = await runtimeContext(workerCodeRuntime())
const direct = await timeIt(async () => { for (let i = 0; i < calls; i++) await worker.execute('noop', {}) }, 5) / calls
line('direct call (ctx.tools.execute, session appends)', direct, 'ms/call')
const empty = await timeIt(() => worker.execute('run_code', { code: 'return 1', description: 'bench' }), 10)
line('run_code, empty program (worker start-up)', empty)
const many = await timeIt(() => worker.execute('run_code', { code: `for (let i = 0; i < ${calls}; i++) await tools.noop({})`, description: 'bench' }), 5)
const inner = (many - empty) / calls
line(`inner call through run_code (${calls} calls, start-up taken off)`, inner, 'ms/call')
line('  more than direct (target <= 2 ms)', inner - direct, 'ms/call')

const problem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (problem === undefined) {
  const runner = bwrapRunner()
  const confined = await runtimeContext(confinedCodeRuntime({ prefix: async () => runner.argv('read-only', process.cwd(), undefined, { mode: 'none' }) }))
  line('run_code, empty program (confined start-up)', await timeIt(() => confined.execute('run_code', { code: 'return 1', description: 'bench' }), 10))
  const confinedMany = await timeIt(() => confined.execute('run_code', { code: `for (let i = 0; i < ${calls}; i++) await tools.noop({})`, description: 'bench' }), 3)
  const confinedEmpty = await timeIt(() => confined.execute('run_code', { code: 'return 1', description: 'bench' }), 3)
  line('inner call through confined run_code', (confinedMany - confinedEmpty) / calls, 'ms/call')
} else {
  console.log(`confined runtime not measured: ${problem}`)
}
process.exit(0)
