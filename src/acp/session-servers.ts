/**
 * MC-10 for the ACP server: the `mcpServers` of `session/new`, `session/load` and
 * `session/resume` are started for that session only (their tools visible to its agent alone)
 * and stop with its agent. A session opened again gets the servers of the latest call.
 */
import type { Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import { McpConfigError, parseSessionServers, type McpServerConfig } from '../mcp/config.js'
import { ErrorCodes, RpcError } from '../sdk/jsonrpc.js'

export class AcpSessionServers {
  private readonly stops = new Map<string, () => Promise<void>>()

  constructor(private readonly ctx: Context, private readonly policy: 'accept' | 'refuse' | undefined) {}

  /** Checks a call's list before anything starts; an empty list is always fine. */
  check(list: readonly unknown[]): McpServerConfig[] {
    if (list.length === 0) return []
    if (this.policy === 'refuse' || this.ctx.get('mcp') === undefined) {
      throw new RpcError(ErrorCodes.invalidParams, 'mcpServers is not supported')
    }
    try {
      return parseSessionServers(list)
    } catch (error) {
      if (error instanceof McpConfigError) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${error.message}`)
      throw error
    }
  }

  /** Starts `servers` for the agent's session, after stopping those an earlier call started. */
  async start(agent: Agent, servers: readonly McpServerConfig[]): Promise<void> {
    await this.stop(agent.id)
    if (servers.length === 0) return
    this.stops.set(agent.id, await this.ctx.get('mcp')!.startSessionServers(agent.scope, agent.id, servers))
  }

  async stop(sessionId: string): Promise<void> {
    const stop = this.stops.get(sessionId)
    this.stops.delete(sessionId)
    await stop?.()
  }

  async stopAll(): Promise<void> {
    const stops = [...this.stops.values()]
    this.stops.clear()
    await Promise.all(stops.map(stop => stop()))
  }
}
