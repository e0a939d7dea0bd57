/**
 * JSONL layout (D-4): `<root>/<project-key(cwd)>/<encoded id>/session.jsonl`.
 * Both path segments are built so that no id or cwd can name `..`, contain a separator or
 * collide with the bookkeeping folders (which start with a dot).
 */
import { createHash } from 'node:crypto'

export const NO_CWD_KEY = '_no-cwd'
export const SESSION_FILE = 'session.jsonl'
export const SUMMARY_FILE = 'summary.json'
/** Caches of the store (a folder, like the other bookkeeping entries at the root). */
export const CACHE_DIR = '.cache'
/** The store's list index, in CACHE_DIR (listing.ts `listStore`). */
export const LIST_INDEX_FILE = 'list-index.json'
export const TRASH_DIR = '.trash'
/** Writer locks, one file per session: `<encoded id>.lock`. */
export const LOCKS_DIR = '.locks'

const MAX_SEGMENT = 120

/** A readable, collision-free folder name for a cwd: sanitised basename + hash of the full path. */
export function projectKey(cwd: string | undefined): string {
  if (cwd === undefined) return NO_CWD_KEY
  const base = cwd.split(/[\\/]/).filter(Boolean).pop() ?? ''
  const readable = base.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40) || 'root'
  return `${readable}-${sha256(cwd).slice(0, 16)}`
}

/**
 * Session id -> folder name. Keeps [A-Za-z0-9_-] and non-leading dots, percent-encodes every
 * other UTF-8 byte, so `.`, `..` and `a/b` map to `%2E`, `%2E.` and `a%2Fb`. Over-long results
 * are shortened with a hash suffix (the header keeps the real id).
 */
export function encodeSessionId(id: string): string {
  if (id === '') throw new Error('session id must not be empty')
  let out = ''
  for (const byte of Buffer.from(id, 'utf8')) {
    const char = String.fromCharCode(byte)
    if (/[A-Za-z0-9_-]/.test(char) || (char === '.' && out !== '')) out += char
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out.length <= MAX_SEGMENT ? out : `${out.slice(0, MAX_SEGMENT - 34)}~${sha256(id).slice(0, 32)}`
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}
