/**
 * `bash`: one fresh `bash -c` per call, in its own process group so a timeout or an abort kills
 * the whole tree (the shell and everything it started).
 *
 * Output format (text):
 * - stdout as is; a successful `echo X` gives exactly "X\n";
 * - then, when stderr is not empty, a line `[stderr]` followed by stderr;
 * - `(no output)` when both are empty;
 * - then one marker line each, when they apply: `[exit code: N]` (non-zero exit),
 *   `[killed by SIGNAL]` (a signal not sent by us), `[timed out after N ms]`, `[aborted]`,
 *   `[killed N processes the command left outside its group: PID (NAME), ...]`.
 * A timeout or an abort ends the call whatever the command's descendants do: the group is
 * killed, the pipes are closed even while a detached writer holds them, and the processes that
 * still carry the run's environment marker are killed (`./detached.ts`).
 * A stream over `maxOutputBytes` is shown as head and tail around a note giving the path of a
 * spill file with all of it. A non-zero exit is not an error result (the command ran); a
 * timeout, an abort or a failure to start is.
 *
 * When an editor provides its terminal for the call's scope (`../editor-terminal.ts`, ACP), the
 * same argv runs there instead: the streams come interleaved (no `[stderr]` section) and the
 * editor keeps the last `maxOutputBytes` bytes (a note says when earlier output was dropped).
 */
import { BASH_OUTPUT_TYPE, streamValue } from './bash-value.js'
import { statSync, type Stats } from 'node:fs'
import type { Readable } from 'node:stream'
import { Context } from 'cordis'
import type { Tool, ToolContext, ToolOutput } from '../api.js'
import type { JsonSchema } from '../json-schema.js'
import { runnerRemedy, spawner } from '../../sandbox/runner.js'
import type { ShellHost } from '../../sandbox/shell-host.js'
import { BashError, BuiltinErrorCode, FsError, fsFailure } from './errors.js'
import { escalationPolicyText, escalationProperties, sandboxingOf, withoutEscalation, type EscalationArgs, type Sandboxing } from './sandboxing.js'
import { resolvePath, utf8Head, utf8Tail } from './paths.js'
import { spillOutput, StreamingSpill, type SpillPlace } from './spill.js'
import { newRunMarker, RUN_MARKER, sweepMarked, type DetachedProcess } from './detached.js'
import type { JsonValue } from '../../session/types.js'
import { scrubbedEnvironment } from '../../config/credentials.js'
import type { EditorTerminal } from '../editor-terminal.js'
import type { JobEnd, JobsService } from '../jobs.js'
import { serviceLookup } from '../../kernel/index.js'
import { confineCommand, RunnerUnavailableError, sandboxVerdict, type ConfinedCommand } from './confine.js'

export interface BashToolConfig {
  readonly defaultTimeoutMs?: number
  /** Upper bound for a call's `timeoutMs`. */
  readonly maxTimeoutMs?: number
  /** Per stream: more than this is spilled to a file and shown as head and tail. */
  readonly maxOutputBytes?: number
  readonly headBytes?: number
  readonly tailBytes?: number
  /** A spill file stops growing here (a runaway `yes` must not fill the disk). */
  readonly maxSpillBytes?: number
  /** After SIGTERM to the group, SIGKILL follows after this long. */
  readonly killGraceMs?: number
  /** After the shell exits, how long to wait for background children to close the pipes. */
  readonly drainMs?: number
  /** Extra environment for the command (merged over the process environment). */
  readonly env?: Readonly<Record<string, string>>
  readonly shell?: string
}

export const BASH_DEFAULTS = {
  defaultTimeoutMs: 60_000,
  maxTimeoutMs: 600_000,
  maxOutputBytes: 64 * 1024,
  headBytes: 16 * 1024,
  tailBytes: 16 * 1024,
  maxSpillBytes: 256 * 1024 * 1024,
  killGraceMs: 2_000,
  drainMs: 200,
  shell: 'bash',
} as const

export interface BashArgs {
  readonly command: string
  readonly description: string
  readonly timeoutMs?: number
  readonly workdir?: string
  /** Start as a background job (`ctx.jobs`) and answer with its id at once. */
  readonly run_in_background?: boolean
}

/** The parameter that exists while a jobs service is loaded (docs/jobs.md). */
const backgroundProperty = {
  run_in_background: { type: 'boolean', description: 'Run in the background and answer at once with a job id (read its output with job_output, stop it with job_kill). No timeout applies. For servers, watchers and long builds.' },
} as const

export const bashParameters = {
  type: 'object',
  properties: {
    command: { type: 'string', minLength: 1, description: 'The bash command to run.' },
    description: { type: 'string', description: 'What the command does, in 5-10 words (shown to the user).' },
    timeoutMs: { type: 'integer', exclusiveMinimum: 0, description: 'Timeout in milliseconds (default 60000, at most 600000). The whole process tree is killed on expiry.' },
    workdir: { type: 'string', description: 'Working directory; default the session working directory; a relative path is resolved against it.' },
  },
  required: ['command', 'description'],
} as const satisfies JsonSchema

export interface CaptureLimits {
  readonly maxOutputBytes: number
  readonly headBytes: number
  readonly tailBytes: number
  readonly maxSpillBytes: number
}

export interface Captured {
  readonly text: string
  readonly totalBytes: number
  readonly spillPath?: string
}

/**
 * One output stream. Everything stays in memory up to `maxOutputBytes`; past that the buffered
 * bytes and all later ones go to a spill file, and memory keeps only a head and a tail ring.
 */
export class OutputCapture {
  private chunks: Buffer[] = []
  private buffered = 0
  private total = 0
  private head: Buffer | undefined
  private tail: Buffer[] = []
  private tailSize = 0
  private spill: StreamingSpill | undefined

  constructor(private readonly label: string, private readonly source: Readable, private readonly limits: CaptureLimits, private readonly place?: SpillPlace) {
    source.on('data', (chunk: Buffer) => this.push(chunk))
  }

  private push(chunk: Buffer): void {
    this.total += chunk.length
    if (this.spill === undefined) {
      this.chunks.push(chunk)
      this.buffered += chunk.length
      if (this.buffered > this.limits.maxOutputBytes) this.startSpill()
      return
    }
    this.pushTail(chunk)
    this.spill.write(chunk)
  }

  private startSpill(): void {
    const all = Buffer.concat(this.chunks)
    this.chunks = []
    this.head = Buffer.from(all.subarray(0, this.limits.headBytes))
    this.pushTail(all)
    this.spill = new StreamingSpill(this.label, this.limits.maxSpillBytes, this.source, this.place)
    this.spill.start([all])
  }

  private pushTail(chunk: Buffer): void {
    this.tail.push(chunk)
    this.tailSize += chunk.length
    while (this.tail.length > 1 && this.tailSize - this.tail[0].length >= this.limits.tailBytes) {
      this.tailSize -= this.tail.shift()!.length
    }
  }

  async finish(): Promise<Captured> {
    const spill = this.spill
    if (spill === undefined) {
      const all = Buffer.concat(this.chunks)
      return { text: all.toString('utf8'), totalBytes: this.total }
    }
    await spill.end()
    const head = utf8Head(this.head ?? Buffer.alloc(0), this.limits.headBytes)
    const tail = utf8Tail(Buffer.concat(this.tail), this.limits.tailBytes)
    const omitted = this.total - Buffer.byteLength(head) - Buffer.byteLength(tail)
    let where: string
    if (spill.path !== undefined) {
      const capped = spill.bytes < this.total ? ` (its first ${spill.bytes} bytes)` : ''
      where = `the full ${this.label}${capped} is saved to ${spill.path}`
    } else {
      where = `the full ${this.label} could not be saved: ${String((spill.error as Error | undefined)?.message ?? spill.error)}`
    }
    const note = `[... ${omitted} bytes of ${this.label} omitted (${this.total} in total); ${where} ...]`
    const text = `${head}${head.endsWith('\n') ? '' : '\n'}${note}\n${tail}`
    return { text, totalBytes: this.total, ...(spill.path !== undefined ? { spillPath: spill.path } : {}) }
  }
}

export interface BashRun {
  readonly stdout: Captured
  readonly stderr: Captured
  readonly exitCode: number | null
  readonly signal: NodeJS.Signals | null
  readonly timedOut: boolean
  readonly aborted: boolean
  readonly durationMs: number
  /** Processes outside the command's group that a timeout or cancel killed (`./detached.ts`). */
  readonly detached?: readonly DetachedProcess[]
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, signal)
  } catch {
    // The group is already gone.
  }
}

/**
 * The two ways a command starts: spawned (after a runner's argv prefix, if any) in a process
 * group of its own, or by a sandbox's shell host (`src/sandbox/shell-host.ts`), which gives it
 * a process group inside the sandbox. Both hand back the same events and streams.
 */
interface CommandProcess {
  readonly stdout: Readable
  readonly stderr: Readable
  once(event: 'error', listener: (error: Error) => void): unknown
  once(event: 'exit' | 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown
  /** Signals the command's whole process group. */
  killGroup(signal: NodeJS.Signals): void
}

type RunOptions = Parameters<typeof runBash>[1]

/**
 * Starts `command`: in the shell host when there is one, else spawned (after the runner's argv
 * prefix) in a process group of its own. Synchronous: `runBash` checks the abort signal right
 * before it, and no await may come between.
 */
function startCommand(command: string, options: RunOptions, env: Readonly<Record<string, string>>, spawn: Awaited<ReturnType<typeof spawner>> | undefined): CommandProcess {
  if (options.host !== undefined) {
    const run = options.host.run(command, { cwd: options.cwd, env })
    return Object.assign(run, { killGroup: (signal: NodeJS.Signals) => run.kill(signal) })
  }
  const argv = [...options.prefix ?? [], options.config.shell, '-c', command]
  const spawned = spawn!(argv[0]!, argv.slice(1), {
    cwd: options.cwd,
    detached: true, // its own process group: -pid reaches every descendant that stays in it
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  })
  return Object.assign(spawned as typeof spawned & { stdout: Readable; stderr: Readable }, { killGroup: (signal: NodeJS.Signals) => killGroup(spawned.pid, signal) })
}

/**
 * Resolves with the shell's exit. A background child that inherited the pipes would hold
 * `close` back for as long as it runs: once the shell has exited and both streams have been idle
 * (and not paused by us) for `drainMs`, reading stops and the shell's exit is reported. Output
 * still flowing keeps the call open, but only until the run is ending (a timeout or a cancel):
 * then the wait ends at once. `onStop` receives the function that ends the wait early.
 */
function waitForExit(child: CommandProcess, config: { readonly shell: string; readonly drainMs: number }, run: {
  readonly chunks: () => number
  readonly ending: () => boolean
  readonly onStop: (stop: () => void) => void
}): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined
    let drainTimer: NodeJS.Timeout | undefined
    child.once('error', (error) => {
      reject(new BashError(`could not start ${config.shell}: ${error.message}`, BuiltinErrorCode.spawnFailed))
    })
    child.once('exit', (code, signal) => {
      exited = { code, signal }
      let seen = -1
      const stop = () => {
        clearTimeout(drainTimer)
        child.stdout.destroy()
        child.stderr.destroy()
        resolve(exited!)
      }
      run.onStop(stop)
      const check = () => {
        const now = run.chunks()
        // Paused (by backpressure, or while a spill file opens): unread output is still coming.
        if (!run.ending() && (now !== seen || child.stdout.isPaused() || child.stderr.isPaused())) {
          seen = now
          drainTimer = setTimeout(check, config.drainMs)
          return
        }
        stop()
      }
      check()
    })
    child.once('close', (code, signal) => {
      clearTimeout(drainTimer)
      resolve(exited ?? { code, signal })
    })
  })
}

/** Runs one command to completion (or timeout/abort) and captures both streams. */
export async function runBash(command: string, options: {
  cwd: string
  /** A sandbox runner's argv, placed before `<shell> -c <command>`. */
  prefix?: readonly string[]
  /** A shell host already running under the runner: the command starts there instead. */
  host?: ShellHost
  timeoutMs: number
  signal: AbortSignal
  config: Required<Omit<BashToolConfig, 'env'>> & { env?: Readonly<Record<string, string>> }
  /** The call's session: a spilled stream is kept with it. */
  place?: SpillPlace
  /** The command's environment (default: the scrubbed process environment plus `config.env`). */
  env?: Readonly<Record<string, string>>
  /** Live output as it arrives (`ToolContext.output`), decoded as UTF-8 across chunk ends. */
  output?: (stream: 'stdout' | 'stderr', text: string) => void
  /**
   * The caller reads both streams itself (a background job): nothing is captured, and the run's
   * `stdout` / `stderr` come back empty.
   */
  consume?: (stdout: Readable, stderr: Readable) => void
}): Promise<BashRun> {
  const { config } = options
  const spawn = options.host === undefined ? await spawner() : undefined
  // A cancel can land while the caller awaited (sandbox approval, runner probe): an abort
  // listener added now would never fire, so the command would run to its end. No await may
  // come between this check and the start.
  if (options.signal.aborted) throw new BashError('aborted before the command started', BuiltinErrorCode.aborted)
  const started = performance.now()
  // Secrets (API keys, tokens) never reach the command: what it prints lands in the log.
  const base = options.env ?? scrubbedEnvironment(process.env, config.env)
  // A spawned command carries a marker that finds what it leaves outside its group; a shell
  // host's commands do not (the host ends every process of its sandbox, and an environment
  // that changes per command would cost each its warm shell).
  const marker = options.host === undefined ? newRunMarker() : undefined
  const env = marker === undefined ? base : { ...base, [RUN_MARKER]: marker }
  const child = startCommand(command, options, env, spawn)
  const limits = config
  const stdout = options.consume === undefined ? new OutputCapture('stdout', child.stdout, limits, options.place) : undefined
  const stderr = options.consume === undefined ? new OutputCapture('stderr', child.stderr, limits, options.place) : undefined
  options.consume?.(child.stdout, child.stderr)
  // Chunks seen on both streams: lets the drain below tell a live stream from an idle one.
  let chunks = 0
  child.stdout.on('data', () => { chunks++ })
  child.stderr.on('data', () => { chunks++ })
  const { output } = options
  if (output !== undefined) {
    for (const [name, source] of [['stdout', child.stdout], ['stderr', child.stderr]] as const) {
      const decoder = new TextDecoder()
      source.on('data', (chunk: Buffer) => output(name, decoder.decode(chunk, { stream: true })))
    }
  }

  let timedOut = false
  let aborted = false
  let killTimer: NodeJS.Timeout | undefined
  /** Ends the wait once the shell has exited, whatever still holds the pipes. */
  let stopReading: (() => void) | undefined
  const terminate = () => {
    child.killGroup('SIGTERM')
    killTimer ??= setTimeout(() => child.killGroup('SIGKILL'), config.killGraceMs)
    stopReading?.()
  }
  // No timer for a run without a limit (a background job: it runs until it ends or is killed).
  const timer = Number.isFinite(options.timeoutMs) ? setTimeout(() => { timedOut = true; terminate() }, options.timeoutMs) : undefined
  const onAbort = () => { aborted = true; terminate() }
  options.signal.addEventListener('abort', onAbort, { once: true })

  try {
    const exit = await waitForExit(child, config, {
      chunks: () => chunks,
      ending: () => timedOut || aborted,
      onStop: (stop) => { stopReading = stop },
    })
    // A timeout or a cancel kills what the command left outside its group, and says so.
    const detached = marker !== undefined && (timedOut || aborted) ? await sweepMarked(marker) : []
    const none: Captured = { text: '', totalBytes: 0 }
    return {
      stdout: stdout === undefined ? none : await stdout.finish(),
      stderr: stderr === undefined ? none : await stderr.finish(),
      exitCode: exit.code,
      signal: exit.signal,
      timedOut,
      aborted,
      durationMs: Math.round(performance.now() - started),
      ...(detached.length > 0 ? { detached } : {}),
    }
  } finally {
    clearTimeout(timer)
    if (killTimer !== undefined) {
      // We terminated this run: whatever outlived SIGTERM in the group goes now.
      clearTimeout(killTimer)
      child.killGroup('SIGKILL')
    }
    options.signal.removeEventListener('abort', onAbort)
  }
}

/**
 * Runs one command in an editor's terminal (ACP): the same argv as `runBash` (runner prefix, then
 * `<shell> -c <command>`) and the same scrubbed environment. The terminal interleaves stdout and
 * stderr, so the run has only stdout; the editor keeps the last `maxOutputBytes` bytes.
 */
export async function runInEditorTerminal(terminal: EditorTerminal, command: string, options: {
  cwd: string
  prefix?: readonly string[]
  timeoutMs: number
  signal: AbortSignal
  config: Required<Omit<BashToolConfig, 'env'>> & { env?: Readonly<Record<string, string>> }
  callId: string
  /** The command's environment (default: the scrubbed process environment plus `config.env`). */
  env?: Readonly<Record<string, string>>
}): Promise<BashRun> {
  const { config } = options
  if (options.signal.aborted) throw new BashError('aborted before the command started', BuiltinErrorCode.aborted)
  const result = await terminal.run({
    callId: options.callId,
    argv: [...options.prefix ?? [], config.shell, '-c', command],
    env: options.env ?? scrubbedEnvironment(process.env, config.env),
    cwd: options.cwd,
    outputByteLimit: config.maxOutputBytes,
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  }).catch((error: unknown) => {
    throw new BashError(`the editor's terminal failed: ${error instanceof Error ? error.message : String(error)}`, BuiltinErrorCode.spawnFailed)
  })
  const bytes = Buffer.byteLength(result.output)
  const text = result.truncated ? `[... earlier output omitted: the editor's terminal keeps the last ${config.maxOutputBytes} bytes ...]\n${result.output}` : result.output
  return {
    stdout: { text, totalBytes: bytes },
    stderr: { text: '', totalBytes: 0 },
    exitCode: result.exitCode,
    signal: result.signal as NodeJS.Signals | null,
    timedOut: result.timedOut,
    aborted: result.aborted,
    durationMs: result.durationMs,
  }
}

/** The model-facing text of a run (format in the module comment). */
export function formatBashRun(run: BashRun, timeoutMs: number, sandboxMarkers: readonly string[] = []): string {
  let text = run.stdout.text
  if (run.stderr.text.length > 0) {
    if (text.length > 0 && !text.endsWith('\n')) text += '\n'
    text += `[stderr]\n${run.stderr.text}`
  }
  if (text.length === 0) text = '(no output)'
  const markers: string[] = [...sandboxMarkers]
  if (run.exitCode !== null && run.exitCode !== 0) markers.push(`[exit code: ${run.exitCode}]`)
  if (run.timedOut) markers.push(`[timed out after ${timeoutMs} ms]`)
  else if (run.aborted) markers.push('[aborted]')
  else if (run.signal !== null) markers.push(`[killed by ${run.signal}]`)
  if (run.detached !== undefined) markers.push(`[killed ${run.detached.length} process${run.detached.length === 1 ? '' : 'es'} the command left outside its group: ${run.detached.map(p => `${p.pid} (${p.name})`).join(', ')}]`)
  for (const marker of markers) text += `${text.endsWith('\n') ? '' : '\n'}${marker}`
  return text
}

export function createBashTool(config: BashToolConfig = {}, sandboxing?: Sandboxing, jobs?: () => JobsService | undefined): Tool<BashArgs & EscalationArgs> {
  const resolved = { ...BASH_DEFAULTS, ...config }
  const sandboxed = () => sandboxing?.sandbox() !== undefined
  const background = () => jobs?.() !== undefined
  // Four shapes: with or without a sandbox (SB-6), with or without background jobs.
  const shapes = new Map<string, typeof bashParameters>()
  const parameters = () => {
    const key = `${sandboxed()}:${background()}`
    let shape = shapes.get(key)
    if (shape === undefined) {
      shape = {
        ...bashParameters,
        properties: { ...bashParameters.properties, ...(background() ? backgroundProperty : {}), ...(sandboxed() ? escalationProperties('command') : {}) },
      } as typeof bashParameters
      shapes.set(key, shape)
    }
    return shape
  }
  const plainDescription = `Run a bash command with \`bash -c\` and return its output: stdout, then a [stderr] section, then [exit code: N] when it is not 0. Each call runs in a fresh shell: no cwd, variables or functions persist between calls (pass workdir instead of cd). Default timeout ${resolved.defaultTimeoutMs} ms, at most ${resolved.maxTimeoutMs} ms; the whole process tree is killed on expiry. Output over ${Math.round(resolved.maxOutputBytes / 1024)} KB per stream is cut to its head and tail, and the full text is saved to a file whose path is shown. stdin is closed: do not run interactive commands.`
  const sandboxedJobText = 'Under the sandbox each command has its own process list, so a later command cannot see or signal a job\'s processes: stop a job with `job_kill`.'
  const backgroundText = 'For a long-running command (a server, a watcher, a long build) set `run_in_background: true`: the call answers at once with a job id; read its output with `job_output` and stop it with `job_kill`. You are told when a background job ends on its own.'
  return {
    name: 'bash',
    // SB-6: the escalation parameters and paragraph exist only while a sandbox is mounted.
    get description() {
      if (!sandboxed()) return background() ? `${plainDescription} ${backgroundText}` : plainDescription
      // Each confined command has its own process namespace: `ps` and `kill` in a later call
      // cannot see a job's processes.
      const text = background() ? `${plainDescription} ${backgroundText} ${sandboxedJobText}` : plainDescription
      return `${text} ${escalationPolicyText('command')}`
    },
    get parameters() { return parameters() },
    outputType: BASH_OUTPUT_TYPE,
    // The tool enforces its own timeout and reports partial output; the pipeline's limit is a
    // backstop above the largest timeout a call may ask for.
    timeoutMs: resolved.maxTimeoutMs + resolved.killGraceMs + 30_000,
    async execute(args, context: ToolContext): Promise<ToolOutput> {
      const cwd = args.workdir !== undefined ? resolvePath(context.cwd, args.workdir) : context.cwd
      // Synchronous, as the JSONL appends: a page-cache stat, not worth a libuv pool round trip.
      let info: Stats
      try {
        info = statSync(cwd)
      } catch (error) {
        fsFailure(error, cwd)
      }
      if (!info.isDirectory()) throw new FsError(`workdir ${cwd} is not a directory`, BuiltinErrorCode.notDirectory)
      if (context.signal.aborted) throw new BashError('aborted before the command started', BuiltinErrorCode.aborted)
      let confined: ConfinedCommand
      try {
        confined = await confineCommand(sandboxing, 'bash', args, context, resolved, { background: args.run_in_background === true })
      } catch (error) {
        // No working runner: a background call still gets its job, failed at once, and its notice
        // says what to install; a foreground call is refused (SB-3).
        const service = args.run_in_background === true && context.session !== undefined ? jobs?.() : undefined
        if (!(error instanceof RunnerUnavailableError) || service === undefined) throw error
        const detail = `${error.message}; ${runnerRemedy(error.problems)}`
        const job = service.start(context.session!, { kind: 'bash', label: jobLabel(args), run: async () => ({ status: 'failed', detail }) })
        return { content: [{ type: 'text', text: `started background job ${job.id}` }], meta: { job: { ...job }, sandbox: { mode: error.mode, unavailable: true } } as unknown as ToolOutput['meta'], value: { kind: 'background', jobId: job.id } }
      }
      const { box, runner, prefix, terminal, network } = confined
      const env = confined.env
      try {
      const timeoutMs = Math.min(withoutEscalation(args).timeoutMs ?? resolved.defaultTimeoutMs, resolved.maxTimeoutMs)
      // `meta.sandbox`: the mode and runner the command ran under, plus what a foreground run adds.
      const sandboxMeta = (extra: Readonly<Record<string, true>> = {}): Record<string, JsonValue> => box === undefined ? {}
        : { sandbox: { mode: box.mode, ...(runner !== undefined ? { runner: runner.name, enforcement: runner.enforcement ?? 'full' } : {}), ...extra } }
      if (args.run_in_background === true && background()) {
        const service = jobs!()!
        const session = context.session
        if (session === undefined) throw new BashError('run_in_background needs a session to own the job; the command was not run', BuiltinErrorCode.spawnFailed)
        if (context.signal.aborted) throw new BashError('aborted before the command started', BuiltinErrorCode.aborted)
        // Its own process group, under the same runner argv as a foreground call; never an
        // editor's terminal or a shell host, which belong to the calls that wait for them.
        const job = service.start(session, {
          kind: 'bash',
          label: jobLabel(args),
          run: async (running): Promise<JobEnd> => {
            const run = await runBash(args.command, {
              cwd, timeoutMs: Infinity, signal: running.signal, config: resolved, env,
              ...(prefix !== undefined ? { prefix } : {}),
              consume: (stdout, stderr) => { running.attach(stdout); running.attach(stderr) },
            })
            if (run.exitCode === 0) return { status: 'completed' }
            return { status: 'failed', detail: run.exitCode !== null ? `exit code ${run.exitCode}` : `killed by ${run.signal ?? 'a signal'}` }
          },
        })
        return { content: [{ type: 'text', text: `started background job ${job.id}` }], meta: { job: { ...job }, ...sandboxMeta() } as unknown as ToolOutput['meta'], value: { kind: 'background', jobId: job.id } }
      }
      // Otherwise a running shell host of this runner, mode and root starts the command without a
      // new sandbox; while there is none, the command gets its own and a host starts meanwhile.
      const host = runner !== undefined && box !== undefined && box.mode !== 'danger-full-access' && terminal === undefined
        ? box.sandbox.shellHost?.(runner, box.mode, box.root, { shell: resolved.shell, env, ...(network?.plan !== undefined ? { network: network.plan } : {}) })
        : undefined
      const run = terminal !== undefined
        ? await runInEditorTerminal(terminal, args.command, { cwd, timeoutMs, signal: context.signal, config: resolved, callId: context.callId, env, ...(prefix !== undefined ? { prefix } : {}) })
        : await runBash(args.command, { cwd, timeoutMs, signal: context.signal, config: resolved, place: context, env, ...(prefix !== undefined ? { prefix } : {}), ...(host !== undefined ? { host } : {}), ...(context.output !== undefined ? { output: context.output } : {}) })
      // A terminal interleaves the streams: its whole output is read for the runner's signatures.
      const sandboxMarkers = run.timedOut || run.aborted ? [] : sandboxVerdict(confined, run.exitCode, terminal !== undefined ? run.stdout.text : run.stderr.text)
      const spills = [run.stdout.spillPath, run.stderr.spillPath].filter((p): p is string => p !== undefined)
      const output: ToolOutput = {
        content: [{ type: 'text', text: formatBashRun(run, timeoutMs, sandboxMarkers) }],
        isError: run.timedOut || run.aborted,
        meta: {
          exitCode: run.exitCode, signal: run.signal, durationMs: run.durationMs, timedOut: run.timedOut, aborted: run.aborted,
          ...(terminal !== undefined ? { terminal: 'editor' } : {}),
          ...sandboxMeta({ ...(host !== undefined ? { shellHost: true } : {}), ...(sandboxMarkers.length > 0 ? { denied: true } : {}) }),
          ...(spills.length > 0 ? { spilled: spills } : {}),
        },
        value: {
          kind: 'foreground', exitCode: run.exitCode, signal: run.signal, timedOut: run.timedOut, aborted: run.aborted, timeoutMs,
          stdout: streamValue(run.stdout), stderr: streamValue(run.stderr),
          ...(box !== undefined ? { sandbox: { mode: box.mode, denied: sandboxMarkers.length > 0, ...(runner !== undefined ? { enforcement: runner.enforcement ?? 'full' } : {}) } } : {}),
        },
      }
      return spillOutput(output, 'bash', { place: context })
      } finally {
        network?.leave()
      }
    },
  }
}

/** What a background job of `args` is called: its description, else its command. */
function jobLabel(args: { readonly description: string; readonly command: string }): string {
  return args.description.trim() !== '' ? args.description.trim() : args.command
}

export class BashToolPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context, config: BashToolConfig = {}) {
    const tool = createBashTool(config, sandboxingOf(ctx), serviceLookup(ctx, 'jobs'))
    ctx.effect(() => ctx.tools.register(tool))
  }
}
