/** The `pty` row's configuration (settings `pty`, docs/pty-terminals.md) and its defaults. */

/** A program a terminal can run (`terminal_open`'s `type`). */
export interface PtyBackend {
  readonly command: string
  readonly args?: readonly string[]
  /** What its prompt ends with (used where /proc cannot show a read of stdin). */
  readonly prompt?: string
  /** Variables it gets besides the scrubbed environment. */
  readonly env?: Readonly<Record<string, string>>
}

export interface PtyConfig {
  /** Terminals open at once per session (default 8). */
  readonly maxTerminals?: number
  /** Lines kept above the visible rows (default 2000). */
  readonly scrollback?: number
  readonly cols?: number
  readonly rows?: number
  /** The longest `terminal_send` wait (default 30 s). */
  readonly waitTimeoutMs?: number
  /** No output for this long ends a wait as `silence` (default 2 s). */
  readonly silenceMs?: number
  /** Output must pause this long before a read of stdin or a prompt ends a wait (default 60 ms). */
  readonly settleMs?: number
  /** How long `terminal_open` waits for the program's first prompt (default 5 s). */
  readonly openTimeoutMs?: number
  /** After SIGTERM, SIGKILL follows this long later (default 2 s). */
  readonly killGraceMs?: number
  /** Lines one result shows at most (default 200; `terminal_read` pages up to `maxReadLines`). */
  readonly maxResultLines?: number
  /** Bytes one result shows at most (default 16 KB). */
  readonly maxResultBytes?: number
  /** The largest `count` of `terminal_read` (default 500). */
  readonly maxReadLines?: number
  /** Backends by type, merged over the built-in `shell` and `python`. */
  readonly backends?: Readonly<Record<string, PtyBackend>>
  /** Extra environment for every terminal. */
  readonly env?: Readonly<Record<string, string>>
}

export const SHELL_PROMPT = 'dsh> '

export const DEFAULT_BACKENDS: Readonly<Record<string, PtyBackend>> = {
  // No rc files: the prompt and the environment are dsh's, the same on every machine.
  shell: { command: 'bash', args: ['--norc', '--noprofile', '-i'], prompt: SHELL_PROMPT, env: { PS1: SHELL_PROMPT, PS2: '> ', HISTFILE: '/dev/null', PROMPT_COMMAND: '' } },
  python: { command: 'python3', args: ['-q', '-i', '-u'], prompt: '>>> ', env: { PYTHON_BASIC_REPL: '1' } },
}

export const PTY_DEFAULTS = {
  maxTerminals: 8,
  scrollback: 2000,
  cols: 120,
  rows: 30,
  waitTimeoutMs: 30_000,
  silenceMs: 2_000,
  settleMs: 60,
  openTimeoutMs: 5_000,
  killGraceMs: 2_000,
  maxResultLines: 200,
  maxResultBytes: 16 * 1024,
  maxReadLines: 500,
} as const

export type ResolvedPtyConfig = typeof PTY_DEFAULTS & { readonly backends: Readonly<Record<string, PtyBackend>>; readonly env: Readonly<Record<string, string>> }

/** Checks a config (a bad one is a clear error when the row loads) and fills the defaults. */
export function resolvePtyConfig(config: PtyConfig = {}): ResolvedPtyConfig {
  const out: Record<string, unknown> = { ...PTY_DEFAULTS }
  for (const key of Object.keys(PTY_DEFAULTS) as (keyof typeof PTY_DEFAULTS)[]) {
    const value = config[key]
    if (value === undefined) continue
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) throw new TypeError(`pty: config.${key} must be a positive whole number, got ${JSON.stringify(value)}`)
    out[key] = value
  }
  const backends: Record<string, PtyBackend> = { ...DEFAULT_BACKENDS }
  for (const [type, backend] of Object.entries(config.backends ?? {})) {
    if (!/^[a-z][a-z0-9_-]{0,31}$/.test(type)) throw new TypeError(`pty: backend type ${JSON.stringify(type)} must be lower-case letters, digits, - or _`)
    if (typeof backend !== 'object' || backend === null || typeof backend.command !== 'string' || backend.command === '') throw new TypeError(`pty: config.backends.${type}.command must be a program name or path`)
    if (backend.args !== undefined && !(Array.isArray(backend.args) && backend.args.every(arg => typeof arg === 'string'))) throw new TypeError(`pty: config.backends.${type}.args must be a list of strings`)
    backends[type] = backend
  }
  return { ...out, backends, env: { ...config.env } } as ResolvedPtyConfig
}
