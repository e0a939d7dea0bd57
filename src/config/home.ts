/**
 * The home folder (`$DSH_HOME`, default `~/.dsh`): profiles, patch layers, settings,
 * credentials and `.env` layers. Every write is atomic (temp file + fsync + rename) and private.
 */
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeSync, existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { isCredentialName } from './credentials.js'
import { describeYamlError, loadYaml } from './yaml.js'

export function resolveHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.DSH_HOME
  return configured !== undefined && configured !== '' ? resolve(configured) : join(homedir(), '.dsh')
}

/**
 * The home folder holds credentials and session logs, so it must be private. An existing home
 * that others can read, write or enter (any group/other bit) is tightened to 0700 when this user
 * owns it; otherwise it is left alone. Returns one line to show the user, or undefined when the
 * folder is missing or already private.
 */
export function tightenHome(home: string): string | undefined {
  let info
  try {
    info = statSync(home)
  } catch {
    return undefined
  }
  if (!info.isDirectory()) return undefined
  const mode = info.mode & 0o777
  if ((mode & 0o077) === 0) return undefined
  const octal = (value: number) => `0${value.toString(8).padStart(3, '0')}`
  const mine = typeof process.getuid !== 'function' || info.uid === process.getuid()
  if (mine) {
    try {
      chmodSync(home, mode & 0o700 | 0o700)
      return `warning: ${home} had mode ${octal(mode)} (readable by others); tightened to 0700`
    } catch (error) {
      return `warning: ${home} has mode ${octal(mode)} (readable by others) and could not be tightened to 0700: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`
    }
  }
  return `warning: ${home} has mode ${octal(mode)} (readable by others) and belongs to another user; run chmod 0700 on it`
}

export const homePaths = (home: string) => ({
  root: home,
  patch: join(home, 'cordis.patch.yml'),
  profile: (name: string) => join(home, 'profiles', name),
  profilePatch: (name: string) => join(home, 'profiles', name, 'cordis.patch.yml'),
  settings: join(home, 'settings.yaml'),
  credentials: join(home, '.credentials.yaml'),
  env: join(home, '.env'),
  agents: join(home, 'AGENTS.md'),
  sessions: join(home, 'sessions'),
})

/** Writes `text` atomically with the given mode; parent folders are created private (0700). */
export function writeFileAtomic(path: string, text: string, mode = 0o600): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`
  const fd = openSync(temp, 'w', mode)
  try {
    writeSync(fd, text)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(temp, path)
}

function readYamlFile(path: string): unknown {
  if (!existsSync(path)) return undefined
  const text = readFileSync(path, 'utf8')
  try {
    return loadYaml().parse(text)
  } catch (error) {
    throw new Error(`${path}: invalid YAML ${describeYamlError(error)}`)
  }
}

export type Settings = Record<string, Record<string, unknown>>

/** `settings.yaml`: user settings by plugin namespace (e.g. `model: {default: ...}`). */
export function readSettings(home: string): Settings {
  const value = readYamlFile(homePaths(home).settings)
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) throw new Error(`${homePaths(home).settings}: expected a mapping of namespaces`)
  return value as Settings
}

export function writeSettings(home: string, settings: Settings): void {
  writeFileAtomic(homePaths(home).settings, loadYaml().stringify(settings), 0o600)
}

/** Parses a dotenv file: `KEY=value`, optional `export`, quotes, `#` comments. */
export function parseDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line)
    if (!match) continue
    let value = match[2]
    const quote = value[0]
    if ((quote === '"' || quote === "'") && value.length >= 2 && value.endsWith(quote)) {
      value = value.slice(1, -1)
      if (quote === '"') value = value.replace(/\\n/g, '\n').replace(/\\"/g, '"')
    } else {
      value = value.replace(/\s+#.*$/, '')
    }
    out[match[1]] = value
  }
  return out
}

function readDotenv(path: string): Record<string, string> {
  return existsSync(path) ? parseDotenv(readFileSync(path, 'utf8')) : {}
}

/** `.credentials.yaml`: a flat mapping of variable names to secrets. */
export function readCredentials(home: string): Record<string, string> {
  const value = readYamlFile(homePaths(home).credentials)
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) throw new Error(`${homePaths(home).credentials}: expected a mapping of NAME: secret`)
  const out: Record<string, string> = {}
  for (const [key, secret] of Object.entries(value)) {
    if (typeof secret === 'string') out[key] = secret
  }
  return out
}

export function writeCredential(home: string, name: string, secret: string | undefined): void {
  const current = readCredentials(home)
  if (secret === undefined) delete current[name]
  else current[name] = secret
  writeFileAtomic(homePaths(home).credentials, loadYaml().stringify(current), 0o600)
}

export interface EnvironmentLayers {
  /** Resolved value and the layer it came from. */
  get(name: string): { value: string; source: string } | undefined
  value(name: string): string | undefined
  /** Names the workspace `.env` set that were ignored (its folder is not trusted), sorted. */
  readonly ignoredProjectVariables: readonly string[]
}

/**
 * What of a workspace `.env` is used. Never its `DSH_*` lines (a project may not steer dsh itself:
 * tokens, home, model, permission mode). Untrusted, only provider API keys: anything else could
 * choose where the user's key and prompts go (`DEEPSEEK_BASE_URL`, a proxy), what an MCP server
 * of the user's settings runs (`${VAR}`), or where the user's own files are (`HOME`).
 */
export function projectEnvironment(values: Readonly<Record<string, string>>, trusted: boolean): { used: Record<string, string>; ignored: string[] } {
  const used: Record<string, string> = {}
  const ignored: string[] = []
  for (const [name, value] of Object.entries(values)) {
    if (name.startsWith('DSH_')) continue
    // A provider API key is the one thing an untrusted project may give: its own key, sent where the user's settings say.
    if (trusted || isCredentialName(name)) used[name] = value
    else ignored.push(name)
  }
  return { used, ignored: ignored.sort() }
}

/**
 * Credentials and variables resolve: process environment, then `.credentials.yaml`, then the
 * workspace `./.env` (what `projectEnvironment` keeps of it: `projectTrusted` says whether the
 * folder is trusted, `src/trust/`), then `$DSH_HOME/.env`.
 */
export function environmentLayers(options: { home: string; cwd: string; env?: NodeJS.ProcessEnv; projectTrusted?: boolean }): EnvironmentLayers {
  const env = options.env ?? process.env
  const project = projectEnvironment(readDotenv(join(options.cwd, '.env')), options.projectTrusted === true)
  const layers: [string, Record<string, string | undefined>][] = [
    ['environment', env],
    [homePaths(options.home).credentials, readCredentials(options.home)],
    [join(options.cwd, '.env'), project.used],
    [homePaths(options.home).env, readDotenv(homePaths(options.home).env)],
  ]
  const get = (name: string) => {
    for (const [source, values] of layers) {
      const value = values[name]
      if (value !== undefined && value !== '') return { value, source }
    }
    return undefined
  }
  return { get, value: name => get(name)?.value, ignoredProjectVariables: project.ignored }
}
