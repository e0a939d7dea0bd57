/**
 * A shell host: one long-lived process inside the sandbox that starts the commands of a
 * (runner, mode, root), so a command costs a fork and an exec of the shell instead of a whole
 * bubblewrap set-up (mount and pid namespaces, /dev, /proc; ~4 ms a command on a 2-core
 * machine; docs/benchmarks.md). The host is `perl -e <SHELL_HOST_PROGRAM>` run under the very
 * argv prefix a command would get, so what a command may write is unchanged; it is used only
 * with runners that put everything in one pid namespace tied to dsh's life (`hostable`: bwrap).
 *
 * What differs from a sandbox per command, and why it is kept (docs/security.md):
 * - a command can see and signal the other processes of the same host (every command of that
 *   mode and root in this dsh process, whichever session runs it) and, while they overlap,
 *   shares /tmp with them: they are all confined alike, so nothing is gained;
 * - when a command's shell ends, the rest of its process group is killed at once, and every
 *   other process of the host once no command is running (where a sandbox per command ends
 *   them all at once); under workspace-write the private /tmp is then emptied.
 *
 * `ShellHost.start` resolves once the host reports ready and rejects when it ends before that
 * (no perl, say): callers then run commands the direct way.
 */
import type { ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { constants as fsConstants, readlinkSync, statSync } from 'node:fs'
import { constants } from 'node:os'
import { Readable } from 'node:stream'
import { spawner } from './runner.js'
import { SHELL_HOST_PROGRAM } from './shell-host.pl.js'

const NEWLINE = 0x0a
const signalNames = new Map<number, NodeJS.Signals>(Object.entries(constants.signals).map(([name, number]) => [number, name as NodeJS.Signals]))

/** One command run by a host: the shape of a spawned child the bash tool reads. */
export class HostedRun extends EventEmitter {
  /** A reader that asks for more (after the host was held for it) lets the host go on. */
  readonly stdout = new Readable({ read: () => this.host.release(this.stdout) })
  readonly stderr = new Readable({ read: () => this.host.release(this.stderr) })
  private exited: { code: number | null; signal: NodeJS.Signals | null } | undefined
  private closed = false
  /** dsh signalled the run (a timeout, an abort). */
  private signalled = false

  /** Output streams not yet read to their end (or destroyed). */
  private streamsOpen = 2
  private closeEmitted = false

  constructor(private readonly host: ShellHost, readonly id: number) {
    super()
    for (const stream of [this.stdout, this.stderr]) stream.once('close', () => { this.streamsOpen--; this.maybeClose() })
  }

  /** Signals the command's process group (once its shell has ended the host ignores it). */
  kill(signal: NodeJS.Signals): void {
    this.signalled = true
    this.host.signal(this.id, signal)
  }

  /**
   * @internal The shell died of signal `number`. Reported as a sandbox per command reports it:
   * killed by that signal when dsh sent it (it signals bwrap itself then), else exit 128+N (bwrap
   * passes the shell's end on as its exit status).
   */
  killed(number: number): void {
    if (this.signalled) this.exit(null, signalNames.get(number) ?? 'SIGKILL')
    else this.exit(128 + number, null)
  }

  /** @internal */
  exit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited !== undefined) return
    this.exited = { code, signal }
    this.emit('exit', code, signal)
    this.maybeClose()
  }

  /** @internal Both pipes reached their end. */
  close(): void {
    if (this.closed) return
    this.endStreams()
  }

  /**
   * `close` as a child process has it: after the exit and once both streams have been read to
   * their end, so a reader that paused (a spill file opening) still gets every byte first.
   */
  private maybeClose(): void {
    if (this.closeEmitted || this.exited === undefined || this.streamsOpen > 0) return
    this.closeEmitted = true
    this.emit('close', this.exited.code, this.exited.signal)
  }

  /** @internal The run could not start (the host's `s` frame, or an ended host). */
  fail(message: string): void {
    this.endStreams()
    this.emit('error', new Error(message))
  }

  private endStreams(): void {
    this.closed = true
    this.stdout.push(null)
    this.stderr.push(null)
  }
}

export class ShellHost {
  private readonly runs = new Map<number, HostedRun>()
  private nextId = 1
  private pending: Buffer | undefined
  private state: 'starting' | 'ready' | 'ended' = 'starting'
  /** Streams whose reader fell behind: the host waits for them (backpressure). */
  private readonly held = new Set<Readable>()
  /** The environment the host gives new runs (sent again only when it changes). */
  private env = ''
  /** Runs that got the host's warm shell (started ahead, shell-host.pl.ts) instead of a fork. */
  warmRuns = 0

  private constructor(private readonly child: ChildProcess) {}

  /**
   * Starts `<prefix> <perl> -e <program> <shell> <real /tmp device> <O_NONBLOCK> <pid namespace>` and resolves once it is
   * ready. `env` is the host's own environment (each run sends its own as well). `clearTmp`: the
   * runner gives the sandbox a /tmp of its own, to be emptied between commands; the host checks
   * it is not the real one (another device) before it empties it.
   */
  static async start(prefix: readonly string[], options: { shell: string; perl?: string; cwd: string; env: NodeJS.ProcessEnv; clearTmp: boolean }): Promise<ShellHost> {
    const spawn = await spawner()
    let realTmp = ''
    if (options.clearTmp) {
      try {
        realTmp = String(statSync('/tmp').dev)
      } catch {
        // No real /tmp to tell the sandbox's from: it is never emptied.
      }
    }
    let pidNamespace = ''
    try {
      pidNamespace = readlinkSync('/proc/self/ns/pid')
    } catch {
      // Unknown: the host cannot tell it is in a namespace of its own, and refuses to start.
    }
    const argv = [...prefix, options.perl ?? 'perl', '-e', SHELL_HOST_PROGRAM, options.shell, realTmp, String(fsConstants.O_NONBLOCK), pidNamespace]
    const child = spawn(argv[0]!, argv.slice(1), { cwd: options.cwd, env: options.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
    const host = new ShellHost(child)
    return new Promise((resolve, reject) => {
      let stderr = ''
      child.stderr!.on('data', (chunk: Buffer) => { if (stderr.length < 2048) stderr += chunk.toString('utf8') })
      child.stdin!.on('error', () => undefined)
      child.once('error', error => { host.end(); reject(error) })
      child.once('exit', (code, signal) => {
        const wasReady = host.state === 'ready'
        host.end()
        if (!wasReady) reject(new Error(`the shell host ended before it was ready (${signal ?? `exit ${code}`})${stderr.trim() === '' ? '' : `: ${stderr.trim().split('\n')[0]}`}`))
      })
      child.stdout!.on('data', (chunk: Buffer) => {
        if (host.state === 'starting') {
          host.state = 'ready'
          // Idle, the host must not keep dsh running; a command keeps its own timer.
          child.unref()
          for (const stream of [child.stdin, child.stdout, child.stderr] as const) (stream as unknown as { unref?: () => void }).unref?.()
          resolve(host)
        }
        host.read(chunk)
      })
    })
  }

  get alive(): boolean {
    return this.state !== 'ended'
  }

  /** A command is running (or its output is still coming). */
  get busy(): boolean {
    return this.runs.size > 0
  }

  /** The runner's process (bwrap) on this side of the sandbox. */
  get pid(): number | undefined {
    return this.child.pid
  }

  /** Starts `command` (a shell command line) in `cwd` with exactly `env`. */
  run(command: string, options: { cwd: string; env: NodeJS.ProcessEnv }): HostedRun {
    const id = this.nextId++
    const run = new HostedRun(this, id)
    if (!this.alive) {
      queueMicrotask(() => run.fail('the shell host has ended'))
      return run
    }
    this.runs.set(id, run)
    let env = ''
    for (const key in options.env) {
      const value = options.env[key]
      if (value !== undefined && !key.includes('=') && !key.includes('\0') && !value.includes('\0')) env += `${key}=${value}\0`
    }
    const parts: Buffer[] = []
    if (env !== this.env) {
      this.env = env
      const envBytes = Buffer.from(env)
      parts.push(Buffer.from(`E ${envBytes.length}\n`), envBytes)
    }
    const cwd = Buffer.from(options.cwd)
    const line = Buffer.from(command)
    parts.push(Buffer.from(`R ${id} ${cwd.length} ${line.length}\n`), cwd, line)
    this.child.stdin!.write(Buffer.concat(parts))
    return run
  }

  /** @internal */
  signal(id: number, signal: NodeJS.Signals): void {
    if (!this.alive || !this.runs.has(id)) return
    this.child.stdin!.write(`K ${id} ${constants.signals[signal]}\n`)
  }

  /** Ends the host and, with it, everything it started. */
  close(): void {
    if (!this.alive) return
    this.child.stdin!.end()
    try {
      process.kill(-this.child.pid!, 'SIGKILL')
    } catch {
      // Already gone.
    }
    this.end()
  }

  private end(): void {
    if (!this.alive) return
    this.state = 'ended'
    // The host's end is the sandbox's end: every command in it was killed with it.
    for (const run of this.runs.values()) {
      run.exit(null, 'SIGKILL')
      run.close()
    }
    this.runs.clear()
  }

  private read(chunk: Buffer): void {
    let buffer = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk])
    let at = 0
    for (;;) {
      const newline = buffer.indexOf(NEWLINE, at)
      if (newline < 0) break
      const header = buffer.toString('latin1', at, newline)
      const first = header.indexOf(' ')
      const second = header.indexOf(' ', first + 1)
      const length = Number(header.slice(second + 1))
      if (first <= 0 || second <= first || !Number.isSafeInteger(length) || length < 0) {
        // Not a frame: the host is broken. It ends, and its runs with it.
        this.pending = undefined
        this.close()
        return
      }
      if (buffer.length < newline + 1 + length) break
      const body = buffer.subarray(newline + 1, newline + 1 + length)
      at = newline + 1 + length
      this.frame(Number(header.slice(0, first)), header.slice(first + 1, second), body)
    }
    this.pending = at === buffer.length ? undefined : buffer.subarray(at)
  }

  private frame(id: number, kind: string, body: Buffer): void {
    const run = this.runs.get(id)
    if (run === undefined) return
    switch (kind) {
      case 'o':
      case 'e': {
        const stream = kind === 'o' ? run.stdout : run.stderr
        if (stream.destroyed || stream.readableEnded) return
        // A reader that stopped (a spill file opening, a slow disk) holds the whole host back
        // until it reads again (or is destroyed).
        if (!stream.push(Buffer.from(body)) && !this.held.has(stream)) {
          this.held.add(stream)
          this.child.stdout!.pause()
          stream.once('close', () => this.release(stream))
        }
        return
      }
      case 'x': {
        const [what, value] = body.toString('latin1').split(' ')
        const number = Number(value)
        if (what === 'signal') run.killed(number)
        else run.exit(number, null)
        return
      }
      case 'w':
        this.warmRuns++
        return
      case 'c':
        this.runs.delete(id)
        run.close()
        return
      case 's':
        this.runs.delete(id)
        run.fail(body.toString('utf8'))
        return
    }
  }

  /** @internal */
  release(stream: Readable): void {
    if (!this.held.delete(stream)) return
    if (this.held.size === 0) this.child.stdout!.resume()
  }
}
