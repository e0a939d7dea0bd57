// Writer-lock child (test-support/writer-lock.ts): a separate dsh process acting on one
// session through ctx.sessionPersistence over the built dist/ tree.
//   argv: <jsonl|sqlite|postgres> <store path or URL> <session id> <create|load|read>
// Prints `held <pid>` once it is the session's writer (create: a new session with an open turn,
// flushed; load: a cold load), `read <n>` for a plain read of n events, or `refused <message>`
// (exit 3). A held writer stays until stdin says `release` (then disposes and prints `released`)
// or until it is killed.
import { createInterface } from 'node:readline'
import { Context } from 'cordis'
import { SessionsServicePlugin } from '../dist/session/index.js'
import { SessionPersistence } from '../dist/persistence/service.js'
import { JsonlBackend } from '../dist/persistence/jsonl/backend.js'
import { SqliteBackend } from '../dist/persistence/sqlite/backend.js'
import { PostgresBackend } from '../dist/persistence/postgres/backend.js'

const [kind, store, id, mode] = process.argv.slice(2)
const backend = kind === 'sqlite' ? new SqliteBackend({ file: store }) : kind === 'postgres' ? new PostgresBackend({ url: store }) : new JsonlBackend({ root: store })
const ctx = new Context()
await ctx.plugin(SessionsServicePlugin)
const fiber = ctx.plugin(SessionPersistence, { backend, maxDelayMs: 1, report: () => undefined })
await fiber
try {
  if (mode === 'read') {
    const stored = await backend.loadStored(id)
    process.stdout.write(`read ${stored?.events.length ?? 0}\n`)
    await backend.close()
    process.exit(0)
  }
  if (mode === 'create') {
    const session = ctx.sessions.create({ id, cwd: '/project' })
    session.append('turn/start', { turn: 1 })
    await ctx.sessionPersistence.flush(session)
  } else {
    await ctx.sessionPersistence.load(id)
  }
} catch (error) {
  process.stdout.write(`refused ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(3)
}
process.stdout.write(`held ${process.pid}\n`)
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'release') break
}
await fiber.dispose()
process.stdout.write('released\n')
process.exit(0)
