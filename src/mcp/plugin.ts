/**
 * The MCP plugins.
 *
 * - `McpPlugin` (row `mcp`, service `ctx.mcp`): runs the servers users configure the way they
 *   already do: `mcpServers` in settings and in the project's `.mcp.json` (Claude Code shape).
 *   Project servers run code from the repository, so they start only when the project is trusted
 *   (a flag, or a one-time confirmation that records the file's hash). Also starts per-session
 *   servers for protocol clients (MC-10) unless `sessionServers` is false.
 * - `McpServerPlugin` (row `mcp-server`): one server from a plugin row, for patches.
 *
 * Activation waits for each server's first connect attempt, so tools are registered before the
 * first model request (MC-1); a server that fails never blocks (MC-5).
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Service, type Context } from 'cordis'
import type { ScopeKey } from '../scope/index.js'
import { formatStatuses } from './format.js'
import '../commands/api.js'
import { McpRefusedError, type McpServerStatus, type McpService } from './api.js'
import { McpConfigError, parseServerConfig, parseServerMap, type Lookup, type McpServerConfig, type McpServerSource } from './config.js'
import { McpServer } from './server.js'
import '../tools/api.js'
import { terminalSafe } from '../host/terminal-text.js'

export const PROJECT_FILE = '.mcp.json'

function clientVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return '0.0.0'
  }
}

type Settings = Record<string, Record<string, unknown>>

export interface SettingsStore {
  read(): Settings
  write(settings: Settings): void
}

export interface McpPluginConfig {
  /** The `mcpServers` map of the user's settings. */
  readonly servers?: unknown
  /** Project folder whose `.mcp.json` is read (unset: none). */
  readonly cwd?: string
  /** Run the project's servers without asking (headless `--trust-project-mcp`). */
  readonly trustProject?: boolean
  /** Settings access for trust records and enable toggles. */
  readonly settings?: SettingsStore
  /** `${VAR}` lookup for server configs. */
  readonly lookup?: Lookup
  /** MC-10: accept per-session servers from protocol clients (default true). */
  readonly sessionServers?: boolean
  /** Receives server stderr lines and MCP diagnostics (default: our stderr). */
  readonly log?: (line: string) => void
  /**
   * Say on the log that an untrusted project's servers did not start (default true). The
   * terminal app turns it off: it asks about the folder itself.
   */
  readonly untrustedNotice?: boolean
  /**
   * Pass each server's stderr lines to `log` (default true). Off, they stay in the status's last
   * lines (`/mcp`, `dsh mcp list`); the terminal app turns it off so servers cannot talk over the
   * conversation. Our own diagnostics (a server failed, is reconnecting) always go.
   */
  readonly serverStderr?: boolean
}

/** The SHA-256 of a project's `.mcp.json`, what a trust record pins. */
export function projectFileHash(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

export function trustedProjects(settings: Settings): Record<string, string> {
  const value = settings.mcp?.trustedProjects
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, string> : {}
}

/**
 * Pins `folder`'s `.mcp.json` as it is now (its SHA-256 under `mcp.trustedProjects`) and returns
 * the text it pinned; undefined when the folder has no such file. Changing the file asks again.
 */
export function pinProjectServers(store: SettingsStore, folder: string): string | undefined {
  const path = join(resolve(folder), PROJECT_FILE)
  if (!existsSync(path)) return undefined
  const text = readFileSync(path, 'utf8')
  const settings = store.read()
  settings.mcp = { ...(settings.mcp ?? {}), trustedProjects: { ...trustedProjects(settings), [resolve(folder)]: projectFileHash(text) } }
  store.write(settings)
  return text
}

/** Drops `folder`'s pin; true when there was one. */
export function unpinProjectServers(store: SettingsStore, folder: string): boolean {
  const settings = store.read()
  const pins = trustedProjects(settings)
  const key = resolve(folder)
  if (!(key in pins)) return false
  const { [key]: _dropped, ...rest } = pins
  settings.mcp = { ...(settings.mcp ?? {}), trustedProjects: rest }
  store.write(settings)
  return true
}

/** Whether `text`, `folder`'s `.mcp.json` as read, is what its pin records. */
export function projectFilePinned(settings: Settings, folder: string, text: string): boolean {
  return trustedProjects(settings)[resolve(folder)] === projectFileHash(text)
}

interface Entry {
  readonly server: McpServer | undefined
  /** A configured server that does not run (invalid, untrusted). */
  readonly placeholder?: McpServerStatus
}

/** A line on stderr: a server's own stderr lines are tool text, made safe for a terminal (security #42.6). */
const defaultLog = (line: string) => { process.stderr.write(`${terminalSafe(line)}\n`) }

export class McpPlugin extends Service implements McpService {
  static readonly inject = ['tools']
  private readonly entries = new Map<string, Entry>()
  private readonly sessionEntries = new Set<McpServer>()
  private readonly attached = new Set<McpServer>()
  private readonly starting = new Set<Promise<void>>()
  private readonly version = clientVersion()
  private projectText: string | undefined

  constructor(ctx: Context, private readonly config: McpPluginConfig = {}) {
    super(ctx, 'mcp')
    // Returned, so unloading waits until every server process (and its group) is gone.
    ctx.effect(() => () => this.stopAll(), 'mcp servers')
    // `/mcp [tools]`: the servers this session sees, their state, and why one is not connected.
    ctx.inject(['commands'], (inner) => {
      inner.commands.register({
        name: 'mcp',
        description: 'MCP servers: state and tool count (tools: list each tool)',
        argumentHint: '[tools]',
        run: ({ agent, args }) => {
          const word = args.trim()
          if (word !== '' && word !== 'tools') return { kind: 'error', text: `unknown argument "${word}": use /mcp or /mcp tools` }
          const visible = this.servers().filter(server => server.session === undefined || server.session === agent.id)
          return { kind: 'success', text: formatStatuses(visible, word === 'tools', true).trimEnd() }
        },
      })
    })
  }

  /** The first failure of a server with `failOnStartupError`. */
  private fatal: Error | undefined

  async [Service.init](): Promise<void> {
    this.configure()
    await this.whenStarted()
    if (this.fatal !== undefined) throw this.fatal
  }

  private get log(): (line: string) => void {
    return this.config.log ?? defaultLog
  }

  /** Reads settings and `.mcp.json`; a server defined in both runs once, from settings. */
  private configure(): void {
    const lookup = this.config.lookup
    const fromSettings = parseServerMap(this.config.servers, { source: 'settings mcpServers', ...(lookup ? { lookup } : {}) })
    for (const error of fromSettings.errors) this.addInvalid(error, 'settings')
    for (const server of fromSettings.servers) this.add(server, 'settings')
    const project = this.readProject()
    if (project === undefined) return
    const trusted = this.config.trustProject === true || this.projectTrusted()
    const parsed = parseServerMap(project.servers, { source: project.path, ...(lookup ? { lookup } : {}) })
    for (const error of parsed.errors) this.addInvalid(error, 'project')
    const untrusted: string[] = []
    for (const server of parsed.servers) {
      if (this.entries.has(server.name)) {
        this.log(`dsh: MCP server "${server.name}" of ${project.path} is also in settings; the settings entry wins`)
        continue
      }
      if (trusted) {
        this.add(server, 'project')
        continue
      }
      untrusted.push(server.name)
      this.entries.set(server.name, { server: undefined, placeholder: this.placeholder(server.name, 'project', 'untrusted', `${project.path} is not trusted: run \`dsh trust on\` in the folder, /trust on in a session, or pass --trust-project-mcp for one run`, server) })
    }
    if (untrusted.length > 0 && this.config.untrustedNotice !== false) {
      this.log(`dsh: MCP servers of ${project.path} not started (${untrusted.join(', ')}): they run code from the project; run \`dsh trust on\` there (or /trust on in a session, or pass --trust-project-mcp for one run)`)
    }
  }

  private readProject(): { path: string; servers: unknown } | undefined {
    if (this.config.cwd === undefined) return undefined
    const path = join(resolve(this.config.cwd), PROJECT_FILE)
    if (!existsSync(path)) return undefined
    const text = readFileSync(path, 'utf8')
    this.projectText = text
    try {
      const value = JSON.parse(text) as { mcpServers?: unknown }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('expected an object with mcpServers')
      return { path, servers: value.mcpServers }
    } catch (error) {
      this.addInvalid(new McpConfigError(path, undefined, undefined, `invalid JSON: ${(error as Error).message}`), 'project', `${PROJECT_FILE}`)
      return undefined
    }
  }

  private projectTrusted(): boolean {
    if (this.config.settings === undefined || this.config.cwd === undefined || this.projectText === undefined) return false
    return projectFilePinned(this.config.settings.read(), this.config.cwd, this.projectText)
  }

  private placeholder(name: string, source: McpServerSource, state: McpServerStatus['state'], error: string, config?: McpServerConfig): McpServerStatus {
    return { name, source, state, enabled: config?.enabled ?? true, tools: [], error, stderr: [], ...(config ? { transport: config.transport } : {}) }
  }

  private addInvalid(error: McpConfigError, source: McpServerSource, fallbackName = '(config)'): void {
    this.log(`dsh: ${error.message}`)
    const name = error.server ?? fallbackName
    this.entries.set(name, { server: undefined, placeholder: this.placeholder(name, source, 'invalid', error.message) })
  }

  private add(config: McpServerConfig, source: McpServerSource): void {
    const server = this.newServer(config, source)
    this.entries.set(config.name, { server })
    this.track(server.start())
  }

  private newServer(config: McpServerConfig, source: McpServerSource, scope?: ScopeKey, session?: string): McpServer {
    return new McpServer(this.ctx, {
      config,
      source,
      clientVersion: this.version,
      stderr: this.log,
      ...(this.config.serverStderr === false ? { serverStderr: false } : {}),
      ...(scope !== undefined ? { scope } : {}),
      ...(session !== undefined ? { session } : {}),
    })
  }

  private track(promise: Promise<void>): void {
    const settled = promise.catch((error: unknown) => {
      this.log(`dsh: ${error instanceof Error ? error.message : String(error)}`)
      this.fatal ??= error instanceof Error ? error : new Error(String(error))
    })
    this.starting.add(settled)
    void settled.finally(() => this.starting.delete(settled))
  }

  async whenStarted(): Promise<void> {
    while (this.starting.size > 0) await Promise.all([...this.starting])
  }

  /** Lists a server started elsewhere (a `mcp-server` row); the disposer forgets it. */
  attach(server: McpServer): () => void {
    this.attached.add(server)
    return () => { this.attached.delete(server) }
  }

  servers(): readonly McpServerStatus[] {
    const out: McpServerStatus[] = []
    for (const entry of this.entries.values()) out.push(entry.server?.status() ?? entry.placeholder!)
    for (const server of this.attached) out.push(server.status())
    for (const server of this.sessionEntries) out.push(server.status())
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  async startSessionServers(scope: ScopeKey, sessionId: string, servers: readonly McpServerConfig[]): Promise<() => Promise<void>> {
    if (this.config.sessionServers === false) throw new McpRefusedError('mcpServers is not supported')
    const started = servers.map(config => this.newServer(config, 'session', scope, sessionId))
    for (const server of started) this.sessionEntries.add(server)
    await Promise.all(started.map(server => server.start().catch((error: unknown) => { this.log(`dsh: ${(error as Error).message}`) })))
    return async () => {
      await Promise.all(started.map(async server => {
        this.sessionEntries.delete(server)
        await server.dispose()
      }))
    }
  }

  async trustProject(): Promise<void> {
    const store = this.config.settings
    if (store === undefined || this.config.cwd === undefined) throw new Error('trusting a project needs a settings store and a project folder')
    const text = pinProjectServers(store, this.config.cwd)
    if (text === undefined) throw new Error(`${join(resolve(this.config.cwd), PROJECT_FILE)} does not exist`)
    for (const [name, entry] of this.entries) {
      if (entry.placeholder?.state === 'untrusted') this.entries.delete(name)
    }
    this.projectText = text
    const project = this.readProject()
    if (project !== undefined) {
      const parsed = parseServerMap(project.servers, { source: project.path, ...(this.config.lookup ? { lookup: this.config.lookup } : {}) })
      for (const error of parsed.errors) this.addInvalid(error, 'project')
      for (const server of parsed.servers) if (!this.entries.has(server.name)) this.add(server, 'project')
    }
    await this.whenStarted()
  }

  async setEnabled(name: string, enabled: boolean): Promise<void> {
    const store = this.config.settings
    if (store === undefined) throw new Error('enabling a server needs a settings store')
    const settings = store.read()
    const servers = settings.mcpServers
    const entry = servers?.[name]
    if (typeof entry !== 'object' || entry === null) throw new Error(`no MCP server "${name}" in settings (project servers are edited in ${PROJECT_FILE})`)
    settings.mcpServers = { ...servers, [name]: { ...entry as object, enabled } }
    store.write(settings)
    const current = this.entries.get(name)
    await current?.server?.dispose()
    const config = parseServerConfig(name, settings.mcpServers[name], { source: 'settings mcpServers', ...(this.config.lookup ? { lookup: this.config.lookup } : {}) })
    this.add(config, 'settings')
    await this.whenStarted()
  }

  private async stopAll(): Promise<void> {
    const servers = [...this.entries.values()].map(entry => entry.server).filter((server): server is McpServer => server !== undefined)
    this.entries.clear()
    const sessions = [...this.sessionEntries]
    this.sessionEntries.clear()
    await Promise.all([...servers, ...sessions].map(server => server.dispose()))
  }
}

/** Row `mcp-server`: one server from a plugin row's config (the original's row shape works). */
export class McpServerPlugin {
  static readonly inject = ['tools']
  static readonly reusable = true

  constructor(ctx: Context, raw: Record<string, unknown> & { log?: (line: string) => void; lookup?: Lookup }) {
    const { log, lookup, ...rest } = raw ?? {}
    const config = parseServerConfig(undefined, rest, { source: 'plugin row mcp-server', ...(lookup ? { lookup } : {}) })
    const server = new McpServer(ctx, { config, source: 'row', clientVersion: clientVersion(), stderr: log ?? defaultLog })
    ctx.effect(() => () => server.dispose(), `mcp server ${config.name}`)
    // Optional: listed by `ctx.mcp` (dsh mcp list, web settings) when the `mcp` row is loaded.
    const mcp = ctx.get('mcp') as McpPlugin | undefined
    if (mcp !== undefined) ctx.effect(() => mcp.attach(server), `mcp listing ${config.name}`)
    this.started = server.start()
  }

  readonly started: Promise<void>

  async [Service.init](): Promise<void> {
    await this.started
  }
}
