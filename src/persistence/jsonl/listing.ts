/**
 * `list()` of the JSONL backend: every stored session's summary, through the store's list index
 * and each session's summary cache (docs/persistence.md, "summary.json" and
 * ".cache/list-index.json").
 */
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { randomUUID } from 'node:crypto'
import { dirname, join, sep } from 'node:path'
import type { StoredSessionSummary } from '../api.js'
import { checkHeader } from '../records.js'
import { lineEventCount, type StoredLine } from '../../session/chunk-rows.js'
import { isPlainObject } from '../../session/validators.js'
import { DIR_MODE, FILE_MODE, readdirOrEmptySync, readRange, readRangeSync, revisionOf } from './files.js'
import { lines, NEWLINE } from './lines.js'
import { CACHE_DIR, LIST_INDEX_FILE, SESSION_FILE, SUMMARY_FILE } from './paths.js'

/** Cache written by `list()` so later listings read only bytes appended since. */
interface SummaryCache {
  readonly size: number
  /** The 64 bytes before `size`, to notice a truncate-and-rewrite (repair) behind the cache. */
  readonly tail: string
  readonly length: number
  readonly turns: number
  readonly title: string | null
  readonly lastTurn?: string
  readonly archived?: boolean
}

/**
 * Every stored session's summary. The store keeps a list index (`.cache/list-index.json`: per
 * session folder, the D-4 revision of its log and the summary made from it), so a listing
 * stats each log once and reads only those whose revision moved since the last listing
 * (those go through `summarise`, which itself reads only the bytes appended since).
 */
export async function listStore(root: string, listed: (id: string, dir: string) => void): Promise<StoredSessionSummary[]> {
  const out: StoredSessionSummary[] = []
  const indexFile = join(root, CACHE_DIR, LIST_INDEX_FILE)
  const previous = readListIndex(indexFile)
  const next: ListIndex = { version: LIST_INDEX_VERSION, entries: {} }
  let changed = previous === undefined
  for (const project of readdirOrEmptySync(root)) {
    if (project.startsWith('.')) continue
    const projectDir = join(root, project)
    for (const entry of readdirOrEmptySync(projectDir)) {
      const key = `${project}/${entry}`
      // Plain names from readdir under a joined folder: concatenated, not normalised again
      // (two path.join calls per session were ~5 ms of listing 1,000).
      const dir = `${projectDir}${sep}${entry}`
      // Taken before the read: a write racing the listing leaves a revision that is already
      // old, so the next listing reads the session again.
      const info = statSync(`${dir}${sep}${SESSION_FILE}`, { bigint: true, throwIfNoEntry: false })
      const revision = info === undefined ? undefined : revisionOf(info)
      const known = previous?.entries[key]
      let summary: StoredSessionSummary | undefined
      if (revision !== undefined && known !== undefined && known.revision === revision) {
        summary = known.summary
      } else {
        changed = true
        // summarise is synchronous, so two lists never interleave on one summary cache.
        try {
          summary = summarise(dir)
        } catch (error) {
          summary = await unreadableSummary(dir, error)
        }
      }
      if (summary === undefined) continue
      if (summary.unreadable === undefined) {
        listed(summary.id, dir)
        if (revision !== undefined) next.entries[key] = { revision, summary }
      }
      out.push(summary)
    }
  }
  if (!changed && previous !== undefined && Object.keys(previous.entries).length !== Object.keys(next.entries).length) changed = true
  if (changed) writeListIndex(indexFile, next)
  // Ties by id in code-unit order: localeCompare's first call loads ICU collation (~20 ms).
  return out.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/**
 * Reads the header plus only the bytes appended since the cached summary. Synchronous: each
 * call is a handful of page-cache reads of a few hundred bytes, where a trip through the
 * libuv pool per read cost more than the read itself (a list of 1,000 sessions made ~10,000).
 */
function summarise(dir: string): StoredSessionSummary | undefined {
  const file = join(dir, SESSION_FILE)
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch {
    return undefined
  }
  try {
    const info = fstatSync(fd)
    let head = readRangeSync(fd, 0, Math.min(info.size, 4096))
    let headerEnd = head.indexOf(NEWLINE)
    while (headerEnd < 0 && head.length < info.size) {
      const more = readRangeSync(fd, head.length, Math.min(info.size, head.length + 65536))
      if (more.length === 0) break
      head = Buffer.concat([head, more])
      headerEnd = head.indexOf(NEWLINE)
    }
    if (headerEnd < 0) return undefined
    const header = checkHeader(JSON.parse(head.toString('utf8', 0, headerEnd)), file)
    const cache = readSummaryCacheSync(join(dir, SUMMARY_FILE), fd, info.size)
    let { length, turns, title } = cache ?? { length: 0, turns: 0, title: null as string | null }
    let lastTurn = cache?.lastTurn
    let archived = cache?.archived === true
    const from = cache?.size ?? headerEnd + 1
    const buffer = readRangeSync(fd, from, info.size)
    let end = 0
    for (const line of lines(buffer, 0, 1)) {
      if (!line.complete) break
      end = line.position + line.bytes
      let value: unknown
      try {
        value = JSON.parse(line.text)
      } catch {
        continue
      }
      if (!isPlainObject(value)) continue
      length += lineEventCount(value as unknown as StoredLine)
      if (value.type === 'turn/start') turns++, lastTurn = 'open'
      if (value.type === 'turn/end' && isPlainObject(value.data) && isPlainObject(value.data.reason) && typeof value.data.reason.kind === 'string') lastTurn = value.data.reason.kind
      if (value.type === 'session/title' && isPlainObject(value.data) && typeof value.data.title === 'string') title = value.data.title
      if (value.type === 'session/archived' && isPlainObject(value.data)) archived = value.data.archived === true
    }
    if (end > 0 || cache === undefined) {
      const size = from + end
      const tail = readRangeSync(fd, Math.max(0, size - 64), size).toString('base64')
      const next: SummaryCache = { size, tail, length, turns, title, ...(lastTurn !== undefined ? { lastTurn } : {}), ...(archived ? { archived } : {}) }
      try {
        writeFileSync(join(dir, SUMMARY_FILE), JSON.stringify(next), { mode: FILE_MODE })
      } catch {
        // The cache is optional: the next list rescans.
      }
    }
    return {
      id: header.id, title, cwd: header.cwd, parentSession: header.parentSession,
      createdAt: header.createdAt, updatedAt: Math.floor(info.mtimeMs), turns, length,
      ...(lastTurn !== undefined ? { lastTurn } : {}),
      ...(archived ? { archived } : {}),
    }
  } finally {
    closeSync(fd)
  }
}

/**
 * A stored session this runtime cannot read (a newer format version, a damaged header) is still
 * listed, with why, as long as its header names an id: it must not vanish from lists.
 */
async function unreadableSummary(dir: string, error: unknown): Promise<StoredSessionSummary | undefined> {
  try {
    const file = join(dir, SESSION_FILE)
    const handle = await open(file, 'r')
    try {
      const info = await handle.stat()
      const head = await readRange(handle, 0, Math.min(info.size, 65536))
      const end = head.indexOf(NEWLINE)
      const header: unknown = JSON.parse(head.toString('utf8', 0, end < 0 ? head.length : end))
      if (!isPlainObject(header) || typeof header.id !== 'string' || header.id === '') return undefined
      return {
        id: header.id, title: null,
        ...(typeof header.cwd === 'string' ? { cwd: header.cwd } : {}),
        // A damaged child stays attached to its parent (list_agents reports it, SA-16).
        ...(typeof header.parentSession === 'string' ? { parentSession: header.parentSession } : {}),
        createdAt: typeof header.createdAt === 'number' ? header.createdAt : Math.floor(info.mtimeMs),
        updatedAt: Math.floor(info.mtimeMs), turns: 0, length: 0,
        unreadable: error instanceof Error ? error.message : String(error),
      }
    } finally {
      await handle.close()
    }
  } catch {
    return undefined
  }
}

function readSummaryCacheSync(path: string, fd: number, fileSize: number): SummaryCache | undefined {
  try {
    const cache = JSON.parse(readFileSync(path, 'utf8')) as SummaryCache
    if (!Number.isSafeInteger(cache.size) || cache.size > fileSize) return undefined
    const tail = readRangeSync(fd, Math.max(0, cache.size - 64), cache.size)
    return tail.toString('base64') === cache.tail ? cache : undefined
  } catch {
    return undefined
  }
}

const LIST_INDEX_VERSION = 1

/** The store's list index: per `<project>/<session folder>`, the log's revision and its summary. */
interface ListIndex {
  readonly version: number
  readonly entries: Record<string, { readonly revision: string; readonly summary: StoredSessionSummary }>
}

function readListIndex(path: string): ListIndex | undefined {
  try {
    const index = JSON.parse(readFileSync(path, 'utf8')) as ListIndex
    return index.version === LIST_INDEX_VERSION && isPlainObject(index.entries) ? index : undefined
  } catch {
    return undefined
  }
}

/** Written whole under a temporary name, then renamed: a reader sees the old index or the new one. */
function writeListIndex(path: string, index: ListIndex): void {
  const temporary = `${path}.${process.pid}.${randomUUID()}.tmp`
  try {
    mkdirSync(dirname(path), { recursive: true, mode: DIR_MODE })
    writeFileSync(temporary, JSON.stringify(index), { mode: FILE_MODE })
    renameSync(temporary, path)
  } catch {
    // The index is optional (a read-only store, a full disk): the next listing reads the logs.
    try {
      unlinkSync(temporary)
    } catch {
      // Never written.
    }
  }
}
