/**
 * Turns a composed row tree into a running Cordis plugin tree.
 *
 * Plugin modules are resolved lazily, row by row, so start-up imports only what the profile
 * uses. Built-in names come from the catalogue; any other name is an npm package resolved from
 * the profile folder (then from dsh's own installation).
 */
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Context, Fiber } from 'cordis'
import '../host/index.js'
import { builtinPlugin, isBuiltinPlugin, withHostConfig } from './catalogue.js'
import { ConfigError, type Row } from '../config/rows.js'

export interface LoadOptions {
  /** Folder whose node_modules resolve out-of-tree plugin packages. */
  readonly resolveFrom?: string
  /** Values handed to every plugin whose config is a mapping and does not set them (cwd, home...). */
  readonly defaults?: Readonly<Record<string, unknown>>
}

export interface LoadedRow {
  readonly row: Row
  readonly fiber: Fiber
}

async function resolvePlugin(name: string, options: LoadOptions, rowId: string): Promise<unknown> {
  if (isBuiltinPlugin(name)) return builtinPlugin(name)
  const bases = [options.resolveFrom, process.cwd()].filter((base): base is string => base !== undefined)
  for (const base of bases) {
    try {
      const resolved = createRequire(join(base, 'package.json')).resolve(name)
      const module = await import(pathToFileURL(resolved).href) as Record<string, unknown>
      return module.default ?? module.apply ?? module
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') {
        throw new ConfigError('plugin tree', rowId, 'name', `plugin "${name}" failed to import: ${(error as Error).message}`)
      }
    }
  }
  throw new ConfigError('plugin tree', rowId, 'name', `unknown plugin "${name}": not a built-in plugin and no npm package of that name is installed`)
}

/** Loads rows in order into `ctx`; a group row becomes a child plugin holding its rows. */
export async function loadRows(ctx: Context, rows: readonly Row[], options: LoadOptions = {}, loaded: LoadedRow[] = []): Promise<LoadedRow[]> {
  // Read once: each service lookup through a Cordis context captures a stack trace.
  const host = ctx.get('host')
  for (const row of rows) {
    if (row.disabled) continue
    if (row.name === 'group') {
      const children = row.rows ?? []
      let inner: Promise<unknown> = Promise.resolve()
      const fiber = ctx.plugin({
        name: `group:${row.id}`,
        apply: (child: Context) => { inner = loadRows(child, children, options, loaded) },
      })
      await inner
      loaded.push({ row, fiber })
      continue
    }
    const { plugin, config } = withHostConfig(await resolvePlugin(row.name, options, row.id), withDefaults(row.config, options.defaults), host)
    const fiber = ctx.plugin(plugin as never, config as never)
    loaded.push({ row, fiber })
  }
  return loaded
}

function withDefaults(config: unknown, defaults: LoadOptions['defaults']): unknown {
  if (defaults === undefined) return config ?? {}
  if (config === undefined || config === null) return { ...defaults }
  if (typeof config !== 'object' || Array.isArray(config)) return config
  return { ...defaults, ...config as object }
}

const FIBER_FAILED = 3
const FIBER_PENDING = 0

/**
 * Reports rows whose plugin failed during setup or still waits for a service nobody provides,
 * naming the row and the missing services, so a bad tree fails with one clear line.
 */
export function checkLoaded(loaded: readonly LoadedRow[], ctx: Context): string[] {
  const problems: string[] = []
  for (const { row, fiber } of loaded) {
    if (fiber.state === FIBER_FAILED) problems.push(`row "${row.id}" (${row.name}) failed to start`)
    if (fiber.state === FIBER_PENDING && row.name !== 'group') {
      const missing = Object.keys(fiber.inject ?? {}).filter(name => fiber.inject[name]?.required !== false && ctx.get(name) === undefined)
      problems.push(`row "${row.id}" (${row.name}) is waiting for service${missing.length === 1 ? '' : 's'} ${missing.join(', ') || '(unknown)'} that no row provides`)
    }
  }
  return problems
}
