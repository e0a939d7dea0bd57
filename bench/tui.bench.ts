/**
 * The terminal app as a user meets it, in a real terminal (tmux): from starting `dsh` in an empty
 * folder to the first frame (the input box drawn), and from Enter to the answer of a zero-latency
 * fake model on the screen, typed 300 ms after the first frame (BENCH_TYPE_AFTER_MS); and `dsh -c`
 * resuming a stored ~1k-event session, and one of ~100k events compacted every 1k (as the resumed
 * memory target's; BENCH_BIG_EVENTS, 0 to leave it out), to its first frame (its last items drawn). Medians
 * of BENCH_RUNS runs (default 7), min and max beside; `node -e` printing a line, started the same
 * way, is printed as the floor. The screen is read with `tmux capture-pane` in a
 * loop (~3-5 ms a read), which is the figures' resolution. BENCH_DSH_BIN measures another build.
 * Needs tmux (apt-get install -y tmux) and a built dist/ with its bundle.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FakeDeepSeek, streamResponse } from '../test-support/fake-deepseek.js'
import { dshBin } from '../test-support/run-dsh.js'
import { hasTmux, Terminal } from '../test-support/tmux.js'
import { median, storeSession } from './support/whole-process.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 7)
const bin = process.env.BENCH_DSH_BIN ?? dshBin
const TYPE_AFTER_MS = Number(process.env.BENCH_TYPE_AFTER_MS ?? 300)

if (!hasTmux()) {
  console.log('tui bench: skipped, tmux is missing (apt-get install -y tmux)')
  process.exit(0)
}

/**
 * Reads the screen until `check` holds; the time it first held, in ms since `since`. Each read
 * lets the event loop turn first: the fake model server answers from this process.
 */
async function until(terminal: Terminal, check: (screen: string) => boolean, since: bigint, timeoutMs = 20_000): Promise<number> {
  for (;;) {
    await new Promise(resolve => setImmediate(resolve))
    const at = Number(process.hrtime.bigint() - since) / 1e6
    if (check(terminal.screen())) return at
    if (at > timeoutMs) throw new Error(`tui bench: timed out; screen was:\n${terminal.screen()}`)
  }
}

const figures = (label: string, values: number[]) =>
  console.log(`${label.padEnd(44)} ${median(values).toFixed(0).padStart(6)} ms  (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)})`)

/** `dsh -c` in `cwd` of `home`: ms from start to its first frame. */
async function resumeToFirstFrame(home: string, cwd: string): Promise<number> {
  const started = process.hrtime.bigint()
  const terminal = Terminal.start([process.execPath, bin, '-c'], { width: 100, height: 30, cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'bench' } })
  try {
    return await until(terminal, screen => screen.includes('Ask dsh'), started)
  } finally {
    terminal.close()
  }
}

const server = await FakeDeepSeek.start()
const usage = { prompt_tokens: 10, completion_tokens: 2 }
const scratch = mkdtempSync(join(tmpdir(), 'dsh-tui-bench-'))
const firstFrame: number[] = []
const answer: number[] = []
const floor: number[] = []
const resumed: number[] = []
// A stored session of ~1k events in a folder of its own, for `dsh -c` (its last 60 items drawn).
const storedHome = join(scratch, 'stored-home')
const storedCwd = join(scratch, 'stored-work')
mkdirSync(storedHome)
mkdirSync(storedCwd)
const storedEvents = await storeSession(storedHome, storedCwd, 'tui-bench-stored', 1_000)
const BIG = Number(process.env.BENCH_BIG_EVENTS ?? 100_000)
const bigHome = join(scratch, 'big-home')
const bigCwd = join(scratch, 'big-work')
mkdirSync(bigHome)
mkdirSync(bigCwd)
const bigEvents = BIG > 0 ? await storeSession(bigHome, bigCwd, 'tui-bench-big', BIG, 1_000) : 0
const resumedBig: number[] = []
try {
  for (let i = 0; i < RUNS + 1; i++) {
    const home = join(scratch, `home-${i}`)
    const cwd = join(scratch, `work-${i}`)
    mkdirSync(home)
    mkdirSync(cwd)
    server.discardPending()
    // The answer, and whatever else the app asks the model for (a title).
    server.enqueue(...Array.from({ length: 4 }, () => streamResponse([{ text: 'the answer is here' }, { finish: 'stop', usage }])))
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'bench', NO_COLOR: undefined }
    const started = process.hrtime.bigint()
    const terminal = Terminal.start([process.execPath, bin], { width: 100, height: 30, cwd, env })
    try {
      const painted = await until(terminal, screen => screen.includes('Ask dsh'), started)
      // A person reads the screen before typing: the app has that moment (BENCH_TYPE_AFTER_MS).
      await new Promise(resolve => setTimeout(resolve, TYPE_AFTER_MS))
      terminal.type('hello')
      const sent = process.hrtime.bigint()
      terminal.keys('Enter')
      const answered = await until(terminal, screen => screen.includes('the answer is here'), sent)
      // The first run writes the code cache for this build: left out, as a user's first start is.
      if (i > 0) firstFrame.push(painted), answer.push(answered)
    } finally {
      terminal.close()
    }
    const resumedFrame = await resumeToFirstFrame(storedHome, storedCwd)
    if (i > 0) resumed.push(resumedFrame)
    if (bigEvents > 0) {
      const bigFrame = await resumeToFirstFrame(bigHome, bigCwd)
      if (i > 0) resumedBig.push(bigFrame)
    }
    const nodeStarted = process.hrtime.bigint()
    const bare = Terminal.start([process.execPath, '-e', 'process.stdout.write("node is up\\n"); setTimeout(() => {}, 60000)'], { width: 100, height: 30, env: {} })
    try {
      if (i > 0) floor.push(await until(bare, screen => screen.includes('node is up'), nodeStarted))
    } finally {
      bare.close()
    }
  }
  console.log(`tui bench: ${bin}, ${RUNS} runs`)
  figures('node -e (prints a line), started in tmux', floor)
  figures('dsh: start to first frame', firstFrame)
  figures('dsh: Enter to the answer on screen', answer)
  figures(`dsh -c: a ${storedEvents}-event session, to first frame`, resumed)
  if (bigEvents > 0) figures(`dsh -c: a ${bigEvents}-event session, to first frame`, resumedBig)
} finally {
  await server.close()
  rmSync(scratch, { recursive: true, force: true })
}
