/**
 * Chunk-row packing: pack and unpack throughput (events/s) and the stored byte ratio
 * packed/unpacked (persisted form), over the recorded corpus (when ../shared is present) and a
 * synthetic streaming log. Prints numbers only.
 *
 *   npx tsx bench/chunk-rows.bench.ts
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { packEvents, unpackLines } from '../src/session/chunk-rows.js'
import { encodeLine, parseSessionFile } from '../src/session/codec.js'
import { findFiles, isSessionLogName } from '../src/conformance/discover.js'
import type { SessionEvent } from '../src/session/types.js'

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const corpus = resolve(repoRoot, '../shared/fixtures/dsh')

/** Runs `fn` repeatedly for at least `ms` and returns calls per second. */
function rate(fn: () => void, ms = 700): number {
  fn()
  let calls = 0
  const start = performance.now()
  let elapsed = 0
  while (elapsed < ms) {
    fn()
    calls++
    elapsed = performance.now() - start
  }
  return (calls * 1000) / elapsed
}

function bytes(lines: readonly unknown[]): number {
  let total = 0
  for (const line of lines) total += Buffer.byteLength(encodeLine(line as SessionEvent)) + 1
  return total
}

function measure(label: string, logs: readonly SessionEvent[][]): void {
  const events = logs.reduce((n, log) => n + log.length, 0)
  const packed = logs.map((log) => packEvents(log))
  const packRate = rate(() => { for (const log of logs) packEvents(log) })
  const unpackRate = rate(() => { for (const lines of packed) unpackLines(lines) })
  const packedBytes = packed.reduce((n, lines) => n + bytes(lines), 0)
  const plainBytes = logs.reduce((n, log) => n + bytes(log), 0)
  const lines = packed.reduce((n, l) => n + l.length, 0)
  console.log(`${label}.logs ${logs.length}`)
  console.log(`${label}.events ${events}`)
  console.log(`${label}.lines_packed ${lines}`)
  console.log(`${label}.pack_events_per_s ${Math.round(packRate * events)}`)
  console.log(`${label}.unpack_events_per_s ${Math.round(unpackRate * events)}`)
  console.log(`${label}.bytes_unpacked ${plainBytes}`)
  console.log(`${label}.bytes_packed ${packedBytes}`)
  console.log(`${label}.bytes_ratio_packed_over_unpacked ${(packedBytes / plainBytes).toFixed(4)}`)
}

/** Give projected events realistic epoch times so persisted-form sizes are representative. */
function persisted(events: readonly SessionEvent[]): SessionEvent[] {
  const base = 1_780_000_000_000
  return events.map((event) => ({ ...event, time: base + event.seq * 7 + event.time }))
}

function corpusLogs(): SessionEvent[][] {
  const logs: SessionEvent[][] = []
  for (const path of findFiles(corpus, isSessionLogName)) {
    try {
      const { events } = parseSessionFile(readFileSync(path, 'utf8'))
      if (events.length > 0) logs.push(persisted(events))
    } catch {
      // Files the codec refuses (no header version, etc.) are not part of this measurement.
    }
  }
  return logs
}

/** A deterministic streaming log: per step a reasoning run, a text run and a tool-call run. */
function syntheticLog(turns: number): SessionEvent[] {
  const events: SessionEvent[] = []
  let time = 1_780_000_000_000
  let seed = 42
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed / 0x7fffffff
  }
  const push = (type: string, data: unknown): void => {
    time += Math.floor(random() * 40) - 2
    events.push({ type, seq: events.length, time, data } as SessionEvent)
  }
  const word = (): string => ' ' + 'abcdefghij'.slice(0, 1 + Math.floor(random() * 6))
  for (let turn = 1; turn <= turns; turn++) {
    push('turn/start', { turn })
    for (let step = 1; step <= 2; step++) {
      push('step/start', { turn, step })
      const chunk = (c: object): void => push('assistant/chunk', { turn, step, chunk: c })
      chunk({ type: 'block-start', index: 0, blockType: 'reasoning' })
      for (let k = 0; k < 120; k++) chunk({ type: 'reasoning-delta', index: 0, text: word() })
      chunk({ type: 'block-start', index: 1, blockType: 'text' })
      for (let k = 0; k < 80; k++) chunk({ type: 'text-delta', index: 1, text: word() })
      chunk({ type: 'block-start', index: 2, blockType: 'tool-call' })
      for (let k = 0; k < 30; k++) chunk({ type: 'tool-call-delta', index: 2, id: `call_${turn}_${step}`, name: 'bash', argumentsDelta: word() })
      chunk({ type: 'usage', usage: { inputTokens: 1000, outputTokens: 230 } })
      chunk({ type: 'finish', reason: { kind: 'tool-calls' } })
      push('step/end', { turn, step })
    }
    push('turn/end', { turn, reason: { kind: 'completed' } })
  }
  return events
}

if (existsSync(corpus)) measure('corpus', corpusLogs())
else console.log('corpus skipped: ../shared/fixtures/dsh absent')
measure('synthetic', [syntheticLog(100)])
