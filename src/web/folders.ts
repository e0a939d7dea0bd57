/**
 * Workspace methods of `dsh web`: the folder picker (`folders.list`, `folders.recent`) and
 * archiving sessions (`sessions.archive`, the `session/archived` event).
 *
 * `folders.list` lists the subfolders of one folder of the server's machine. The server can run
 * commands anyway, so this is no new power; it is made safe against surprises: only absolute
 * paths (or `~/...`), no `.`/`..` segments, no control characters, the real path (symlinks
 * resolved) is what is listed and answered, hidden folders only on request, a bounded listing.
 */
import { readdir, realpath, stat } from 'node:fs/promises'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, sep } from 'node:path'
import type { Context } from 'cordis'
import type { Session } from '../session/api.js'
import type { SessionEvent } from '../session/types.js'
import { WebApiError, type WebMethod } from './api.js'
import '../persistence/api.js'
import '../session/api.js'

/** Entries returned by one `folders.list` at most (the rest is reported as `truncated`). */
export const MAX_FOLDER_ENTRIES = 500
const MAX_PATH = 4096

export interface FolderListing {
  /** The real path listed (symlinks resolved). */
  readonly path: string
  /** Its parent, null at the file-system root. */
  readonly parent: string | null
  readonly home: string
  readonly folders: readonly { readonly name: string; readonly path: string; readonly hidden: boolean }[]
  readonly truncated: boolean
}

/**
 * Checks a requested folder path and makes it absolute: `~` and `~/...` name the home folder,
 * anything else must already be absolute and normalised. Throws `400 BAD_PATH` with the reason.
 */
export function checkFolderPath(given: string, home = homedir()): string {
  if (given.length > MAX_PATH) throw new WebApiError(400, 'BAD_PATH', `the path is longer than ${MAX_PATH} characters`)
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(given)) throw new WebApiError(400, 'BAD_PATH', 'the path contains control characters')
  const expanded = given === '~' ? home : given.startsWith('~/') ? join(home, given.slice(2)) : given
  if (!isAbsolute(expanded)) throw new WebApiError(400, 'BAD_PATH', `"${given}" is not an absolute path (start with / or ~/)`)
  const segments = expanded.split(/[\\/]+/)
  if (segments.some(segment => segment === '.' || segment === '..')) {
    throw new WebApiError(400, 'BAD_PATH', `"${given}" contains . or .. segments; name the folder directly`)
  }
  return expanded.length > 1 ? expanded.replace(/[\\/]+$/, '') : expanded
}

/** The subfolders of `given` (see the module comment for what is refused). */
export async function listFolders(given: string, options: { hidden?: boolean; home?: string } = {}): Promise<FolderListing> {
  const home = options.home ?? homedir()
  const requested = checkFolderPath(given, home)
  let path: string
  try {
    path = await realpath(requested)
    if (!(await stat(path)).isDirectory()) throw new WebApiError(400, 'BAD_PATH', `"${requested}" is not a folder`)
  } catch (error) {
    if (error instanceof WebApiError) throw error
    throw new WebApiError(400, 'BAD_PATH', `"${requested}" is not an existing folder`)
  }
  let entries
  try {
    entries = await readdir(path, { withFileTypes: true })
  } catch (error) {
    throw new WebApiError(400, 'BAD_PATH', `cannot read "${path}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  const folders: { name: string; path: string; hidden: boolean }[] = []
  for (const entry of entries) {
    const hidden = entry.name.startsWith('.')
    if (hidden && options.hidden !== true) continue
    let folder = entry.isDirectory()
    if (!folder && entry.isSymbolicLink()) folder = await stat(join(path, entry.name)).then(info => info.isDirectory(), () => false)
    if (folder) folders.push({ name: entry.name, path: join(path, entry.name), hidden })
  }
  folders.sort((a, b) => a.name.localeCompare(b.name, undefined, { sensitivity: 'base' }))
  const parent = dirname(path)
  return {
    path,
    parent: parent === path || path === sep ? null : parent,
    home,
    folders: folders.slice(0, MAX_FOLDER_ENTRIES),
    truncated: folders.length > MAX_FOLDER_ENTRIES,
  }
}

/** Whether a session is archived: the last `session/archived` event says so. Cached per session, O(new events). */
const archivedCache = new WeakMap<Session, { scanned: number; archived: boolean }>()

export function archivedOf(session: Session): boolean {
  let entry = archivedCache.get(session)
  if (entry === undefined) archivedCache.set(session, entry = { scanned: 0, archived: false })
  const events = session.events
  for (; entry.scanned < events.length; entry.scanned++) {
    const event = events[entry.scanned]!
    if (event.type === 'session/archived') entry.archived = (event.data as { archived?: unknown }).archived === true
  }
  return entry.archived
}

/** The same fold over a stored log read as it is. */
export function archivedIn(events: readonly SessionEvent[]): boolean {
  let archived = false
  for (const event of events) if (event.type === 'session/archived') archived = (event.data as { archived?: unknown }).archived === true
  return archived
}

export interface WorkspaceMethodsHost {
  register(name: string, method: WebMethod): () => void
  session(id: string): Promise<Session>
  summary(session: Session): unknown
}

/**
 * Registers `folders.list`, `folders.recent` and `sessions.archive` on the web api (effects of
 * the web-api plugin, like its other methods).
 */
export function registerWorkspaceMethods(root: Context, api: WorkspaceMethodsHost, defaultCwd: () => string | undefined): void {
  root.sessions.registerEventType({
    type: 'session/archived',
    owner: 'web-api',
    validate: data => data !== null && typeof data === 'object' && !Array.isArray(data) && typeof (data as { archived?: unknown }).archived === 'boolean'
      && Object.keys(data).every(key => key === 'archived') ? null : 'data must be {archived: boolean}',
  })

  api.register('folders.list', async params => {
    const path = params.path === undefined || params.path === null || params.path === '' ? defaultCwd() ?? homedir() : params.path
    if (typeof path !== 'string') throw new WebApiError(400, 'BAD_PARAMS', '"path" must be a string')
    if (params.hidden !== undefined && typeof params.hidden !== 'boolean') throw new WebApiError(400, 'BAD_PARAMS', '"hidden" must be true or false')
    return listFolders(path, { hidden: params.hidden === true })
  })

  api.register('folders.recent', async () => {
    const seen = new Set<string>()
    const folders: { path: string; lastUsed: number }[] = []
    const summaries = [...await root.sessionPersistence.list()]
    for (const session of root.sessions.list()) {
      const last = session.events.at(-1)
      summaries.push({ id: session.id, title: null, cwd: session.header.cwd, createdAt: session.header.createdAt, updatedAt: last?.time ?? session.header.createdAt, turns: session.position.turn, length: session.length })
    }
    summaries.sort((a, b) => b.updatedAt - a.updatedAt)
    for (const summary of summaries) {
      if (summary.cwd === undefined || seen.has(summary.cwd) || summary.turns === 0) continue
      seen.add(summary.cwd)
      // Folders that are gone are not offered.
      if (!await stat(summary.cwd).then(info => info.isDirectory(), () => false)) continue
      folders.push({ path: summary.cwd, lastUsed: summary.updatedAt })
      if (folders.length === 10) break
    }
    return { folders }
  })

  api.register('sessions.archive', async params => {
    if (typeof params.id !== 'string' || params.id === '') throw new WebApiError(400, 'BAD_PARAMS', '"id" must be a non-empty string')
    const archived = params.archived === undefined ? true : params.archived
    if (typeof archived !== 'boolean') throw new WebApiError(400, 'BAD_PARAMS', '"archived" must be true or false')
    const session = await api.session(params.id)
    if (archivedOf(session) !== archived) session.append('session/archived', { archived })
    return api.summary(session)
  })
}
