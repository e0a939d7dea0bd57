/**
 * The read ledger behind the read-before-write rule: which version of which file each session
 * has read. `read` records; `write` and `edit` check and then record the version they wrote, so
 * a model may keep editing its own result without re-reading, but never overwrites a file it has
 * not seen or that changed under it.
 *
 * A version is the file's size and SHA-256 of its bytes. A hash (not mtime) because file
 * timestamps are coarse: a same-size rewrite in the same clock tick keeps the mtime.
 *
 * Keyed by session id, so it survives a session object being rebuilt (hydrate) in the same
 * process; calls without a session share the key `''`. It is a service (`ctx.readLedger`) so
 * each app instance has its own and tests can inspect it.
 */
import { createHash } from 'node:crypto'
import { Context, Service } from 'cordis'
import type { ToolContext } from '../api.js'
import { BuiltinErrorCode, FsError } from './errors.js'

export interface FileVersion {
  readonly size: number
  readonly sha256: string
}

export function versionOf(content: Uint8Array): FileVersion {
  return { size: content.length, sha256: createHash('sha256').update(content).digest('hex') }
}

export function ledgerKey(context: Pick<ToolContext, 'session'>): string {
  return context.session?.id ?? ''
}

/** What the file tools need from a ledger (the service below, or any stand-in). */
export interface FileObservations {
  record(sessionKey: string, path: string, version: FileVersion): void
  assertObserved(sessionKey: string, path: string, current: Uint8Array, verb: string): void
}

export class ReadLedger extends Service implements FileObservations {
  private readonly sessions = new Map<string, Map<string, FileVersion>>()

  constructor(ctx: Context) {
    super(ctx, 'readLedger')
  }

  record(sessionKey: string, path: string, version: FileVersion): void {
    let files = this.sessions.get(sessionKey)
    if (!files) this.sessions.set(sessionKey, files = new Map())
    files.set(path, version)
  }

  lookup(sessionKey: string, path: string): FileVersion | undefined {
    return this.sessions.get(sessionKey)?.get(path)
  }

  /** Drops what a session has read (e.g. when it is closed). */
  forget(sessionKey: string): void {
    this.sessions.delete(sessionKey)
  }

  /**
   * Throws unless `current` (the bytes now on disk at `path`) is the version this session last
   * read or wrote. `verb` names the tool in the message.
   */
  assertObserved(sessionKey: string, path: string, current: Uint8Array, verb: string): void {
    const seen = this.lookup(sessionKey, path)
    if (!seen) {
      throw new FsError(`${verb} requires reading "${path}" first: read the file, then retry`, BuiltinErrorCode.notObserved)
    }
    const now = versionOf(current)
    if (now.size !== seen.size || now.sha256 !== seen.sha256) {
      throw new FsError(`"${path}" changed since it was last read: read it again, then retry`, BuiltinErrorCode.stale)
    }
  }
}

declare module 'cordis' {
  interface Context {
    readLedger: ReadLedger
  }
}
