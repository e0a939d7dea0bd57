/**
 * One long-lived shell process (`bash`, `pwsh`) that runs one command at a time through the
 * completion protocol (`./protocol.ts`).
 *
 * The shell is started in a process group of its own, after the sandbox runner's argv when the
 * call is confined, with the call's scrubbed environment. Each run's output goes through the
 * same capture as `bash` (`OutputCapture`: head and tail around a spill file past the limit). A
 * timeout or a cancel kills the shell's whole group (the running command with it): the shell is
 * gone and the next run needs a new one. `dispose()` does the same; a shell whose owner exits
 * without disposing reads end of file on stdin and ends.
 */
import type { ChildProcess } from 'node:child_process'
import { PassThrough } from 'node:stream'
import { spawner } from '../sandbox/runner.js'
import { OutputCapture, type CaptureLimits, type Captured } from '../tools/builtin/bash.js'
import type { SpillPlace } from '../tools/builtin/spill.js'
import { markerWindow, newToken, stderrMarker, stdoutMarker, type ShellDialect } from './protocol.js'

export interface ShellStart {
  readonly dialect: ShellDialect
  /** The shell binary (`bash`, `pwsh`, or a path). */
  readonly binary: string
  /** The sandbox runner's argv, placed before the shell. */
  readonly prefix?: readonly string[]
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  /** After SIGTERM to the group, SIGKILL follows after this long. */
  readonly killGraceMs: number
}

export interface ShellRunOptions {
  readonly timeoutMs: number
  readonly signal: AbortSignal
  readonly limits: CaptureLimits
  readonly place?: SpillPlace
  /** Run in this directory (a `cd` that persists). */
  readonly cwd?: string
  readonly output?: (stream: 'stdout' | 'stderr', text: string) => void
  /** After the shell exits, how long to wait for its streams to end (a background child may hold them). */
  readonly drainMs: number
}

export interface ShellRun {
  readonly stdout: Captured
  readonly stderr: Captured
  /** The command's exit status (undefined when the shell did not reach the end marker). */
  readonly status?: number
  /** Set when the shell process ended during the run. */
  readonly exited?: { readonly code: number | null; readonly signal: NodeJS.Signals | null }
  readonly timedOut: boolean
  readonly aborted: boolean
  readonly durationMs: number
}

/** Live shells of this process: killed at exit so none outlives dsh. */
const live = new Set<PersistentShell>()
let exitHook = false

function hookExit(): void {
  if (exitHook) return
  exitHook = true
  process.once('exit', () => { for (const shell of live) shell.killNow() })
}

/**
 * Splits one stream of a run at the end marker: what comes before goes to the run's capture, the
 * rest is dropped. Bytes that may be the start of a marker are held back until the next chunk.
 */
class MarkerSplitter {
  private held = ''
  private done = false
  readonly sink = new PassThrough()
  match: RegExpExecArray | undefined

  constructor(private readonly find: (text: string) => { index: number; match?: RegExpExecArray } | undefined, private readonly window: number, private readonly onDone: () => void) {}

  push(text: string): void {
    if (this.done) return
    const all = this.held + text
    const found = this.find(all)
    if (found !== undefined) {
      if (found.index > 0) this.sink.write(all.slice(0, found.index))
      this.held = ''
      this.match = found.match
      this.finish()
      this.onDone()
      return
    }
    const keep = Math.min(all.length, this.window)
    const out = all.slice(0, all.length - keep)
    this.held = all.slice(all.length - keep)
    if (out.length > 0) this.sink.write(out)
  }

  /** The stream ended or the run is over: what was held back is output after all. */
  flush(): void {
    if (this.done) return
    if (this.held.length > 0) this.sink.write(this.held)
    this.held = ''
    this.finish()
  }

  get finished(): boolean {
    return this.done
  }

  private finish(): void {
    this.done = true
    this.sink.end()
  }
}

export class PersistentShell {
  private readonly child: ChildProcess
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
  private readonly exited: Promise<void>
  private listeners: { stdout?: (text: string) => void; stderr?: (text: string) => void; ended?: () => void } = {}
  private busy = false
  private startError: Error | undefined
  /** What started the shell (the caller compares it to know whether a call may reuse it). */
  readonly key: string

  private constructor(child: ChildProcess, key: string) {
    this.child = child
    this.key = key
    live.add(this)
    hookExit()
    this.exited = new Promise(resolve => {
      child.once('error', (error) => { this.startError = error; this.exit ??= { code: null, signal: null }; live.delete(this); this.listeners.ended?.(); resolve() })
      child.once('exit', (code, signal) => { this.exit = { code, signal }; live.delete(this); this.listeners.ended?.(); resolve() })
    })
    child.stdout!.setEncoding('utf8').on('data', (text: string) => this.listeners.stdout?.(text))
    child.stderr!.setEncoding('utf8').on('data', (text: string) => this.listeners.stderr?.(text))
    // Writes to a shell that died are reported by the exit, not as an unhandled error.
    child.stdin!.on('error', () => {})
  }

  static async start(options: ShellStart, key: string): Promise<PersistentShell> {
    const spawn = await spawner()
    const argv = [...options.prefix ?? [], ...options.dialect.argv(options.binary)]
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd,
      detached: true, // its own process group: a timeout or a cancel kills everything in it
      stdio: ['pipe', 'pipe', 'pipe'],
      env: options.env,
    })
    const shell = new PersistentShell(child, key)
    if (options.dialect.preamble !== undefined) child.stdin!.write(options.dialect.preamble)
    shell.grace = options.killGraceMs
    shell.dialect = options.dialect
    return shell
  }

  private grace = 2_000
  private dialect!: ShellDialect

  get alive(): boolean {
    return this.exit === undefined
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  /** Why the shell could not start (spawn failed), if that is how it ended. */
  get failure(): Error | undefined {
    return this.startError
  }

  /** Runs one command; one at a time (a second call while one runs is refused). */
  async run(command: string, options: ShellRunOptions): Promise<ShellRun> {
    if (this.busy) throw new Error('the shell is running another command')
    if (!this.alive) throw new Error('the shell has exited')
    this.busy = true
    const started = performance.now()
    const token = newToken()
    const window = markerWindow(token)
    const outMarker = stdoutMarker(token)
    const errMarker = stderrMarker(token)
    let settle!: () => void
    const over = new Promise<void>(resolve => { settle = resolve })
    const check = () => { if (stdout.finished && stderr.finished) settle() }
    const stdout = new MarkerSplitter(text => {
      const match = outMarker.exec(text)
      return match === null ? undefined : { index: match.index, match }
    }, window, check)
    const stderr = new MarkerSplitter(text => {
      const index = text.indexOf(errMarker)
      if (index === -1) return undefined
      return text.indexOf('\n', index) === -1 ? undefined : { index }
    }, window, check)
    const captureOut = new OutputCapture('stdout', stdout.sink, options.limits, options.place)
    const captureErr = new OutputCapture('stderr', stderr.sink, options.limits, options.place)
    const output = options.output
    if (output !== undefined) {
      stdout.sink.on('data', (chunk: Buffer) => output('stdout', chunk.toString('utf8')))
      stderr.sink.on('data', (chunk: Buffer) => output('stderr', chunk.toString('utf8')))
    }
    let drain: NodeJS.Timeout | undefined
    this.listeners = {
      stdout: text => stdout.push(text),
      stderr: text => stderr.push(text),
      ended: () => {
        // What the shell wrote before it ended may still be in the pipes: read on until both
        // streams end, or for `drainMs` when a background child holds them open.
        let ends = 0
        const ended = () => { if (++ends === 2) finish() }
        const finish = () => { clearTimeout(drain); stdout.flush(); stderr.flush(); settle() }
        if (this.child.stdout!.readableEnded) ends++
        else this.child.stdout!.once('end', ended)
        if (this.child.stderr!.readableEnded) ends++
        else this.child.stderr!.once('end', ended)
        if (ends === 2) finish()
        else drain = setTimeout(finish, options.drainMs)
      },
    }
    let timedOut = false
    let aborted = false
    const timer = Number.isFinite(options.timeoutMs) ? setTimeout(() => { timedOut = true; this.kill() }, options.timeoutMs) : undefined
    const onAbort = () => { aborted = true; this.kill() }
    options.signal.addEventListener('abort', onAbort, { once: true })
    if (options.signal.aborted) onAbort()
    else this.child.stdin!.write(this.dialect.wrap(command, token, options.cwd))
    try {
      await over
      // A marker match and a kill can race: the kill decides (the shell is gone either way).
      const status = stdout.match !== undefined && !timedOut && !aborted ? Number(stdout.match[1]) : undefined
      if (timedOut || aborted) { stdout.flush(); stderr.flush() }
      // Every byte through the captures (a spill file being opened holds them back) before they finish.
      await Promise.all([stdout.sink, stderr.sink].map(sink => sink.readableEnded ? undefined : new Promise(resolve => sink.once('end', resolve))))
      return {
        stdout: await captureOut.finish(),
        stderr: await captureErr.finish(),
        ...(status !== undefined ? { status } : {}),
        ...(this.exit !== undefined ? { exited: this.exit } : {}),
        timedOut, aborted,
        durationMs: Math.round(performance.now() - started),
      }
    } finally {
      clearTimeout(timer)
      clearTimeout(drain)
      options.signal.removeEventListener('abort', onAbort)
      this.listeners = {}
      this.busy = false
    }
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child.pid
    if (pid === undefined || this.exit !== undefined) return
    try {
      process.kill(-pid, signal)
    } catch {
      // Already gone.
    }
  }

  /** Ends the shell and its group: SIGTERM, then SIGKILL after the grace; resolves once it exited. */
  async kill(): Promise<void> {
    if (this.exit !== undefined) return
    this.signalGroup('SIGTERM')
    const force = setTimeout(() => this.signalGroup('SIGKILL'), this.grace)
    await this.exited
    clearTimeout(force)
    // Whatever of the group outlived the shell goes too.
    const pid = this.child.pid
    if (pid !== undefined) {
      try { process.kill(-pid, 'SIGKILL') } catch { /* none left */ }
    }
  }

  /** At process exit: no time for a grace period. */
  killNow(): void {
    const pid = this.child.pid
    if (pid === undefined) return
    try { process.kill(-pid, 'SIGKILL') } catch { /* gone */ }
  }

  /** Resolves when the shell process has ended. */
  whenExited(): Promise<void> {
    return this.exited
  }
}
