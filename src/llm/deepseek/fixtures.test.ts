/**
 * Conformance against the recorded corpus: every model attempt in the fixture session logs that
 * came from a real DeepSeek stream is turned back into wire SSE (chunksResponse), sent through
 * this adapter over HTTP, and must come out as exactly the recorded StreamChunks.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, chunksResponse } from '../../../test-support/fake-deepseek.js'
import { unpackLines } from '../../session/chunk-rows.js'
import { decodeLine } from '../../session/codec.js'
import { LlmServicePlugin } from '../service.js'
import type { StreamChunk } from '../types.js'
import { DEEPSEEK_PROVIDER, DeepSeekPlugin } from './index.js'

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url))
const corpus = path.resolve(repoRoot, '../shared/fixtures/dsh')
if (!existsSync(corpus)) console.warn('skipping: ../shared/fixtures/dsh absent')

/** Recorded attempts (chunk runs ending in a finish) from every session log of the corpus. */
function recordedAttempts(): { file: string; chunks: StreamChunk[] }[] {
  const files = (readdirSync(corpus, { recursive: true }) as string[])
    .filter(f => /(^|\/)session(\.\d+)?\.jsonl$/.test(f))
    .sort()
  const attempts: { file: string; chunks: StreamChunk[] }[] = []
  for (const file of files) {
    const lines = readFileSync(path.join(corpus, file), 'utf8').split('\n').filter(Boolean).slice(1)
    let current: StreamChunk[] = []
    for (const event of unpackLines(lines.map(line => decodeLine(line)))) {
      if (event.type !== 'assistant/chunk') continue
      const chunk = (event.data as { chunk: StreamChunk }).chunk
      current.push(chunk)
      if (chunk.type === 'finish') {
        attempts.push({ file, chunks: current })
        current = []
      }
    }
  }
  return attempts
}

/**
 * Attempts a DeepSeek stream could have produced: a normal finish, block-ends only after all
 * deltas, every block opened by a delta, and block-end content equal to its deltas. Scripted
 * replays and hand-edited recordings fail this and are left out.
 */
function adapterShaped(chunks: readonly StreamChunk[]): boolean {
  const finish = chunks.at(-1)
  if (finish?.type !== 'finish' || !['stop', 'tool-calls', 'max-tokens'].includes(finish.reason.kind)) return false
  const firstEnd = chunks.findIndex(c => c.type === 'block-end')
  const lastOpen = chunks.findLastIndex(c => c.type.endsWith('-delta') || c.type === 'block-start')
  if (firstEnd !== -1 && firstEnd < lastOpen) return false
  const streamed = new Map<number, string>()
  for (const c of chunks) {
    if (c.type === 'text-delta' || c.type === 'reasoning-delta') streamed.set(c.index, (streamed.get(c.index) ?? '') + c.text)
    if (c.type === 'tool-call-delta') streamed.set(c.index, (streamed.get(c.index) ?? '') + c.argumentsDelta)
    if (c.type === 'block-start' && !chunks.some(d => d.type.endsWith('-delta') && 'index' in d && d.index === c.index)) return false
    if (c.type === 'block-end') {
      const full = c.block.type === 'tool-call' ? c.block.arguments : 'text' in c.block ? c.block.text : undefined
      if (full !== streamed.get(c.index)) return false
    }
  }
  return true
}

describe.skipIf(!existsSync(corpus))('DeepSeek adapter vs the recorded corpus', () => {
  let server: FakeDeepSeek
  beforeAll(async () => { server = await FakeDeepSeek.start() })
  afterAll(async () => { await server.close() })

  it('L-7 / L-8: every recorded DeepSeek attempt replays to the identical StreamChunk sequence', async () => {
    const ctx = new Context()
    await ctx.plugin(LlmServicePlugin)
    await ctx.plugin(DeepSeekPlugin, { baseUrl: server.url, apiKey: 'sk-test' })
    const attempts = recordedAttempts().filter(a => adapterShaped(a.chunks))
    // The corpus holds a few hundred such attempts; a small number means the reader broke.
    expect(attempts.length).toBeGreaterThan(100)
    for (const attempt of attempts) {
      server.enqueue(chunksResponse(attempt.chunks))
      const replayed: StreamChunk[] = []
      for await (const chunk of ctx.llm.stream({ provider: DEEPSEEK_PROVIDER, model: 'deepseek-v4-flash', messages: [] })) replayed.push(chunk)
      expect(replayed, attempt.file).toEqual(attempt.chunks)
    }
  }, 120_000)
})
