/**
 * Server configuration in the shapes users paste: the Claude Code `mcpServers` entry
 * (`command`/`args`/`env`/`cwd`, or `type: http|sse` + `url`/`headers`), the plugin-row shape
 * (`serverName`, `transport: stdio|streamable-http|sse`) and dsh's own keys (`enabled`,
 * `enabledTools`, `disabledTools`, `toolCallTimeoutMs`, `startupTimeoutMs`,
 * `failOnStartupError`, `reconnect`, and for stdio `maxMessageBytes`). `${VAR}` and `${VAR:-default}` expand in command, args,
 * env, url and headers, as in Claude Code. Bad input is a `McpConfigError` naming the server
 * and the key.
 */
import { checkServerName } from './names.js'

export type McpTransportKind = 'stdio' | 'streamable-http' | 'sse'
export type McpServerSource = 'settings' | 'project' | 'row' | 'session'

export interface ReconnectConfig {
  readonly enabled: boolean
  readonly initialDelayMs: number
  readonly maxDelayMs: number
  readonly maxAttempts: number
}

export interface McpServerConfig {
  readonly name: string
  readonly transport: McpTransportKind
  readonly command?: string
  readonly args?: readonly string[]
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
  readonly url?: string
  readonly headers?: Readonly<Record<string, string>>
  readonly enabled: boolean
  readonly enabledTools?: readonly string[]
  readonly disabledTools?: readonly string[]
  readonly toolCallTimeoutMs: number
  readonly startupTimeoutMs: number
  readonly failOnStartupError: boolean
  readonly reconnect: ReconnectConfig
  /** stdio: a message from the server over this many bytes is dropped (default 64 MiB, `./stdio.ts`). */
  readonly maxMessageBytes?: number
}

export const DEFAULT_RECONNECT: ReconnectConfig = Object.freeze({ enabled: true, initialDelayMs: 500, maxDelayMs: 30_000, maxAttempts: 10 })
export const DEFAULT_TOOL_CALL_TIMEOUT_MS = 60_000
export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000

export class McpConfigError extends Error {
  override name = 'McpConfigError'
  constructor(readonly source: string, readonly server: string | undefined, readonly key: string | undefined, detail: string) {
    super(`${[source, server === undefined ? undefined : `server "${server}"`, key === undefined ? undefined : `key "${key}"`].filter(Boolean).join(', ')}: ${detail}`)
  }
}

const KEYS = new Set([
  'type', 'transport', 'serverName', 'name', 'command', 'args', 'env', 'cwd', 'url', 'headers', 'enabled',
  'enabledTools', 'disabledTools', 'toolCallTimeoutMs', 'startupTimeoutMs', 'failOnStartupError', 'reconnect',
  'maxMessageBytes',
  // Claude Code keys that need nothing from us.
  'description', 'oauth',
])

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export type Lookup = (name: string) => string | undefined

/** `${VAR}` / `${VAR:-default}`; an unset variable without default is an error naming it. */
export function expandVariables(text: string, lookup: Lookup, fail: (detail: string) => never): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_match, name: string, fallback: string | undefined) => {
    const value = lookup(name)
    if (value !== undefined && value !== '') return value
    if (fallback !== undefined) return fallback
    return fail(`environment variable ${name} is not set (referenced as \${${name}})`)
  })
}

export interface ParseOptions {
  readonly source: string
  /** Variable lookup for `${VAR}` expansion (default: none set). */
  readonly lookup?: Lookup
}

/** One `mcpServers` entry (or a plugin row's config) as a checked server config. */
export function parseServerConfig(name: string | undefined, raw: unknown, options: ParseOptions): McpServerConfig {
  const { source } = options
  if (!isRecord(raw)) throw new McpConfigError(source, name, undefined, `a server must be a mapping, got ${JSON.stringify(raw)}`)
  const serverName = name ?? raw.serverName ?? raw.name
  const nameProblem = checkServerName(serverName)
  if (nameProblem !== undefined) throw new McpConfigError(source, typeof serverName === 'string' ? serverName : undefined, 'serverName', nameProblem)
  const server = serverName as string
  const fail = (key: string | undefined, detail: string): never => { throw new McpConfigError(source, server, key, detail) }
  for (const key of Object.keys(raw)) {
    if (!KEYS.has(key)) fail(key, `unknown key (allowed: ${[...KEYS].join(', ')})`)
  }
  const lookup = options.lookup ?? (() => undefined)
  const expand = (key: string, text: string) => expandVariables(text, lookup, detail => fail(key, detail))
  const string = (key: string): string | undefined => {
    const value = raw[key]
    if (value === undefined) return undefined
    if (typeof value !== 'string' || value === '') return fail(key, 'must be a non-empty string')
    return value
  }
  const strings = (key: string): string[] | undefined => {
    const value = raw[key]
    if (value === undefined) return undefined
    if (!Array.isArray(value) || value.some(item => typeof item !== 'string')) return fail(key, 'must be a list of strings')
    return value as string[]
  }
  const map = (key: string): Record<string, string> | undefined => {
    const value = raw[key]
    if (value === undefined) return undefined
    if (!isRecord(value)) return fail(key, 'must be a mapping of names to strings')
    const out: Record<string, string> = {}
    for (const [entry, text] of Object.entries(value)) {
      if (typeof text !== 'string' && typeof text !== 'number' && typeof text !== 'boolean') fail(key, `value of ${entry} must be a string`)
      out[entry] = expand(key, String(text))
    }
    return out
  }
  const positive = (key: string, fallback: number): number => {
    const value = raw[key]
    if (value === undefined) return fallback
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return fail(key, 'must be a positive number of milliseconds')
    return value
  }
  const flag = (key: string, fallback: boolean): boolean => {
    const value = raw[key]
    if (value === undefined) return fallback
    if (typeof value !== 'boolean') return fail(key, 'must be true or false')
    return value
  }

  const declared = string('type') ?? string('transport')
  if (declared === undefined && raw.command !== undefined && raw.url !== undefined) fail('url', 'a server takes either command (stdio) or url (http), not both')
  const transport: McpTransportKind =
    declared === undefined ? (raw.url !== undefined ? 'streamable-http' : 'stdio')
    : declared === 'stdio' || declared === 'local' ? 'stdio'
    : declared === 'http' || declared === 'streamable-http' || declared === 'streamableHttp' || declared === 'remote' ? 'streamable-http'
    : declared === 'sse' ? 'sse'
    : fail(raw.type !== undefined ? 'type' : 'transport', `unknown transport ${JSON.stringify(declared)} (stdio, http, sse)`)

  const base = {
    name: server,
    transport,
    enabled: flag('enabled', true),
    ...(strings('enabledTools') !== undefined ? { enabledTools: strings('enabledTools') } : {}),
    ...(strings('disabledTools') !== undefined ? { disabledTools: strings('disabledTools') } : {}),
    toolCallTimeoutMs: positive('toolCallTimeoutMs', DEFAULT_TOOL_CALL_TIMEOUT_MS),
    startupTimeoutMs: positive('startupTimeoutMs', DEFAULT_STARTUP_TIMEOUT_MS),
    failOnStartupError: flag('failOnStartupError', false),
    reconnect: parseReconnect(raw.reconnect, reason => fail('reconnect', reason)),
  }
  if (transport === 'stdio') {
    const command = string('command') ?? fail('command', 'a stdio server needs a command')
    if (raw.url !== undefined) fail('url', 'a stdio server takes command/args, not url')
    const args = strings('args')
    const env = map('env')
    const cwd = string('cwd')
    const maxMessageBytes = raw.maxMessageBytes
    if (maxMessageBytes !== undefined && (typeof maxMessageBytes !== 'number' || !Number.isSafeInteger(maxMessageBytes) || maxMessageBytes <= 0)) {
      fail('maxMessageBytes', 'must be a positive whole number of bytes')
    }
    return {
      ...base,
      ...(maxMessageBytes !== undefined ? { maxMessageBytes: maxMessageBytes as number } : {}),
      command: expand('command', command),
      ...(args !== undefined ? { args: args.map(arg => expand('args', arg)) } : {}),
      ...(env !== undefined ? { env } : {}),
      ...(cwd !== undefined ? { cwd: expand('cwd', cwd) } : {}),
    }
  }
  const url = string('url') ?? fail('url', `a ${transport} server needs a url`)
  if (raw.command !== undefined) fail('command', `a ${transport} server takes url/headers, not command`)
  if (raw.maxMessageBytes !== undefined) fail('maxMessageBytes', 'applies to stdio servers only')
  const expanded = expand('url', url)
  try {
    const parsed = new URL(expanded)
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') fail('url', `must be an http(s) URL, got ${JSON.stringify(expanded)}`)
  } catch (error) {
    if (error instanceof McpConfigError) throw error
    fail('url', `must be an http(s) URL, got ${JSON.stringify(expanded)}`)
  }
  const headers = map('headers')
  return { ...base, url: expanded, ...(headers !== undefined ? { headers } : {}) }
}

function parseReconnect(value: unknown, fail: (reason: string) => never): ReconnectConfig {
  if (value === undefined) return DEFAULT_RECONNECT
  if (!isRecord(value)) return fail('must be a mapping {enabled, initialDelayMs, maxDelayMs, maxAttempts}')
  const out: Record<string, unknown> = { ...DEFAULT_RECONNECT }
  for (const [key, entry] of Object.entries(value)) {
    if (!(key in DEFAULT_RECONNECT)) fail(`unknown key ${key}`)
    if (key === 'enabled' ? typeof entry !== 'boolean' : typeof entry !== 'number' || !(entry > 0)) fail(`${key} has an invalid value ${JSON.stringify(entry)}`)
    out[key] = entry
  }
  return out as unknown as ReconnectConfig
}

/** An `mcpServers` map (settings or `.mcp.json`); each bad entry is reported, the others kept. */
export function parseServerMap(value: unknown, options: ParseOptions): { servers: McpServerConfig[]; errors: McpConfigError[] } {
  if (value === undefined || value === null) return { servers: [], errors: [] }
  if (!isRecord(value)) return { servers: [], errors: [new McpConfigError(options.source, undefined, 'mcpServers', 'must be a mapping of server names to servers')] }
  const servers: McpServerConfig[] = []
  const errors: McpConfigError[] = []
  for (const [name, raw] of Object.entries(value)) {
    try {
      servers.push(parseServerConfig(name, raw, options))
    } catch (error) {
      if (!(error instanceof McpConfigError)) throw error
      errors.push(error)
    }
  }
  return { servers, errors }
}

/** Whether `tool` (raw name) is offered, given the server's allow and deny lists. */
export function toolAllowed(config: Pick<McpServerConfig, 'enabledTools' | 'disabledTools'>, tool: string): boolean {
  if (config.enabledTools !== undefined && !config.enabledTools.includes(tool)) return false
  return !(config.disabledTools ?? []).includes(tool)
}

/**
 * MC-10: the `mcpServers` list of ACP `session/new` (and the SDK's `session/create`):
 * `{name, command, args, env: [{name, value}]}` for stdio, `{type: "http"|"sse", name, url,
 * headers: [{name, value}]}` otherwise. Mappings are accepted for `env`/`headers` too.
 */
export function parseSessionServers(list: readonly unknown[], source = 'session/new mcpServers'): McpServerConfig[] {
  const pairs = (value: unknown, key: string, index: number): Record<string, string> | undefined => {
    if (value === undefined) return undefined
    if (isRecord(value)) return value as Record<string, string>
    if (!Array.isArray(value)) throw new McpConfigError(source, `#${index}`, key, 'must be a list of {name, value}')
    const out: Record<string, string> = {}
    for (const pair of value) {
      if (!isRecord(pair) || typeof pair.name !== 'string' || typeof pair.value !== 'string') {
        throw new McpConfigError(source, `#${index}`, key, `entries must be {name, value} strings, got ${JSON.stringify(pair)}`)
      }
      out[pair.name] = pair.value
    }
    return out
  }
  const names = new Set<string>()
  return list.map((raw, index) => {
    if (!isRecord(raw)) throw new McpConfigError(source, `#${index}`, undefined, `a server must be an object, got ${JSON.stringify(raw)}`)
    const { name, env, headers, ...rest } = raw
    if (typeof name !== 'string') throw new McpConfigError(source, `#${index}`, 'name', 'every server needs a name')
    if (names.has(name)) throw new McpConfigError(source, name, 'name', 'two servers of one session share this name')
    names.add(name)
    const envMap = pairs(env, 'env', index)
    const headerMap = pairs(headers, 'headers', index)
    return parseServerConfig(name, { ...rest, ...(envMap ? { env: envMap } : {}), ...(headerMap ? { headers: headerMap } : {}) }, { source })
  })
}
