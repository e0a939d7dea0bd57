/**
 * `list()` of the JSONL backend: every stored session's summary, through the store's list index
 * and each session's summary cache (docs/persistence.md, "summary.json" and
 * ".cache/list-index.json").
 */
import { stat as statCallback, type BigIntStats } from 'node:fs'
import { open, readFile, writeFile, type FileHandle } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { StoredSessionSummary } from '../api.js'
import { checkHeader } from '../records.js'
import { lineEventCount, type StoredLine } from '../../session/chunk-rows.js'
import { isPlainObject } from '../../session/validators.js'
import { FILE_MODE, readdirOrEmpty, readRange, revisionOf } from './files.js'
import { readListIndex, writeListIndex, type ListIndex } from './list-index.js'
import { NEWLINE, readLines } from './lines.js'
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
 * Sessions a listing works on at once (a `stat`, or a summary's reads). Every file call of a
 * listing goes through the libuv pool, which an agent's fsync shares: bounded, a listing of
 * 10,000 sessions queues at most this many calls ahead of it, and the event loop runs between
 * them (#43 item 6: the listing was synchronous and stalled every stream for its whole length).
 */
export const LIST_CONCURRENCY = 16

/** Bytes a summary reads at a time (a longer line is read whole). */
const SUMMARY_CHUNK = 1 << 16

/**
 * Every stored session's summary. The store keeps a list index (`.cache/list-index.json`: per
 * session folder, the D-4 revision of its log and the summary made from it), so a listing
 * stats each log once and reads only those whose revision moved since the last listing
 * (those go through `summarise`, which itself reads only the bytes appended since). Every file
 * call is asynchronous and at most LIST_CONCURRENCY sessions are in hand at once.
 */
export async function listStore(root: string, listed: (id: string, dir: string) => void): Promise<StoredSessionSummary[]> {
  const indexFile = join(root, CACHE_DIR, LIST_INDEX_FILE)
  const previous = await readListIndex(indexFile)
  const folders: { key: string; dir: string }[] = []
  for (const project of await readdirOrEmpty(root)) {
    if (project.startsWith('.')) continue
    const projectDir = join(root, project)
    // Plain names from readdir under a joined folder: concatenated, not normalised again
    // (two path.join calls per session were ~5 ms of listing 1,000).
    for (const entry of await readdirOrEmpty(projectDir)) folders.push({ key: `${project}/${entry}`, dir: `${projectDir}${sep}${entry}` })
  }
  const found = new Array<{ summary: StoredSessionSummary; revision: string | undefined } | undefined>(folders.length)
  let changed = previous === undefined
  await eachBounded(folders.length, LIST_CONCURRENCY, async (i) => {
    const { key, dir } = folders[i]!
    // Taken before the read: a write racing the listing leaves a revision that is already
    // old, so the next listing reads the session again.
    const info = await statOrUndefined(`${dir}${sep}${SESSION_FILE}`)
    const revision = info === undefined ? undefined : revisionOf(info)
    const known = previous?.get(key)
    if (revision !== undefined && known !== undefined && known.revision === revision) {
      found[i] = { summary: known.summary, revision }
      return
    }
    changed = true
    let summary: StoredSessionSummary | undefined
    try {
      summary = await summarise(dir)
    } catch (error) {
      summary = await unreadableSummary(dir, error)
    }
    if (summary !== undefined) found[i] = { summary, revision }
  })
  const out: StoredSessionSummary[] = []
  const next: ListIndex = new Map()
  for (let i = 0; i < folders.length; i++) {
    const entry = found[i]
    if (entry === undefined) continue
    const { summary, revision } = entry
    if (summary.unreadable === undefined) {
      listed(summary.id, folders[i]!.dir)
      if (revision !== undefined) next.set(folders[i]!.key, { revision, summary })
    }
    out.push(summary)
  }
  if (!changed && previous !== undefined && previous.size !== next.size) changed = true
  if (changed) await writeListIndex(indexFile, next)
  // Ties by id in code-unit order: localeCompare's first call loads ICU collation (~20 ms).
  return out.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/** `work(0)` .. `work(count - 1)`, at most `limit` at a time; the first failure stops the rest. */
async function eachBounded(count: number, limit: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < count) {
      try {
        await work(next++)
      } catch (error) {
        next = count
        throw error
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker))
}

/**
 * The stat of a path, undefined when it is missing. Through the callback API: 10,000 `stat`s of
 * `fs/promises` took 70-97 ms here, as many callback ones 27-58 ms (synchronous ones 26-44 ms).
 */
function statOrUndefined(path: string): Promise<BigIntStats | undefined> {
  return new Promise((resolve, reject) => {
    statCallback(path, { bigint: true }, (error, info) => {
      if (error === null) return resolve(info)
      if (error.code === 'ENOENT' || error.code === 'ENOTDIR') resolve(undefined)
      else reject(error)
    })
  })
}

/**
 * Reads the header plus only the bytes appended since the cached summary, SUMMARY_CHUNK bytes at
 * a time: a log read for the first time (or past a cache a repair made stale) is never held
 * whole, and the event loop turns between its pieces.
 */
async function summarise(dir: string): Promise<StoredSessionSummary | undefined> {
  const file = join(dir, SESSION_FILE)
  let handle: FileHandle
  try {
    handle = await open(file, 'r')
  } catch {
    return undefined
  }
  try {
    const info = await handle.stat()
    let head = await readRange(handle, 0, Math.min(info.size, 4096))
    let headerEnd = head.indexOf(NEWLINE)
    while (headerEnd < 0 && head.length < info.size) {
      const more = await readRange(handle, head.length, Math.min(info.size, head.length + SUMMARY_CHUNK))
      if (more.length === 0) break
      head = Buffer.concat([head, more])
      headerEnd = head.indexOf(NEWLINE)
    }
    if (headerEnd < 0) return undefined
    const header = checkHeader(JSON.parse(head.toString('utf8', 0, headerEnd)), file)
    const cache = await readSummaryCache(join(dir, SUMMARY_FILE), handle, info.size)
    let { length, turns, title } = cache ?? { length: 0, turns: 0, title: null as string | null }
    let lastTurn = cache?.lastTurn
    let archived = cache?.archived === true
    const from = cache?.size ?? headerEnd + 1
    let end = from
    reading: for await (const piece of readLines(handle, from, info.size, SUMMARY_CHUNK)) {
      for (const line of piece) {
        if (!line.complete) break reading
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
    }
    if (end > from || cache === undefined) {
      const tail = (await readRange(handle, Math.max(0, end - 64), end)).toString('base64')
      const next: SummaryCache = { size: end, tail, length, turns, title, ...(lastTurn !== undefined ? { lastTurn } : {}), ...(archived ? { archived } : {}) }
      // The cache is optional: when it cannot be written the next list rescans.
      await writeFile(join(dir, SUMMARY_FILE), JSON.stringify(next), { mode: FILE_MODE }).catch(() => undefined)
    }
    return {
      id: header.id, title, cwd: header.cwd, parentSession: header.parentSession,
      createdAt: header.createdAt, updatedAt: Math.floor(info.mtimeMs), turns, length,
      ...(lastTurn !== undefined ? { lastTurn } : {}),
      ...(archived ? { archived } : {}),
    }
  } finally {
    await handle.close()
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

async function readSummaryCache(path: string, handle: FileHandle, fileSize: number): Promise<SummaryCache | undefined> {
  try {
    const cache = JSON.parse(await readFile(path, 'utf8')) as SummaryCache
    if (!Number.isSafeInteger(cache.size) || cache.size > fileSize) return undefined
    const tail = await readRange(handle, Math.max(0, cache.size - 64), cache.size)
    return tail.toString('base64') === cache.tail ? cache : undefined
  } catch {
    return undefined
  }
}
