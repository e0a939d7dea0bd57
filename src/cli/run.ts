/**
 * Composes the profile, then either dumps it or runs it: load every row into a Cordis context,
 * hand the process to the app plugin, and when it is done unload what holds something outside
 * the process (flushing logs, releasing locks, stopping child processes) before the launcher exits.
 */
import { join, resolve } from 'node:path'
import { Context } from 'cordis'
import { environmentLayers, readSettings, resolveHome, tightenHome } from '../config/home.js'
import { checkLoaded, loadRows } from './loader.js'
import { dumpConfig } from '../config/dump.js'
import { composeProfile, resolveProfile } from '../config/profile.js'
import { ConfigError, stripTracking, type Row } from '../config/rows.js'
import type { Host } from '../host/index.js'
import type { LauncherOptions } from './main.js'
import type { LoadedRow } from './loader.js'
import type { SessionPersistenceService } from '../persistence/api.js'
import { isTrusted, readTrustedProjects } from '../trust/index.js'
import { UsageError } from './usage-error.js'
import { failureCode, failureLine, jsonOutputOf, type JsonOutput } from './early-failure.js'

const EXIT_SIGHUP = 129
const EXIT_SIGINT = 130
const EXIT_SIGTERM = 143
const TERM_DRAIN_MS = 5_000

/** `--output json|stream-json` of a headless run: a failure before the run still prints its result line. */
let jsonOutput: JsonOutput | undefined

/** A failure before the app ran: one stderr line, and under JSON output one result object (./early-failure.ts). */
function fail(message: string, code = 1, error?: unknown): number {
  process.stderr.write(`dsh: ${message}\n`)
  if (jsonOutput !== undefined) process.stdout.write(failureLine(jsonOutput, failureCode(error, code, message, error instanceof ConfigError ? 'CONFIG' : 'STARTUP_FAILED'), message))
  return code
}

/**
 * SIGINT, SIGTERM and SIGHUP abort `controller` (a second SIGINT or SIGTERM exits at once), and a
 * reader of stdout or stderr going away is kept from killing the process. Returns what tells the
 * exit code a signal chose, if one came.
 */
function handleSignals(controller: AbortController): () => number | undefined {
  let exitCode: number | undefined
  let drain: NodeJS.Timeout | undefined
  const onSignal = (signal: NodeJS.Signals) => {
    const code = signal === 'SIGINT' ? EXIT_SIGINT : signal === 'SIGHUP' ? EXIT_SIGHUP : EXIT_SIGTERM
    if (exitCode === undefined) {
      exitCode = code
      controller.abort(signal)
    } else if (signal !== 'SIGHUP') {
      // A second SIGINT or SIGTERM is someone insisting: out now. A hangup told again is not (a
      // closed terminal tells its foreground job, then the shell tells its jobs, a few ms apart),
      // and must not cut short the orderly close the first signal started.
      process.exit(code)
    }
    if (signal !== 'SIGINT') drain ??= setTimeout(() => process.exit(exitCode), TERM_DRAIN_MS).unref()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  // The terminal closed (a window or an SSH connection): without a handler SIGHUP killed dsh on
  // the spot, mid-turn, its writer lock left behind. It is handled as SIGTERM. (Node resets an
  // inherited SIGHUP disposition at start-up, so `nohup` never kept dsh alive either.)
  process.on('SIGHUP', onSignal)
  // The reader of stdout or stderr went away (`dsh ... | head`, an editor closing the pipe), or
  // the terminal did (EIO after a hangup). Left unheard, the error is an unhandled error event: a
  // Node stack trace and exit 1. What a run does about it is its app's to say (headless stops and
  // exits 141, the protocol servers finish the turn); here it is only kept from killing the
  // process. Other output errors stay fatal.
  const onOutputError = (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'EIO') throw error
  }
  process.stdout.on('error', onOutputError)
  process.stderr.on('error', onOutputError)
  return () => exitCode
}

export async function runProfile(options: LauncherOptions): Promise<number> {
  jsonOutput = options.profile === 'headless' ? jsonOutputOf(options.appArgs) : undefined
  const home = resolveHome()
  const loose = tightenHome(home)
  if (loose !== undefined) process.stderr.write(`dsh: ${loose}\n`)
  let composed
  let profile
  try {
    profile = resolveProfile(options.profile, home)
    composed = composeProfile(profile, { home, patches: options.patches, bundlesOnly: options.dump === 'default-config' })
  } catch (error) {
    if (error instanceof ConfigError) return fail(error.message)
    throw error
  }
  for (const warning of composed.warnings) process.stderr.write(`dsh: warning: ${warning}\n`)
  if (options.dump !== undefined) {
    const what = options.dump === 'config' ? 'composed plugin tree' : 'bundle layers'
    process.stdout.write(dumpConfig(composed.rows, `dsh --profile ${profile.name}: ${what}`))
    return 0
  }

  const controller = new AbortController()
  const signalled = handleSignals(controller)

  let cwd = process.cwd()
  const cwdIndex = options.appArgs.indexOf('--cwd')
  if (cwdIndex >= 0 && options.appArgs[cwdIndex + 1] !== undefined) cwd = options.appArgs[cwdIndex + 1]
  let host: Host
  try {
    host = {
      cwd,
      home,
      args: options.appArgs,
      env: environmentLayers({ home, cwd, projectTrusted: isTrusted(cwd, readTrustedProjects(home)) }),
      settings: readSettings(home),
      stdout: process.stdout,
      stderr: process.stderr,
      signal: controller.signal,
    }
  } catch (error) {
    return fail((error as Error).message)
  }

  const ignored = host.env.ignoredProjectVariables
  if (ignored.length > 0) {
    process.stderr.write(`dsh: ${join(resolve(cwd), '.env')}: ignored ${ignored.join(', ')}: this folder is not trusted, so its .env may set only API keys (*_API_KEY); run \`dsh trust on\` here to use the rest\n`)
  }
  let rows = composed.rows.map(stripTracking)
  try {
    rows = selectStore(rows, options.store ?? host.env.value('DSH_STORE_URL') ?? settingsStore(host.settings))
  } catch (error) {
    return fail((error as Error).message)
  }
  const longRun = longRunFlagsAt(profile.name, options.appArgs)
  if (longRun === 'start') await setLongRunFlags()
  const root = new Context()
  root.provide('host', host)
  let code: number
  let loaded: LoadedRow[] | undefined
  let persistence: SessionPersistenceService | undefined
  try {
    const frames = shortStacks()
    let reasons: string[]
    try {
      loaded = await loadRows(root, rows, { resolveFrom: profile.folder })
      // Plugins that start asynchronously (a database connection; MCP servers connect and list
      // tools) finish before the app runs, so the first model request already sees their tools (MC-1).
      reasons = await settle(loaded.map(({ fiber }) => fiber))
    } finally {
      Error.stackTraceLimit = frames
    }
    const problems = checkLoaded(loaded, root)
    if (problems.length > 0) return fail([...problems, ...reasons].join('; '))
    persistence = root.get('sessionPersistence')
    const app = root.get('app')
    if (app === undefined) return fail(`profile "${profile.name}" has no app row: nothing to run`)
    if (longRun === 'task') await setLongRunFlags()
    code = await app.run()
  } catch (error) {
    if (error instanceof ConfigError) return fail(error.message, 1, error)
    if (error instanceof UsageError) return fail(error.message, 2, error)
    return fail(error instanceof Error ? error.message : String(error), 1, error)
  } finally {
    await disposeForExit(root, loaded)
  }
  // A session the store still lacks events of (its final save gave up, and the final flush of
  // the unload did not store them either) is exit 1 after a signal too: `dsh web` ends by one,
  // and a stop that lost events must not read as a plain stop (docs/persistence.md).
  const exitCode = signalled()
  if (exitCode !== undefined && (persistence?.unstored().length ?? 0) > 0) return 1
  return exitCode ?? code
}

/** Stack frames an Error made while the plugin tree loads keeps (V8's default is 10). */
export const LOADING_STACK_FRAMES = 3

/**
 * Lowers `Error.stackTraceLimit` while the plugin tree loads and returns the value to put back.
 * Cordis records where each plugin, fiber and effect was made with a `new Error()` (to add that
 * place to the stack of an error thrown inside it later), ~850 of them in a one-answer run, each
 * kept for the fiber's life: capturing 10 frames each, and carrying them through the young
 * generation's scavenges, cost ~7 ms of the run (docs/decisions.md, "Short stacks while the
 * plugin tree loads"). An error made then keeps its first 3 frames; the app runs with the full
 * limit. A limit set otherwise than V8's default (`node --stack-trace-limit=50`) is left as is.
 */
function shortStacks(): number {
  const frames = Error.stackTraceLimit
  if (frames === 10) Error.stackTraceLimit = LOADING_STACK_FRAMES
  return frames
}

/**
 * V8 flags of a profile run. The young generation keeps its size instead of growing towards
 * 16 MB semi-spaces while objects survive (a resumed log is 100k surviving objects): peak RSS of a
 * resumed 100k-event session ~128 -> ~95 MB, and steps do not pay for first touches of a growing
 * young generation (20 `bash true` steps ~13 ms faster than with it left to grow). V8 reads the flag
 * at each growth decision, so setting it at run time works (unlike --max-semi-space-size, fixed
 * when the heap is set up). And bytecode a run did not use lately stays in memory (~1 MB at most)
 * rather than being flushed after a few major GCs: the code cache bin/dsh.js writes at the end of
 * a long run then still holds the start-up code (bin/dsh.js sets both back before it does).
 *
 * Any flag also costs each Node module loaded after it its code cache (V8 takes a cache only
 * under the flags it was made with): ~65 of them in a one-answer run, ~11 ms compiled from
 * source. So they are set once the plugin tree has loaded where that is soon enough
 * (docs/decisions.md, "V8 flags: Node's modules load first").
 */
export const LONG_RUN_FLAGS = ['--semi-space-growth-factor=1', '--no-flush-bytecode'] as const

async function setLongRunFlags(): Promise<void> {
  const { setFlagsFromString } = await import('node:v8')
  for (const flag of LONG_RUN_FLAGS) setFlagsFromString(flag)
}

/**
 * When a run sets LONG_RUN_FLAGS. A fresh one-task headless run holds no log it did not write
 * itself: it sets them when its task starts, after the plugin tree (and with it nearly every Node
 * module the run uses) has loaded; its young generation may grow while the tree loads, and is
 * fixed from there on. Every other run sets them before anything loads: a resumed session is up
 * to 100k surviving objects, and servers and the terminal app load sessions at any time.
 * `dsh sessions` lists and exits, so it leaves V8 alone, as `--version` and `--help` do.
 */
export function longRunFlagsAt(profile: string, appArgs: readonly string[]): 'start' | 'task' | 'never' {
  if (profile === 'sessions') return 'never'
  if (profile === 'headless' && !appArgs.includes('--session')) return 'task'
  return 'start'
}

/** Settings `store: postgres://...` (or `store: {url: ...}`). */
function settingsStore(settings: Host['settings']): string | undefined {
  const value = (settings as Record<string, unknown>).store
  if (value === undefined || value === null) return undefined
  if (typeof value === 'string') return value
  const url = (value as { url?: unknown }).url
  if (typeof url === 'string') return url
  throw new Error('settings.yaml: store must be a postgres:// URL (or {url: postgres://...})')
}

/**
 * A store URL swaps the profile's `persistence` row for the PostgreSQL one (same row id, so
 * every surface keeps working unchanged); without one the profile's local files stay.
 */
export function selectStore(rows: Row[], url: string | undefined): Row[] {
  if (url === undefined || url === '') return rows
  if (!/^postgres(ql)?:\/\//.test(url)) throw new Error(`store ${JSON.stringify(url)}: only postgres:// URLs are supported (without one, sessions stay in local files)`)
  // Settings of the row that both kinds understand (maxDelayMs, packed, leaseTtlMs...) carry over.
  const carried = (config: unknown) => typeof config === 'object' && config !== null && !Array.isArray(config) ? config : {}
  return rows.map(row => row.id === 'persistence' ? { ...row, name: 'persistence-postgres', config: { ...carried(row.config), url } } : row)
}

/**
 * Lets plugin setups that await services or I/O (a database connection) finish before the tree
 * is inspected; returns the messages of setups that failed.
 */
async function settle(fibers: readonly { await(): Promise<unknown> }[]): Promise<string[]> {
  const reasons = new Set<string>()
  for (let i = 0; i < 5; i += 1) {
    for (const result of await Promise.allSettled(fibers.map(fiber => fiber.await()))) {
      if (result.status === 'rejected') reasons.add(result.reason instanceof Error ? result.reason.message : String(result.reason))
    }
    await new Promise(resolve => setImmediate(resolve))
  }
  return [...reasons]
}

/**
 * Built-in rows whose unloading only drops registrations held in this process's memory (tool,
 * prompt, adapter and service registrations, listeners, timers): the process exits right after
 * `runProfile` returns, so unloading them changes nothing anyone can observe, and costs a Cordis
 * fiber teardown each (docs/decisions.md, "Exit: unload only what holds something outside the
 * process"). They are services the agents use, unloaded today only after the agents anyway.
 * Anything not named here is unloaded as before: the app, the agents (a turn still open is closed
 * in the log), subagents, hooks (running hook processes are stopped), the session title (a title
 * request in flight lands first), MCP servers (their processes are stopped), persistence (final
 * flush, writer locks released, files closed), the sessions service, every out-of-tree plugin and
 * every group row.
 */
export const IN_MEMORY_ONLY_ROWS: ReadonlySet<string> = new Set([
  'llm', 'llm-deepseek', 'llm-openai', 'llm-providers', 'llm-retry', 'tools', 'builtin-tools',
  'tool-web-fetch', 'web-search', 'tool-session-event-read', 'tool-read-image', 'system-prompt', 'runtime-contexts', 'instructions',
  'approval', 'sandbox', 'agent-loop', 'checkpoints',
])

type AnyFiber = LoadedRow['fiber']

/**
 * Unloads the plugin tree for exit: every fiber in reverse load order (children before parents,
 * later rows first), except the fibers of `IN_MEMORY_ONLY_ROWS` and their children. Without the
 * loaded rows (loading failed part way) everything is unloaded.
 */
export async function disposeForExit(root: Context, loaded: readonly LoadedRow[] | undefined): Promise<void> {
  // By context: `ctx.plugin()` hands back a wrapper of the fiber the registry holds, with the same ctx.
  const skipped = new Set<Context>()
  for (const { row, fiber } of loaded ?? []) if (IN_MEMORY_ONLY_ROWS.has(row.name)) skipped.add(fiber.ctx)
  const under = (fiber: AnyFiber): boolean => {
    for (let current = fiber; ; current = current.parent.fiber) {
      if (skipped.has(current.ctx)) return true
      if (!current.runtime || current.parent.fiber === current) return false
    }
  }
  const fibers = [...root.registry.values()].flatMap(runtime => [...runtime.fibers]).filter(fiber => !under(fiber))
  for (const fiber of fibers.reverse()) await fiber.dispose()
}
