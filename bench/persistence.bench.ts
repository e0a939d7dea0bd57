/**
 * Persistence numbers (D-2, D-4, D-6): write throughput with write-behind and with a flush per
 * event, cold load time and peak RSS of realistic 10k and 100k event logs for each backend (each
 * load in its own process), and bytes on disk per event, packed vs unpacked. Prints figures only.
 *
 *   npx tsx bench/persistence.bench.ts
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { PersistenceBackend } from '../src/persistence/api.js'
import { JsonlBackend } from '../src/persistence/jsonl/backend.js'
import { SessionPersistence } from '../src/persistence/service.js'
import { SqliteBackend } from '../src/persistence/sqlite/backend.js'
import { appendTurn, prng } from '../src/persistence/testing/workload.js'
import type { Session } from '../src/session/api.js'
import { SessionsServicePlugin } from '../src/session/service.js'
import type { SessionEvent, SessionHeader } from '../src/session/types.js'

type Kind = 'jsonl' | 'sqlite'

const open = (kind: Kind, store: string, packed = true): PersistenceBackend =>
  kind === 'sqlite' ? new SqliteBackend({ file: store, packed }) : new JsonlBackend({ root: store, packed })

async function boot(backend?: PersistenceBackend, maxDelayMs = 200): Promise<Context> {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin, {})
  if (backend) await ctx.plugin(SessionPersistence, { backend, maxDelayMs, closeBackend: false })
  return ctx
}

/** A realistic log of at least `count` events (whole turns). */
async function generate(id: string, count: number): Promise<{ header: SessionHeader; events: SessionEvent[] }> {
  const ctx = await boot()
  const session = ctx.sessions.create({ id, cwd: '/bench/project' })
  const rng = prng(42)
  while (session.length < count) await appendTurn(session, { rng })
  return { header: session.header, events: [...session.events] }
}

function diskBytes(path: string): number {
  const info = statSync(path)
  if (!info.isDirectory()) return info.size
  return readdirSync(path).reduce((sum, name) => sum + diskBytes(join(path, name)), 0)
}

async function storeLog(kind: Kind, store: string, log: { header: SessionHeader; events: SessionEvent[] }, packed = true): Promise<number> {
  const backend = open(kind, store, packed)
  await backend.create(log.header, [])
  for (let at = 0; at < log.events.length; at += 2000) await backend.appendBatch(log.header, log.events.slice(at, at + 2000))
  if (backend instanceof SqliteBackend) backend.db.pragma('wal_checkpoint(TRUNCATE)')
  await backend.close?.()
  return diskBytes(store)
}

/** Child mode: one cold load through ctx.sessionPersistence, in a fresh process. */
async function loadChild(kind: Kind, store: string, id: string): Promise<void> {
  const backend = open(kind, store)
  const started = performance.now()
  const stored = await backend.loadStored(id)
  const readMs = performance.now() - started
  const ctx = await boot(backend, 1_000_000)
  const loadStarted = performance.now()
  const { session } = await ctx.sessionPersistence.load(id)
  const loadMs = performance.now() - loadStarted
  process.stdout.write(JSON.stringify({ events: session.length, storedEvents: stored?.events.length, readMs, loadMs, maxRssMb: process.resourceUsage().maxRSS / 1024 }))
  process.exit(0)
}

async function throughput(kind: Kind, dir: string): Promise<void> {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
  // Write-behind: append a realistic stream as fast as the session accepts it, then flush.
  {
    const backend = open(kind, join(dir, `${kind}-wb${kind === 'sqlite' ? '.db' : ''}`))
    const ctx = await boot(backend)
    const session = ctx.sessions.create({ id: 'wb', cwd: '/bench/project' })
    const rng = prng(7)
    const started = performance.now()
    while (session.length < 20_000) await appendTurn(session, { rng, checkpoint: undefined })
    await ctx.sessionPersistence.flush(session)
    const ms = performance.now() - started
    console.log(`${kind} write-behind (200 ms window): ${fmt(session.length / (ms / 1000))} events/s (${session.length} events in ${ms.toFixed(0)} ms, incl. session appends)`)
    await backend.close?.()
  }
  // Checkpoint-heavy: flush after every single event (fsync each time).
  {
    const backend = open(kind, join(dir, `${kind}-fe${kind === 'sqlite' ? '.db' : ''}`))
    const ctx = await boot(backend)
    const session: Session = ctx.sessions.create({ id: 'fe', cwd: '/bench/project' })
    const source = await generate('fe-source', 1000)
    await ctx.sessionPersistence.flush(session)
    const started = performance.now()
    for (const event of source.events.slice(0, 1000)) {
      session.append(event.type, event.data, { surfaceOp: event.surfaceOp, sourceEventSeqs: event.sourceEventSeqs, time: event.time })
      await ctx.sessionPersistence.flush(session)
    }
    const ms = performance.now() - started
    console.log(`${kind} flush per event: ${fmt(1000 / (ms / 1000))} events/s (1000 events in ${ms.toFixed(0)} ms)`)
    await backend.close?.()
  }
}

async function main(): Promise<void> {
  if (process.argv[2] === '--load') return loadChild(process.argv[3] as Kind, process.argv[4], process.argv[5])
  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-persistence-'))
  try {
    for (const kind of ['jsonl', 'sqlite'] as const) await throughput(kind, dir)
    const logs = { '10k': await generate('load-10k', 10_000), '100k': await generate('load-100k', 100_000) }
    for (const kind of ['jsonl', 'sqlite'] as const) {
      const times: Record<string, number> = {}
      for (const [label, log] of Object.entries(logs)) {
        const store = join(dir, `${kind}-${label}${kind === 'sqlite' ? '.db' : ''}`)
        const packedBytes = await storeLog(kind, store, log)
        const unpackedStore = join(dir, `${kind}-${label}-unpacked${kind === 'sqlite' ? '.db' : ''}`)
        const unpackedBytes = await storeLog(kind, unpackedStore, log, false)
        const child = spawnSync(process.execPath, ['--import', 'tsx', import.meta.filename, '--load', kind, store, log.header.id], { encoding: 'utf8' })
        if (child.status !== 0) throw new Error(`load child failed: ${child.stderr}`)
        const result = JSON.parse(child.stdout) as { events: number; readMs: number; loadMs: number; maxRssMb: number }
        times[label] = result.loadMs
        console.log(`${kind} ${label} (${log.events.length} events): cold load ${result.loadMs.toFixed(0)} ms (backend read ${result.readMs.toFixed(0)} ms), peak RSS ${result.maxRssMb.toFixed(0)} MB; ` +
          `${(packedBytes / log.events.length).toFixed(1)} bytes/event packed, ${(unpackedBytes / log.events.length).toFixed(1)} unpacked`)
      }
      console.log(`${kind} cold load 100k/10k ratio: ${(times['100k'] / times['10k']).toFixed(2)}x (events ratio ${(logs['100k'].events.length / logs['10k'].events.length).toFixed(2)}x)`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
