/**
 * Agent-loop benchmarks (prints numbers, never pass/fail): `npx tsx bench/loop.bench.ts`
 *
 * 1. Harness overhead per step with the in-process scripted model (no model or tool time), on a
 *    session that already holds ~1k and ~100k events; the two should be about equal (no
 *    per-step work proportional to the log). Measured with and without the A-11 invariant.
 * 2. One step whose model asks for three parallel-safe tools that each take 1 s: wall time of
 *    the step (target under 1.15 s).
 */
import { performance } from 'node:perf_hooks'
import { loopHarness } from '../test-support/agent-harness.js'
import { text, toolCalls } from '../test-support/scripted-model.js'
import type { Session } from '../src/session/api.js'
import type { Tool } from '../src/tools/api.js'

const CHUNKS_PER_TURN = 94

/** Appends synthetic completed turns of ~100 events each until the log holds `target` events. */
function fill(session: Session, target: number): void {
  let turn = session.position.turn
  while (session.length < target) {
    turn++
    session.append('turn/start', { turn })
    session.append('step/start', { turn, step: 1 })
    session.append('user/message', { id: `u${turn}`, role: 'user', content: [{ type: 'text', text: `question ${turn}` }], source: { kind: 'user' } }, { surfaceOp: 'append' })
    const seqs: number[] = []
    for (let i = 0; i < CHUNKS_PER_TURN; i++) {
      seqs.push(session.append('assistant/chunk', { turn, step: 1, chunk: { type: 'text-delta', index: 0, text: 'word ' } }).seq)
    }
    session.append('assistant/message', {
      turn, step: 1,
      message: { id: `a${turn}`, role: 'assistant', content: [{ type: 'text', text: 'word '.repeat(CHUNKS_PER_TURN) }], source: { kind: 'model', provider: 'scripted', model: 'scripted-1' } },
    }, { surfaceOp: 'append', sourceEventSeqs: seqs })
    session.append('step/end', { turn, step: 1 })
    session.append('turn/end', { turn, reason: { kind: 'completed' } })
  }
}

async function overheadPerStep(events: number, invariant: boolean): Promise<number> {
  const warmup = 100
  const measured = 1000
  const h = await loopHarness({ responses: [], invariant })
  const session = h.session
  fill(session, events)
  await h.agent.dispose()
  // A fresh loop on the filled log (its one-time fold of the log is not part of a step).
  const agent = h.ctx.agents.create(session.id)
  for (let i = 0; i < warmup + measured; i++) h.model.push(text('ok'))
  for (let i = 0; i < warmup; i++) {
    agent.followup('warm up')
    await agent.whenIdle()
  }
  const start = performance.now()
  for (let i = 0; i < measured; i++) {
    agent.followup('measure')
    await agent.whenIdle()
  }
  const perStep = (performance.now() - start) / measured
  await agent.dispose()
  return perStep
}

async function parallelToolsStep(): Promise<number> {
  const slow: Tool = {
    name: 'slow', description: 'sleeps one second', parameters: { type: 'object' },
    isConcurrencySafe: () => true,
    execute: () => new Promise(resolve => setTimeout(() => resolve({ content: [{ type: 'text', text: 'slept' }] }), 1000)),
  }
  const h = await loopHarness({
    tools: [slow],
    responses: [toolCalls([{ id: 'a', name: 'slow' }, { id: 'b', name: 'slow' }, { id: 'c', name: 'slow' }]), text('done')],
  })
  let started = 0
  let ended = 0
  h.ctx.on('session/event', (_session, event) => {
    if (event.type === 'step/start' && (event.data as { step: number }).step === 1) started = performance.now()
    if (event.type === 'step/end' && (event.data as { step: number }).step === 1) ended = performance.now()
  })
  h.agent.followup('run three slow tools')
  await h.agent.whenIdle()
  await h.agent.dispose()
  return ended - started
}

const fmt = (ms: number) => `${(ms * 1000).toFixed(0)} us`
// One discarded round so JIT warm-up does not favour whichever size is measured second.
await overheadPerStep(1_000, true)
for (const invariant of [true, false]) {
  const small = await overheadPerStep(1_000, invariant)
  const large = await overheadPerStep(100_000, invariant)
  console.log(`loop overhead per step (invariant ${invariant ? 'on' : 'off'}): ~1k events ${fmt(small)}, ~100k events ${fmt(large)}, ratio ${(large / small).toFixed(2)}`)
}
const wall = await parallelToolsStep()
console.log(`step with three parallel 1 s tools: ${(wall / 1000).toFixed(3)} s wall (target < 1.15 s)`)
