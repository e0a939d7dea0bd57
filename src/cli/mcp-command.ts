/**
 * `dsh mcp list|add|remove`: the MCP servers of settings and the project `.mcp.json`.
 *
 *   dsh mcp list [--cwd DIR] [--trust-project-mcp] [--tools]   connect, show state and tool counts
 *   dsh mcp add NAME [-e KEY=VALUE]... -- COMMAND [ARGS...]     a stdio server in settings
 *   dsh mcp add NAME --transport http|sse URL [--header 'K: V']...
 *   dsh mcp remove NAME
 */
import { isTrusted, readTrustedProjects } from '../trust/index.js'
import { Context } from 'cordis'
import { environmentLayers, readSettings, resolveHome, writeSettings, type Settings } from '../config/home.js'
import { TRUST_PROJECT_MCP_FLAG } from './catalogue.js'
import { McpConfigError, parseServerConfig } from '../mcp/config.js'
import { formatStatuses } from '../mcp/format.js'
import { McpPlugin } from '../mcp/plugin.js'
import { ToolsPlugin } from '../tools/registry.js'
import { commandFailure, UsageError } from './usage-error.js'
import { terminalSafe } from '../host/terminal-text.js'

export const MCP_USAGE = `Usage:
  dsh mcp list [--cwd DIR] [--trust-project-mcp] [--tools]
  dsh mcp add NAME [-e KEY=VALUE]... -- COMMAND [ARGS...]
  dsh mcp add NAME --transport http|sse URL [--header "Name: value"]...
  dsh mcp remove NAME
`

export interface McpCommandIo {
  readonly stdout: NodeJS.WritableStream
  readonly stderr: NodeJS.WritableStream
  readonly env?: NodeJS.ProcessEnv
  readonly cwd?: string
}

export async function mcpCommand(args: readonly string[], io: McpCommandIo): Promise<number> {
  const env = io.env ?? process.env
  const home = resolveHome(env)
  try {
    switch (args[0]) {
      case 'list': return await list(args.slice(1), home, io)
      case 'add': return add(args.slice(1), home, io)
      case 'remove': return remove(args.slice(1), home, io)
      default: throw new UsageError(args[0] === undefined ? 'which command? list, add or remove' : `unknown command "${args[0]}"`)
    }
  } catch (error) {
    return commandFailure(error, 'dsh mcp', MCP_USAGE, io.stderr)
  }
}

async function list(args: readonly string[], home: string, io: McpCommandIo): Promise<number> {
  let cwd = io.cwd ?? process.cwd()
  let trust = false
  let tools = false
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]
    if (arg === '--cwd' && args[index + 1] !== undefined) cwd = args[++index]
    else if (arg === TRUST_PROJECT_MCP_FLAG) trust = true
    else if (arg === '--tools') tools = true
    else throw new UsageError(`unknown option ${arg}`)
  }
  const envLayers = environmentLayers({ home, cwd, projectTrusted: isTrusted(cwd, readTrustedProjects(home)), ...(io.env ? { env: io.env } : {}) })
  const settings = readSettings(home)
  const root = new Context()
  await root.plugin(ToolsPlugin).await()
  const stderrLines: string[] = []
  const fiber = root.plugin(McpPlugin, {
    servers: settings.mcpServers,
    cwd,
    trustProject: trust || envLayers.value('DSH_TRUST_PROJECT_MCP') === '1',
    settings: { read: () => readSettings(home), write: (next: Settings) => writeSettings(home, next) },
    lookup: (name: string) => envLayers.value(name),
    // Server stderr is noise for a listing; failures show in the table.
    log: (line: string) => { stderrLines.push(line) },
  })
  try {
    await fiber.await()
    const mcp = root.get('mcp') as McpPlugin
    io.stdout.write(terminalSafe(formatStatuses(mcp.servers(), tools)))
    return 0
  } finally {
    await fiber.dispose()
  }
}

function add(args: readonly string[], home: string, io: McpCommandIo): number {
  const name = args[0]
  if (name === undefined || name.startsWith('-')) throw new UsageError('add needs a server name')
  const env: Record<string, string> = {}
  const headers: Record<string, string> = {}
  let transport: string | undefined
  let url: string | undefined
  let command: string[] | undefined
  for (let index = 1; index < args.length; index += 1) {
    const arg = args[index]
    const value = () => {
      const next = args[index + 1]
      if (next === undefined) throw new UsageError(`${arg} needs a value`)
      index += 1
      return next
    }
    if (arg === '--') { command = args.slice(index + 1); break }
    if (arg === '-e' || arg === '--env') {
      const pair = value()
      const at = pair.indexOf('=')
      if (at <= 0) throw new UsageError(`${arg} takes KEY=VALUE, got "${pair}"`)
      env[pair.slice(0, at)] = pair.slice(at + 1)
    } else if (arg === '--transport' || arg === '-t') transport = value()
    else if (arg === '--header' || arg === '-H') {
      const header = value()
      const at = header.indexOf(':')
      if (at <= 0) throw new UsageError(`${arg} takes "Name: value", got "${header}"`)
      headers[header.slice(0, at).trim()] = header.slice(at + 1).trim()
    } else if (!arg.startsWith('-') && transport !== undefined && url === undefined) url = arg
    else throw new UsageError(`unexpected argument ${arg}`)
  }
  let entry: Record<string, unknown>
  if (transport !== undefined && transport !== 'stdio') {
    if (url === undefined) throw new UsageError(`--transport ${transport} needs a URL`)
    entry = { type: transport, url, ...(Object.keys(headers).length > 0 ? { headers } : {}) }
  } else {
    if (command === undefined || command.length === 0) throw new UsageError('a stdio server needs -- COMMAND [ARGS...]')
    entry = { command: command[0], ...(command.length > 1 ? { args: command.slice(1) } : {}), ...(Object.keys(env).length > 0 ? { env } : {}) }
  }
  // Checked before writing (variables stay unexpanded in the file).
  try {
    parseServerConfig(name, entry, { source: 'dsh mcp add', lookup: () => 'set' })
  } catch (error) {
    if (error instanceof McpConfigError) throw new UsageError(error.message)
    throw error
  }
  const settings = readSettings(home)
  const servers = { ...(settings.mcpServers ?? {}) }
  const replaced = name in servers
  servers[name] = entry
  writeSettings(home, { ...settings, mcpServers: servers })
  io.stdout.write(`${replaced ? 'Replaced' : 'Added'} MCP server "${name}" in ${home}/settings.yaml\n`)
  return 0
}

function remove(args: readonly string[], home: string, io: McpCommandIo): number {
  const name = args[0]
  if (name === undefined || args.length > 1) throw new UsageError('remove takes one server name')
  const settings = readSettings(home)
  const servers = { ...(settings.mcpServers ?? {}) }
  if (!(name in servers)) {
    io.stderr.write(`dsh mcp: no MCP server "${name}" in ${home}/settings.yaml\n`)
    return 1
  }
  delete servers[name]
  writeSettings(home, { ...settings, mcpServers: servers })
  io.stdout.write(`Removed MCP server "${name}"\n`)
  return 0
}
