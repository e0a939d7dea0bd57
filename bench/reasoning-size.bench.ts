/**
 * Bytes on disk of a session whose one answer streams 20 MB of reasoning (#43 item 13), by the
 * events that carry the reasoning text: the `reasoning-chunks` rows (the deltas as they
 * streamed), the `block-end` chunk (the whole block) and the `assistant/message` (the whole
 * block again). Why the text stays three times: docs/decisions.md, "Reasoning is stored with
 * its deltas, its block-end and its message". Prints figures only.
 *
 *   npx tsx bench/reasoning-size.bench.ts [MB]
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { JsonlBackend } from '../src/persistence/jsonl/backend.js'
import { SqliteBackend } from '../src/persistence/sqlite/backend.js'
import type { AssistantMessage, StreamChunk } from '../src/llm/types.js'
import { assistantMessage, userMessage } from '../src/session/testing/fixtures.js'
import { bootPersistence } from './support/cold-load.js'

const MB = Number(process.argv[2] ?? 20)
/** A delta as providers stream reasoning: a few tokens each. */
const DELTA = 'so the next step is to check '

async function main(): Promise<void> {
  const ctx = await bootPersistence()
  const session = ctx.sessions.create({ id: 'reasoning-20mb', cwd: '/bench/project' })
  const prompt = userMessage('think hard', 'user-1')
  session.append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [prompt] })
  session.append('turn/start', { turn: 1 })
  session.append('agent/inbox/spliced', { target: 'next-turn', start: 0, removedCount: 1, inserted: [] })
  session.append('step/start', { turn: 1, step: 1 })
  session.append('user/message', prompt, { surfaceOp: 'append' })
  const seqs: number[] = []
  const chunk = (c: StreamChunk) => { seqs.push(session.append('assistant/chunk', { turn: 1, step: 1, chunk: c }).seq) }
  chunk({ type: 'block-start', index: 0, blockType: 'reasoning' })
  const deltas = Math.ceil((MB * 1024 * 1024) / DELTA.length)
  for (let i = 0; i < deltas; i++) chunk({ type: 'reasoning-delta', index: 0, text: DELTA })
  const reasoning = DELTA.repeat(deltas)
  chunk({ type: 'block-end', index: 0, block: { type: 'reasoning', text: reasoning } })
  chunk({ type: 'block-start', index: 1, blockType: 'text' })
  chunk({ type: 'text-delta', index: 1, text: 'done' })
  chunk({ type: 'block-end', index: 1, block: { type: 'text', text: 'done' } })
  chunk({ type: 'finish', reason: { kind: 'stop' } })
  const message: AssistantMessage = { ...assistantMessage('assistant-1', ''), content: [{ type: 'reasoning', text: reasoning }, { type: 'text', text: 'done' }] }
  session.append('assistant/message', { turn: 1, step: 1, message, usage: { inputTokens: 10, outputTokens: deltas } }, { surfaceOp: 'append', sourceEventSeqs: seqs })
  session.append('step/end', { turn: 1, step: 1 })
  session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })

  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-reasoning-'))
  const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`
  try {
    const jsonl = new JsonlBackend({ root: join(dir, 'jsonl'), fsync: false })
    await jsonl.create(session.header, [...session.events])
    const file = (await jsonl.pathOf(session.id))!
    await jsonl.close()
    const byKind = new Map<string, number>()
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line === '') continue
      const value = JSON.parse(line) as { type: string; data?: { chunk?: { type?: string } } }
      const kind = value.type === 'assistant/chunk' ? `assistant/chunk ${value.data?.chunk?.type}` : value.type
      byKind.set(kind, (byKind.get(kind) ?? 0) + Buffer.byteLength(line) + 1)
    }
    console.log(`reasoning text ${mb(reasoning.length)} in ${deltas.toLocaleString('en-US')} deltas; ${session.length.toLocaleString('en-US')} events`)
    console.log(`jsonl session.jsonl: ${mb(statSync(file).size)} (${(statSync(file).size / reasoning.length).toFixed(2)}x the reasoning)`)
    for (const [kind, bytes] of [...byKind].sort((a, b) => b[1] - a[1]).slice(0, 4)) console.log(`  ${kind.padEnd(26)} ${mb(bytes)}`)
    const sqliteFile = join(dir, 'sessions.db')
    const sqlite = new SqliteBackend({ file: sqliteFile })
    await sqlite.create(session.header, [...session.events])
    sqlite.db.pragma('wal_checkpoint(TRUNCATE)')
    await sqlite.close()
    console.log(`sqlite sessions.db: ${mb(statSync(sqliteFile).size)}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
