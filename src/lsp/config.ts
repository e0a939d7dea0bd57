/**
 * Which language server answers for a file: settings.yaml `lsp.servers` (or the plugin row's
 * `servers`) map a name to the file extensions it owns, the command that starts it on stdio and
 * what it is sent at `initialize`. The shipped entry is TypeScript/JavaScript. Commands are looked
 * up on first use, never at start-up.
 */
import { accessSync, constants } from 'node:fs'
import { delimiter, dirname, extname, isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { JsonValue } from '../session/types.js'

export interface LspServerConfig {
  /** File extensions this server owns, without the dot (`ts`, `py`). */
  readonly extensions: readonly string[]
  /** A program name (looked up in dsh's own node_modules/.bin, then PATH) or a path. */
  readonly command: string
  readonly args?: readonly string[]
  /** `initializationOptions` of the `initialize` request. */
  readonly initializationOptions?: JsonValue
  /** The `languageId` of opened documents, per extension (default: the extension itself). */
  readonly languageIds?: Readonly<Record<string, string>>
  /** Extra environment variables for the server. */
  readonly env?: Readonly<Record<string, string>>
}

/** Settings key and plugin config: servers by name, and the behaviour knobs. */
export interface LspSettings {
  /** Servers by name; an entry replaces the shipped one of that name, `false` removes it. */
  readonly servers?: Readonly<Record<string, LspServerConfig | false>>
  /** Append the diagnostics of a file that write or edit changed to their result (default false). */
  readonly diagnosticsOnEdit?: boolean
  /** Per-request deadline (default 30000 ms; `initialize` gets four times as long). */
  readonly requestTimeoutMs?: number
  /** How long `diagnostics` waits for the server to publish them (default 5000 ms). */
  readonly diagnosticsWaitMs?: number
  /** After a diagnostics report, how long without another one ends the wait (default 500 ms). */
  readonly diagnosticsSettleMs?: number
  /** Locations listed before the rest are counted (default 20). */
  readonly maxLocations?: number
  /** Failed starts in a row before the server is given up (default 3). */
  readonly maxStarts?: number
  /** The first wait before a restart; each further one is four times longer (default 250 ms). */
  readonly restartDelayMs?: number
}

export const LSP_DEFAULTS = { requestTimeoutMs: 30_000, diagnosticsWaitMs: 5_000, diagnosticsSettleMs: 500, maxLocations: 20, maxStarts: 3, restartDelayMs: 250 } as const

export const SHIPPED_SERVERS: Readonly<Record<string, LspServerConfig>> = {
  typescript: {
    extensions: ['ts', 'tsx', 'mts', 'cts', 'js', 'jsx', 'mjs', 'cjs'],
    command: 'typescript-language-server',
    args: ['--stdio'],
    // The syntax-only server answers while the project loads, with the import itself as the
    // definition of an imported name: every answer comes from the semantic server instead.
    initializationOptions: { tsserver: { useSyntaxServer: 'never' } },
    languageIds: { ts: 'typescript', mts: 'typescript', cts: 'typescript', tsx: 'typescriptreact', js: 'javascript', mjs: 'javascript', cjs: 'javascript', jsx: 'javascriptreact' },
  },
}

export interface ChosenServer {
  readonly name: string
  readonly config: LspServerConfig
  readonly languageId: string
}

/** Throws a readable error for a malformed setting (named by its settings path). */
export function checkSettings(settings: LspSettings): void {
  const knobs = settings as Record<string, unknown>
  if (knobs.diagnosticsOnEdit !== undefined && typeof knobs.diagnosticsOnEdit !== 'boolean') throw new Error(`lsp.diagnosticsOnEdit in settings.yaml must be true or false, not ${JSON.stringify(knobs.diagnosticsOnEdit)}`)
  for (const key of ['requestTimeoutMs', 'diagnosticsWaitMs', 'diagnosticsSettleMs', 'maxLocations', 'maxStarts', 'restartDelayMs'] as const) {
    const value = knobs[key]
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < (key === 'restartDelayMs' ? 0 : 1))) throw new Error(`lsp.${key} in settings.yaml must be a positive number, not ${JSON.stringify(value)}`)
  }
  checkServers(settings.servers)
}

function checkServers(servers: LspSettings['servers']): void {
  if (servers === undefined) return
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) throw new Error('lsp.servers must be a map of server names to {extensions, command, args}')
  for (const [name, entry] of Object.entries(servers)) {
    if (entry === false) continue
    const at = `lsp.servers.${name}`
    if (typeof entry !== 'object' || entry === null) throw new Error(`${at} must be {extensions, command, args} or false`)
    if (!Array.isArray(entry.extensions) || entry.extensions.length === 0 || !entry.extensions.every(ext => typeof ext === 'string' && ext !== '')) throw new Error(`${at}.extensions must be a non-empty list of file extensions`)
    if (typeof entry.command !== 'string' || entry.command === '') throw new Error(`${at}.command must be a program name or path`)
    if (entry.args !== undefined && (!Array.isArray(entry.args) || !entry.args.every(arg => typeof arg === 'string'))) throw new Error(`${at}.args must be a list of strings`)
  }
}

/** The shipped servers with the configured ones over them. */
export function mergedServers(servers: LspSettings['servers']): Map<string, LspServerConfig> {
  const merged = new Map(Object.entries(SHIPPED_SERVERS))
  for (const [name, entry] of Object.entries(servers ?? {})) {
    if (entry === false) merged.delete(name)
    else merged.set(name, entry)
  }
  return merged
}

/** The server that owns `path`'s extension, or undefined. */
export function chooseServer(servers: ReadonlyMap<string, LspServerConfig>, path: string): ChosenServer | undefined {
  const ext = extname(path).slice(1).toLowerCase()
  if (ext === '') return undefined
  for (const [name, config] of servers) {
    if (config.extensions.some(owned => owned.replace(/^\./, '').toLowerCase() === ext)) {
      return { name, config, languageId: config.languageIds?.[ext] ?? ext }
    }
  }
  return undefined
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** dsh's own node_modules/.bin (the package folder above this module). */
function ownBin(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'node_modules', '.bin')
}

/**
 * The program to run for `command`: a path as given (against `root`), else the first executable
 * in dsh's own node_modules/.bin, then PATH. Throws naming where it looked and the setting to
 * change. The workspace's own node_modules/.bin is never searched: a cloned repository (or the
 * model, which writes there) would choose the program the lsp tool starts; a project-local server
 * is named by its path in the user's settings.
 */
export function resolveCommand(name: string, command: string, root: string, path = process.env.PATH ?? ''): string {
  if (command.includes('/')) {
    const full = isAbsolute(command) ? command : resolve(root, command)
    if (executable(full)) return full
    throw new Error(`lsp: the ${name} language server ${full} is not an executable file (lsp.servers.${name}.command in settings.yaml)`)
  }
  const places = [ownBin(), ...path.split(delimiter).filter(dir => dir !== '')]
  for (const dir of places) {
    const full = join(dir, command)
    if (executable(full)) return full
  }
  throw new Error(`lsp: ${command} (the ${name} language server) was not found in dsh's node_modules/.bin or PATH; install it, or set lsp.servers.${name}.command in settings.yaml (docs/lsp.md)`)
}
