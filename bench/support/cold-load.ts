/**
 * Cold loads of stored logs, each in a fresh process (issue target 4, and memory): realistic
 * 10k/100k-event logs are written once per backend, then `cold-load-child.ts` loads one through
 * `ctx.sessionPersistence.load` and reports its times and peak RSS.
 */
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { PersistenceBackend } from '../../src/persistence/api.js'
import { JsonlBackend } from '../../src/persistence/jsonl/backend.js'
import { SessionPersistence } from '../../src/persistence/service.js'
import { SqliteBackend } from '../../src/persistence/sqlite/backend.js'
import { appendTurn, prng } from '../../src/persistence/testing/workload.js'
import { SessionsServicePlugin } from '../../src/session/service.js'
import type { SessionEvent, SessionHeader } from '../../src/session/types.js'

export type Kind = 'jsonl' | 'sqlite'
export interface Log { header: SessionHeader; events: SessionEvent[] }
export interface LoadFigures { events: number; readMs: number; loadMs: number; cpuMs: number; maxRssMb: number }

export const openBackend = (kind: Kind, store: string, packed = true): PersistenceBackend =>
  kind === 'sqlite' ? new SqliteBackend({ file: store, packed }) : new JsonlBackend({ root: store, packed })

export async function bootPersistence(backend?: PersistenceBackend, maxDelayMs = 200): Promise<Context> {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin, {})
  if (backend) await ctx.plugin(SessionPersistence, { backend, maxDelayMs, closeBackend: false })
  return ctx
}

/** A realistic log of at least `count` events (whole turns). */
export async function generate(id: string, count: number): Promise<Log> {
  const ctx = await bootPersistence()
  const session = ctx.sessions.create({ id, cwd: '/bench/project' })
  const rng = prng(42)
  while (session.length < count) await appendTurn(session, { rng })
  return { header: session.header, events: [...session.events] }
}

export async function storeLog(kind: Kind, store: string, log: Log, packed = true): Promise<void> {
  const backend = openBackend(kind, store, packed)
  await backend.create(log.header, [])
  for (let at = 0; at < log.events.length; at += 2000) await backend.appendBatch(log.header, log.events.slice(at, at + 2000))
  if (backend instanceof SqliteBackend) backend.db.pragma('wal_checkpoint(TRUNCATE)')
  await backend.close?.()
}

/** One cold load in a fresh process. */
export function coldLoad(kind: Kind, store: string, id: string): LoadFigures {
  const child = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'cold-load-child.ts'), kind, store, id], { encoding: 'utf8' })
  if (child.status !== 0) throw new Error(`cold load child failed: ${child.stderr}`)
  return JSON.parse(child.stdout) as LoadFigures
}
