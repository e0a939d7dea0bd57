/**
 * Session log benchmark (prints numbers, never pass/fail):
 *   npx tsx bench/session.bench.ts
 * - append throughput, bare and through the kernel (veto + one session/event observer);
 * - hydrate throughput (cold load of a 100k-event log, every event checked like an append);
 * - deriveMessages() cost per step at 1k / 10k / 100k events, and the 100k/1k ratio;
 *   the fold is incremental, so the ratio should stay near 1 apart from the fresh-array copy
 *   S-11 requires (reported separately).
 */
import { Context } from 'cordis'
import { SessionsServicePlugin, type Session } from '../src/session/index.js'
import { assistantMessage, toolResultMessage, userMessage } from '../src/session/testing/fixtures.js'

const CHUNKS_PER_MESSAGE = 20

/** One realistic turn: user message, a streamed tool-calling step, a streamed answer step. */
function appendTurn(session: Session, turn: number): void {
  session.append('turn/start', { turn })
  session.append('step/start', { turn, step: 1 })
  session.append('user/message', userMessage(`please look at file ${turn}`, `u${turn}`), { surfaceOp: 'append' })
  appendStep(session, turn, 1, true)
  session.append('step/end', { turn, step: 1 })
  session.append('step/start', { turn, step: 2 })
  appendStep(session, turn, 2, false)
  session.append('step/end', { turn, step: 2 })
  session.append('turn/end', { turn, reason: { kind: 'completed' } })
}

function appendStep(session: Session, turn: number, step: number, withTool: boolean): void {
  const first = session.length
  for (let i = 0; i < CHUNKS_PER_MESSAGE; i++) {
    session.append('assistant/chunk', { turn, step, chunk: { type: 'text-delta', index: 0, text: ` token${i}` } })
  }
  const sources = Array.from({ length: CHUNKS_PER_MESSAGE }, (_, i) => first + i)
  const callId = `call-${turn}-${step}`
  const message = assistantMessage(`a${turn}-${step}`, 'some streamed answer text', withTool ? [{ id: callId, arguments: '{"path":"x"}' }] : [])
  session.append('assistant/message', { turn, step, message, usage: { inputTokens: 100, outputTokens: 20 } }, { surfaceOp: 'append', sourceEventSeqs: sources })
  if (!withTool) return
  const call = session.append('tool/call', { turn, step, callId, name: 'bash', arguments: '{"path":"x"}' })
  session.append('tool/result', { turn, step, message: toolResultMessage(callId, 'file contents '.repeat(8)) }, { surfaceOp: 'append', sourceEventSeqs: [call.seq] })
}

async function boot(withObserver: boolean) {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin)
  if (withObserver) {
    const seen: number[] = []
    ctx.on('session/event', (_session, event) => { if (event.seq % 1000 === 0) seen.push(event.seq) })
    ctx.on('session/append', () => {})
  }
  return ctx
}

function fill(session: Session, events: number): number {
  let turn = session.position.turn
  while (session.length < events) appendTurn(session, ++turn)
  return turn
}

async function appendThroughput(withObserver: boolean): Promise<number> {
  const ctx = await boot(withObserver)
  const session = ctx.sessions.create()
  fill(session, 20_000) // warm-up
  const warm = session.length
  const start = process.hrtime.bigint()
  fill(session, warm + 200_000)
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  return (session.length - warm) / seconds
}

interface DeriveCost { total: number; copy: number; messages: number }

const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1]

/**
 * Median µs per step of deriveMessages() right after a step's events (fold + fresh-array copy),
 * and of an immediate second call (copy only: nothing new to fold).
 */
async function derivePerStep(events: number): Promise<DeriveCost> {
  const ctx = await boot(false)
  const session = ctx.sessions.create()
  let turn = fill(session, events)
  session.deriveMessages()
  const totals: number[] = []
  const copies: number[] = []
  const measure = () => {
    let t = process.hrtime.bigint()
    session.deriveMessages()
    totals.push(Number(process.hrtime.bigint() - t) / 1e3)
    t = process.hrtime.bigint()
    session.deriveMessages()
    copies.push(Number(process.hrtime.bigint() - t) / 1e3)
  }
  for (let i = 0; i < 20; i++) {
    // Two steps per turn; derive before each model request, as the loop does.
    turn++
    session.append('turn/start', { turn })
    session.append('step/start', { turn, step: 1 })
    session.append('user/message', userMessage(`q${turn}`, `u${turn}`), { surfaceOp: 'append' })
    measure()
    appendStep(session, turn, 1, true)
    session.append('step/end', { turn, step: 1 })
    session.append('step/start', { turn, step: 2 })
    measure()
    appendStep(session, turn, 2, false)
    session.append('step/end', { turn, step: 2 })
    session.append('turn/end', { turn, reason: { kind: 'completed' } })
  }
  return { total: median(totals), copy: median(copies), messages: session.deriveMessages().length }
}

/** Cold load: hydrate a 100k-event log parsed from JSON (every event re-validated). */
async function hydrateThroughput(): Promise<number> {
  const ctx = await boot(false)
  const source = ctx.sessions.create({ id: 'source' })
  fill(source, 100_000)
  const stored = JSON.parse(JSON.stringify(source.events))
  const header = { ...source.header, id: 'copy' }
  const start = process.hrtime.bigint()
  ctx.sessions.hydrate(header, stored)
  return stored.length / (Number(process.hrtime.bigint() - start) / 1e9)
}

const bare = await appendThroughput(false)
const observed = await appendThroughput(true)
console.log(`append events/s (no listeners)                 ${Math.round(bare)}`)
console.log(`append events/s (veto + session/event listener) ${Math.round(observed)}`)
console.log(`hydrate events/s (100k-event log)               ${Math.round(await hydrateThroughput())}`)
const results: Record<number, DeriveCost> = {}
for (const size of [1_000, 10_000, 100_000]) {
  const r = results[size] = await derivePerStep(size)
  console.log(`deriveMessages() per step at ${String(size).padStart(6)} events: ${r.total.toFixed(2)} us total, ${r.copy.toFixed(2)} us fresh-array copy, ${Math.max(r.total - r.copy, 0).toFixed(2)} us fold (messages ${r.messages})`)
}
const fold = (r: DeriveCost) => Math.max(r.total - r.copy, 0.01)
console.log(`deriveMessages() fold cost ratio 100k/1k: ${(fold(results[100_000]) / fold(results[1_000])).toFixed(2)}`)
console.log(`deriveMessages() total cost ratio 100k/1k: ${(results[100_000].total / results[1_000].total).toFixed(2)}`)
