/**
 * better-sqlite3 is optional (#44.5): when it is not installed, or installed without a binary
 * that loads, choosing the SQLite store fails with one error saying how to get it, and the
 * default JSONL store is unaffected. The module's absence is simulated here; the packed install
 * test (src/cli/install.test.ts) installs without it for real.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { isNativeModuleFailure, SQLITE_UNAVAILABLE } from './sqlite/native.js'

afterEach(() => {
  vi.doUnmock('better-sqlite3')
  vi.resetModules()
})

/** What `apply` of the SQLite row rejects with (it fails before it touches the context). */
async function sqliteChoice(): Promise<Error> {
  const { SqlitePersistencePlugin } = await import('./plugins.js')
  const file = join(mkdtempSync(join(tmpdir(), 'dsh-sqlite-missing-')), 'sessions.db')
  return SqlitePersistencePlugin.apply({} as Context, { file }).then(() => { throw new Error('the SQLite row started') }, (error: Error) => error)
}

describe('the SQLite store without its native module (#44.5)', () => {
  it('a module that cannot be found: the error names better-sqlite3, how to install it, npm_config_nodedir and JSONL', async () => {
    vi.resetModules()
    vi.doMock('better-sqlite3', () => {
      throw Object.assign(new Error("Cannot find package 'better-sqlite3' imported from /x/dist/persistence/sqlite/backend.js"), { code: 'ERR_MODULE_NOT_FOUND' })
    })
    const error = await sqliteChoice()
    expect(error).toMatchObject({ code: SQLITE_UNAVAILABLE })
    expect(error.message).toMatch(/needs the native module better-sqlite3/)
    expect(error.message).toContain('npm install -g better-sqlite3@12')
    expect(error.message).toContain('npm_config_nodedir=')
    expect(error.message).toMatch(/JSONL files, needs nothing/)
    expect(error.message).not.toContain('\n')
  })

  it('a module installed without a binary that loads (the build failed): the same error, at the first database', async () => {
    vi.resetModules()
    vi.doMock('better-sqlite3', () => ({
      default: class {
        constructor() { throw new Error('Could not locate the bindings file. Tried:\n → /x/node_modules/better-sqlite3/build/better_sqlite3.node') }
      },
    }))
    const error = await sqliteChoice()
    expect(error).toMatchObject({ code: SQLITE_UNAVAILABLE })
    expect(error.message).toContain('(Could not locate the bindings file. Tried:)')
  })

  it('another failure (a folder that cannot be opened) is not mistaken for a missing module', async () => {
    const { SqlitePersistencePlugin } = await import('./plugins.js')
    const error = await SqlitePersistencePlugin.apply({} as Context, { file: join(mkdtempSync(join(tmpdir(), 'dsh-sqlite-missing-')), 'no', 'such', 'folder', 'x.db') })
      .then(() => undefined, (caught: Error) => caught)
    expect(error).toBeInstanceOf(Error)
    expect(error).not.toMatchObject({ code: SQLITE_UNAVAILABLE })
  })

  it('classifies the errors Node gives for a missing or unloadable native module, and only those', () => {
    expect(isNativeModuleFailure(Object.assign(new Error("Cannot find module 'better-sqlite3'"), { code: 'MODULE_NOT_FOUND' }))).toBe(true)
    expect(isNativeModuleFailure(Object.assign(new Error('x.node: invalid ELF header'), { code: 'ERR_DLOPEN_FAILED' }))).toBe(true)
    expect(isNativeModuleFailure(new Error('was compiled against a different Node.js version using NODE_MODULE_VERSION 115'))).toBe(true)
    expect(isNativeModuleFailure(Object.assign(new Error("Cannot find module 'yaml'"), { code: 'MODULE_NOT_FOUND' }))).toBe(false)
    expect(isNativeModuleFailure(new Error('unable to open database file'))).toBe(false)
  })
})
