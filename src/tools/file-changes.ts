/**
 * The files a stretch of a session changed through `write` and `edit`, read back from the log,
 * and putting them back as they were. Each successful call's result `meta` holds what is needed:
 * `edit` the unified diff of its change, `write` either `created: true` with the new file's size
 * or the diff of the overwrite (left out above `maxMetaDiffChars`, and for binary files). Putting
 * a file back applies its diffs in reverse, newest first; a diff that no longer applies means the
 * file changed since (by hand, by bash, by another tool), and that file is left as it is. A file
 * a `write` created is removed when it still has the size it was written with. Only files inside
 * the session's folder are touched. Commands (`bash`) and other tools may have changed files
 * too: they are counted, not undone.
 */
import { createRequire } from 'node:module'
import { lstat, readFile, realpath, unlink, writeFile } from 'node:fs/promises'
import { dirname, isAbsolute, relative, sep } from 'node:path'
import type { SessionEvent } from '../session/types.js'
import { scanEvents } from '../session/packed-run.js'

export type FileChange =
  | { readonly seq: number; readonly path: string; readonly kind: 'created'; readonly bytes: number }
  | { readonly seq: number; readonly path: string; readonly kind: 'patched'; readonly diff: string }
  /** A change the log cannot undo (a diff too large to keep, a binary file). */
  | { readonly seq: number; readonly path: string; readonly kind: 'untracked' }

export interface FileChanges {
  /** `write` and `edit` changes after the boundary, in log order. */
  readonly changes: readonly FileChange[]
  /** The files they touched, in the order first touched. */
  readonly paths: readonly string[]
  /** Successful calls of other tools that may have changed files (`bash` and the rest), by name. */
  readonly otherCalls: ReadonlyMap<string, number>
}

const MARKS: ReadonlySet<string> = new Set(['tool/call', 'tool/result'])
/** Tools whose result meta records their change (`str_replace_editor` writes it as write and edit do). */
const WRITERS: ReadonlySet<string> = new Set(['write', 'edit', 'str_replace_editor'])
/** Tools that only read (their calls are not counted as possible changes). */
const READERS = new Set(['read', 'glob', 'grep', 'web_fetch', 'session_event_read', 'todo_write', 'read_image', 'job_output', 'job_list', 'ask_user_question'])

/** The changes of every tool result after seq `boundary` (exclusive). */
export function fileChangesAfter(events: readonly SessionEvent[], boundary: number): FileChanges {
  const names = new Map<string, string>()
  const changes: FileChange[] = []
  const paths: string[] = []
  const otherCalls = new Map<string, number>()
  scanEvents(events, boundary + 1, MARKS, event => {
    if (event.type === 'tool/call') {
      const data = event.data as { callId: string; name: string }
      names.set(data.callId, data.name)
      return
    }
    const data = event.data as { message: { content: readonly { toolCallId: string; isError: boolean }[] }; meta?: unknown }
    const block = data.message.content[0]
    const name = block === undefined ? undefined : names.get(block.toolCallId)
    if (block === undefined || block.isError || name === undefined) return
    if (!WRITERS.has(name)) {
      if (!READERS.has(name)) otherCalls.set(name, (otherCalls.get(name) ?? 0) + 1)
      return
    }
    const meta = (data.meta ?? {}) as { path?: unknown; created?: unknown; bytes?: unknown; diff?: unknown }
    if (typeof meta.path !== 'string') return
    const path = meta.path
    if (!paths.includes(path)) paths.push(path)
    if (meta.created === true && typeof meta.bytes === 'number') changes.push({ seq: event.seq, path, kind: 'created', bytes: meta.bytes })
    else if (typeof meta.diff === 'string' && meta.diff !== '') changes.push({ seq: event.seq, path, kind: 'patched', diff: meta.diff })
    else changes.push({ seq: event.seq, path, kind: 'untracked' })
  })
  return { changes, paths, otherCalls }
}

export interface RestoreOutcome {
  /** Files put back to their content before the changes. */
  readonly restored: readonly string[]
  /** Files a `write` had created, removed again. */
  readonly removed: readonly string[]
  /** Files left as they are, and why. */
  readonly kept: readonly { readonly path: string; readonly why: string }[]
}

/**
 * What going back to before `turn` did to the files, as the conversation says it (the terminal
 * app and the web show the same lines): one line for what was put back and removed, one warning
 * per file left as it is. `name` shows a path (relative to the session's folder).
 */
export function restoreLines(turn: number, outcome: RestoreOutcome, name: (path: string) => string): { level: 'info' | 'warning'; text: string }[] {
  const done = [
    ...outcome.restored.length > 0 ? [`put back ${outcome.restored.map(name).join(', ')}`] : [],
    ...outcome.removed.length > 0 ? [`removed ${outcome.removed.map(name).join(', ')} (written since)`] : [],
  ]
  return [
    ...done.length > 0 ? [{ level: 'info' as const, text: `Files as they were before turn ${turn}: ${done.join('; ')}.` }] : [],
    ...outcome.kept.map(({ path, why }) => ({ level: 'warning' as const, text: `Left ${name(path)} as it is: ${why}.` })),
  ]
}

let diffModule: typeof import('diff') | undefined

/**
 * Puts the files of `changes` back as they were before the first of them, each file on its own:
 * its changes undone newest first, in memory, and the result written once (or the file removed)
 * only when every one of them could be undone. `root`: the session's folder; paths outside it
 * are kept.
 */
export async function restoreFiles(changes: readonly FileChange[], root: string): Promise<RestoreOutcome> {
  diffModule ??= createRequire(import.meta.url)('diff') as typeof import('diff')
  const diff = diffModule
  const restored: string[] = []
  const removed: string[] = []
  const kept: { path: string; why: string }[] = []
  const byPath = new Map<string, FileChange[]>()
  for (const change of changes) byPath.set(change.path, [...byPath.get(change.path) ?? [], change])
  const realRoot = await realpath(root).catch(() => undefined)
  for (const [path, list] of byPath) {
    const outside = await outsideOf(realRoot, root, path)
    if (outside !== undefined) {
      kept.push({ path, why: outside })
      continue
    }
    let text: string | undefined
    try {
      text = await readFile(path, 'utf8')
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'ENOENT') {
        kept.push({ path, why: (error as Error).message })
        continue
      }
    }
    let why: string | undefined
    for (let i = list.length - 1; i >= 0 && why === undefined; i--) {
      const change = list[i]
      if (change.kind === 'untracked') why = 'a change to it is not in the log (too large, or binary)'
      else if (text === undefined) why = 'it was deleted since'
      else if (change.kind === 'created') {
        if (Buffer.byteLength(text) !== change.bytes) why = 'it changed since it was written'
        else text = undefined
      } else {
        let reversed: import('diff').StructuredPatch | undefined
        try {
          const patches = diff.parsePatch(change.diff)
          if (patches.length === 1) reversed = diff.reversePatch(patches[0]) as import('diff').StructuredPatch
        } catch {
          // A diff the log holds but that does not parse (a damaged or hand-made log).
        }
        if (reversed === undefined) why = 'its change in the log cannot be read'
        else {
          // Only where the change was: the library would also try the hunk at other lines.
          const undone = fitsInPlace(text, reversed) ? diff.applyPatch(text, reversed) : false
          if (undone === false) why = 'it changed since'
          else text = undone
        }
      }
    }
    if (why !== undefined) {
      kept.push({ path, why })
      continue
    }
    try {
      if (text === undefined) {
        await unlink(path)
        removed.push(path)
      } else {
        await writeFile(path, text)
        restored.push(path)
      }
    } catch (error) {
      kept.push({ path, why: (error as Error).message })
    }
  }
  return { restored, removed, kept }
}

/**
 * Why `path` is not to be touched, or undefined: it must lie in the session folder as written
 * and once links are resolved (its folder's real path inside the folder's), and not be a link
 * itself, so a link swapped in since cannot send the write elsewhere.
 */
async function outsideOf(realRoot: string | undefined, root: string, path: string): Promise<string | undefined> {
  if (!isAbsolute(path) || !within(root, path)) return 'outside the session folder'
  if (realRoot === undefined) return 'the session folder is gone'
  const folder = await realpath(dirname(path)).catch(() => undefined)
  if (folder === undefined) return 'its folder is gone'
  if (folder !== realRoot && !within(realRoot, folder)) return 'its folder leads outside the session folder'
  const stat = await lstat(path).catch(() => undefined)
  if (stat !== undefined && !stat.isFile()) return stat.isSymbolicLink() ? 'it is a link now' : 'it is not a file now'
  return undefined
}

function within(root: string, path: string): boolean {
  const inside = relative(root, path)
  return inside !== '' && inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside)
}

/** Whether every hunk's old lines stand exactly where the hunk says, in `text`. */
function fitsInPlace(text: string, patch: { readonly hunks: readonly { readonly oldStart: number; readonly lines: readonly string[] }[] }): boolean {
  const lines = text.split('\n')
  for (const hunk of patch.hunks) {
    const expected = hunk.lines.filter(line => line[0] === ' ' || line[0] === '-').map(line => line.slice(1))
    for (let i = 0; i < expected.length; i++) if (lines[hunk.oldStart - 1 + i] !== expected[i]) return false
  }
  return true
}
