/**
 * The model-stream figure (issue target 5): SSE parse + translate + assemble over a local
 * 100k-delta stream, next to the floor any SSE client pays, eventsource-parser plus one
 * JSON.parse per data line, on the same bytes in the same read sizes. The full path is the
 * adapters' own transport (`streamChatCompletion`) with only the socket replaced by the bytes.
 */
import { createParser } from 'eventsource-parser'
import { BlockAssembler } from '../../src/llm/assembler.js'
import type { HttpExchange, ReadResult } from '../../src/llm/http-post.js'
import { streamChatCompletion } from '../../src/llm/openai-stream.js'
import { bodyBytes, streamResponse, type StreamStep } from '../../test-support/fake-deepseek.js'

const READ_SIZE = 16 * 1024

export interface StreamFigures {
  readonly deltas: number
  readonly bytes: number
  /** Best-of-rounds milliseconds. */
  readonly parserMs: number
  readonly parserJsonMs: number
  readonly fullMs: number
  readonly chunks: number
  /**
   * Median over the rounds of full / (parser + JSON.parse) in this process's CPU time, each pair
   * measured back to back: less moved by other load on the machine than the best-of wall times.
   */
  readonly cpuRatio: number
}

/** A realistic stream: reasoning, then text, then one tool call's argument deltas. */
export function streamPieces(deltas: number): { pieces: Uint8Array[]; bytes: number } {
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
  return { pieces, bytes: bytes.length }
}

function parserOnly(pieces: readonly Uint8Array[], json: boolean): number {
  let events = 0
  let sink: unknown
  const decoder = new TextDecoder()
  const parser = createParser({
    onEvent: event => {
      events++
      if (json && event.data !== '[DONE]') sink = JSON.parse(event.data)
    },
  })
  for (const piece of pieces) parser.feed(decoder.decode(piece, { stream: true }))
  if (sink === undefined && json) throw new Error('bench: nothing parsed')
  return events
}

/**
 * The HTTP exchange a 200 response with these body reads gives the transport: the production
 * path (`streamChatCompletion`: watchdog, SSE framing, translation) with the socket replaced.
 */
function recordedExchange(pieces: readonly Uint8Array[]): HttpExchange {
  let next = 0
  const end: ReadResult = { done: true }
  return {
    response: { status: 200, headers: { get: name => name === 'content-type' ? 'text/event-stream' : null } },
    body: { next: async () => next < pieces.length ? { done: false, value: pieces[next++]! } : end },
    close: () => {},
  }
}

async function full(pieces: readonly Uint8Array[]): Promise<number> {
  const assembler = new BlockAssembler()
  let chunks = 0
  const request = { url: 'http://127.0.0.1/chat/completions', headers: {}, body: {}, label: 'bench' }
  for await (const chunk of streamChatCompletion(request, async () => recordedExchange(pieces))) {
    assembler.push(chunk)
    chunks++
  }
  if (assembler.content().length !== 3) throw new Error('bench: unexpected assembly')
  return chunks
}

async function best(rounds: number, fn: () => number | Promise<number>): Promise<{ ms: number; count: number }> {
  await fn()
  let ms = Infinity
  let count = 0
  for (let round = 0; round < rounds; round++) {
    const start = process.hrtime.bigint()
    count = await fn()
    ms = Math.min(ms, Number(process.hrtime.bigint() - start) / 1e6)
  }
  return { ms, count }
}

/** Interleaved rounds (the three measures see the same machine load), best of `rounds`. */
export async function streamFigures(deltas = 100_000, rounds = 7): Promise<StreamFigures> {
  const { pieces, bytes } = streamPieces(deltas)
  let parserMs = Infinity
  let parserJsonMs = Infinity
  let fullMs = Infinity
  let chunks = 0
  const cpuRatios: number[] = []
  const cpuMs = (since: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(since)
    return (used.user + used.system) / 1000
  }
  for (let i = 0; i < rounds; i++) {
    parserMs = Math.min(parserMs, (await best(1, () => parserOnly(pieces, false))).ms)
    let cpu = process.cpuUsage()
    parserJsonMs = Math.min(parserJsonMs, (await best(1, () => parserOnly(pieces, true))).ms)
    const floorCpu = cpuMs(cpu)
    cpu = process.cpuUsage()
    const run = await best(1, () => full(pieces))
    cpuRatios.push(cpuMs(cpu) / floorCpu)
    fullMs = Math.min(fullMs, run.ms)
    chunks = run.count
  }
  cpuRatios.sort((a, b) => a - b)
  return { deltas, bytes, parserMs, parserJsonMs, fullMs, chunks, cpuRatio: cpuRatios[cpuRatios.length >> 1]! }
}
