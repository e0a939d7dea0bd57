/**
 * MCP test support: the stdio test server (mcp-stdio-server.mjs, written with the official SDK),
 * its event log, and waits on `mcp/status` events instead of timers.
 */
import { existsSync, mkdtempSync, readFileSync, watch, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
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

/**
 * A stdio server written into a fresh temp folder, on the SDK's low-level `Server`: it ignores
 * the end of its input (it keeps running after stdin closes), starts a plain child process of
 * its own, and appends `{server, child}` pids to `starts` (one line per start). Tools: `echo`
 * ({text}) and `big` ({bytes}: a text block of that many bytes).
 */
export function lingeringServer(): { entry: Record<string, unknown>; starts: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-mcp-linger-'))
  // The package's ESM build, by absolute URL: the script lives outside the repository.
  const resolved = createRequire(import.meta.url).resolve('@modelcontextprotocol/sdk/server/index.js')
  const marker = `${join('@modelcontextprotocol', 'sdk')}${sep}`
  const sdk = join(resolved.slice(0, resolved.lastIndexOf(marker) + marker.length), 'dist', 'esm')
  const url = (path: string) => JSON.stringify(pathToFileURL(join(sdk, path)).href)
  const starts = join(dir, 'starts.jsonl')
  const script = join(dir, 'server.mjs')
  writeFileSync(script, `import { spawn } from 'node:child_process'
import { appendFileSync } from 'node:fs'
import { Server } from ${url('server/index.js')}
import { StdioServerTransport } from ${url('server/stdio.js')}
import { CallToolRequestSchema, ListToolsRequestSchema } from ${url('types.js')}
const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' })
process.stdin.on('end', () => {})
setInterval(() => {}, 1 << 30)
const server = new Server({ name: 'linger', version: '1.0.0' }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [
  { name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
  { name: 'big', inputSchema: { type: 'object', properties: { bytes: { type: 'number' } } } },
] }))
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const args = request.params.arguments ?? {}
  if (request.params.name === 'big') return { content: [{ type: 'text', text: 'x'.repeat(args.bytes) }] }
  return { content: [{ type: 'text', text: String(args.text) }] }
})
await server.connect(new StdioServerTransport())
appendFileSync(process.env.STARTS_LOG, JSON.stringify({ server: process.pid, child: child.pid }) + '\\n')
`)
  return { entry: { command: process.execPath, args: [script], env: { STARTS_LOG: starts } }, starts, dir }
}

/** The `{server, child}` pids of each start of a `lingeringServer`. */
export function readStarts(file: string): { server: number; child: number }[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(line => JSON.parse(line) as { server: number; child: number })
}
