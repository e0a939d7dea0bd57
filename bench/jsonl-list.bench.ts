/**
 * Listing a JSONL store (#43 item 6): the time `list()` takes for 1,000 and 10,000 stored sessions
 * and the longest event-loop stall while it runs (perf_hooks `monitorEventLoopDelay`, 1 ms
 * resolution, so a stall shorter than ~1 ms reads as ~1 ms). Three listings per store, each by a
 * fresh backend as a new `dsh sessions` or `dsh web` would make it:
 *   cold       no list index and no summary caches yet (every log is read)
 *   warm       the index from the cold listing (every log is stat-ed, none read)
 *   1% moved   after one more turn in 1% of the sessions (those are read past their cache)
 * Prints figures only.
 *
 *   npx tsx bench/jsonl-list.bench.ts [count...]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { JsonlBackend } from '../src/persistence/jsonl/backend.js'
import { appendTurn, prng } from '../src/persistence/testing/workload.js'
import type { SessionEvent, SessionHeader } from '../src/session/types.js'
import { bootPersistence } from './support/cold-load.js'

const counts = process.argv.slice(2).map(Number).filter(n => n > 0)
const TEMPLATES = 25

interface Figures { ms: number; stallMs: number; listed: number }

async function measured(root: string): Promise<Figures> {
  const backend = new JsonlBackend({ root })
  const delay = monitorEventLoopDelay({ resolution: 1 })
  // The monitor records the gap between two of its timer's runs, so it runs a few times before
  // the listing (its first run records nothing) and after it (a stall shows when it next runs).
  // Not reset in between: `reset()` also forgets the last run, and the next gap goes unrecorded.
  const settle = () => new Promise(resolve => setTimeout(resolve, 5))
  delay.enable()
  await settle()
  const started = performance.now()
  const listed = (await backend.list()).length
  const ms = performance.now() - started
  await settle()
  await settle()
  delay.disable()
  await backend.close()
  return { ms, stallMs: delay.max / 1e6, listed }
}

async function main(): Promise<void> {
  const ctx = await bootPersistence()
  const rng = prng(5)
  const templates: { header: SessionHeader; events: SessionEvent[] }[] = []
  for (let i = 0; i < TEMPLATES; i++) {
    const session = ctx.sessions.create({ id: `template-${i}`, cwd: '/bench/project' })
    await appendTurn(session, { rng })
    templates.push({ header: session.header, events: [...session.events] })
  }
  for (const count of counts.length > 0 ? counts : [1000, 10_000]) {
    const root = mkdtempSync(join(tmpdir(), 'dsh-bench-list-'))
    try {
      const writer = new JsonlBackend({ root, fsync: false })
      const headers: SessionHeader[] = []
      for (let i = 0; i < count; i++) {
        const template = templates[i % TEMPLATES]!
        const header: SessionHeader = { ...template.header, id: `listed-${i}`, cwd: `/bench/project-${i % 10}`, createdAt: template.header.createdAt + i }
        await writer.create(header, template.events)
        headers.push(header)
      }
      const cold = await measured(root)
      const warm = await measured(root)
      // One more turn in 1% of the sessions: their revision moves, so the listing reads them.
      for (let i = 0; i < count; i += 100) {
        const session = ctx.sessions.create({ id: `more-${count}-${i}`, cwd: '/bench/project' })
        await appendTurn(session, { rng })
        const length = templates[i % TEMPLATES]!.events.length
        await writer.appendBatch(headers[i]!, session.events.map(event => ({ ...event, seq: event.seq + length })))
      }
      await writer.close()
      const moved = await measured(root)
      const line = (label: string, f: Figures) =>
        console.log(`jsonl list ${count.toLocaleString('en-US')} sessions, ${label.padEnd(8)}: ${f.ms.toFixed(0).padStart(5)} ms, longest event-loop stall ${f.stallMs.toFixed(1).padStart(6)} ms (${f.listed} listed)`)
      line('cold', cold)
      line('warm', warm)
      line('1% moved', moved)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  }
}

await main()
