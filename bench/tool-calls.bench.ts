/**
 * Scheduler overhead: calls per second through runToolCalls + ctx.tools (validation, the three
 * pipeline waterfalls, ordered commit) for batches of trivial tools, parallel and exclusive, at
 * a few pool sizes. Bodies finish in reverse order within each batch to exercise the commit wait.
 * Prints numbers only. Run: npx tsx bench/tool-calls.bench.ts [calls-per-batch] [batches]
 */
import { Context } from 'cordis'
import { runToolCalls } from '../src/agent/tool-calls.js'
import type { ToolExecution } from '../src/tools/api.js'
import { defineTool } from '../src/tools/define.js'
import { ToolsPlugin } from '../src/tools/registry.js'
import { z } from 'zod'

const perBatch = Number(process.argv[2] ?? 50)
const batches = Number(process.argv[3] ?? 200)

const ctx = new Context()
await ctx.plugin(ToolsPlugin)
ctx.tools.register(defineTool({
  name: 'echo',
  description: 'echo',
  schema: z.object({ text: z.string(), delay: z.number().int() }),
  isConcurrencySafe: () => true,
  // Later calls finish earlier: `delay` microtask hops, counted down from the batch size.
  execute: async (args) => {
    for (let i = 0; i < args.delay; i++) await Promise.resolve()
    return { content: [{ type: 'text', text: args.text }] }
  },
}))
ctx.tools.register(defineTool({
  name: 'solo',
  description: 'exclusive echo',
  schema: z.object({ text: z.string(), delay: z.number().int() }),
  execute: (args) => ({ content: [{ type: 'text', text: args.text }] }),
}))

async function measure(name: string, tool: string, pool: number): Promise<void> {
  const signal = new AbortController().signal
  let seq = 0
  let results = 0
  const started = performance.now()
  for (let b = 0; b < batches; b++) {
    const calls: ToolExecution[] = Array.from({ length: perBatch }, (_, i) => ({
      callId: `c${b}-${i}`, name: tool, arguments: JSON.stringify({ text: `t${i}`, delay: perBatch - i }),
    }))
    await runToolCalls({
      calls, tools: ctx.tools, signal, context: { cwd: '.' },
      maxParallelToolCalls: () => pool,
      startCall: async () => ++seq,
      commitResult: () => { results++ },
      abortedBeforeDispatch: async () => {},
    })
  }
  const ms = performance.now() - started
  console.log(`${name.padEnd(22)} ${String(results).padStart(7)} calls  ${(ms).toFixed(1).padStart(8)} ms  ${Math.round(results / (ms / 1000)).toString().padStart(8)} calls/s`)
}

console.log(`batches=${batches} calls/batch=${perBatch}`)
await measure('parallel pool=1', 'echo', 1)
await measure('parallel pool=10', 'echo', 10)
await measure(`parallel pool=${perBatch}`, 'echo', perBatch)
await measure('exclusive', 'solo', 10)
