/**
 * The lsp tool with the real typescript-language-server on the small test project
 * (test-support/lsp.ts): the first answer of a fresh pool (spawn, initialize, open the file, a
 * definition), then warm queries on the running server (definition, references, hover; a median
 * of LSP_RUNS, default 20), and a restart after the server was killed. Prints numbers only.
 * Run: npx tsx bench/lsp.bench.ts
 */
import { rmSync } from 'node:fs'
import { LspQueries } from '../src/lsp/queries.js'
import type { LspArgs } from '../src/lsp/queries.js'
import type { ToolContext } from '../src/tools/api.js'
import { HAS_TS_SERVER, TS_SERVER_MISSING, tsProject } from '../test-support/lsp.js'

if (!HAS_TS_SERVER) {
  console.log(TS_SERVER_MISSING)
  process.exit(0)
}

const RUNS = Number(process.env.LSP_RUNS ?? 20)
const dir = tsProject()
const context: ToolContext = { callId: 'bench', cwd: dir, signal: new AbortController().signal }
const definition: LspArgs = { operation: 'goToDefinition', file_path: 'src/main.ts', line: 3, character: 20 }
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const ms = (value: number) => `${value.toFixed(1)} ms`

async function timed(queries: LspQueries, args: LspArgs): Promise<number> {
  const started = performance.now()
  const result = await queries.run(args, context)
  const elapsed = performance.now() - started
  if (result.isError === true) throw new Error(JSON.stringify(result.content))
  return elapsed
}

const queries = new LspQueries({ restartDelayMs: 0 })
try {
  console.log(`first answer (spawn + initialize + didOpen + definition): ${ms(await timed(queries, definition))}`)
  for (const args of [definition, { ...definition, operation: 'findReferences' as const, file_path: 'src/shapes.ts', line: 12, character: 14 }, { ...definition, operation: 'hover' as const, character: 7 }]) {
    const times: number[] = []
    for (let i = 0; i < RUNS; i++) times.push(await timed(queries, args))
    console.log(`warm ${args.operation}: median ${ms(median(times))} of ${RUNS}`)
  }
  const [server] = queries.pool.running()
  process.kill(-server!.pid!, 'SIGKILL')
  const started = performance.now()
  // The first call after the kill may meet the dying server; the answer comes from a new one.
  for (;;) {
    const result = await queries.run(definition, context).catch(() => undefined)
    if (result !== undefined) break
  }
  console.log(`answer after a kill (restart included): ${ms(performance.now() - started)}`)
} finally {
  await queries.dispose()
  rmSync(dir, { recursive: true, force: true })
}
