/**
 * One MCP server as dsh tools: a connection plus the registrations of its current tool
 * generation. A generation is swapped whole (MC-6): the next set is built first, the old
 * registrations are removed and the new ones added in one synchronous run, and a name conflict
 * rolls back to no tools from this server rather than a partial set.
 */
import type { Context } from 'cordis'
import type { Tool as McpTool } from '@modelcontextprotocol/sdk/types.js'
import { emitContained } from '../kernel/index.js'
import type { ScopeKey } from '../scope/index.js'
import type { Tool, ToolsService } from '../tools/api.js'
import { ToolError, ToolErrorCode } from '../tools/errors.js'
import { spillOutput } from '../tools/builtin/spill.js'
import type { McpServerState, McpServerStatus, McpToolStatus } from './api.js'
import { toolAllowed, type McpServerConfig, type McpServerSource } from './config.js'
// The SDK (and zod) load with the first server, not with the row: an empty `mcpServers` costs nothing at start-up.
import type { McpConnection, McpConnectionState } from './connection.js'
import { publicToolName } from './names.js'
import { mapCallResult, McpCallError } from './results.js'
import { normaliseSchema } from './schema.js'
import '../tools/api.js'

const STDERR_LINES = 50

export interface McpServerOptions {
  readonly config: McpServerConfig
  readonly source: McpServerSource
  readonly scope?: ScopeKey
  readonly session?: string
  readonly clientVersion: string
  /** Where server stderr lines go besides the status tail, and our diagnostics (default: none). */
  readonly stderr?: (line: string) => void
  /** Pass the server's own stderr lines to `stderr` (default true); diagnostics always go. */
  readonly serverStderr?: boolean
  readonly parentEnv?: NodeJS.ProcessEnv
}

/** The line of a dead server's stderr that says most: its error line (`Error: ...`), else its last line. */
function telling(lines: readonly string[]): string | undefined {
  const said = lines.map(line => line.trim()).filter(line => line !== '' && !/^at\s/.test(line) && !/^Node\.js v\d/.test(line))
  const error = said.find(line => /^(\w*Error|error|fatal)\b/i.test(line))
  const line = error ?? said.at(-1)
  return line === undefined ? undefined : line.length > 300 ? `${line.slice(0, 300)}…` : line
}

function plainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export class McpServer {
  private connection: McpConnection | undefined
  private registrations: (() => void)[] = []
  private tools: McpToolStatus[] = []
  private state: McpServerState
  private error: string | undefined
  private readonly stderrTail: string[] = []
  /**
   * Until the server first connects its stderr lines are held, not relayed: a server that dies
   * at start (a Node stack, a usage text) is one line, `failed to start: <why>; it said: <line>`,
   * and the held lines go out when it does connect. The whole tail stays in `/mcp`'s status.
   */
  private held: string[] | undefined = []
  private saidFailure = false
  private disposed = false

  constructor(private readonly ctx: Context, readonly options: McpServerOptions) {
    this.state = options.config.enabled ? 'starting' : 'disabled'
  }

  get name(): string {
    return this.options.config.name
  }

  /** Starts the connection; resolves after the first attempt (MC-5: a failure does not reject). */
  async start(): Promise<void> {
    if (!this.options.config.enabled || this.disposed) return
    const { McpConnection } = await import('./connection.js')
    if (this.disposed) return
    const connection = this.connection = new McpConnection({
      config: this.options.config,
      clientVersion: this.options.clientVersion,
      ...(this.options.parentEnv !== undefined ? { parentEnv: this.options.parentEnv } : {}),
      onTools: tools => this.install(tools),
      onState: (state, error) => this.onState(state, error),
      onStderr: line => this.onStderr(line),
    })
    await connection.start()
    if (connection.state !== 'connected' && this.options.config.failOnStartupError) {
      throw new Error(`MCP server "${this.name}" failed to start: ${connection.lastError ?? connection.state}`)
    }
  }

  status(): McpServerStatus {
    const { config, source, session } = this.options
    return {
      name: config.name,
      source,
      transport: config.transport,
      state: this.state,
      enabled: config.enabled,
      tools: this.tools,
      ...(this.error !== undefined ? { error: this.error } : {}),
      stderr: [...this.stderrTail],
      ...(session !== undefined ? { session } : {}),
    }
  }

  /** Resolved when the connection answered `tools/list` at least once. */
  get connects(): number {
    return this.connection?.connects ?? 0
  }

  async dispose(): Promise<void> {
    if (this.disposed) return
    this.disposed = true
    this.unregister()
    await this.connection?.close()
    this.state = 'closed'
    this.announce()
  }

  private onState(state: McpConnectionState, error?: string): void {
    if (this.disposed) return
    this.state = state
    if (state === 'connected') {
      this.error = undefined
      const held = this.held ?? []
      this.held = undefined
      for (const line of held) this.relay(line)
    }
    if (error !== undefined) {
      this.error = error
      if (this.held === undefined) this.log(`MCP server "${this.name}" ${state === 'failed' ? 'failed' : 'is reconnecting'}: ${error}`)
      else {
        // Never connected: one line for the first failure; the retries stay quiet (see /mcp).
        const said = telling(this.held)
        this.held = []
        if (!this.saidFailure) this.log(`MCP server "${this.name}" failed to start: ${error}${said !== undefined ? `; it said: ${said}` : ''}${state === 'failed' ? '' : ' (retrying; /mcp shows its state)'}`)
        this.saidFailure = true
      }
    }
    this.announce()
  }

  private onStderr(line: string): void {
    this.stderrTail.push(line)
    if (this.stderrTail.length > STDERR_LINES) this.stderrTail.shift()
    if (this.held !== undefined) this.held.push(line)
    else this.relay(line)
  }

  private relay(line: string): void {
    if (this.options.serverStderr !== false) this.options.stderr?.(`[mcp ${this.name}] ${line}`)
  }

  private log(message: string): void {
    this.options.stderr?.(`dsh: ${message}`)
  }

  private announce(): void {
    emitContained(this.ctx, 'mcp/status', [this.status()])
  }

  private unregister(): void {
    for (const dispose of this.registrations.splice(0)) dispose()
    this.tools = []
  }

  /** MC-6: the whole generation or nothing. */
  private install(list: readonly McpTool[]): void {
    if (this.disposed) return
    const built: { tool: Tool; status: McpToolStatus }[] = []
    for (const raw of list) {
      if (!toolAllowed(this.options.config, raw.name)) continue
      built.push(this.toTool(raw))
    }
    const tools = this.ctx.get('tools') as ToolsService | undefined
    this.unregister()
    if (tools === undefined) {
      this.error = 'no tools service is loaded'
      this.announce()
      return
    }
    try {
      for (const { tool } of built) this.registrations.push(tools.register(tool, this.options.scope))
      this.tools = built.map(entry => entry.status)
    } catch (error) {
      this.unregister()
      this.error = `no tools registered from this server: ${error instanceof Error ? error.message : String(error)}`
      this.log(`MCP server "${this.name}": ${this.error}`)
    }
    this.announce()
  }

  private toTool(raw: McpTool): { tool: Tool; status: McpToolStatus } {
    const { config } = this.options
    const name = publicToolName(config.name, raw.name)
    const { schema, notes } = normaliseSchema(raw.inputSchema)
    const readOnly = raw.annotations?.readOnlyHint === true
    const needsTask = (raw as { execution?: { taskSupport?: unknown } }).execution?.taskSupport === 'required'
    const rawName = raw.name
    const server = config.name
    const tool: Tool<Record<string, unknown>> = {
      name,
      description: raw.description ?? '',
      parameters: schema,
      timeoutMs: config.toolCallTimeoutMs,
      // The server validates against its own schema; ours may be a normalised approximation.
      parse(args: unknown): Record<string, unknown> {
        if (!plainObject(args)) throw new ToolError(`arguments must be a JSON object, got ${JSON.stringify(args)}`, ToolErrorCode.invalidArguments)
        return args
      },
      // MC-11: exclusive unless the server says the tool only reads.
      isConcurrencySafe: () => readOnly,
      execute: async (args, context) => {
        if (needsTask) throw new ToolError(`MCP tool ${rawName} requires task execution, which dsh does not support`, 'MCP_UNSUPPORTED')
        const connection = this.connection
        if (connection === undefined) throw new McpCallError(`MCP server "${server}" is not running`)
        // Like a built-in tool's: a large result is saved to a file and the model gets a preview.
        return spillOutput(mapCallResult(await connection.call(rawName, args, context.signal), { server, tool: rawName }), name, { place: context })
      },
    }
    return { tool, status: { name, rawName, readOnly, notes } }
  }
}
