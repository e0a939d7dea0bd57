/**
 * The store's list index (`.cache/list-index.json`, docs/persistence.md): per
 * `<project>/<session folder>`, the D-4 revision its log had and the summary `list()` made from
 * it. One line per session after a version line, so it is parsed and written a slice of lines at
 * a time with the event loop turning in between: a store of 10,000 sessions has a 2.5 MB index,
 * whose single `JSON.parse` held the loop ~15-20 ms.
 */
import { randomUUID } from 'node:crypto'
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { StoredSessionSummary } from '../api.js'
import { isPlainObject } from '../../session/validators.js'
import { DIR_MODE, FILE_MODE } from './files.js'

/** 2: a version line, then `[key, revision, summary]` per line (1 was one JSON object). */
const LIST_INDEX_VERSION = 2
/** Lines parsed or encoded between two turns of the event loop (~1 ms). */
const SLICE = 500

export interface IndexEntry {
  readonly revision: string
  readonly summary: StoredSessionSummary
}

/** `<project>/<session folder>` -> its entry. */
export type ListIndex = Map<string, IndexEntry>

const turnOfTheLoop = () => new Promise<void>(resolve => setImmediate(resolve))

/** The index, or undefined when there is none or it is damaged or of another version. */
export async function readListIndex(path: string): Promise<ListIndex | undefined> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    return undefined
  }
  const lines = text.split('\n')
  // Written whole and renamed into place: anything not ending in a newline is damaged.
  if (lines.pop() !== '') return undefined
  try {
    const version: unknown = JSON.parse(lines[0] ?? '')
    if (!isPlainObject(version) || version.version !== LIST_INDEX_VERSION) return undefined
    const index: ListIndex = new Map()
    for (let at = 1; at < lines.length; at += SLICE) {
      if (at > 1) await turnOfTheLoop()
      for (const line of lines.slice(at, at + SLICE)) {
        const entry: unknown = JSON.parse(line)
        if (!Array.isArray(entry) || typeof entry[0] !== 'string' || typeof entry[1] !== 'string' || !isPlainObject(entry[2])) return undefined
        index.set(entry[0], { revision: entry[1], summary: entry[2] as unknown as StoredSessionSummary })
      }
    }
    return index
  } catch {
    return undefined
  }
}

/** Written under a temporary name, then renamed: a reader sees the old index or the new one. */
export async function writeListIndex(path: string, index: ListIndex): Promise<void> {
  const temporary = `${path}.${process.pid}.${randomUUID()}.tmp`
  try {
    await mkdir(dirname(path), { recursive: true, mode: DIR_MODE })
    const handle = await open(temporary, 'w', FILE_MODE)
    try {
      await handle.write(`${JSON.stringify({ version: LIST_INDEX_VERSION })}\n`)
      let slice: string[] = []
      for (const [key, { revision, summary }] of index) {
        slice.push(JSON.stringify([key, revision, summary]))
        if (slice.length === SLICE) {
          await handle.write(`${slice.join('\n')}\n`)
          slice = []
        }
      }
      if (slice.length > 0) await handle.write(`${slice.join('\n')}\n`)
    } finally {
      await handle.close()
    }
    await rename(temporary, path)
  } catch {
    // The index is optional (a read-only store, a full disk): the next listing reads the logs.
    await unlink(temporary).catch(() => undefined)
  }
}
