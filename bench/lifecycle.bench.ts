/**
 * Session lifecycle benchmark (prints numbers, never pass/fail):
 *   npx tsx bench/lifecycle.bench.ts
 * A long-lived SDK server (`dsh --profile sdk`, the built dist/) against the local fake DeepSeek
 * server runs one parent session through BENCH_CHILDREN (default 1,000) foreground subagent
 * children, BENCH_PER_TURN (default 50) per parent turn. After the first turn (warm) and after
 * the last it prints the server's heap and RSS (after a full GC), its open file descriptors
 * (/proc/self/fd), the writer locks held in its store and its live sessions. A finished child is
 * closed: those figures should stay flat; only the parent's own log grows.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { FakeDeepSeek, streamResponse } from '../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../test-support/run-dsh.js'
import { waitForFile } from '../test-support/wait-for-file.js'
import { DshClient } from '../src/sdk/client.js'

const children = Number(process.env.BENCH_CHILDREN ?? 1000)
const perTurn = Number(process.env.BENCH_PER_TURN ?? 50)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

const server = await FakeDeepSeek.start()
const { home, cwd } = tempHome()
const statsFile = join(home, 'stats')
const client = await DshClient.start({
  cwd,
  command: [process.execPath, '--expose-gc', '--require', join(import.meta.dirname, 'support', 'process-stats.cjs'), dshBin, '--profile', 'sdk'],
  env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'bench-key', DSH_MODEL: undefined, DSH_BENCH_STATS_FILE: statsFile },
})
const pid = client.process.pid!

let samples = 0
async function sample(label: string, done: number, parentId: string | undefined) {
  samples += 1
  const ready = waitForFile(`${statsFile}.${samples}`)
  process.kill(pid, 'SIGUSR2')
  await ready
  const [heap, rss, fds] = readFileSync(`${statsFile}.${samples}`, 'utf8').trim().split(' ').map(Number)
  const lockDir = join(home, 'sessions', '.locks')
  const locks = readdirSync(lockDir).filter(name => name.endsWith('.lock')).length
  const { sessions } = await client.list()
  const live = sessions.filter(s => s.live === true).length
  const parent = sessions.find(s => s.id === parentId)
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)
  console.log(`${label.padEnd(6)} children ${String(done).padStart(5)}  heap ${mb(heap).padStart(6)} MB  rss ${mb(rss).padStart(6)} MB  fds ${String(fds).padStart(4)}  writer locks ${locks}  live sessions ${live}  stored ${sessions.length}  parent events ${parent?.length ?? '?'}`)
}

let parentId: string | undefined
let done = 0
const started = performance.now()
let firstTurnEnd = started
try {
  for (let turn = 0; done < children; turn++) {
    const n = Math.min(perTurn, children - done)
    const calls = Array.from({ length: n }, (_, i) => ({ toolCall: { index: i, id: `call_${turn}_${i}`, name: 'subagent', arguments: JSON.stringify({ description: `Task ${i}`, prompt: `child work ${turn}.${i}`, run_in_background: false }) } }))
    server.enqueue(
      streamResponse([...calls, { finish: 'tool_calls', usage }]),
      ...calls.map(() => streamResponse([{ text: 'CHILD_DONE' }, { finish: 'stop', usage }])),
      streamResponse([{ text: 'PARENT_DONE' }, { finish: 'stop', usage }]),
    )
    const result = await client.run(`delegate round ${turn}`, parentId === undefined ? {} : { sessionId: parentId })
    if (result.finalResponse !== 'PARENT_DONE') throw new Error(`round ${turn}: ${result.finalResponse}`)
    parentId = result.sessionId
    done += n
    if (turn === 0) {
      firstTurnEnd = performance.now()
      await sample('start', done, parentId)
    }
  }
  const ms = performance.now() - firstTurnEnd
  await sample('end', done, parentId)
  console.log(`${done - Math.min(perTurn, children)} children after the first turn in ${(ms / 1000).toFixed(1)} s (${(ms / Math.max(1, done - perTurn)).toFixed(1)} ms per child)`)
} finally {
  await client.close()
  await server.close()
}
