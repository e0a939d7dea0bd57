/**
 * Composition rows for persistence: each builds a backend from plain config and loads the
 * persistence service over it, so a profile can choose JSONL or SQLite with one row.
 */
import type { Context } from 'cordis'
import { JsonlBackend } from './jsonl/backend.js'
import { SessionPersistence } from './service.js'

export interface JsonlPersistenceConfig {
  /** Sessions root (from the command line: `$DSH_HOME/sessions`). */
  readonly root: string
  readonly maxDelayMs?: number
  readonly packed?: boolean
  /** How long the final save of a run retries a failing store (default 15 s). */
  readonly retryMs?: number
}

export const JsonlPersistencePlugin = {
  name: 'persistence-jsonl',
  inject: ['sessions'],
  apply(ctx: Context, config: JsonlPersistenceConfig) {
    if (typeof config?.root !== 'string' || config.root === '') throw new TypeError('persistence-jsonl: config.root must name the sessions folder')
    const backend = new JsonlBackend({ root: config.root, ...(config.packed !== undefined ? { packed: config.packed } : {}) })
    ctx.plugin(SessionPersistence, { backend, ...serviceConfig(config) })
  },
}

export interface SqlitePersistenceConfig {
  /** Database file (from the command line: `$DSH_HOME/sessions.db`). */
  readonly file: string
  readonly maxDelayMs?: number
  readonly packed?: boolean
  /** How long the final save of a run retries a failing store (default 15 s). */
  readonly retryMs?: number
  /** How long one operation waits for another process's lock on the file (default 5 s). */
  readonly busyTimeoutMs?: number
}

export const SqlitePersistencePlugin = {
  name: 'persistence-sqlite',
  inject: ['sessions'],
  async apply(ctx: Context, config: SqlitePersistenceConfig) {
    if (typeof config?.file !== 'string' || config.file === '') throw new TypeError('persistence-sqlite: config.file must name the database file')
    // better-sqlite3 is a native module and an optional dependency: imported only when a profile
    // chooses SQLite; missing or unbuilt, the choice fails with how to get it (sqlite/native.ts).
    // Its binary loads with the first database, so both steps are guarded.
    let backend: InstanceType<typeof import('./sqlite/backend.js').SqliteBackend>
    try {
      const { SqliteBackend } = await import('./sqlite/backend.js')
      backend = new SqliteBackend({
        file: config.file,
        ...(config.packed !== undefined ? { packed: config.packed } : {}),
        ...(config.busyTimeoutMs !== undefined ? { busyTimeoutMs: config.busyTimeoutMs } : {}),
      })
    } catch (error) {
      const { isNativeModuleFailure, sqliteUnavailable } = await import('./sqlite/native.js')
      throw isNativeModuleFailure(error) ? sqliteUnavailable(error) : error
    }
    ctx.plugin(SessionPersistence, { backend, ...serviceConfig(config) })
  },
}

export interface PostgresPersistenceConfig {
  /** `postgres://user@host/database[?schema=NAME]` (from `--store`, DSH_STORE_URL or settings `store:`). */
  readonly url: string
  readonly schema?: string
  readonly maxDelayMs?: number
  readonly packed?: boolean
  /** Writer lease time to live (default 30 s). */
  readonly leaseTtlMs?: number
  readonly poolSize?: number
  /** How long the final save of a run retries a failing store (default 15 s). */
  readonly retryMs?: number
}

export const PostgresPersistencePlugin = {
  name: 'persistence-postgres',
  inject: ['sessions'],
  async apply(ctx: Context, config: PostgresPersistenceConfig) {
    if (typeof config?.url !== 'string' || config.url === '') throw new TypeError('persistence-postgres: config.url must be a postgres:// URL')
    const { PostgresBackend } = await import('./postgres/backend.js')
    const backend = new PostgresBackend({
      url: config.url,
      ...(config.schema !== undefined ? { schema: config.schema } : {}),
      ...(config.packed !== undefined ? { packed: config.packed } : {}),
      ...(config.leaseTtlMs !== undefined ? { leaseTtlMs: config.leaseTtlMs } : {}),
      ...(config.poolSize !== undefined ? { poolSize: config.poolSize } : {}),
    })
    // Fail at start-up, with the reason, when the server or the schema is not usable.
    try {
      await backend.open()
    } catch (error) {
      await backend.close().catch(() => undefined)
      throw error
    }
    ctx.plugin(SessionPersistence, { backend, ...serviceConfig(config) })
  },
}

/** What every persistence row passes on to the service. */
function serviceConfig(config: { readonly maxDelayMs?: number; readonly retryMs?: number }): { maxDelayMs?: number; retryMs?: number } {
  return {
    ...(config.maxDelayMs !== undefined ? { maxDelayMs: config.maxDelayMs } : {}),
    ...(config.retryMs !== undefined ? { retryMs: config.retryMs } : {}),
  }
}
