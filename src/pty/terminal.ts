/**
 * One terminal: a program in a real pseudo-terminal (`@lydell/node-pty`, loaded on first use),
 * its screen (`./screen.ts`), the waits of `terminal_send`, signals to its foreground process
 * group, and a close that ends every process it owns.
 */
import type { IPty } from '@lydell/node-pty'
import { groupMembers, groupWaitsOnStdin, procStat, signalAll, terminalProcesses } from './proc.js'
import { loadEmulator, Screen, type Mark } from './screen.js'
import { RUN_MARKER, newRunMarker } from '../tools/builtin/detached.js'

type PtyModule = typeof import('@lydell/node-pty')
let ptyModule: Promise<PtyModule> | undefined

function loadPty(): Promise<PtyModule> {
  ptyModule ??= import('@lydell/node-pty').then(mod => ((mod as unknown as { default?: PtyModule }).default ?? mod) as PtyModule)
  return ptyModule
}

export type WaitReason = 'prompt' | 'stdin_read' | 'silence' | 'timeout' | 'exit'

export type TerminalStatus =
  | { readonly kind: 'running' }
  | { readonly kind: 'exited'; readonly exitCode: number; readonly signal?: number }

export interface WaitOptions {
  /** The longest wait. */
  readonly timeoutMs: number
  /** No output for this long (and no read of stdin seen) ends the wait as `silence`. */
  readonly silenceMs: number
  /** Output must have paused this long before a stdin read or a prompt counts. */
  readonly settleMs: number
  readonly signal?: AbortSignal
  /** A read of stdin or a prompt counts only after some output (a program still starting up). */
  readonly afterOutput?: boolean
}

export interface OpenOptions {
  readonly id: string
  readonly name?: string
  readonly type: string
  /** The whole argv: a sandbox runner's prefix, then the program and its arguments. */
  readonly argv: readonly string[]
  /** How many leading argv words are the sandbox runner's (its processes are not the program's). */
  readonly runnerWords: number
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly cols: number
  readonly rows: number
  readonly scrollback: number
  /** Text the program's prompt ends with (the `prompt` wait where /proc cannot tell). */
  readonly prompt?: string
}

const POLL_MS = 25

export class Terminal {
  readonly id: string
  readonly name: string | undefined
  readonly type: string
  readonly cwd: string
  readonly createdAt = Date.now()
  status: TerminalStatus = { kind: 'running' }
  /** The process group of the program itself (set once it first waits for input). */
  private programGroup: number | undefined
  private lastOutput = performance.now()
  /** Output chunks seen so far. */
  private outputs = 0
  private closing: Promise<void> | undefined
  private readonly exitListeners = new Set<() => void>()
  private readonly marker: string
  private readonly runnerComm: string | undefined

  private constructor(private readonly pty: IPty, readonly screen: Screen, private readonly options: OpenOptions, marker: string) {
    this.id = options.id
    this.name = options.name
    this.type = options.type
    this.cwd = options.cwd
    this.marker = marker
    this.runnerComm = options.runnerWords > 0 ? options.argv[0]!.split('/').pop()!.slice(0, 15) : undefined
    pty.onData((data) => {
      if (this.closing !== undefined && !this.running) return
      this.lastOutput = performance.now()
      this.outputs++
      screen.write(data)
    })
    pty.onExit(({ exitCode, signal }) => {
      this.status = { kind: 'exited', exitCode, ...(signal !== undefined && signal !== 0 ? { signal } : {}) }
      for (const listener of this.exitListeners) listener()
    })
  }

  static async open(options: OpenOptions): Promise<Terminal> {
    const [pty, Emulator] = await Promise.all([loadPty(), loadEmulator()])
    const marker = newRunMarker()
    const [file, ...args] = options.argv
    const child = pty.spawn(file!, args, {
      name: options.env.TERM ?? 'xterm-256color',
      cols: options.cols,
      rows: options.rows,
      cwd: options.cwd,
      env: { ...options.env, [RUN_MARKER]: marker },
    })
    let terminal: Terminal | undefined
    const screen = new Screen(Emulator, options.cols, options.rows, options.scrollback, (pause) => {
      if (pause) child.pause()
      else child.resume()
    })
    terminal = new Terminal(child, screen, options, marker)
    return terminal
  }

  get pid(): number {
    return this.pty.pid
  }

  get running(): boolean {
    return this.status.kind === 'running'
  }

  /** The terminal's foreground process group, as /proc shows it (undefined: unknown). */
  foregroundGroup(): number | undefined {
    const tpgid = procStat(this.pty.pid)?.tpgid
    return tpgid !== undefined && tpgid > 0 ? tpgid : undefined
  }

  /** Takes the current foreground group as the program's own (right after it started). */
  adoptProgramGroup(): void {
    this.programGroup ??= this.foregroundGroup()
  }

  /** Whether the program itself (the shell, the REPL) is in the foreground. */
  programInForeground(): boolean {
    const group = this.foregroundGroup()
    return group !== undefined && group === this.programGroup
  }

  write(text: string): void {
    if (!this.running) return
    this.pty.write(text)
  }

  /** Marks where the next output starts. */
  async mark(): Promise<Mark> {
    await this.screen.settled()
    return this.screen.mark()
  }

  private waitsOnStdin(): boolean | undefined {
    const group = this.foregroundGroup()
    if (group === undefined) return undefined
    return groupWaitsOnStdin(group, this.processes().map(p => p.pid))
  }

  private promptShown(): boolean {
    const prompt = this.options.prompt
    if (prompt === undefined || prompt === '') return false
    const lines = this.screen.lines()
    return (lines[lines.length - 1] ?? '').endsWith(prompt)
  }

  /**
   * Waits until the program is back at its prompt or reads stdin, output stops for `silenceMs`,
   * `timeoutMs` passes or the program exits. `since`: when the input went out (output before it
   * does not count). Resolves `cancelled` when `signal` aborts; the terminal keeps running.
   */
  wait(options: WaitOptions, since = performance.now()): Promise<WaitReason | 'cancelled'> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined
      const finish = (reason: WaitReason | 'cancelled') => {
        clearTimeout(timer)
        this.exitListeners.delete(onExit)
        options.signal?.removeEventListener('abort', onAbort)
        // The screen catches up with what the program printed before answering.
        void this.screen.settled().then(() => resolve(reason))
      }
      const onExit = () => finish('exit')
      const onAbort = () => finish('cancelled')
      if (!this.running) return finish('exit')
      if (options.signal?.aborted === true) return finish('cancelled')
      this.exitListeners.add(onExit)
      options.signal?.addEventListener('abort', onAbort, { once: true })
      const started = performance.now()
      const tick = () => {
        const now = performance.now()
        const quiet = now - Math.max(since, this.lastOutput)
        if (quiet >= options.settleMs && (options.afterOutput !== true || this.outputs > 0)) {
          const waits = this.waitsOnStdin()
          if (waits === true) return finish('stdin_read')
          if (waits === undefined && this.promptShown()) return finish('prompt')
        }
        // A program still starting (no output yet) is given three silences before it counts.
        const starting = options.afterOutput === true && this.outputs === 0 && now - started < 3 * options.silenceMs
        if (quiet >= options.silenceMs && !starting) return finish('silence')
        if (now - started >= options.timeoutMs) return finish('timeout')
        timer = setTimeout(tick, POLL_MS)
      }
      timer = setTimeout(tick, Math.min(POLL_MS, options.settleMs))
    })
  }

  /** Every live process of the terminal, the sandbox runner's own included. */
  processes(): ReturnType<typeof terminalProcesses> {
    return terminalProcesses(this.pty.pid, this.marker)
  }

  /**
   * Signals the foreground process group (the sandbox runner's processes, which share the group
   * of a program that does no job control, are left out). Returns the group, or undefined when
   * there is none to signal.
   */
  signalForeground(signal: NodeJS.Signals): { group: number; pids: number[] } | undefined {
    const group = this.foregroundGroup()
    if (group === undefined) return undefined
    const pids = groupMembers(group)
      .filter(p => p.state !== 'Z' && !(this.runnerComm !== undefined && (p.pid === this.pty.pid || p.comm === this.runnerComm)))
      .map(p => p.pid)
    signalAll(pids, signal)
    return { group, pids }
  }

  /** Names of the foreground group's processes (for messages). */
  foregroundNames(): string[] {
    const group = this.foregroundGroup()
    return group === undefined ? [] : groupMembers(group).filter(p => p.comm !== this.runnerComm).map(p => p.comm)
  }

  /**
   * Ends every process of the terminal: SIGHUP and SIGTERM, then SIGKILL to what is left after
   * `graceMs`; resolves once none is alive (or `giveUpMs` later).
   */
  close(graceMs: number, giveUpMs = 10_000): Promise<void> {
    this.closing ??= (async () => {
      const seen = new Map(this.processes().map(p => [p.pid, p]))
      const alive = () => {
        for (const p of this.processes()) seen.set(p.pid, p)
        return [...seen.keys()].filter(pid => {
          const stat = procStat(pid)
          return stat !== undefined && stat.state !== 'Z'
        })
      }
      try { this.pty.kill('SIGHUP') } catch { /* gone */ }
      signalAll([...seen.keys()], 'SIGHUP')
      signalAll([...seen.keys()], 'SIGTERM')
      if (!await this.until(() => alive().length === 0, graceMs)) {
        signalAll(alive(), 'SIGKILL')
        try { this.pty.kill('SIGKILL') } catch { /* gone */ }
        await this.until(() => alive().length === 0, giveUpMs)
      }
      await this.until(() => !this.running, 1_000)
      this.screen.dispose()
    })()
    return this.closing
  }

  /** SIGKILL to everything now, synchronously (dsh is exiting). */
  killNow(): void {
    signalAll(this.processes().map(p => p.pid), 'SIGKILL')
  }

  private async until(done: () => boolean, ms: number): Promise<boolean> {
    const deadline = performance.now() + ms
    while (!done()) {
      if (performance.now() >= deadline) return false
      await new Promise(resolve => setTimeout(resolve, POLL_MS))
    }
    return true
  }
}
