/**
 * Crash-test child (src/persistence/crash.test.ts): runs one session through the real session
 * core and ctx.sessionPersistence, appending realistic turns with the D-3 checkpoints, and prints
 * `flushed <seq>` after every completed flush. The parent SIGKILLs it at a random point.
 *
 * argv: <jsonl|sqlite> <store path> <session id> <workload seed> <write-behind window ms>
 * The clock is a counter, so the parent can regenerate the exact same events in process.
 */
import { Context } from 'cordis'
import { SessionsServicePlugin } from '../src/session/service.js'
import { SessionPersistence } from '../src/persistence/service.js'
import { JsonlBackend } from '../src/persistence/jsonl/backend.js'
import { SqliteBackend } from '../src/persistence/sqlite/backend.js'
import { appendTurn, prng } from '../src/persistence/testing/workload.js'

export const CRASH_CLOCK_START = 1_750_000_000_000
/** Safety net: a child nobody kills stops on its own. */
const MAX_TURNS = 400

const [kind, store, id, seedText, windowText] = process.argv.slice(2)
const backend = kind === 'sqlite' ? new SqliteBackend({ file: store }) : new JsonlBackend({ root: store })
const ctx = new Context()
let clock = CRASH_CLOCK_START
await ctx.plugin(SessionsServicePlugin, { now: () => clock++ })
await ctx.plugin(SessionPersistence, { backend, maxDelayMs: Number(windowText) })
const session = ctx.sessions.create({ id, cwd: '/crash/project' })
const rng = prng(Number(seedText))
const checkpoint = async () => {
  const last = session.length - 1
  await ctx.parallel('session/flush', session)
  process.stdout.write(`flushed ${last}\n`)
}
await checkpoint()
for (let turn = 0; turn < MAX_TURNS; turn++) {
  await appendTurn(session, { rng, checkpoint })
  await checkpoint()
}
process.exit(0)
