/**
 * One MCP server connection on the official SDK: connect + paginated `tools/list`, calls with
 * the caller's signal and a timeout, `notifications/tools/list_changed` re-sync and reconnect
 * with exponential backoff (MC-6, MC-7). The connection hands whole tool generations to
 * `onTools`; it never lists tools except at connect and on `list_changed`.
 */
import type { Readable } from 'node:stream'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import type { McpServerConfig } from './config.js'
import { scrubbedEnvironment } from './env.js'
import { MCP_RESULT_TOO_LARGE, McpCallError } from './results.js'
import { droppedMessage, GroupStdioTransport } from './stdio.js'

export type McpConnectionState = 'starting' | 'connected' | 'reconnecting' | 'failed' | 'closed'

export interface McpConnectionOptions {
  readonly config: McpServerConfig
  readonly clientVersion: string
  /** A whole new tool generation (MC-6); empty when the server is gone for good. */
  onTools(tools: readonly McpTool[]): void
  onState(state: McpConnectionState, error?: string): void
  /** One line of the server's stderr (MC-8: never on a protocol stdout). */
  onStderr(line: string): void
  /** The parent environment to scrub (default `process.env`). */
  readonly parentEnv?: NodeJS.ProcessEnv
}


const LOOSE_TOOL_LIST = z.object({
  tools: z.array(z.object({ name: z.string(), description: z.string().optional(), inputSchema: z.unknown().optional() }).loose()),
  nextCursor: z.string().optional(),
}).loose()

export class McpConnection {
  private client: Client | undefined
  private transport: Transport | undefined
  private disposed = false
  private attempts = 0
  private connectedAt = 0
  private timer: NodeJS.Timeout | undefined
  private generation = 0
  state: McpConnectionState = 'starting'
  lastError: string | undefined
  /** Resolves after the first connect attempt settles (success or failure). */
  readonly started: Promise<void>
  private resolveStarted!: () => void
  /** Counts successful connects (one per server process for stdio). */
  connects = 0

  constructor(private readonly options: McpConnectionOptions) {
    this.started = new Promise(resolve => { this.resolveStarted = resolve })
  }

  get config(): McpServerConfig {
    return this.options.config
  }

  start(): Promise<void> {
    void this.attempt()
    return this.started
  }

  private setState(state: McpConnectionState, error?: string): void {
    this.state = state
    if (error !== undefined) this.lastError = error
    else if (state === 'connected') this.lastError = undefined
    this.options.onState(state, error)
  }

  private createTransport(): Transport {
    const { config } = this.options
    if (config.transport === 'stdio') {
      const transport = new GroupStdioTransport({
        command: config.command!,
        args: [...(config.args ?? [])],
        env: scrubbedEnvironment(this.options.parentEnv ?? process.env, config.env),
        ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
        ...(config.maxMessageBytes !== undefined ? { maxMessageBytes: config.maxMessageBytes } : {}),
      })
      this.pipeStderr(transport.stderr)
      return transport
    }
    const url = new URL(config.url!)
    const requestInit = config.headers !== undefined ? { headers: { ...config.headers } } : undefined
    if (config.transport === 'sse') return new SSEClientTransport(url, requestInit ? { requestInit } : {})
    return new StreamableHTTPClientTransport(url, requestInit ? { requestInit } : {})
  }

  private pipeStderr(stream: Readable | null): void {
    if (stream === null) return
    let buffer = ''
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => {
      buffer += chunk
      let index: number
      while ((index = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, index).replace(/\r$/, '')
        buffer = buffer.slice(index + 1)
        if (line !== '') this.options.onStderr(line)
      }
    })
    stream.on('end', () => { if (buffer !== '') this.options.onStderr(buffer); buffer = '' })
  }

  private async attempt(): Promise<void> {
    if (this.disposed) return
    const generation = ++this.generation
    const client = new Client({ name: 'dsh-mcp-client', version: this.options.clientVersion }, { capabilities: {} })
    let transport: Transport | undefined
    try {
      transport = this.createTransport()
      client.onerror = () => {}
      await withTimeout(client.connect(transport, { timeout: this.options.config.startupTimeoutMs }), this.options.config.startupTimeoutMs, 'connect')
      if (this.disposed || generation !== this.generation) {
        await client.close().catch(() => {})
        return
      }
      const tools = await this.listAll(client)
      if (this.disposed || generation !== this.generation) {
        await client.close().catch(() => {})
        return
      }
      this.client = client
      this.transport = transport
      this.connectedAt = Date.now()
      this.connects += 1
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => { void this.resync(client) })
      client.onclose = () => { if (this.client === client) this.lost(client, 'the server closed the connection') }
      this.options.onTools(tools)
      this.setState('connected')
    } catch (error) {
      await client.close().catch(() => {})
      if (this.disposed) return
      this.failedAttempt(describe(error))
    } finally {
      this.resolveStarted()
    }
  }

  private async listAll(client: Client): Promise<McpTool[]> {
    const tools: McpTool[] = []
    const seen = new Set<string>()
    let cursor: string | undefined
    do {
      const page = await this.listPage(client, cursor)
      for (const tool of page.tools) {
        if (seen.has(tool.name)) throw new Error(`invalid tools/list: the server listed ${JSON.stringify(tool.name)} twice`)
        seen.add(tool.name)
        tools.push(tool)
      }
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return tools
  }

  /**
   * One `tools/list` page. The SDK rejects a whole page when one tool breaks the protocol's
   * schema (say, an input schema without `type: object`); then the page is read loosely so that
   * tool is normalised like any other instead of silently losing every tool of the server.
   */
  private async listPage(client: Client, cursor: string | undefined): Promise<{ tools: McpTool[]; nextCursor?: string }> {
    const params = cursor === undefined ? {} : { cursor }
    const options = { timeout: this.options.config.startupTimeoutMs }
    try {
      return await client.listTools(params, options)
    } catch (error) {
      // A server error or a dead connection fails the loose read too; only a page our SDK
      // refused to accept reads differently.
      if (error instanceof McpError && error.code !== ErrorCode.InvalidParams) throw error
      try {
        return await client.request({ method: 'tools/list', params }, LOOSE_TOOL_LIST, options) as unknown as { tools: McpTool[]; nextCursor?: string }
      } catch {
        throw error
      }
    }
  }

  /** MC-6: the whole next generation first; a failure keeps the current one. */
  private async resync(client: Client): Promise<void> {
    try {
      const tools = await this.listAll(client)
      if (this.client === client && !this.disposed) this.options.onTools(tools)
    } catch (error) {
      this.options.onStderr(`dsh: tools/list after list_changed failed, keeping the previous tools: ${describe(error)}`)
    }
  }

  private lost(client: Client, reason: string): void {
    if (this.disposed || this.client !== client) return
    this.client = undefined
    this.transport = undefined
    // The attempt budget resets once a connection stayed up for maxDelayMs.
    if (Date.now() - this.connectedAt >= this.options.config.reconnect.maxDelayMs) this.attempts = 0
    this.failedAttempt(reason)
  }

  private failedAttempt(reason: string): void {
    const { reconnect } = this.options.config
    this.attempts += 1
    if (!reconnect.enabled || this.attempts > reconnect.maxAttempts) {
      this.options.onTools([])
      this.setState('failed', reason)
      return
    }
    this.setState('reconnecting', reason)
    const delay = Math.min(reconnect.initialDelayMs * 2 ** (this.attempts - 1), reconnect.maxDelayMs)
    this.timer = setTimeout(() => { this.timer = undefined; void this.attempt() }, delay)
  }

  /** MC-3: the raw name and the arguments unchanged; `signal` cancels (notifications/cancelled). */
  async call(rawName: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const client = this.client
    if (client === undefined) {
      throw new McpCallError(`MCP server "${this.options.config.name}" is ${this.state === 'failed' ? 'unavailable' : 'reconnecting'}${this.lastError ? ` (${this.lastError})` : ''}`)
    }
    try {
      return await client.callTool({ name: rawName, arguments: args }, undefined, { signal, timeout: this.options.config.toolCallTimeoutMs })
    } catch (error) {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new McpCallError('tool call aborted', 'ABORTED')
      if (error instanceof McpError && droppedMessage(error)) {
        throw new McpCallError(`MCP server "${this.options.config.name}" answered with a result too large to read: ${error.message.replace(/^MCP error -?\d+: /, '')}`, MCP_RESULT_TOO_LARGE)
      }
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new McpCallError(`MCP server "${this.options.config.name}" did not answer within ${this.options.config.toolCallTimeoutMs} ms`, 'TIMEOUT')
      }
      throw new McpCallError(`MCP server "${this.options.config.name}": ${describe(error)}`)
    }
  }

  async close(): Promise<void> {
    if (this.disposed) return
    this.disposed = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    const client = this.client
    this.client = undefined
    this.transport = undefined
    this.state = 'closed'
    this.resolveStarted()
    if (client === undefined) return
    // A stdio transport's close stops the server's whole process group (./stdio.ts).
    await client.close().catch(() => {})
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  return String(error)
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms) }),
  ]).finally(() => clearTimeout(timer))
}
