/**
 * The network of confined commands (docs/security.md, "Network"). Under `none` a command gets a
 * network namespace of its own with loopback only. Under `allowlist` too, and its only way out is
 * the session's gate: a filtering proxy dsh runs (`./proxy.ts`) on a Unix socket that is bound into
 * the sandbox, where the bridge (`./net-bridge.pl.ts`, the sandbox's pid 1) relays 127.0.0.1:3128
 * to it. The proxy variables point there; clients that honour them (curl, git, npm, pip, cargo,
 * go...) work, anything else has no route out.
 *
 * A gate decides per connection: a host the rules list passes; another is asked for through the
 * gate's hooks (the tools ask `ctx.approval`, while a call of the session is running) and is let
 * through for that call, for the session, or for good; every attempt is recorded.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { hostAllowed, parseAllowedHosts, type HostRule } from './hosts.js'
import type { FilteringProxy, ProxyConnection } from './proxy.js'

/** The port of the bridge inside a sandbox (the conventional proxy port). */
export const PROXY_PORT = 3128
/** Where the gate's socket is seen inside the sandbox (under bubblewrap's own /dev). */
export const INSIDE_SOCKET = '/dev/dsh-proxy.sock'

/** What a runner is asked for: no network of its own (absent), none, or the gate's socket. */
export type NetworkPlan =
  | { readonly mode: 'none' }
  | { readonly mode: 'allowlist'; readonly socket: string; readonly perl: string }

/** Stable text of a plan, for shell host keys. */
export function planKey(plan: NetworkPlan | undefined): string {
  return plan === undefined ? 'full' : plan.mode === 'none' ? 'none' : `allowlist:${plan.socket}`
}

/** The proxy variables of a command under `allowlist` (loopback stays direct: its own servers). */
export function networkEnvironment(): Record<string, string> {
  const url = `http://127.0.0.1:${PROXY_PORT}`
  const direct = 'localhost,127.0.0.1,::1'
  return {
    HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, ALL_PROXY: url, all_proxy: url,
    NO_PROXY: direct, no_proxy: direct,
    // Node's own fetch honours the variables only when told to (Node 24 and later).
    NODE_USE_ENV_PROXY: '1',
  }
}

/** A grant the user gave for a host not on the list. */
export type HostGrant = 'once' | 'session' | 'always' | 'no'

export interface GateHooks {
  /** Asks for `host:port` on behalf of the running call `callId` (`signal`: that call's). */
  ask(host: string, port: number, callId: string, signal: AbortSignal | undefined): Promise<HostGrant>
  /** Every connection attempt, after its decision (with the call that was running, if any). */
  record(connection: ProxyConnection, callId: string | undefined): void
  /** `always`: the host is added to the user's settings. */
  remember?(host: string, port: number): void
}

/** `host:port` as a grant is kept. */
const grantKey = (host: string, port: number) => `${host}:${port}`

export class NetworkGate {
  private readonly grants = new Set<string>()
  /** Running calls (most recent last), what each was allowed once, and their signals. */
  private readonly calls = new Map<string, { readonly once: Set<string>; readonly signal?: AbortSignal }>()
  private closed = false

  private constructor(private readonly proxy: FilteringProxy, private readonly dir: string, private rules: readonly HostRule[], private readonly hooks: GateHooks) {}

  /** Starts a gate with its own proxy socket in a fresh private folder. */
  static async open(options: {
    readonly allowedHosts: readonly string[]
    readonly hooks: GateHooks
    readonly dir?: string
    readonly lookup?: (host: string) => Promise<readonly { address: string; family: 4 | 6 }[]>
  }): Promise<NetworkGate> {
    const { rules } = parseAllowedHosts(options.allowedHosts)
    const dir = mkdtempSync(join(options.dir ?? tmpdir(), 'dsh-net-'))
    let gate: NetworkGate | undefined
    try {
      // Loaded with the first gate: a run that never opens one pays nothing for node:http.
      const { FilteringProxy } = await import('./proxy.js')
      const proxy = await FilteringProxy.start({
        socketPath: join(dir, 'proxy.sock'),
        allowed: (host, port) => gate!.allowed(host, port),
        ask: (host, port) => gate!.ask(host, port),
        onConnection: connection => gate!.hooks.record(connection, gate!.current()),
        ...(options.lookup !== undefined ? { lookup: options.lookup } : {}),
      })
      gate = new NetworkGate(proxy, dir, rules, options.hooks)
      return gate
    } catch (error) {
      rmSync(dir, { recursive: true, force: true })
      throw error
    }
  }

  get socketPath(): string {
    return this.proxy.socketPath
  }

  /** A call of the session runs a confined command: hosts asked for meanwhile are asked on its behalf. */
  enter(callId: string, signal?: AbortSignal): () => void {
    this.calls.set(callId, this.calls.get(callId) ?? { once: new Set<string>(), ...(signal !== undefined ? { signal } : {}) })
    let left = false
    return () => {
      if (left) return
      left = true
      this.calls.delete(callId)
    }
  }

  allowed(host: string, port: number): boolean {
    if (hostAllowed(this.rules, host, port)) return true
    const key = grantKey(host, port)
    if (this.grants.has(key)) return true
    for (const call of this.calls.values()) if (call.once.has(key)) return true
    return false
  }

  private current(): string | undefined {
    let last: string | undefined
    for (const id of this.calls.keys()) last = id
    return last
  }

  private async ask(host: string, port: number): Promise<boolean> {
    const callId = this.current()
    // Nothing of the session is running (a background job after its turn): nobody to ask for.
    if (callId === undefined || this.closed) return false
    let grant: HostGrant
    try {
      grant = await this.hooks.ask(host, port, callId, this.calls.get(callId)?.signal)
    } catch {
      return false
    }
    const key = grantKey(host, port)
    if (grant === 'once') this.calls.get(callId)?.once.add(key)
    else if (grant === 'session' || grant === 'always') this.grants.add(key)
    if (grant === 'always') {
      this.rules = [...this.rules, ...parseAllowedHosts([key]).rules]
      try { this.hooks.remember?.(host, port) } catch { /* the grant holds for the session */ }
    }
    return grant !== 'no'
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    try {
      await this.proxy.close()
    } finally {
      rmSync(this.dir, { recursive: true, force: true })
    }
  }
}
