/**
 * Crash-test child (src/persistence/crash.test.ts). Runs one session with ctx.sessionPersistence
 * and prints `flushed <seq> <sha256>` after every completed durable write: the last stored seq
 * and the SHA-256 of the canonical lines of events 0..seq. The parent SIGKILLs it at a random
 * point and checks the store against the last report.
 *
 * argv: <workload|loop> <jsonl|sqlite> <store path> <session id> <seed> <write-behind window ms> [hold-after]
 * - hold-after N: after its Nth report, at the first completed write that leaves the stored log
 *   inside an open turn, the child prints `held` and writes nothing more (the write never
 *   returns), so the parent's kill lands at a known point: mid-turn, with nothing after it stored.
 * - workload: realistic turns appended through the session core, flushing at the D-3 points;
 *   the clock is a counter, so the parent can also regenerate the exact events.
 * - loop: the real agent loop with the checkpoint policy, a scripted model streaming reasoning,
 *   text and tool calls (yielding between chunks so write-behind timers interleave), one tool.
 */
import { createHash } from 'node:crypto'
import { Context } from 'cordis'
import type { StreamChunk } from '../src/llm/types.js'
import type { PersistenceBackend } from '../src/persistence/api.js'
import { CheckpointPolicy } from '../src/persistence/checkpoint.js'
import { JsonlBackend } from '../src/persistence/jsonl/backend.js'
import { encodeEvent } from '../src/persistence/records.js'
import { SessionPersistence } from '../src/persistence/service.js'
import { SqliteBackend } from '../src/persistence/sqlite/backend.js'
import { appendTurn, prng } from '../src/persistence/testing/workload.js'
import type { SessionEvent } from '../src/session/types.js'
import { SessionsServicePlugin } from '../src/session/service.js'
import { loopHarness } from './agent-harness.js'

/** Safety net: a child nobody kills stops on its own. */
const MAX_TURNS = 400
const [mode, kind, store, id, seedText, windowText, holdText] = process.argv.slice(2)
const holdAfter = holdText === undefined ? undefined : Number(holdText)
const rng = prng(Number(seedText))
const inner: PersistenceBackend = kind === 'sqlite' ? new SqliteBackend({ file: store }) : new JsonlBackend({ root: store })

// Report every completed write: what it covered is durable from then on.
const hash = createHash('sha256')
let written = -1
let reports = 0
let turnOpen = false
const report = async (events: readonly SessionEvent[]) => {
  for (const event of events) {
    hash.update(`${encodeEvent(event)}\n`)
    if (event.type === 'turn/start') turnOpen = true
    else if (event.type === 'turn/end') turnOpen = false
  }
  written += events.length
  process.stdout.write(`flushed ${written} ${hash.copy().digest('hex')}\n`)
  if (holdAfter !== undefined && ++reports >= holdAfter && turnOpen) {
    process.stdout.write('held\n')
    // This write never returns, so nothing more is stored; the timer keeps the process alive for the kill.
    await new Promise<never>(() => { setInterval(() => undefined, 1 << 30) })
  }
}
const backend: PersistenceBackend = Object.create(inner)
backend.create = async (header, events) => { await inner.create(header, events); await report(events) }
backend.appendBatch = async (header, events) => { await inner.appendBatch(header, events); await report(events) }
const persistence = { backend, maxDelayMs: Number(windowText) }

if (mode === 'loop') {
  const pause = () => new Promise<void>((resolve) => setImmediate(resolve))
  const words = ['Let', ' me', ' look', ' at', ' the', ' files', ' and', ' run', ' a', ' check', '.', '\n']
  const stream = (withTools: boolean, callBase: string) => async function* (): AsyncGenerator<StreamChunk> {
    let index = 0
    for (const kind of ['reasoning', 'text'] as const) {
      yield { type: 'block-start', index, blockType: kind }
      let text = ''
      for (let k = 4 + Math.floor(rng() * 30); k > 0; k--) {
        const piece = words[Math.floor(rng() * words.length)]
        text += piece
        yield kind === 'text' ? { type: 'text-delta', index, text: piece } : { type: 'reasoning-delta', index, text: piece }
        if (rng() < 0.3) await pause()
      }
      yield { type: 'block-end', index, block: { type: kind, text } }
      index++
    }
    if (withTools) {
      for (let c = 1 + Math.floor(rng() * 2); c > 0; c--, index++) {
        const callId = `${callBase}_${c}`
        const args = JSON.stringify({ path: `src/file-${c}.ts`, note: 'read it' })
        yield { type: 'block-start', index, blockType: 'tool-call' }
        yield { type: 'tool-call-delta', index, id: callId, name: 'work', argumentsDelta: '' }
        for (let at = 0; at < args.length; at += 5) {
          yield { type: 'tool-call-delta', index, id: callId, argumentsDelta: args.slice(at, at + 5) }
          if (rng() < 0.3) await pause()
        }
        yield { type: 'block-end', index, block: { type: 'tool-call', id: callId, name: 'work', arguments: args } }
      }
    }
    yield { type: 'usage', usage: { inputTokens: 1000, outputTokens: 50 } }
    yield { type: 'finish', reason: { kind: withTools ? 'tool-calls' : 'stop' } }
  }
  const harness = await loopHarness({
    tools: [{
      name: 'work',
      description: 'pretends to read a file',
      parameters: { type: 'object', properties: { path: { type: 'string' }, note: { type: 'string' } } },
      async execute(args: { path?: string }) {
        await pause()
        return { content: [{ type: 'text', text: `contents of ${args.path ?? '?'}\n` }] }
      },
    }],
    setup: async (ctx) => {
      await ctx.plugin(SessionPersistence, persistence)
      await ctx.plugin(CheckpointPolicy)
    },
  })
  for (let turn = 1; turn <= MAX_TURNS; turn++) {
    const rounds = Math.floor(rng() * 3)
    for (let r = 0; r < rounds; r++) harness.model.push(stream(true, `call_${turn}_${r}`))
    harness.model.push(stream(false, ''))
    harness.agent.followup(`task ${turn}: inspect the project`)
    await harness.agent.whenIdle()
    await harness.ctx.sessionPersistence.flush(harness.session)
  }
} else {
  const ctx = new Context()
  let clock = 1_750_000_000_000
  await ctx.plugin(SessionsServicePlugin, { now: () => clock++ })
  await ctx.plugin(SessionPersistence, persistence)
  const session = ctx.sessions.create({ id, cwd: '/crash/project' })
  const checkpoint = () => ctx.parallel('session/flush', session)
  await checkpoint()
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    await appendTurn(session, { rng, checkpoint })
    await checkpoint()
  }
}
process.exit(0)
