/**
 * Session ids as people type them: the lists show the first eight characters of an id
 * (`/resume`), so `--session` and `dsh sessions delete|export|repair` also take the start of a
 * stored id when no session has the id as typed.
 */
import { SessionNotStoredError, type StoredSessionSummary } from './api.js'

/** The shortest start of an id taken in place of the whole id. */
export const MIN_ID_PREFIX = 4

type Listing = { list(): Promise<readonly StoredSessionSummary[]> }

/**
 * The stored id `wanted` names: `wanted` itself when a session has that id (or when it is too
 * short to be taken as a start), else the one stored id that starts with it. Several ids starting
 * with it is an error naming them; none gives `wanted` back, for the caller's own "not stored".
 */
export async function storedId(stored: Listing, wanted: string): Promise<string> {
  if (wanted.length < MIN_ID_PREFIX) return wanted
  const ids = (await stored.list()).map(session => session.id)
  if (ids.includes(wanted)) return wanted
  const matches = ids.filter(id => id.startsWith(wanted)).sort()
  if (matches.length > 1) {
    const shown = matches.slice(0, 5).join(', ') + (matches.length > 5 ? `, … ${matches.length - 5} more` : '')
    throw new SessionNotStoredError(`session ${JSON.stringify(wanted)} is not stored, and ${matches.length} stored sessions' ids start with it (${shown}): give more of the id`, wanted)
  }
  return matches[0] ?? wanted
}

/**
 * Runs `use` on `wanted`, and when no session is stored under that id, on the stored id it is the
 * start of (`storedId`; the listing is read only then). Otherwise the original error.
 */
export async function byIdOrPrefix<T>(stored: Listing, wanted: string, use: (id: string) => Promise<T>): Promise<T> {
  try {
    return await use(wanted)
  } catch (error) {
    if (!(error instanceof SessionNotStoredError)) throw error
    const id = await storedId(stored, wanted)
    if (id === wanted) throw error
    return use(id)
  }
}
