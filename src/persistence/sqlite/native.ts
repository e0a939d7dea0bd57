/**
 * better-sqlite3 is an optional dependency: a native module, built at install time from a prebuilt
 * binary or from source. When neither worked the install still succeeds without it, JSONL (the
 * default store) needs nothing, and choosing SQLite fails here with one error saying how to get
 * the module. Imported by the persistence-sqlite row only.
 */

/** The code of every error this module turns into `SqliteUnavailableError`. */
export const SQLITE_UNAVAILABLE = 'SQLITE_UNAVAILABLE'

export class SqliteUnavailableError extends Error {
  readonly code = SQLITE_UNAVAILABLE
}

/**
 * Whether `error`, thrown while importing the SQLite backend or opening its first database, says
 * the native module is absent or cannot load (not installed, not built, built for another Node).
 */
export function isNativeModuleFailure(error: unknown): boolean {
  // A loader may wrap the failure (a module runner, a bundler's shim): its cause then tells.
  for (let level: unknown = error, depth = 0; level !== undefined && depth < 4; level = (level as { cause?: unknown }).cause, depth++) {
    if (failedToLoad(level)) return true
  }
  return false
}

function failedToLoad(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code
  const message = error instanceof Error ? error.message : String(error)
  if (code === 'ERR_DLOPEN_FAILED') return true
  if ((code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') && /better-sqlite3|bindings/.test(message)) return true
  return /Could not locate the bindings file|better_sqlite3\.node|NODE_MODULE_VERSION/.test(message)
}

/** The error a SQLite choice fails with when the module is missing: what happened and how to get it. */
export function sqliteUnavailable(cause: unknown): SqliteUnavailableError {
  let reason = cause
  while (reason instanceof Error && reason.cause !== undefined && !failedToLoad(reason)) reason = reason.cause
  const why = (reason instanceof Error ? reason.message : String(reason)).split('\n', 1)[0]
  return new SqliteUnavailableError(
    `the SQLite store needs the native module better-sqlite3, which is not installed or not built for Node ${process.version} (${why}). ` +
    'Install it where dsh finds it: `npm install -g better-sqlite3@12` beside a global dsh, `npm install better-sqlite3@12` in a project ' +
    'that depends on dsh, `npm ci` in a clone. It downloads a prebuilt binary, else compiles (a C++ toolchain and Node\'s headers; ' +
    'offline, npm_config_nodedir=DIR names the headers: npm_config_nodedir=/usr when /usr/include/node exists). ' +
    'The default store, JSONL files, needs nothing: drop the persistence-sqlite row to use it.',
    { cause },
  )
}
