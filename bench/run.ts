/**
 * Runs every benchmark in bench/ (or those named on the command line) one after another, each
 * in its own process so one benchmark's heap and JIT state never colour another's numbers.
 * Benchmarks print figures; nothing here passes or fails on time.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const dir = import.meta.dirname
const wanted = process.argv.slice(2)
const files = readdirSync(dir)
  .filter(name => name.endsWith('.bench.ts'))
  .filter(name => wanted.length === 0 || wanted.some(w => name.includes(w)))
  .sort()

let failed = 0
for (const file of files) {
  process.stdout.write(`\n=== ${file} ===\n`)
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(dir, file)], { stdio: 'inherit' })
  if (result.status !== 0) failed += 1
}
if (failed > 0) {
  process.stderr.write(`${failed} benchmark(s) exited with an error\n`)
  process.exitCode = 1
}
