/**
 * Model-layer throughput: SSE parse + translate + BlockAssembler for a local 100k-delta stream,
 * next to eventsource-parser alone and eventsource-parser plus JSON.parse of each data line
 * (the floor of any SSE client) on the same bytes. Issue target: full <= 1.5x that floor.
 * Prints numbers only. Run: npx tsx bench/llm.bench.ts [deltas]
 */
import { streamFigures } from './support/stream.js'
import { targetLine } from './support/whole-process.js'

const deltas = Number(process.argv[2] ?? 100_000)
const f = await streamFigures(deltas)
const rate = (ms: number) => `${Math.round(f.deltas / (ms / 1000)).toLocaleString('en-US')} /s`
console.log(`llm bench: ${deltas.toLocaleString('en-US')} deltas, ${(f.bytes / 1e6).toFixed(1)} MB of SSE, 16 KiB reads, best of 7 interleaved rounds`)
console.log(`eventsource-parser only                  ${f.parserMs.toFixed(1).padStart(8)} ms  ${rate(f.parserMs)}`)
console.log(`eventsource-parser + JSON.parse          ${f.parserJsonMs.toFixed(1).padStart(8)} ms  ${rate(f.parserJsonMs)}`)
console.log(`parse + translate + assemble (${f.chunks} chunks) ${f.fullMs.toFixed(1).padStart(8)} ms  ${rate(f.fullMs)}`)
const ratio = f.fullMs / f.parserJsonMs
console.log(targetLine('model stream: full / (eventsource-parser + JSON.parse)', `${ratio.toFixed(2)}x`, '<= 1.5x', ratio <= 1.5))
console.log(`same ratio in CPU time, median of the 7 back-to-back pairs: ${f.cpuRatio.toFixed(2)}x`)
