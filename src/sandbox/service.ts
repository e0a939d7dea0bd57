/**
 * `ctx.sandbox`: the OS runner chain and the workspace root for confined tools (SB-1..SB-3).
 * Load with `ctx.plugin(SandboxPlugin, config)`. While it is loaded, `bash`, `write` and `edit`
 * confine their writes to the effective mode and offer `sandbox_permissions` (SB-6).
 *
 * - `runner()`: the first working runner of the chain (bubblewrap by default), probed once per
 *   process; `{ problems }` without a runner means confined commands fail closed
 *   (`SANDBOX_UNAVAILABLE`), never run unconfined.
 * - `root(cwd)`: the canonical workspace root of a session (realpath of its cwd; the configured
 *   `workspaceRoot` for agentless calls).
 * - `fallbackMode`: the mode of calls outside any session (no `ctx.approval` to ask).
 */
import { realpath } from 'node:fs/promises'
import { Service, type Context } from 'cordis'
import { isSandboxMode, type SandboxMode } from './modes.js'
import { bwrapRunner, commandRunner, landlockRunner, probeChain, type ProbeResult, type SandboxRunner } from './runner.js'

export interface SandboxConfig {
  /** Runner chain, tried in order (default `['bwrap']`). */
  readonly runners?: readonly ('bwrap' | 'landlock')[]
  /** Path of the bubblewrap binary (default `bwrap` on PATH). */
  readonly bwrapCommand?: string
  /** Landlock launcher argv (there is no launcher by default; `landlock` in `runners` needs it). */
  readonly landlockCommand?: readonly string[]
  /** A site runner tried before the chain: argv before `--mode M --root R -- bash -c C`. */
  readonly runnerCommand?: readonly string[]
  readonly runnerFailureSignatures?: readonly string[]
  /** Programmatic runners (tests, embedders), tried first. */
  readonly runner?: SandboxRunner
  readonly probeTimeoutMs?: number
  /** Mode for calls outside a session (default read-only). */
  readonly mode?: SandboxMode
  /** Root for calls outside a session (default the process cwd). */
  readonly workspaceRoot?: string
}

export interface SandboxService {
  runner(): Promise<ProbeResult>
  root(cwd: string | undefined): Promise<string>
  readonly fallbackMode: SandboxMode
}

declare module 'cordis' {
  interface Context {
    sandbox: SandboxService
  }
}

export class SandboxPlugin extends Service implements SandboxService {
  readonly fallbackMode: SandboxMode
  private readonly chain: readonly SandboxRunner[]
  private readonly key: string

  constructor(ctx: Context, private readonly config: SandboxConfig = {}) {
    super(ctx, 'sandbox')
    if (config.mode !== undefined && !isSandboxMode(config.mode)) throw new TypeError(`sandbox: config.mode must be read-only, workspace-write or danger-full-access, got ${JSON.stringify(config.mode)}`)
    this.fallbackMode = config.mode ?? 'read-only'
    const chain: SandboxRunner[] = []
    if (config.runner !== undefined) chain.push(config.runner)
    if (config.runnerCommand !== undefined && config.runnerCommand.length > 0) {
      chain.push(commandRunner({ command: config.runnerCommand, ...(config.runnerFailureSignatures ? { failureSignatures: config.runnerFailureSignatures } : {}) }))
    }
    for (const name of config.runners ?? ['bwrap']) {
      if (name === 'bwrap') chain.push(bwrapRunner(config.bwrapCommand))
      else if (name === 'landlock') {
        if (config.landlockCommand === undefined || config.landlockCommand.length === 0) throw new TypeError('sandbox: the landlock runner needs config.landlockCommand (a landlock-run launcher)')
        chain.push(landlockRunner(config.landlockCommand))
      } else throw new TypeError(`sandbox: unknown runner ${JSON.stringify(name)} (expected bwrap or landlock)`)
    }
    this.chain = chain
    // A programmatic runner is an object: it gets a probe of its own.
    this.key = config.runner !== undefined ? `custom:${Math.random()}` : JSON.stringify([config.runnerCommand, config.runners, config.bwrapCommand, config.landlockCommand])
  }

  runner(): Promise<ProbeResult> {
    return probeChain(this.key, this.chain, { timeoutMs: this.config.probeTimeoutMs ?? 5000 })
  }

  async root(cwd: string | undefined): Promise<string> {
    const base = cwd ?? this.config.workspaceRoot ?? process.cwd()
    return realpath(base).catch(() => base)
  }
}
