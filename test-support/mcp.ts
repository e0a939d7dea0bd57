/**
 * MCP test support: the stdio test server (mcp-stdio-server.mjs, written with the official SDK),
 * its event log, and waits on `mcp/status` events instead of timers.
 */
import { existsSync, readFileSync, watch } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Context } from 'cordis'
import type { McpServerStatus } from '../src/mcp/api.js'
import '../src/mcp/api.js'

export const TEST_SERVER = join(import.meta.dirname, 'mcp-stdio-server.mjs')
export const LONG_TOOL_NAME = 'a'.repeat(40) + '_very_long_tool_name_' + 'b'.repeat(39)

/** An `mcpServers` entry (Claude Code shape) running the test server. */
export function testServerEntry(options: { mode?: 'basic' | 'weird'; log?: string; env?: Record<string, string>; extra?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    command: process.execPath,
    args: [TEST_SERVER],
    env: { MCP_TEST_MODE: options.mode ?? 'basic', ...(options.log ? { MCP_TEST_LOG: options.log } : {}), ...options.env },
    ...options.extra,
  }
}

export interface LogEvent { pid: number; event: string; name?: string; arguments?: unknown; mode?: string }

export function readEvents(file: string): LogEvent[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(line => JSON.parse(line) as LogEvent)
}

/** Resolves once the log file holds an event matching `predicate` (fs.watch, no polling). */
export function waitForEvent(file: string, predicate: (event: LogEvent) => boolean): Promise<LogEvent> {
  return new Promise(resolve => {
    const check = () => readEvents(file).find(predicate)
    const watcher = watch(dirname(file), () => {
      const found = check()
      if (found === undefined) return
      watcher.close()
      resolve(found)
    })
    const found = check()
    if (found !== undefined) {
      watcher.close()
      resolve(found)
    }
  })
}

/** Resolves with the first status of `name` matching `predicate` (the current one counts). */
export function waitForStatus(ctx: Context, name: string, predicate: (status: McpServerStatus) => boolean): Promise<McpServerStatus> {
  return new Promise(resolve => {
    const current = ctx.get('mcp')?.servers().find(server => server.name === name)
    if (current !== undefined && predicate(current)) return resolve(current)
    const dispose = ctx.on('mcp/status', status => {
      if (status.name !== name || !predicate(status)) return
      dispose()
      resolve(status)
    })
  })
}
