/**
 * Persistence numbers (D-2, D-4, D-6): write throughput with write-behind and with a flush per
 * event, cold load time and peak RSS of realistic 10k and 100k event logs for each backend (each
 * load in its own process), and bytes on disk per event, packed vs unpacked. Prints figures only.
 *
 *   npx tsx bench/persistence.bench.ts
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { appendTurn, prng } from '../src/persistence/testing/workload.js'
import type { Session } from '../src/session/api.js'
import { bootPersistence as boot, coldLoad, generate, openBackend as open, storeLog as store, type Kind, type Log } from './support/cold-load.js'
import { targetLine } from './support/whole-process.js'

function diskBytes(path: string): number {
  const info = statSync(path)
  if (!info.isDirectory()) return info.size
  return readdirSync(path).reduce((sum, name) => sum + diskBytes(join(path, name)), 0)
}

async function storeLog(kind: Kind, path: string, log: Log, packed = true): Promise<number> {
  await store(kind, path, log, packed)
  return diskBytes(path)
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
  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-persistence-'))
  try {
    for (const kind of ['jsonl', 'sqlite'] as const) await throughput(kind, dir)
    const logs = { '10k': await generate('load-10k', 10_000), '100k': await generate('load-100k', 100_000) }
    const targets: string[] = []
    for (const kind of ['jsonl', 'sqlite'] as const) {
      const times: Record<string, number> = {}
      for (const [label, log] of Object.entries(logs)) {
        const path = join(dir, `${kind}-${label}${kind === 'sqlite' ? '.db' : ''}`)
        const packedBytes = await storeLog(kind, path, log)
        const unpackedStore = join(dir, `${kind}-${label}-unpacked${kind === 'sqlite' ? '.db' : ''}`)
        const unpackedBytes = await storeLog(kind, unpackedStore, log, false)
        const result = coldLoad(kind, path, log.header.id)
        times[label] = result.loadMs
        console.log(`${kind} ${label} (${log.events.length} events): cold load ${result.loadMs.toFixed(0)} ms (backend read alone, warm: ${result.readMs.toFixed(0)} ms), peak RSS ${result.maxRssMb.toFixed(0)} MB; ` +
          `${(packedBytes / log.events.length).toFixed(1)} bytes/event packed, ${(unpackedBytes / log.events.length).toFixed(1)} unpacked`)
      }
      const ratio = times['100k'] / times['10k']
      console.log(`${kind} cold load 100k/10k ratio: ${ratio.toFixed(2)}x (events ratio ${(logs['100k'].events.length / logs['10k'].events.length).toFixed(2)}x)`)
      targets.push(targetLine(`cold load of 100k events, ${kind}`, `${(times['100k'] / 1000).toFixed(3)} s`, '<= 0.3 s', times['100k'] <= 300))
      targets.push(targetLine(`cold load 100k/10k, ${kind}`, `${ratio.toFixed(2)}x`, '<= 11x', ratio <= 11))
    }
    for (const line of targets) console.log(line)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
