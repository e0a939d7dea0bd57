/**
 * One cold load through ctx.sessionPersistence in this fresh process; prints
 * `{events, loadMs, cpuMs, maxRssMb, readMs}` as JSON: the load's wall and CPU time and the peak
 * RSS right after it,
 * then (for comparison, warm) the backend read alone: parse and decode, no hydrate.
 * Args: <jsonl|sqlite> <store> <id>.
 */
import { bootPersistence, openBackend, type Kind } from './cold-load.js'

const [kind, store, id] = process.argv.slice(2) as [Kind, string, string]
const ctx = await bootPersistence(openBackend(kind, store), 1_000_000)
let started = performance.now()
const cpu = process.cpuUsage()
const { session } = await ctx.sessionPersistence.load(id)
const loadMs = performance.now() - started
const used = process.cpuUsage(cpu)
const cpuMs = (used.user + used.system) / 1000
const maxRssMb = process.resourceUsage().maxRSS / 1024
const events = session.length
const probe = openBackend(kind, store)
started = performance.now()
await probe.loadStored(id)
const readMs = performance.now() - started
process.stdout.write(JSON.stringify({ events, loadMs, cpuMs, maxRssMb, readMs }))
process.exit(0)
