/**
 * Which endpoints each stored key has been sent to, so the first use of a stored key with a new
 * endpoint is asked (the terminal app) or said (one line), never silent (docs/security.md, "The
 * project .env"). Kept in
 * `$DSH_HOME/key-endpoints.json` (0600) as `{"<first 16 hex of the key's SHA-256>": [url, ...]}`:
 * never the key itself.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic } from './home.js'

export const KEY_ENDPOINTS_FILE = 'key-endpoints.json'

function keyId(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16)
}

function read(file: string): Record<string, string[]> {
  if (!existsSync(file)) return {}
  try {
    const value: unknown = JSON.parse(readFileSync(file, 'utf8'))
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {}
    return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string[]] => Array.isArray(entry[1]) && entry[1].every(item => typeof item === 'string')))
  } catch {
    return {}
  }
}

/** The endpoint's origin and path, without a trailing slash: what counts as one endpoint. */
function normalise(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`
  } catch {
    return url
  }
}

/** Whether `key` has been sent to `endpoint` before (the pairing is recorded). */
export function keyPaired(home: string, key: string, endpoint: string): boolean {
  return read(join(home, KEY_ENDPOINTS_FILE))[keyId(key)]?.includes(normalise(endpoint)) === true
}

/**
 * Records that `key` goes to `endpoint` (the user allowed it, or no surface asks). An unwritable
 * home records nothing: its first use is said again next time.
 */
export function pairKey(home: string, key: string, endpoint: string): void {
  const file = join(home, KEY_ENDPOINTS_FILE)
  const known = read(file)
  const id = keyId(key)
  const url = normalise(endpoint)
  if (known[id]?.includes(url) === true) return
  try {
    writeFileAtomic(file, `${JSON.stringify({ ...known, [id]: [...known[id] ?? [], url] }, null, 2)}\n`, 0o600)
  } catch {
    // Said again next time.
  }
}
