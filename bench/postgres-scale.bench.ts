/**
 * Scale benchmark: 4 dsh SDK server processes sharing one PostgreSQL store, driving many
 * sessions (default 1,000) through the SDK against a local fake model server, each a few tool
 * steps; then the same run on one process with SQLite. Then a crash run: one of the 4 processes
 * is killed with SIGKILL mid-run, another process resumes its sessions (after the writer lease
 * expires) and the benchmark counts how many flushed events were lost (must be 0).
 *
 *   npx tsx bench/postgres-scale.bench.ts
 *   DSH_BENCH_SESSIONS=200 DSH_BENCH_STEPS=3 DSH_BENCH_CONCURRENCY=16 npx tsx bench/postgres-scale.bench.ts
 *
 * Prints figures; nothing passes or fails on time. Needs the Debian postgresql package.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DshClient } from '../src/sdk/client.js'
import { bodyBytes, streamResponse } from '../test-support/fake-deepseek.js'
import { postgresUnavailable, startPostgres } from '../test-support/postgres.js'
import { dshBin } from '../test-support/run-dsh.js'
import { PostgresBackend } from '../src/persistence/postgres/backend.js'
import { encodeEvent } from '../src/persistence/records.js'
import type { SessionEvent } from '../src/session/types.js'

const SESSIONS = Number(process.env.DSH_BENCH_SESSIONS ?? 1000)
const STEPS = Number(process.env.DSH_BENCH_STEPS ?? 3)
const CONCURRENCY = Number(process.env.DSH_BENCH_CONCURRENCY ?? 16)
const PROCESSES = 4
const LEASE_MS = 3_000
const peakRss = join(import.meta.dirname, 'support', 'peak-rss.cjs')
const usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 }

/** Answers by the conversation so far: a glob tool call until STEPS tool results, then text. */
async function modelServer(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { messages: { role: string }[] }
      const lastUser = body.messages.findLastIndex((m) => m.role === 'user')
      const tools = body.messages.slice(lastUser).filter((m) => m.role === 'tool').length
      const response = tools < STEPS
        ? streamResponse([{ reasoning: 'look around' }, { toolCall: { id: `call-${tools}`, name: 'glob', arguments: '{"pattern":"*.txt"}' } }, { finish: 'tool_calls', usage }])
        : streamResponse([{ text: 'done: ' }, { text: 'found the files.' }, { finish: 'stop', usage }])
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(bodyBytes(response))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

interface RunFigures {
  sessions: number
  seconds: number
  stepLatencies: number[]
  events: number
  rssKb: number[]
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

function print(label: string, f: RunFigures): void {
  console.log(`${label}: ${f.sessions} sessions in ${f.seconds.toFixed(1)} s = ${(f.sessions / f.seconds).toFixed(1)} sessions/s; ` +
    `step latency p50 ${percentile(f.stepLatencies, 0.5)} ms, p99 ${percentile(f.stepLatencies, 0.99)} ms; ` +
    `${f.events} events written = ${(f.events / f.seconds).toFixed(0)} events/s; peak RSS per process ${f.rssKb.map((kb) => `${(kb / 1024).toFixed(0)} MB`).join(', ')}`)
}

interface Fleet {
  clients: DshClient[]
  rssFiles: string[]
  home: string
  cwd: string
}

async function startFleet(count: number, modelUrl: string, store: { url?: string; patch?: string }): Promise<Fleet> {
  const home = mkdtempSync(join(tmpdir(), 'dsh-bench-home-'))
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-bench-work-'))
  writeFileSync(join(cwd, 'a.txt'), 'a\n')
  writeFileSync(join(cwd, 'b.txt'), 'b\n')
  const patch = join(home, 'bench.yml')
  writeFileSync(patch, `${store.patch ?? ''}- id: session-title\n  config:\n    llm: false\n- id: persistence\n  config:\n    leaseTtlMs: ${LEASE_MS}\n`)
  const rssFiles: string[] = []
  const clients = await Promise.all(Array.from({ length: count }, (_, i) => {
    const rssFile = join(home, `rss-${i}`)
    rssFiles.push(rssFile)
    return DshClient.start({
      command: [process.execPath, '--require', peakRss, dshBin, '--profile', 'sdk', '--patch', patch, ...store.url ? ['--store', store.url] : []],
      cwd,
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: modelUrl, DEEPSEEK_API_KEY: 'bench', DSH_BENCH_RSS_FILE: rssFile, DSH_MODEL: undefined },
      stderr: 'collect',
    })
  }))
  return { clients, rssFiles, home, cwd }
}

async function stopFleet(fleet: Fleet): Promise<number[]> {
  await Promise.all(fleet.clients.map((client) => client.close()))
  const rss = fleet.rssFiles.map((file) => { try { return Number(readFileSync(file, 'utf8').trim().split(/\s+/)[0]) } catch { return NaN } })
  rmSync(fleet.home, { recursive: true, force: true })
  rmSync(fleet.cwd, { recursive: true, force: true })
  return rss.filter((kb) => !Number.isNaN(kb))
}

/** Drives `total` sessions over the clients (round robin, CONCURRENCY in flight per client). */
async function drive(clients: DshClient[], total: number, options: { onDone?: (done: number) => void; owner?: Map<string, number> } = {}) {
  const latencies: number[] = []
  let next = 0
  let done = 0
  let events = 0
  const worker = async (c: number) => {
    for (;;) {
      const index = next++
      if (index >= total) return
      const starts = new Map<number, number>()
      const client = clients[c % clients.length]
      let sessionId: string | undefined
      try {
        await client.run(`task ${index}: find the text files`, {
          onEvent: (event: SessionEvent) => {
            events++
            if (event.type === 'step/start') starts.set((event.data as { step: number }).step, event.time)
            if (event.type === 'step/end') {
              const start = starts.get((event.data as { step: number }).step)
              if (start !== undefined) latencies.push(event.time - start)
            }
          },
        }).then((result) => { sessionId = result.sessionId; options.owner?.set(result.sessionId, c % clients.length) })
      } catch {
        // A killed process fails its runs; the crash run counts those sessions separately.
      }
      void sessionId
      done++
      options.onDone?.(done)
    }
  }
  await Promise.all(Array.from({ length: clients.length * CONCURRENCY }, (_, c) => worker(c)))
  return { latencies, events }
}

async function storedEvents(url: string): Promise<number> {
  const backend = new PostgresBackend({ url })
  try {
    return (await backend.list()).reduce((sum, s) => sum + s.length, 0)
  } finally {
    await backend.close()
  }
}

async function main(): Promise<void> {
  const reason = postgresUnavailable()
  if (reason) {
    console.log(`skipped: ${reason}`)
    return
  }
  console.log(`${SESSIONS} sessions, ${STEPS} tool steps each, ${CONCURRENCY} in flight per process`)
  const pg = await startPostgres({ fsync: true })
  const model = await modelServer()
  try {
    // 1. Four processes sharing PostgreSQL.
    {
      const url = `${pg.url}&schema=scale`
      const fleet = await startFleet(PROCESSES, model.url, { url })
      const started = performance.now()
      const { latencies } = await drive(fleet.clients, SESSIONS)
      const seconds = (performance.now() - started) / 1000
      const rss = await stopFleet(fleet)
      print(`PostgreSQL, ${PROCESSES} processes`, { sessions: SESSIONS, seconds, stepLatencies: latencies, events: await storedEvents(url), rssKb: rss })
    }
    // 2. One process with SQLite.
    {
      const fleet = await startFleet(1, model.url, { patch: '- id: persistence\n  name: persistence-sqlite\n' })
      const started = performance.now()
      const { latencies, events } = await drive(fleet.clients, SESSIONS)
      const seconds = (performance.now() - started) / 1000
      const rss = await stopFleet(fleet)
      print('SQLite, 1 process', { sessions: SESSIONS, seconds, stepLatencies: latencies, events, rssKb: rss })
    }
    // 3. Crash: SIGKILL one of four processes mid-run; another resumes its sessions.
    {
      const url = `${pg.url}&schema=crash`
      const fleet = await startFleet(PROCESSES, model.url, { url })
      const victim = fleet.clients[PROCESSES - 1]
      const reader = new PostgresBackend({ url })
      const victimSessions = new Set<string>()
      // Every session the victim announces (session.event notifications) is its.
      victim.onNotification((n) => { if (n.method === 'session.event') victimSessions.add(n.params.sessionId as string) })
      let snapshot = new Map<string, string[]>()
      let killed: Promise<void> | undefined
      await drive(fleet.clients, SESSIONS, {
        onDone: (done) => {
          if (killed !== undefined || done < SESSIONS / 2) return
          killed = (async () => {
            // What the store holds for the victim's sessions right before the kill: all of it
            // was flushed (committed), so all of it must survive.
            const ids = [...victimSessions]
            snapshot = new Map(await Promise.all(ids.map(async (id) => [id, ((await reader.loadStored(id))?.events ?? []).map(encodeEvent)] as const)))
            victim.process.kill('SIGKILL')
          })()
        },
      })
      await killed
      const survivor = fleet.clients[0]
      let resumed = 0
      let lost = 0
      let flushed = 0
      const started = performance.now()
      for (const [id, before] of snapshot) {
        flushed += before.length
        if (before.length === 0) continue
        // The victim's lease expires after LEASE_MS; until then the load is refused.
        for (;;) {
          try {
            await survivor.load(id)
            resumed++
            break
          } catch (error) {
            if (!/in use by another writer/.test(String((error as Error).message))) throw error
            await new Promise((resolve) => setTimeout(resolve, 250))
          }
        }
        const after = ((await reader.loadStored(id))?.events ?? []).map(encodeEvent)
        for (let i = 0; i < before.length; i++) if (after[i] !== before[i]) lost++
      }
      const resumeSeconds = (performance.now() - started) / 1000
      await reader.close()
      await stopFleet({ ...fleet, clients: fleet.clients.slice(0, PROCESSES - 1) })
      console.log(`crash run: SIGKILL of 1 of ${PROCESSES} processes with ${snapshot.size} sessions; another process resumed ${resumed} of them ` +
        `(${snapshot.size - resumed} had nothing stored yet) in ${resumeSeconds.toFixed(1)} s (lease ${LEASE_MS} ms); flushed events lost: ${lost} of ${flushed}`)
    }
  } finally {
    model.server.close()
    await pg.stop()
  }
}

await main()
