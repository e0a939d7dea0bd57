/**
 * `ctx.mcp`: the MCP servers this process runs (configured, project, plugin rows and per-session
 * servers), their state and tools, for `dsh mcp list`, the web settings and protocol surfaces.
 */
import type {} from 'cordis'
import type { ScopeKey } from '../scope/index.js'
import type { McpServerConfig, McpServerSource, McpTransportKind } from './config.js'

export type McpServerState = 'starting' | 'connected' | 'reconnecting' | 'failed' | 'closed' | 'disabled' | 'untrusted' | 'invalid'

export interface McpToolStatus {
  /** Public name (`mcp__<server>__<tool>`, MC-2). */
  readonly name: string
  /** The server's own name for it, sent in `tools/call`. */
  readonly rawName: string
  readonly readOnly: boolean
  /** Schema normalisations applied for the provider. */
  readonly notes: readonly string[]
}

export interface McpServerStatus {
  readonly name: string
  readonly source: McpServerSource
  readonly transport?: McpTransportKind
  readonly state: McpServerState
  readonly enabled: boolean
  readonly tools: readonly McpToolStatus[]
  readonly error?: string
  /** The last lines the server wrote on stderr. */
  readonly stderr: readonly string[]
  /** Per-session servers: the session they belong to. */
  readonly session?: string
}

export interface McpService {
  servers(): readonly McpServerStatus[]
  /** Resolves when every server started so far has finished its first connect attempt. */
  whenStarted(): Promise<void>
  /**
   * MC-10: start servers whose tools only `scope` sees; the disposer stops them. Rejects with
   * `McpRefusedError` when per-session servers are turned off.
   */
  startSessionServers(scope: ScopeKey, sessionId: string, servers: readonly McpServerConfig[]): Promise<() => Promise<void>>
  /** Records the project's `.mcp.json` (as it is now) as trusted and starts its servers. */
  trustProject(): Promise<void>
  /** Turns a configured server on or off in settings and applies it now. */
  setEnabled(name: string, enabled: boolean): Promise<void>
}

export class McpRefusedError extends Error {
  override name = 'McpRefusedError'
}

declare module 'cordis' {
  interface Context {
    mcp: McpService
  }
  interface Events {
    /** @mode emit (contained). A server's state or tool set changed. */
    'mcp/status'(status: McpServerStatus): void
  }
}
