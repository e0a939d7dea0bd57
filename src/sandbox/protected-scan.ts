/**
 * Which folders of a writable root hold a protected name (`.git`, `.claude`, `.codex`, `.dsh`,
 * `.mcp.json`): a breadth-first walk of the root, bounded so a huge tree cannot stall a command
 * (docs/security.md, "Protected paths"). It runs each time a confined command's argv is prepared
 * (`protectedMounts`), so what one command makes is protected from the next.
 *
 * - **Bounds**: folders at most `depth` below the top are read, and the walk stops once it has
 *   seen `entries` names; `complete` says whether it got through. Shallow folders come first, so a
 *   tree that runs past a bound loses its deepest folders, never the top. Links are not followed,
 *   and a protected folder is not walked into (its own rules cover it).
 * - **Cache**: a folder's names are kept with its inode and ctime, and read again only when those
 *   change (an entry made, removed or renamed in it changes the ctime; unlike the mtime no
 *   command can set it back), so an unchanged tree costs one `lstat` per folder. A folder whose
 *   ctime is less than `RACY_MS` old when read is read again next time: a change in the same
 *   clock tick as the read would leave its ctime as it was.
 */
import { lstatSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

export interface ScanLimits {
  /** How far below the top folders are read (the top is 0). */
  readonly depth: number
  /** How many names the walk may see before it stops. */
  readonly entries: number
}

export const SCAN_LIMITS: ScanLimits = { depth: 8, entries: 50_000 }

/** How recent a folder's ctime must be for its reading not to be kept (see above). */
export const RACY_MS = 1000

/** Kept folders before the cache starts over (bounded memory across many roots). */
const MAX_RECORDS = 200_000

interface FolderRecord {
  readonly ino: number
  readonly ctimeMs: number
  /** Whether it may be used without reading the folder again. */
  readonly settled: boolean
  /** It holds one of the protected names. */
  readonly holds: boolean
  readonly names: number
  /** Its subfolders to walk (no links, no protected names). */
  readonly folders: readonly string[]
}

export interface ScanResult {
  /** The folders that hold a protected name, the top first, shallow before deep. */
  readonly folders: readonly string[]
  /** False when a bound stopped the walk before every folder was read. */
  readonly complete: boolean
  /** How many folders were read (not taken from the cache) in this walk. */
  readonly read: number
}

export class ProtectedScan {
  private readonly records = new Map<string, FolderRecord>()

  constructor(
    private readonly names: ReadonlySet<string>,
    private readonly limits: ScanLimits = SCAN_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The folders of `root` (a real path) holding a protected name; `skip` folders are not walked. */
  scan(root: string, skip: (folder: string) => boolean = () => false): ScanResult {
    if (this.records.size > MAX_RECORDS) this.records.clear()
    const found: string[] = []
    let level = [root]
    let seen = 0
    let read = 0
    for (let depth = 0; level.length > 0; depth++) {
      const next: string[] = []
      for (const folder of level) {
        if (seen >= this.limits.entries) return { folders: found, complete: false, read }
        const kept = this.records.get(folder)
        const record = this.record(folder, kept)
        if (record === undefined) continue
        if (record !== kept) read++
        seen += record.names
        if (record.holds) found.push(folder)
        for (const child of record.folders) if (!skip(child)) next.push(child)
      }
      if (depth >= this.limits.depth) return { folders: found, complete: next.length === 0, read }
      level = next
    }
    return { folders: found, complete: true, read }
  }

  /** The folder's record, from the cache while its inode and ctime are unchanged. */
  private record(folder: string, kept: FolderRecord | undefined): FolderRecord | undefined {
    let ino: number
    let ctimeMs: number
    try {
      const info = lstatSync(folder)
      if (!info.isDirectory()) return undefined
      ino = info.ino
      ctimeMs = info.ctimeMs
    } catch {
      return undefined
    }
    if (kept !== undefined && kept.settled && kept.ino === ino && kept.ctimeMs === ctimeMs) return kept
    let entries
    try {
      entries = readdirSync(folder, { withFileTypes: true })
    } catch {
      this.records.delete(folder)
      return undefined
    }
    let holds = false
    const folders: string[] = []
    for (const entry of entries) {
      if (this.names.has(entry.name)) holds = true
      else if (entry.isDirectory()) folders.push(join(folder, entry.name))
    }
    const record: FolderRecord = { ino, ctimeMs, settled: this.now() - ctimeMs >= RACY_MS, holds, names: entries.length, folders }
    this.records.set(folder, record)
    return record
  }
}
