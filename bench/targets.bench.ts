/**
 * The performance targets (docs/benchmarks.md, "Targets"), each figure printed with its target
 * beside it as `figure  value  target  ok/over`. Whole processes against the local zero-latency
 * fake model server; medians of BENCH_RUNS runs (default 5), with the runs of things that are
 * compared interleaved, so a change in the machine's load hits both sides.
 *
 *   npx tsx bench/targets.bench.ts                 # everything (a few minutes)
 *   BENCH_ONLY=step,peers npx tsx bench/targets.bench.ts
 *
 * Sections (BENCH_ONLY names): step (own time per step, fresh and resumed 1k / 100k events: the
 * log clock's steady cycle minus the tool process's own life, and dsh's own CPU per step, which
 * a loaded machine disturbs far less; beside them, not judged, the floor: the same read steps'
 * I/O done by a bare Node process, bench/support/step-floor.mjs),
 * peers (one-answer and 20-step tasks next to the pi coding agent), memory (peak RSS of a resumed
 * 100k-event session; memory per idle live session), load (cold load 10k/100k, JSONL and
 * SQLite), stream (model stream parse + translate + assemble), startup (`--version` and
 * `dsh sessions` with 1,000 stored sessions next to `node -e 0`).
 *
 * Peers: BENCH_PI=path/to/pi-coding-agent/dist/cli.js (or `pi` on PATH). Install it anywhere:
 *   npm i --prefix "$(mktemp -d)" @mariozechner/pi-coding-agent
 * Without it the peer ratios use the reference figures of the issue that set the targets and say so.
 * Requires dist/ (npm run build). BENCH_DSH_BIN measures another build's bin/dsh.js.
 */
import { execFile, execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { bwrapRunner } from '../src/sandbox/runner.js'
import { appendTurn, prng } from '../src/persistence/testing/workload.js'
import { FakeDeepSeek, streamResponse, type FakeResponse } from '../test-support/fake-deepseek.js'
import { dshBin } from '../test-support/run-dsh.js'
import { bootPersistence, coldLoad, generate, openBackend, storeLog, type Kind } from './support/cold-load.js'
import { streamFigures } from './support/stream.js'
import { median, newestLog, runNode, stepPhases, storeSession, targetLine, type Run } from './support/whole-process.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 5)
const STEPS = Number(process.env.BENCH_STEPS ?? 20)
const bin = process.env.BENCH_DSH_BIN ?? dshBin
const only = process.env.BENCH_ONLY?.split(',').map(s => s.trim()).filter(Boolean)
const wants = (section: string) => only === undefined || only.includes(section)
const spawnReference = join(import.meta.dirname, 'support', 'spawn-reference.mjs')
const hostReference = join(import.meta.dirname, 'support', 'host-reference.mjs')
const stepFloor = join(import.meta.dirname, 'support', 'step-floor.mjs')

/** Reference figures of the issue that set the peer targets (same fake server, 2-core machine). */
const PI_REFERENCE = { oneAnswerMs: 1750, stepsMs: 2440 }

const targets: string[] = []
const target = (figure: string, value: string, goal: string, ok: boolean) => {
  const line = targetLine(figure, value, goal, ok)
  targets.push(line)
  console.log(line)
}
const ms = (value: number) => `${value.toFixed(2)} ms`

const usage = { prompt_tokens: 10, completion_tokens: 2 }
const answer = (): FakeResponse => streamResponse([{ text: 'done' }, { finish: 'stop', usage }])
const bashTrue = (i: number): FakeResponse => streamResponse([{ toolCall: { id: `call-${i}`, name: 'bash', arguments: '{"command":"true","description":"noop"}' } }, { finish: 'tool_calls', usage }])
const readFile = (i: number): FakeResponse => streamResponse([{ toolCall: { id: `read-${i}`, name: 'read', arguments: '{"file_path":"notes.txt"}' } }, { finish: 'tool_calls', usage }])

const server = await FakeDeepSeek.start()
const scratch = mkdtempSync(join(tmpdir(), 'dsh-bench-targets-'))
const home = join(scratch, 'home')
const cwd = join(scratch, 'work')
mkdirSync(home, { mode: 0o700 })
mkdirSync(cwd)
writeFileSync(join(cwd, 'notes.txt'), 'a short file\n')
const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'bench' }
const script = (...responses: FakeResponse[]) => { server.discardPending(); server.requests.splice(0); server.enqueue(...responses) }
const steps = (make: (i: number) => FakeResponse) => Array.from({ length: STEPS }, (_, i) => make(i)).concat(answer())
const task = (session?: string) => ['--profile', 'headless', '--cwd', cwd, ...session === undefined ? [] : ['--session', session]]
const dsh = (args: string[], extraEnv: Record<string, string> = {}) => runNode(bin, args, { ...env, ...extraEnv })

/**
 * The tool process of the last run's timed bash steps: the argv a sandbox per command runs, and
 * how many of those steps a shell host started instead (src/sandbox/shell-host.ts).
 */
function toolOfLastRun(): { argv: string[]; prefix?: string[]; hosted: number; steps: number } {
  const results: { mode?: string; runner?: string; shellHost?: boolean }[] = []
  for (const line of readFileSync(newestLog(home), 'utf8').split('\n')) {
    if (line.includes('"type":"tool/result"')) results.push((JSON.parse(line) as { data: { meta?: { sandbox?: (typeof results)[number] } } }).data.meta?.sandbox ?? {})
  }
  // The timed steps are 2..STEPS (stepPhases): their results are the last STEPS - 1.
  const timed = results.slice(-(STEPS - 1))
  const hosted = timed.filter(sandbox => sandbox.shellHost === true).length
  const sandbox = timed.at(-1)
  const shell = ['bash', '-c', 'true']
  if (sandbox?.runner === 'bwrap' && (sandbox.mode === 'workspace-write' || sandbox.mode === 'read-only')) {
    const prefix = [...bwrapRunner().argv(sandbox.mode, cwd)]
    return { argv: [...prefix, ...shell], prefix, hosted, steps: timed.length }
  }
  if (sandbox?.runner !== undefined) console.log(`(sandbox runner ${sandbox.runner}: reference spawns bash alone)`)
  return { argv: shell, hosted, steps: timed.length }
}

/** Median spawn-to-close of `argv` from a small Node process (the tool process's own life). */
function referenceSpawnMs(argv: readonly string[]): number {
  return Number(execFileSync(process.execPath, [spawnReference, JSON.stringify(argv), '15', cwd], { encoding: 'utf8' }).trim())
}

/** Median run-to-close of `true` through a shell host under `prefix`, from a small Node process. */
function referenceHostMs(prefix: readonly string[]): number {
  const dshRoot = join(dirname(bin), '..')
  return Number(execFileSync(process.execPath, [hostReference, JSON.stringify(prefix), '15', cwd, dshRoot], { encoding: 'utf8' }).trim())
}

/** The tool process's life per timed step: the host's where it ran the step, a sandbox's own where not. */
function referenceToolMs(): { ms: number; note: string } {
  const tool = toolOfLastRun()
  const spawned = referenceSpawnMs(tool.argv)
  if (tool.prefix === undefined || tool.hosted === 0) return { ms: spawned, note: `from a small process ${ms(spawned)}` }
  const hosted = referenceHostMs(tool.prefix)
  const mixed = (hosted * tool.hosted + spawned * (tool.steps - tool.hosted)) / tool.steps
  return { ms: mixed, note: `${tool.hosted} of ${tool.steps} timed steps through the shell host: ${ms(hosted)} there, ${ms(spawned)} in a sandbox of its own, from a small process` }
}

interface StepFigures {
  bashCycle: number; reference: number; bashOwn: number; readCycle: number; readOwn: number
  bashModel: number; readModel: number; dshToolMs: number; bashCpu: number; readCpu: number
  /** The same read steps' own time in a bare Node process (bench/support/step-floor.mjs). */
  floorOwn: number
}

/**
 * The fake model server's own time per step in the last run (request received to response
 * ended, measured by the server in this process), over the requests of the steps `stepPhases`
 * times: steps 2..STEPS of the turn (request 0 opens step 1, the last one is the answer).
 */
function modelMsPerStep(): number {
  const steady = server.requests.slice(1, STEPS).map(request => (request.timing.endedAt ?? request.timing.receivedAt) - request.timing.receivedAt)
  return steady.length === 0 ? 0 : steady.reduce((a, b) => a + b, 0) / steady.length
}

/**
 * The floor under the last run's read steps: bench/support/step-floor.mjs sends the first request
 * body that run sent and does a step's unavoidable I/O (the request, the SSE parse, three durable
 * appends, the file read) with nothing else; its steady cycle minus the model's time.
 */
async function floorMs(): Promise<number> {
  const first = server.requests[0]
  if (first === undefined) throw new Error('floor: the read run sent no request')
  const body = join(scratch, 'floor-request.json')
  writeFileSync(body, first.raw)
  const work = mkdtempSync(join(scratch, 'floor-'))
  writeFileSync(join(work, 'notes.txt'), readFileSync(join(cwd, 'notes.txt')))
  script(...steps(readFile))
  // Asynchronously: the fake server answering it runs in this process.
  const cycle = await new Promise<number>((resolve, reject) => execFile(process.execPath, [stepFloor, server.url, String(STEPS), body, work], { encoding: 'utf8' },
    (error, stdout) => error ? reject(error) : resolve(Number(stdout.trim()))))
  rmSync(work, { recursive: true, force: true })
  return cycle - modelMsPerStep()
}

/**
 * Own time per step: the steady cycle (log clock) minus the model's own time (the fake server's
 * handling of each request), and for `bash true` also minus the same tool process's life spawned
 * from a small process right after the run. The raw cycle is printed beside it.
 */
async function stepFigures(label: string, session?: string): Promise<StepFigures> {
  const bash: number[] = []
  const refs: number[] = []
  const own: number[] = []
  const reads: number[] = []
  const readOwn: number[] = []
  const bashModel: number[] = []
  const readModel: number[] = []
  const dshTool: number[] = []
  const notes: string[] = []
  const bashCpu: number[] = []
  const readCpu: number[] = []
  const floorOwn: number[] = []
  for (let i = 0; i < RUNS; i++) {
    // dsh's own CPU per step: (N-step run - one-answer run) / N, both on the same session size.
    script(answer())
    const one = await dsh([...task(session), 'say done'])
    script(...steps(bashTrue))
    const bashRun = await dsh([...task(session), `run true ${STEPS} times`])
    bashCpu.push((bashRun.cpuMs - one.cpuMs) / STEPS)
    const phases = stepPhases(home)
    const bashModelMs = modelMsPerStep()
    const { ms: reference, note } = referenceToolMs()
    notes.push(note)
    bash.push(phases.cycleMs)
    refs.push(reference)
    bashModel.push(bashModelMs)
    own.push(phases.cycleMs - reference - bashModelMs)
    dshTool.push(phases.toolMs)
    script(...steps(readFile))
    const readRun = await dsh([...task(session), `read notes ${STEPS} times`])
    readCpu.push((readRun.cpuMs - one.cpuMs) / STEPS)
    const readCycle = stepPhases(home).cycleMs
    const readModelMs = modelMsPerStep()
    reads.push(readCycle)
    readModel.push(readModelMs)
    readOwn.push(readCycle - readModelMs)
    floorOwn.push(await floorMs())
  }
  const figures = {
    bashCycle: median(bash), reference: median(refs), bashOwn: median(own), readCycle: median(reads), readOwn: median(readOwn),
    bashModel: median(bashModel), readModel: median(readModel), dshToolMs: median(dshTool), bashCpu: median(bashCpu), readCpu: median(readCpu),
    floorOwn: median(floorOwn),
  }
  console.log(`${label}: bash step: raw cycle ${ms(figures.bashCycle)}, model time ${ms(figures.bashModel)}, tool process as spawned by dsh ${ms(figures.dshToolMs)} ` +
    `(reference ${ms(figures.reference)}; ${notes.at(-1)}), own ${ms(figures.bashOwn)}; read step: raw cycle ${ms(figures.readCycle)}, model time ${ms(figures.readModel)}, ` +
    `own ${ms(figures.readOwn)} (floor ${ms(figures.floorOwn)}); dsh CPU per step ${ms(figures.bashCpu)} (bash), ${ms(figures.readCpu)} (read)`)
  return figures
}

/**
 * Not a target: what a bare Node process doing the same read steps' I/O takes on this machine,
 * and how far above it dsh is. Where the floor itself nears 3 ms, that target is the machine's.
 */
function floorLine(label: string, figures: StepFigures): void {
  const line = `${`bare-Node floor, read step, ${label}`.padEnd(58)} ${ms(figures.floorOwn).padStart(12)}  dsh above it ${ms(figures.readOwn - figures.floorOwn)}`
  targets.push(line)
  console.log(line)
}

async function stepSection(): Promise<void> {
  console.log(`\n-- own time per step (${STEPS} steps per run, ${RUNS} runs, log clock; "own" = raw cycle minus the fake model server's own time per request, and for bash minus the tool process)`)
  const fresh = await stepFigures('fresh session')
  target('own time per step, bash true, fresh session', ms(fresh.bashOwn), '<= 3 ms', fresh.bashOwn <= 3)
  target('own time per step, read (no process), fresh session', ms(fresh.readOwn), '<= 3 ms', fresh.readOwn <= 3)
  target('dsh CPU per step, bash true, fresh session', ms(fresh.bashCpu), '<= 3 ms', fresh.bashCpu <= 3)
  floorLine('fresh session', fresh)
  const sizes = [['1k', 1_000], ['100k', 100_000]] as const
  const resumed: Record<string, StepFigures> = {}
  for (const [key, count] of sizes) {
    const id = `bench-${key}`
    const events = await storeSession(home, cwd, id, count, count > 1_000 ? 1_000 : undefined)
    resumed[key] = await stepFigures(`resumed ${key} (${events} events${count > 1_000 ? ', compacted every ~1k' : ''})`, id)
    target(`own time per step, bash true, resumed ${key} events`, ms(resumed[key].bashOwn), '<= 3 ms', resumed[key].bashOwn <= 3)
    target(`own time per step, read, resumed ${key} events`, ms(resumed[key].readOwn), '<= 3 ms', resumed[key].readOwn <= 3)
    target(`dsh CPU per step, bash true, resumed ${key} events`, ms(resumed[key].bashCpu), '<= 3 ms', resumed[key].bashCpu <= 3)
    floorLine(`resumed ${key} events`, resumed[key])
  }
  const growth = resumed['100k'].readOwn - resumed['1k'].readOwn
  target('step growth 1k -> 100k events (read step)', ms(growth), '<= 0.5 ms', growth <= 0.5)
  const bashGrowth = resumed['100k'].bashOwn - resumed['1k'].bashOwn
  target('step growth 1k -> 100k events (bash step, own time)', ms(bashGrowth), '<= 0.5 ms', bashGrowth <= 0.5)
}

/** The pi coding agent's CLI script, if installed. */
function findPi(): string | undefined {
  if (process.env.BENCH_PI !== undefined) return process.env.BENCH_PI === '' ? undefined : process.env.BENCH_PI
  try {
    return realpathSync(execFileSync('which', ['pi'], { encoding: 'utf8' }).trim())
  } catch {
    return undefined
  }
}

async function peersSection(): Promise<void> {
  console.log(`\n-- whole process next to peers (${RUNS} interleaved runs each, medians)`)
  const pi = findPi()
  const piDir = join(scratch, 'pi-home')
  const piWork = join(scratch, 'pi-work')
  mkdirSync(piDir, { recursive: true })
  mkdirSync(piWork, { recursive: true })
  writeFileSync(join(piDir, 'models.json'), JSON.stringify({
    providers: { fake: { baseUrl: server.url, api: 'openai-completions', apiKey: 'bench', compat: { supportsDeveloperRole: false, supportsReasoningEffort: false }, models: [{ id: 'deepseek-v4-flash' }] } },
  }))
  const runPi = (prompt: string) => runNode(pi!, ['-p', '--model', 'fake/deepseek-v4-flash', prompt], { PI_CODING_AGENT_DIR: piDir, HOME: piDir }, { cwd: piWork })
  const piBash = (i: number): FakeResponse => streamResponse([{ toolCall: { id: `call-${i}`, name: 'bash', arguments: '{"command":"true"}' } }, { finish: 'tool_calls', usage }])
  const kinds = [
    ['one-answer task', () => script(answer()), () => script(answer()), 'say done', 0.15, PI_REFERENCE.oneAnswerMs],
    [`${STEPS}-step bash true task`, () => script(...steps(bashTrue)), () => script(...Array.from({ length: STEPS }, (_, i) => piBash(i)), answer()), `run true ${STEPS} times`, 0.3, PI_REFERENCE.stepsMs],
  ] as const
  for (const [label, dshScript, piScript, prompt, goal, reference] of kinds) {
    const ours: Run[] = []
    const theirs: Run[] = []
    for (let i = 0; i < RUNS; i++) {
      dshScript()
      ours.push(await dsh([...task(), prompt]))
      if (pi !== undefined) {
        piScript()
        theirs.push(await runPi(prompt))
        if (server.pending !== 0) throw new Error(`pi did not take all ${label} responses (${server.pending} left)`)
      }
    }
    const dshMs = median(ours.map(r => r.ms))
    const dshRss = median(ours.map(r => r.rssKb)) / 1024
    console.log(`dsh ${label}: ${dshMs.toFixed(0)} ms wall, ${median(ours.map(r => r.cpuMs)).toFixed(0)} ms CPU, ${dshRss.toFixed(0)} MB peak RSS`)
    if (pi !== undefined) {
      const piMs = median(theirs.map(r => r.ms))
      console.log(`pi  ${label}: ${piMs.toFixed(0)} ms wall, ${median(theirs.map(r => r.cpuMs)).toFixed(0)} ms CPU, ${(median(theirs.map(r => r.rssKb)) / 1024).toFixed(0)} MB peak RSS`)
      // CPU time moves far less than wall time on a loaded machine: printed beside it, not judged.
      console.log(`${label}: CPU time dsh / pi ${(median(ours.map(r => r.cpuMs)) / median(theirs.map(r => r.cpuMs))).toFixed(2)}x`)
      target(`${label}: dsh / pi (measured)`, `${(dshMs / piMs).toFixed(2)}x`, `<= ${goal}x`, dshMs / piMs <= goal)
    } else {
      console.log(`pi not found (BENCH_PI or pi on PATH): dsh alone; ratio against the reference pi figure of ${reference} ms`)
      target(`${label}: dsh / pi (reference ${reference} ms, not measured)`, `${(dshMs / reference).toFixed(2)}x`, `<= ${goal}x`, dshMs / reference <= goal)
    }
  }
}

/** Memory per idle live session: sessions of ~1k events loaded into one process, measured in a child. */
function idleSessionMemory(store: string, ids: readonly string[]): { perSessionKb: number; heapPerSessionKb: number } {
  const code = `
    import { bootPersistence, openBackend } from ${JSON.stringify(join(import.meta.dirname, 'support', 'cold-load.ts'))}
    const ids = ${JSON.stringify(ids)}
    const ctx = await bootPersistence(openBackend('jsonl', ${JSON.stringify(store)}), 1_000_000)
    const settle = () => { for (let i = 0; i < 4; i++) globalThis.gc() }
    // One load first, so code and caches are warm and not counted per session.
    await ctx.sessionPersistence.load(ids[0])
    settle()
    const before = process.memoryUsage()
    for (const id of ids.slice(1)) await ctx.sessionPersistence.load(id)
    settle()
    const after = process.memoryUsage()
    const n = ids.length - 1
    process.stdout.write(JSON.stringify({ perSessionKb: (after.rss - before.rss) / 1024 / n, heapPerSessionKb: (after.heapUsed + after.external - before.heapUsed - before.external) / 1024 / n }))
    process.exit(0)`
  return JSON.parse(execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' })) as { perSessionKb: number; heapPerSessionKb: number }
}

async function memorySection(): Promise<void> {
  console.log(`\n-- memory (${RUNS} runs)`)
  const id = 'bench-mem-100k'
  const events = await storeSession(home, cwd, id, 100_000, 1_000)
  const runs: Run[] = []
  for (let i = 0; i < RUNS; i++) {
    script(answer())
    runs.push(await dsh([...task(id), 'say done']))
  }
  const peak = median(runs.map(r => r.rssKb)) / 1024
  console.log(`resumed ${events}-event session, one answer: ${median(runs.map(r => r.ms)).toFixed(0)} ms wall, peak RSS median ${peak.toFixed(0)} MB (max ${(Math.max(...runs.map(r => r.rssKb)) / 1024).toFixed(0)} MB)`)
  target('peak RSS, resumed 100k-event session (one answer)', `${peak.toFixed(0)} MB`, '< 80 MB', peak < 80)

  const store = join(scratch, 'idle-store')
  const ids: string[] = []
  const rng = prng(3)
  const ctx = await bootPersistence()
  const backend = openBackend('jsonl', store)
  for (let i = 0; i < 41; i++) {
    const session = ctx.sessions.create({ id: `idle-${i}`, cwd: '/bench/project' })
    while (session.length < 1_000) await appendTurn(session, { rng })
    await backend.create(session.header, [...session.events])
    ids.push(session.id)
  }
  await backend.close?.()
  const idle = idleSessionMemory(store, ids)
  console.log(`idle live session of ~1k events (loaded, not running): ${idle.perSessionKb.toFixed(0)} KB RSS, ${idle.heapPerSessionKb.toFixed(0)} KB heap each (40 sessions in one process)`)
  target('memory per idle live session (~1k events), RSS', `${(idle.perSessionKb / 1024).toFixed(2)} MB`, 'printed', true)
}

async function loadSection(): Promise<void> {
  console.log('\n-- cold load (each in a fresh process)')
  const logs = { '10k': await generate('load-10k', 10_000), '100k': await generate('load-100k', 100_000) }
  for (const kind of ['jsonl', 'sqlite'] as Kind[]) {
    const times: Record<string, number[]> = { '10k': [], '100k': [] }
    const rss: number[] = []
    const cpu: number[] = []
    const paths: Record<string, string> = {}
    for (const [label, log] of Object.entries(logs)) {
      paths[label] = join(scratch, `${kind}-${label}${kind === 'sqlite' ? '.db' : ''}`)
      await storeLog(kind, paths[label], log)
    }
    for (let i = 0; i < RUNS; i++) {
      for (const [label, log] of Object.entries(logs)) {
        const result = coldLoad(kind, paths[label], log.header.id)
        times[label].push(result.loadMs)
        if (label === '100k') rss.push(result.maxRssMb), cpu.push(result.cpuMs)
      }
    }
    const [small, large] = [median(times['10k']), median(times['100k'])]
    console.log(`${kind}: 10k ${small.toFixed(0)} ms, 100k ${large.toFixed(0)} ms (CPU ${median(cpu).toFixed(0)} ms, peak RSS ${median(rss).toFixed(0)} MB)`)
    target(`cold load of 100k events, ${kind}`, `${(large / 1000).toFixed(3)} s`, '<= 0.3 s', large <= 300)
    target(`cold load 100k/10k, ${kind}`, `${(large / small).toFixed(2)}x`, '<= 11x', large / small <= 11)
  }
}

async function streamSection(): Promise<void> {
  console.log('\n-- model stream (100k deltas, best of interleaved rounds)')
  const f = await streamFigures(100_000)
  console.log(`eventsource-parser ${f.parserMs.toFixed(1)} ms, + JSON.parse ${f.parserJsonMs.toFixed(1)} ms, parse + translate + assemble ${f.fullMs.toFixed(1)} ms; CPU-time ratio (median of pairs) ${f.cpuRatio.toFixed(2)}x`)
  const ratio = f.fullMs / f.parserJsonMs
  target('model stream: full / (eventsource-parser + JSON.parse)', `${ratio.toFixed(2)}x`, '<= 1.5x', ratio <= 1.5)
}

async function startupSection(): Promise<void> {
  console.log(`\n-- start-up (${RUNS * 2} interleaved runs, medians)`)
  const listHome = join(scratch, 'list-home')
  mkdirSync(listHome, { mode: 0o700 })
  const ctx = await bootPersistence()
  const backend = openBackend('jsonl', join(listHome, 'sessions'))
  const rng = prng(5)
  for (let i = 0; i < 1000; i++) {
    const session = ctx.sessions.create({ id: `listed-${i}`, cwd: `/bench/project-${i % 10}` })
    await appendTurn(session, { rng })
    await backend.create(session.header, [...session.events])
  }
  await backend.close?.()
  const empty = join(scratch, 'node-e-0.js')
  writeFileSync(empty, '0\n')
  const runs = { node: [] as Run[], version: [] as Run[], sessions: [] as Run[] }
  const listEnv = { DSH_HOME: listHome }
  await dsh(['sessions'], listEnv) // writes each session's summary cache once, as any first list does
  for (let i = 0; i < RUNS * 2; i++) {
    runs.node.push(await runNode(empty, [], {}))
    runs.version.push(await dsh(['--version']))
    runs.sessions.push(await dsh(['sessions'], listEnv))
  }
  const [node, version, sessions] = [runs.node, runs.version, runs.sessions].map(r => median(r.map(x => x.ms)))
  const cpu = (r: Run[]) => median(r.map(x => x.cpuMs)).toFixed(0)
  console.log(`node -e 0 ${node.toFixed(0)} ms (CPU ${cpu(runs.node)}), dsh --version ${version.toFixed(0)} ms (CPU ${cpu(runs.version)}), dsh sessions (1,000) ${sessions.toFixed(0)} ms (CPU ${cpu(runs.sessions)})`)
  target('dsh --version / node -e 0', `${(version / node).toFixed(2)}x`, '< 2x', version / node < 2)
  target('dsh sessions (1,000 stored) / node -e 0', `${(sessions / node).toFixed(2)}x`, '< 2x', sessions / node < 2)
}

try {
  console.log(`targets bench: ${bin}, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`)
  if (!existsSync(bin)) throw new Error(`${bin} not found: build first (npm run build)`)
  if (wants('stream')) await streamSection()
  if (wants('load')) await loadSection()
  if (wants('startup')) await startupSection()
  if (wants('peers')) await peersSection()
  if (wants('memory')) await memorySection()
  if (wants('step')) await stepSection()
  console.log(`\n-- summary (load average now ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`)
  console.log(targetLine('figure', 'value', 'target', true).replace(/ ok$/, ' ok/over'))
  for (const line of targets) console.log(line)
} finally {
  await server.close()
  rmSync(scratch, { recursive: true, force: true })
}
