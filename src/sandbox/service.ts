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
 * - `shellHost(...)`: the running shell host of a (runner, mode, root), or undefined while there
 *   is none, one being started then in the background (`./shell-host.ts`); off with
 *   `shellHost: false`.
 * - `readCheck(root)` / `readDenied(path, root)`: the deny-read list (`./secrets.ts`) as the
 *   read/grep/glob tools apply it; confined commands get it as masks in their argv.
 */
import { realpathSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { Service, type Context } from 'cordis'
import { isSandboxMode, type SandboxMode } from './modes.js'
import { bwrapRunner, commandRunner, landlockRunner, probeChain, probed, provenRunner, type ConfinedMode, type ProbeResult, type SandboxRunner } from './runner.js'
import { DEFAULT_ALLOWED_HOSTS, parseAllowedHosts } from './hosts.js'
import { NetworkGate, planKey, type GateHooks, type NetworkPlan } from './network.js'
import { mountsKey, protectedMounts, protectedScan, type ProtectedMounts } from './protected.js'
import { hiddenPaths, ReadCheck, readPolicy, type ReadPolicy } from './secrets.js'
import { ShellHost } from './shell-host.js'

/** Starts of a host per (runner, mode, root, shell) in a service's life: a command that keeps killing its host falls back to a sandbox per command. */
const MAX_HOST_STARTS = 3
/** Hosts kept at once (subagents in many folders); past it the least recently used idle one ends. */
const MAX_HOSTS = 8
/** Remembered (runner, mode, root, shell) slots, running or not, before idle ones are dropped. */
const MAX_SLOTS = 64

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
  /** Run confined commands through a kept shell host (default true; docs/security.md). */
  readonly shellHost?: boolean
  /** The Perl the shell host runs on (default `perl` on PATH). */
  readonly perlCommand?: string
  /**
   * Absolute paths no confined command or write may change besides the built-in protected paths
   * (`./protected.ts`): the launcher adds dsh's home (sessions, credentials, the trust list).
   */
  readonly protectedPaths?: readonly string[]
  /** The user's home, where the default deny-read entries lie (default `os.homedir()`). */
  readonly home?: string
  /** dsh's home, hidden but for its spill folder and skills (default `$DSH_HOME`, else `<home>/.dsh`). */
  readonly dshHome?: string
  /** Absolute or `~/` paths hidden besides the defaults (settings.yaml `sandbox.denyRead`). */
  readonly denyRead?: readonly string[]
  /** Absolute or `~/` paths taken off the list, or kept readable inside a hidden folder (`sandbox.allowRead`). */
  readonly allowRead?: readonly string[]
  /**
   * Hosts confined commands may reach under the `allowlist` network mode (`./hosts.ts` syntax;
   * default `DEFAULT_ALLOWED_HOSTS`: common package registries and code hosts).
   */
  readonly allowedHosts?: readonly string[]
  /** Adds a host the user allowed for good to the settings `allowedHosts` came from. */
  readonly rememberHost?: (entry: string) => void
  /** Name resolution of the gates' proxies (default the system resolver; embedders with their own DNS). */
  readonly resolve?: (host: string) => Promise<readonly { address: string; family: 4 | 6 }[]>
}

/** The slice of a session a gate needs: its id (gates are one per session). */
export interface GateOwner {
  readonly id: string
}

/** Options of a shell host (or of the host `prepare` starts). */
export interface HostOptions {
  readonly shell: string
  readonly env: NodeJS.ProcessEnv
  /** The network of its sandbox (absent: the host's own network). */
  readonly network?: NetworkPlan
}

export interface SandboxService {
  runner(): Promise<ProbeResult>
  root(cwd: string | undefined): Promise<string>
  readonly fallbackMode: SandboxMode
  /** Protected paths besides the built-in rules (absolute): refused by the write fence, read-only in the runner. */
  readonly protectedPaths?: readonly string[]
  /**
   * The argv prefix of a confined command under `runner`: the runner's argv with the protected
   * paths that exist now inside `root` (`./protected.ts`), and `writable`: folders dsh made for
   * this one command, writable in either mode. Without it callers use `runner.argv`.
   */
  prefix?(runner: SandboxRunner, mode: ConfinedMode, root: string, network?: NetworkPlan, writable?: readonly string[]): readonly string[]
  shellHost?(runner: SandboxRunner, mode: ConfinedMode, root: string, options: HostOptions): ShellHost | undefined
  /**
   * The network gate of a session (`./network.ts`): started on first use, with `hooks` (how
   * it asks and records), and closed with the session's agent or the service.
   */
  gate?(owner: GateOwner, hooks: GateHooks): Promise<NetworkGate>
  /** The perl the shell host and the network bridge run on. */
  readonly perl?: string
  /**
   * Called before `runner()` by a command that would use a shell host: while the chain has not
   * been probed, starts the host of its first runner for (mode, root) and waits for it. A host
   * that comes up proves the runner as the probe would (the probe is then not run), and the
   * command goes through it; otherwise nothing changes and `runner()` probes as before.
   */
  prepare?(mode: ConfinedMode, root: string, options: HostOptions): Promise<void>
  /**
   * The deny-read list as it stands now, for one tool call in workspace `root` (a real path,
   * where `.env*` files stay readable). Without it nothing is hidden from the tools.
   */
  readCheck?(root?: string): ReadCheck
  /** The deny-read rule `path` falls under (after `..` and symlinks), or undefined when it may be read. */
  readDenied?(path: string, root?: string): string | undefined
}

interface HostSlot {
  host?: ShellHost
  starting?: Promise<void>
  starts: number
  /** Why the last start failed. */
  problem?: string
}

declare module 'cordis' {
  interface Context {
    sandbox: SandboxService
  }
}

/** One log event per connection a confined command tried under `allowlist` (`./proxy.ts`). */
export const CONNECTION_EVENT = 'sandbox/connection'

function validateConnection(data: unknown): string | null {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'data must be an object'
  const record = data as Record<string, unknown>
  if (typeof record.host !== 'string' || record.host === '') return 'host must be a non-empty string'
  if (!Number.isInteger(record.port) || (record.port as number) < 1 || (record.port as number) > 65535) return 'port must be an integer 1..65535'
  if (record.kind !== 'connect' && record.kind !== 'http') return 'kind must be connect or http'
  if (record.outcome !== 'allowed' && record.outcome !== 'refused') return 'outcome must be allowed or refused'
  for (const key of ['reason', 'address', 'callId']) if (record[key] !== undefined && typeof record[key] !== 'string') return `${key} must be a string when present`
  return null
}

export class SandboxPlugin extends Service implements SandboxService {
  readonly fallbackMode: SandboxMode
  readonly protectedPaths: readonly string[]
  readonly readPolicy: ReadPolicy
  private readonly chain: readonly SandboxRunner[]
  private readonly key: string
  private readonly hosts = new Map<string, HostSlot>()
  /** The folders of the workspace that hold protected names, kept per folder while unchanged. */
  private readonly scan = protectedScan()
  private readonly gates = new Map<string, Promise<NetworkGate>>()
  private readonly allowedHosts: readonly string[]
  private disposed = false

  constructor(ctx: Context, private readonly config: SandboxConfig = {}) {
    super(ctx, 'sandbox')
    if (config.mode !== undefined && !isSandboxMode(config.mode)) throw new TypeError(`sandbox: config.mode must be read-only, workspace-write or danger-full-access, got ${JSON.stringify(config.mode)}`)
    if (config.shellHost !== undefined && typeof config.shellHost !== 'boolean') throw new TypeError(`sandbox: config.shellHost must be true or false, got ${JSON.stringify(config.shellHost)}`)
    if (config.perlCommand !== undefined && (typeof config.perlCommand !== 'string' || config.perlCommand === '')) throw new TypeError(`sandbox: config.perlCommand must be a command name or path, got ${JSON.stringify(config.perlCommand)}`)
    this.fallbackMode = config.mode ?? 'read-only'
    if (config.protectedPaths !== undefined && !(Array.isArray(config.protectedPaths) && config.protectedPaths.every(path => typeof path === 'string' && path.startsWith('/')))) {
      throw new TypeError(`sandbox: config.protectedPaths must be a list of absolute paths, got ${JSON.stringify(config.protectedPaths)}`)
    }
    this.protectedPaths = config.protectedPaths ?? []
    // Checked here, so a bad list in settings is a clear error at start, not at the first command.
    parseAllowedHosts(config.allowedHosts ?? DEFAULT_ALLOWED_HOSTS)
    this.allowedHosts = config.allowedHosts ?? DEFAULT_ALLOWED_HOSTS
    for (const key of ['home', 'dshHome'] as const) {
      const value = config[key]
      if (value !== undefined && !(typeof value === 'string' && value.startsWith('/'))) throw new TypeError(`sandbox: config.${key} must be an absolute path, got ${JSON.stringify(value)}`)
    }
    const home = config.home ?? homedir()
    const dshHome = config.dshHome ?? (process.env.DSH_HOME !== undefined && process.env.DSH_HOME !== '' ? resolve(process.env.DSH_HOME) : join(home, '.dsh'))
    this.readPolicy = readPolicy({ home, dshHome, denyRead: config.denyRead, allowRead: config.allowRead })
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
    ctx.inject(['sessions'], (ctx) => {
      const sessions = ctx.get('sessions') as { registerEventType(definition: { type: string; validate: (data: unknown) => string | null; owner: string }): () => void }
      sessions.registerEventType({ type: CONNECTION_EVENT, validate: validateConnection, owner: 'sandbox' })
    })
    // A session's gate (and the hosts bound to its socket) ends with its agent.
    ctx.on('agent/disposed' as never, ((agent: { session: GateOwner }) => { void this.closeGate(agent.session.id) }) as never)
    ctx.effect(() => () => {
      this.disposed = true
      for (const slot of this.hosts.values()) slot.host?.close()
      this.hosts.clear()
      for (const gate of this.gates.values()) void gate.then(g => g.close(), () => undefined)
      this.gates.clear()
    })
  }

  get perl(): string {
    return this.config.perlCommand ?? 'perl'
  }

  gate(owner: GateOwner, hooks: GateHooks): Promise<NetworkGate> {
    if (this.disposed) return Promise.reject(new Error('sandbox: the service was stopped'))
    let gate = this.gates.get(owner.id)
    if (gate === undefined) {
      const remember = this.config.rememberHost
      gate = NetworkGate.open({ allowedHosts: this.allowedHosts, ...(this.config.resolve !== undefined ? { lookup: this.config.resolve } : {}), hooks: { ...hooks, ...(remember ? { remember: (host: string, port: number) => remember(port === 443 || port === 80 ? host : `${host}:${port}`) } : {}) } })
      this.gates.set(owner.id, gate)
      // A gate that could not start is tried again by the next command.
      gate.catch(() => { if (this.gates.get(owner.id) === gate) this.gates.delete(owner.id) })
    }
    return gate
  }

  private async closeGate(id: string): Promise<void> {
    const gate = this.gates.get(id)
    if (gate === undefined) return
    this.gates.delete(id)
    let socket: string | undefined
    try {
      const open = await gate
      socket = open.socketPath
      await open.close()
    } catch {
      return
    }
    for (const [key, slot] of this.hosts) {
      if (key.includes(`\0allowlist:${socket}`)) {
        slot.host?.close()
        this.hosts.delete(key)
      }
    }
  }

  /**
   * The protected paths of `root` that exist now (none under read-only: nothing there is
   * writable), and in both modes the secrets that exist now.
   */
  private mounts(mode: ConfinedMode, root: string): ProtectedMounts | undefined {
    const hidden = hiddenPaths(this.readPolicy)
    if (mode === 'workspace-write') return { ...protectedMounts(root, this.protectedPaths, this.scan), hidden }
    return hidden.length === 0 ? undefined : { readOnly: [], pinned: [], hidden }
  }

  readCheck(root?: string): ReadCheck {
    return new ReadCheck(this.readPolicy, hiddenPaths(this.readPolicy), root)
  }

  readDenied(path: string, root?: string): string | undefined {
    return this.readCheck(root).denied(path)
  }

  prefix(runner: SandboxRunner, mode: ConfinedMode, root: string, network?: NetworkPlan, writable?: readonly string[]): readonly string[] {
    const mounts = this.mounts(mode, root)
    if (writable === undefined || writable.length === 0) return runner.argv(mode, root, mounts, network)
    return runner.argv(mode, root, { readOnly: [], pinned: [], ...mounts, writable }, network)
  }

  shellHost(runner: SandboxRunner, mode: ConfinedMode, root: string, options: HostOptions): ShellHost | undefined {
    if (this.config.shellHost === false || runner.hostable === undefined || this.disposed) return undefined
    // A host's sandbox has the protected paths of its start: a `.git` made since gets a new host.
    const mounts = this.mounts(mode, root)
    const key = this.hostKey(runner, mode, root, options.shell, mounts, options.network)
    let slot = this.hosts.get(key)
    if (slot?.host?.alive === true) {
      // Most recently used last.
      this.hosts.delete(key)
      this.hosts.set(key, slot)
      return slot.host
    }
    if (slot === undefined) {
      // The same root's idle host of an older protected set is not used again: it ends.
      const same = this.hostKey(runner, mode, root, options.shell, undefined, options.network)
      for (const [other, kept] of this.hosts) {
        if (other.startsWith(`${same}\0`) && kept.host?.alive === true && !kept.host.busy) {
          kept.host.close()
          this.hosts.delete(other)
        }
      }
      // Slots of roots no longer in use (a host never started or ended for good) are let go.
      if (this.hosts.size >= MAX_SLOTS) {
        for (const [other, kept] of this.hosts) if (kept.starting === undefined && kept.host?.alive !== true) this.hosts.delete(other)
      }
      this.hosts.set(key, slot = { starts: 0 })
    }
    if (slot.starting === undefined && slot.starts < MAX_HOST_STARTS && this.roomForHost()) {
      const started = slot
      started.starts++
      started.host = undefined
      started.starting = ShellHost.start(runner.argv(mode, root, mounts, options.network), {
        shell: options.shell,
        ...(this.config.perlCommand !== undefined ? { perl: this.config.perlCommand } : {}),
        cwd: root,
        env: options.env,
        clearTmp: runner.hostable.privateTmp(mode, root),
      }).then((host) => {
        if (this.disposed) host.close()
        else started.host = host
      }, (error: unknown) => {
        // No perl, say: this (runner, mode, root) runs a sandbox per command from now on.
        started.problem = error instanceof Error ? error.message : String(error)
        started.starts = MAX_HOST_STARTS
      }).finally(() => { started.starting = undefined })
    }
    return undefined
  }

  private hostKey(runner: SandboxRunner, mode: ConfinedMode, root: string, shell: string, mounts: ProtectedMounts | undefined, network: NetworkPlan | undefined): string {
    return `${runner.name}\0${mode}\0${root}\0${shell}\0${planKey(network)}${mounts === undefined ? '' : `\0${mountsKey(mounts)}`}`
  }

  /** Ends the least recently used idle host when MAX_HOSTS are running; false when all are busy. */
  private roomForHost(): boolean {
    const live = [...this.hosts.values()].filter(slot => slot.host?.alive === true || slot.starting !== undefined)
    if (live.length < MAX_HOSTS) return true
    const idle = live.find(slot => slot.host?.alive === true && !slot.host.busy)
    if (idle === undefined) return false
    idle.host!.close()
    idle.host = undefined
    // Ended to make room, not by a command: it does not count against the root's starts.
    idle.starts--
    return true
  }

  /** The shell hosts' state, for diagnostics and tests. */
  shellHosts(): { key: string; running: boolean; pid?: number; starts: number; warmRuns: number; problem?: string }[] {
    return [...this.hosts].map(([key, slot]) => ({
      key: key.replaceAll('\0', ' '),
      running: slot.host?.alive === true,
      ...(slot.host?.alive === true && slot.host.pid !== undefined ? { pid: slot.host.pid } : {}),
      starts: slot.starts,
      warmRuns: slot.host?.warmRuns ?? 0,
      ...(slot.problem !== undefined ? { problem: slot.problem } : {}),
    }))
  }

  /** Resolves once no shell host is starting (tests and diagnostics). */
  async shellHostsSettled(): Promise<void> {
    await Promise.all([...this.hosts.values()].map(slot => slot.starting))
  }

  async prepare(mode: ConfinedMode, root: string, options: HostOptions): Promise<void> {
    const runner = this.chain[0]
    if (runner?.hostable === undefined || probed(this.key)) return
    if (options.network !== undefined && runner.confinesNetwork !== true) return
    const key = this.hostKey(runner, mode, root, options.shell, this.mounts(mode, root), options.network)
    if (this.shellHost(runner, mode, root, options) === undefined) {
      const starting = this.hosts.get(key)?.starting
      if (starting === undefined) return
      let timer: NodeJS.Timeout | undefined
      // A host that takes longer than a probe may is left to come up in the background.
      await Promise.race([starting, new Promise<void>(resolve => { timer = setTimeout(resolve, this.config.probeTimeoutMs ?? 5000) })])
      clearTimeout(timer)
    }
    // A running host (started now or by an earlier call) proves the runner.
    if (this.hosts.get(key)?.host?.alive === true) provenRunner(this.key, runner)
  }

  runner(): Promise<ProbeResult> {
    return probeChain(this.key, this.chain, { timeoutMs: this.config.probeTimeoutMs ?? 5000 })
  }

  async root(cwd: string | undefined): Promise<string> {
    const base = cwd ?? this.config.workspaceRoot ?? process.cwd()
    // Synchronous: one realpath(3) of a folder is a few microseconds, where the libuv pool costs
    // a thread wake-up and an event-loop turn on every confined call.
    try {
      return realpathSync.native(base)
    } catch {
      return base
    }
  }
}
