/** Text views of MCP server states, shared by `dsh mcp list` and the `/mcp` command. */
import type { McpServerStatus } from './api.js'

function pad(text: string, width: number): string {
  return text.length >= width ? `${text} ` : text.padEnd(width)
}

/** The server table of `dsh mcp list` and `/mcp`; with `withTools`, each tool under its server. */
export function formatStatuses(servers: readonly McpServerStatus[], withTools: boolean, withStderr = false): string {
  if (servers.length === 0) return 'No MCP servers configured (add one with: dsh mcp add NAME -- COMMAND ARGS...).\n'
  const lines = [`${pad('NAME', 20)}${pad('SOURCE', 10)}${pad('TRANSPORT', 17)}${pad('STATE', 14)}TOOLS`]
  for (const server of servers) {
    lines.push(`${pad(server.name, 20)}${pad(server.source, 10)}${pad(server.transport ?? '-', 17)}${pad(server.enabled ? server.state : 'disabled', 14)}${server.tools.length}`)
    if (server.error !== undefined) lines.push(`  error: ${server.error}`)
    if (withStderr && server.state !== 'connected') for (const line of server.stderr.slice(-5)) lines.push(`  stderr: ${line}`)
    if (withTools) for (const tool of server.tools) lines.push(`  ${tool.name}${tool.readOnly ? ' (read-only)' : ''}`)
  }
  return `${lines.join('\n')}\n`
}
