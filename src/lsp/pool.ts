/**
 * The language servers of a dsh process, one per (workspace root, server name, confinement),
 * started on first use and shared by every call that needs it. A server that exits or stops
 * answering is started again on the next call, after a wait that grows with each failed start
 * in a row; after `maxStarts` of them the server is given up with the last reason for a minute,
 * then tried again.
 */
import { scrubbedEnvironment } from '../mcp/env.js'
import { ToolError } from '../tools/errors.js'
import { resolveCommand, type ChosenServer, LSP_DEFAULTS } from './config.js'
import { LanguageServer } from './server.js'

export const LspErrorCode = {
  noServer: 'LSP_NO_SERVER',
  serverFailed: 'LSP_SERVER_FAILED',
  outsideWorkspace: 'LSP_OUTSIDE_WORKSPACE',
  positionOutOfRange: 'LSP_POSITION_OUT_OF_RANGE',
  notFound: 'LSP_FILE_NOT_FOUND',
  unavailable: 'LSP_SANDBOX_UNAVAILABLE',
} as const

export class LspError extends ToolError {
  override name = 'LspError'
}

export interface PoolOptions {
  readonly requestTimeoutMs?: number
  readonly maxStarts?: number
  readonly restartDelayMs?: number
  /** Waits between starts; a test passes one that resolves at once. */
  readonly sleep?: (ms: number) => Promise<void>
  /** Told of every server started (its pid), for status lines and tests. */
  readonly started?: (key: string, server: LanguageServer) => void
  /** Told of each request once it is written to a server. */
  readonly sent?: (method: string, pid: number | undefined) => void
}

/** Where and how a server runs: its workspace root and an optional sandbox runner prefix. */
export interface Placement {
  readonly root: string
  /** argv placed before the server's command (a sandbox runner), with a key part naming it. */
  readonly prefix?: { readonly argv: readonly string[]; readonly key: string }
}

interface Slot {
  server?: LanguageServer
  starting?: Promise<LanguageServer>
  failures: number
  lastFailure?: string
  gaveUpAt?: number
}

/** How long a given-up server stays given up before calls try it again. */
const GIVE_UP_MS = 60_000

const sleepFor = (ms: number) => new Promise<void>(resolve => setTimeout(resolve, ms))

export class ServerPool {
  private readonly slots = new Map<string, Slot>()
  private disposed = false

  constructor(private readonly options: PoolOptions = {}) {}

  private get maxStarts(): number {
    return this.options.maxStarts ?? LSP_DEFAULTS.maxStarts
  }

  /** The running server for `chosen` at `placement`, started (or started again) when needed. */
  async server(chosen: ChosenServer, placement: Placement): Promise<LanguageServer> {
    if (this.disposed) throw new LspError('lsp: the language servers were stopped (the lsp plugin is unloading)', LspErrorCode.serverFailed)
    const key = `${placement.root}\0${chosen.name}\0${placement.prefix?.key ?? 'unconfined'}`
    let slot = this.slots.get(key)
    if (slot === undefined) this.slots.set(key, slot = { failures: 0 })
    if (slot.server !== undefined && slot.server.exited === undefined) return slot.server
    slot.server = undefined
    return slot.starting ??= this.startLoop(key, slot, chosen, placement).finally(() => { slot.starting = undefined })
  }

  /** A call through the server succeeded: its failed starts are forgotten. */
  succeeded(chosen: ChosenServer, placement: Placement): void {
    const slot = this.slots.get(`${placement.root}\0${chosen.name}\0${placement.prefix?.key ?? 'unconfined'}`)
    if (slot !== undefined) slot.failures = 0
  }

  /** Running servers (for status and tests). */
  running(): { key: string; name: string; pid: number | undefined }[] {
    return [...this.slots].filter(([, slot]) => slot.server !== undefined && slot.server.exited === undefined)
      .map(([key, slot]) => ({ key, name: slot.server!.name, pid: slot.server!.pid }))
  }

  /** Stops every server; later calls fail. */
  async dispose(): Promise<void> {
    this.disposed = true
    const servers = [...this.slots.values()].flatMap(slot => slot.server === undefined ? [] : [slot.server])
    this.slots.clear()
    await Promise.all(servers.map(server => server.stop()))
  }

  private async startLoop(key: string, slot: Slot, chosen: ChosenServer, placement: Placement): Promise<LanguageServer> {
    const sleep = this.options.sleep ?? sleepFor
    const base = this.options.restartDelayMs ?? LSP_DEFAULTS.restartDelayMs
    for (;;) {
      if (slot.failures >= this.maxStarts && Date.now() - (slot.gaveUpAt ??= Date.now()) < GIVE_UP_MS) {
        throw new LspError(`lsp: the ${chosen.name} language server failed ${slot.failures} times in a row and was given up (last: ${slot.lastFailure}); fix it or lsp.servers.${chosen.name} in settings.yaml (docs/lsp.md)`, LspErrorCode.serverFailed)
      }
      if (slot.failures >= this.maxStarts) {
        // Given up long enough ago: one more round of starts, so a fixed server comes back.
        slot.failures = 0
        slot.gaveUpAt = undefined
      }
      if (slot.failures > 0) await sleep(base * 4 ** (slot.failures - 1))
      if (this.disposed) throw new LspError('lsp: the language servers were stopped (the lsp plugin is unloading)', LspErrorCode.serverFailed)
      let server: LanguageServer
      try {
        const program = resolveCommand(chosen.name, chosen.config.command, placement.root)
        server = new LanguageServer(chosen.name, {
          argv: [...(placement.prefix?.argv ?? []), program, ...(chosen.config.args ?? [])],
          cwd: placement.root,
          root: placement.root,
          // As for stdio MCP servers and bash: no credentials unless the entry names them.
          env: scrubbedEnvironment(process.env, chosen.config.env ?? {}),
          initializationOptions: chosen.config.initializationOptions,
          requestTimeoutMs: this.options.requestTimeoutMs ?? LSP_DEFAULTS.requestTimeoutMs,
          ...(this.options.sent !== undefined ? { sent: this.options.sent } : {}),
        })
      } catch (error) {
        // A missing program is no crash: said at once, nothing to wait for.
        throw new LspError(error instanceof Error ? error.message : String(error), LspErrorCode.noServer)
      }
      try {
        await server.start()
      } catch (error) {
        slot.failures++
        slot.lastFailure = error instanceof Error ? error.message : String(error)
        continue
      }
      if (this.disposed) {
        await server.stop()
        throw new LspError('lsp: the language servers were stopped (the lsp plugin is unloading)', LspErrorCode.serverFailed)
      }
      slot.server = server
      // A crash after the start counts as a failure of this server until a call succeeds.
      server.onExit(reason => {
        if (slot.server !== server) return
        slot.failures++
        slot.lastFailure = reason
      })
      this.options.started?.(key, server)
      return server
    }
  }
}
