/**
 * Model-layer throughput: chunks per second through SSE parse + translate + BlockAssembler for a
 * local 100k-delta stream, next to raw eventsource-parser throughput on the same bytes.
 * Prints numbers only. Run: npx tsx bench/llm.bench.ts [deltas]
 */
import { createParser } from 'eventsource-parser'
import { BlockAssembler } from '../src/llm/assembler.js'
import { translateSse } from '../src/llm/openai-stream.js'
import { ChatCompletionTranslator } from '../src/llm/openai-wire.js'
import { bodyBytes, streamResponse, type StreamStep } from '../test-support/fake-deepseek.js'

const deltas = Number(process.argv[2] ?? 100_000)
const READ_SIZE = 16 * 1024
const ROUNDS = 5

const steps: StreamStep[] = []
for (let i = 0; i < deltas; i++) {
  if (i < deltas / 4) steps.push({ reasoning: `r${i % 97} ` })
  else if (i < deltas * 3 / 4) steps.push({ text: `tok${i % 89} ` })
  else steps.push({ toolCall: { index: 0, ...i === Math.ceil(deltas * 3 / 4) ? { id: 'c1', name: 'write' } : {}, arguments: `"k${i % 13}",` } })
}
steps.push({ finish: 'tool_calls', usage: { prompt_tokens: 1000, completion_tokens: deltas } })
const bytes = bodyBytes(streamResponse(steps))
const pieces: Uint8Array[] = []
for (let i = 0; i < bytes.length; i += READ_SIZE) pieces.push(bytes.subarray(i, i + READ_SIZE))

function raw(): number {
  let events = 0
  const decoder = new TextDecoder()
  const parser = createParser({ onEvent: () => { events++ } })
  for (const piece of pieces) parser.feed(decoder.decode(piece, { stream: true }))
  return events
}

async function full(): Promise<number> {
  const body = new ReadableStream<Uint8Array>({ start(controller) { for (const p of pieces) controller.enqueue(p); controller.close() } })
  const assembler = new BlockAssembler()
  let chunks = 0
  for await (const chunk of translateSse(body, new ChatCompletionTranslator(), { label: 'bench' })) {
    assembler.push(chunk)
    chunks++
  }
  if (assembler.content().length !== 3) throw new Error('bench: unexpected assembly')
  return chunks
}

async function measure(name: string, fn: () => number | Promise<number>): Promise<number> {
  await fn()
  let best = Infinity
  let count = 0
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint()
    count = await fn()
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e6)
  }
  const rate = count / (best / 1000)
  console.log(`${name.padEnd(44)} ${count.toLocaleString().padStart(9)} items  ${best.toFixed(1).padStart(8)} ms  ${Math.round(rate).toLocaleString().padStart(12)} /s`)
  return rate
}

console.log(`llm bench: ${deltas.toLocaleString()} deltas, ${(bytes.length / 1e6).toFixed(1)} MB of SSE, ${READ_SIZE / 1024} KiB reads, best of ${ROUNDS}`)
const rawRate = await measure('eventsource-parser only (events)', raw)
const fullRate = await measure('parse + translate + assemble (chunks)', full)
console.log(`ratio full/raw: ${(fullRate / rawRate).toFixed(2)}`)
