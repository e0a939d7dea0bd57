/**
 * Drives a program in a real terminal: a detached tmux session of a given size, keys sent with
 * `send-keys`, the screen read with `capture-pane`. Waits poll the screen until a condition holds
 * or a deadline passes (never fixed sleeps). Each terminal gets its own tmux server socket.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterEach, beforeEach } from 'vitest'
import { FakeDeepSeek } from './fake-deepseek.js'

export function hasTmux(): boolean {
  return spawnSync('tmux', ['-V'], { stdio: 'ignore' }).status === 0
}

export interface TerminalOptions {
  readonly width?: number
  readonly height?: number
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string | undefined>>
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`
}

export class Terminal {
  private readonly socket = `dsh-test-${randomBytes(6).toString('hex')}`
  private readonly name = 'main'
  private closed = false

  private constructor() {}

  /** Starts `command` (argv) in a fresh terminal; the pane stays after it exits so its last screen can be read. */
  static start(command: readonly string[], options: TerminalOptions = {}): Terminal {
    const terminal = new Terminal()
    const env = { ...options.env }
    const exports = Object.entries(env).map(([key, value]) => value === undefined ? `unset ${key};` : `export ${key}=${shellQuote(value)};`).join(' ')
    const script = `${exports} cd ${shellQuote(options.cwd ?? process.cwd())} && exec ${command.map(shellQuote).join(' ')}`
    terminal.tmux(['new-session', '-d', '-s', terminal.name, '-x', String(options.width ?? 80), '-y', String(options.height ?? 24), 'bash', '--norc', '--noprofile', '-c', script])
    terminal.tmux(['set-option', '-t', terminal.name, 'remain-on-exit', 'on'])
    return terminal
  }

  /** An interactive bash in a fresh terminal (prompt `$ `), for running commands and checking the terminal after them. */
  static shell(options: TerminalOptions = {}): Terminal {
    return Terminal.start(['bash', '--norc', '--noprofile', '-i'], { ...options, env: { PS1: '$ ', HISTFILE: '/dev/null', ...options.env } })
  }

  private tmux(args: readonly string[]): string {
    return execFileSync('tmux', ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8', env: { ...process.env, TERM: 'xterm-256color' } })
  }

  /** The visible screen as text, one line per row, trailing blanks trimmed. */
  screen(): string {
    return this.tmux(['capture-pane', '-p', '-t', this.name]).split('\n').map(line => line.trimEnd()).join('\n').replace(/\n+$/, '')
  }

  /** The screen with colours and attributes as escape sequences (capture-pane -e). */
  screenWithStyles(): string {
    return this.tmux(['capture-pane', '-p', '-e', '-t', this.name])
  }

  /** Scrollback and screen. */
  history(): string {
    return this.tmux(['capture-pane', '-p', '-S', '-', '-t', this.name]).split('\n').map(line => line.trimEnd()).join('\n').replace(/\n+$/, '')
  }

  /** Named keys, e.g. `Enter`, `Escape`, `C-c`, `Up`. */
  keys(...keys: string[]): void {
    this.tmux(['send-keys', '-t', this.name, ...keys])
  }

  /** Literal text. */
  type(text: string): void {
    this.tmux(['send-keys', '-t', this.name, '-l', text])
  }

  resize(width: number, height: number): void {
    this.tmux(['resize-window', '-t', this.name, '-x', String(width), '-y', String(height)])
  }

  size(): { width: number; height: number } {
    const [width, height] = this.tmux(['display-message', '-p', '-t', this.name, '#{pane_width} #{pane_height}']).trim().split(' ').map(Number)
    return { width, height }
  }

  /** The pane's title: what OSC 0 and OSC 2 written by the program set. */
  paneTitle(): string {
    return this.tmux(['display-message', '-p', '-t', this.name, '#{pane_title}']).replace(/\n$/, '')
  }

  /** The names of tmux's paste buffers: an OSC 52 from the program adds one when `set-clipboard` is on. */
  buffers(): string[] {
    return this.tmux(['list-buffers', '-F', '#{buffer_name}']).split('\n').filter(name => name !== '')
  }

  /** Sets a server option (`set-clipboard on`: the program's OSC 52 fills a tmux buffer). */
  serverOption(name: string, value: string): void {
    this.tmux(['set-option', '-s', name, value])
  }

  /** True once the program in the pane has exited. */
  exited(): boolean {
    return this.tmux(['display-message', '-p', '-t', this.name, '#{pane_dead}']).trim() === '1'
  }

  exitStatus(): number | undefined {
    const value = this.tmux(['display-message', '-p', '-t', this.name, '#{pane_dead_status}']).trim()
    return value === '' ? undefined : Number(value)
  }

  /** The pane's terminal modes as `stty -a` would report them for the pane's tty. */
  tty(): string {
    return this.tmux(['display-message', '-p', '-t', this.name, '#{pane_tty}']).trim()
  }

  /**
   * Polls until `check` holds for the screen (or the whole history); fails with the last screen.
   * `pollMs: 0` reads the screen again at once (each read is a tmux process), to act within a
   * few milliseconds of a frame.
   */
  async waitFor(check: RegExp | string | ((screen: string) => boolean), options: { timeoutMs?: number; history?: boolean; what?: string; pollMs?: number } = {}): Promise<string> {
    const deadline = Date.now() + (options.timeoutMs ?? 15_000)
    const test = typeof check === 'function' ? check : typeof check === 'string' ? (s: string) => s.includes(check) : (s: string) => check.test(s)
    let last = ''
    for (;;) {
      last = options.history ? this.history() : this.screen()
      if (test(last)) return last
      if (Date.now() > deadline) throw new Error(`terminal: timed out waiting for ${options.what ?? String(check)}; screen was:\n${last}`)
      await new Promise(resolve => setTimeout(resolve, options.pollMs ?? 50))
    }
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    try { this.tmux(['kill-server']) } catch { /* already gone */ }
  }
}

/** What every terminal-app test file shares (`terminalTestBed`). */
export interface TerminalTestBed {
  /** tmux is missing: the file's suites skip (one warning line said so). */
  readonly skip: boolean
  /** The fake model server of the running test (a fresh one per test). */
  readonly server: FakeDeepSeek
  /** Closes `terminal` after the test; returns it. */
  keep(terminal: Terminal): Terminal
  /** The environment of a dsh run against the test's fake server, with `extra` on top. */
  env(home: string, extra?: Readonly<Record<string, string | undefined>>): Record<string, string | undefined>
}

/**
 * The set-up of a terminal-app test file: a fake model server started before each test, the
 * terminals the test kept and the server closed after it. Where tmux is missing, `skip` is true
 * and one line names `suite` and how to get tmux.
 */
export function terminalTestBed(suite: string): TerminalTestBed {
  const skip = !hasTmux()
  if (skip) console.warn(`skipping ${suite}: tmux is missing (apt-get install -y tmux)`)
  let server: FakeDeepSeek | undefined
  const terminals: Terminal[] = []
  beforeEach(async () => { server = await FakeDeepSeek.start() })
  afterEach(async () => {
    for (const terminal of terminals.splice(0)) terminal.close()
    await server?.close()
    server = undefined
  })
  return {
    skip,
    get server() {
      if (server === undefined) throw new Error('the fake model server runs only inside a test')
      return server
    },
    keep(terminal) {
      terminals.push(terminal)
      return terminal
    },
    env(home, extra = {}) {
      return { DSH_HOME: home, DEEPSEEK_BASE_URL: this.server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined, NO_COLOR: undefined, TERM: 'xterm-256color', ...extra }
    },
  }
}
