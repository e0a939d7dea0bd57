/**
 * Realistic session workloads for persistence tests, the crash child and benchmarks: turns with
 * inbox splices, reasoning/text/tool-call chunk streams, assistant messages, tool calls and
 * results, step and turn boundaries, all appended through a real `Session` so every event passes
 * the session core's checks. Deterministic for a given PRNG seed.
 */
import type { AssistantMessage, ContentBlock, StreamChunk, ToolCallBlock } from '../../llm/types.js'
import type { Session } from '../../session/api.js'
import { assistantMessage, toolResultMessage, userMessage } from '../../session/testing/fixtures.js'

/** mulberry32: small, fast, seedable. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = ['the', ' file', ' reads', ' config', ' and', ' then', ' runs', ' tests', ',', ' which', ' pass', '.', ' Next', ' I', ' will', ' check', ' output', '\n']

export interface TurnOptions {
  readonly rng: () => number
  /** D-3 points: before a model request and before each tool execution. */
  readonly checkpoint?: (point: 'model-request' | 'tool-execution') => Promise<void> | void
  /** Deltas per streamed block (default 8..40). */
  readonly chunks?: () => number
  /** Tool rounds in the turn (default 1..2). */
  readonly toolRounds?: number
  /** Stop after this many appends (leaves the turn open, as a crash would). */
  readonly stopAfter?: number
}

class Stop extends Error {}

/** Appends one whole turn (or its first `stopAfter` events) to a live session. */
export async function appendTurn(session: Session, options: TurnOptions): Promise<void> {
  const { rng } = options
  let budget = options.stopAfter ?? Infinity
  const append = (type: string, data: unknown, extra?: Parameters<Session['append']>[2]) => {
    if (budget-- <= 0) throw new Stop()
    return session.append(type, data, extra)
  }
  const pick = (n: number) => Math.floor(rng() * n)
  const chunkCount = options.chunks ?? (() => 8 + pick(33))
  const turn = session.position.turn + 1
  const firstTurn = turn === 1
  try {
    const prompt = userMessage(`task ${turn}: ${WORDS.slice(0, 3 + pick(8)).join('')}`, `user-${session.id}-${turn}`)
    append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [prompt] })
    append('turn/start', { turn })
    append('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] })
    const rounds = options.toolRounds ?? 1 + pick(2)
    for (let step = 1; step <= rounds + 1; step++) {
      append('step/start', { turn, step })
      if (step === 1) {
        append('user/message', prompt, { surfaceOp: 'append' })
        if (firstTurn) {
          append('request/header', { header: { config: { provider: 'test', model: 'm' }, system: 'You are a test agent.', tools: [{ name: 'bash' }] }, reason: 'initial' })
          append('request/context', { provider: 'test', model: 'm', contextWindow: 128000 })
        }
      }
      await options.checkpoint?.('model-request')
      const seqs: number[] = []
      const chunk = (c: StreamChunk) => { seqs.push(append('assistant/chunk', { turn, step, chunk: c }).seq) }
      const content: ContentBlock[] = []
      const stream = (index: number, kind: 'reasoning' | 'text') => {
        chunk({ type: 'block-start', index, blockType: kind })
        let text = ''
        for (let k = chunkCount(); k > 0; k--) {
          const piece = WORDS[pick(WORDS.length)]
          text += piece
          chunk({ type: kind === 'text' ? 'text-delta' : 'reasoning-delta', index, text: piece })
        }
        const block: ContentBlock = { type: kind, text }
        chunk({ type: 'block-end', index, block })
        content.push(block)
      }
      stream(0, 'reasoning')
      stream(1, 'text')
      const calls: ToolCallBlock[] = []
      if (step <= rounds) {
        const n = 1 + pick(2)
        for (let c = 0; c < n; c++) {
          const index = 2 + c
          const id = `call_${turn}_${step}_${c}`
          const args = JSON.stringify({ command: `echo ${turn}-${step}-${c}`, description: 'run a command' })
          chunk({ type: 'block-start', index, blockType: 'tool-call' })
          chunk({ type: 'tool-call-delta', index, id, name: 'bash', argumentsDelta: '' })
          for (let at = 0; at < args.length; at += 4) chunk({ type: 'tool-call-delta', index, id, argumentsDelta: args.slice(at, at + 4) })
          const block: ToolCallBlock = { type: 'tool-call', id, name: 'bash', arguments: args }
          chunk({ type: 'block-end', index, block })
          calls.push(block)
        }
      }
      chunk({ type: 'usage', usage: { inputTokens: 100 + pick(1000), outputTokens: 10 + pick(300) } })
      chunk({ type: 'finish', reason: { kind: calls.length ? 'tool-calls' : 'stop' } })
      const base = assistantMessage(`assistant-${session.id}-${turn}-${step}`, '')
      const message: AssistantMessage = { ...base, content: [...content, ...calls] }
      append('assistant/message', { turn, step, message, usage: { inputTokens: 500, outputTokens: 80 } }, { surfaceOp: 'append', sourceEventSeqs: seqs })
      for (const call of calls) {
        const callSeq = append('tool/call', { turn, step, callId: call.id, name: call.name, arguments: call.arguments }).seq
        await options.checkpoint?.('tool-execution')
        const result = toolResultMessage(call.id, `${turn}-${step} ok\n`, false, `result-${session.id}-${call.id}`)
        append('tool/result', { turn, step, message: result }, { surfaceOp: 'append', sourceEventSeqs: [callSeq] })
      }
      append('step/end', { turn, step })
    }
    append('turn/end', { turn, reason: { kind: 'completed' } })
  } catch (error) {
    if (!(error instanceof Stop)) throw error
  }
}
