/** S-13: the session header, checked version first so a future format fails with a clear message. */
import { SESSION_FORMAT_VERSION, SessionRuleError, type SessionHeader } from './types.js'
import { snapshotJson } from './snapshot.js'
import { isPlainObject } from './validators.js'

const HEADER_KEYS = new Set(['type', 'version', 'id', 'createdAt', 'cwd', 'parentSession', 'seedLength', 'origin', 'delegationDepth', 'agentPreset'])

/** S-13: a header of another format version; `direction` lets stores map it without parsing the message. */
export class SessionVersionError extends SessionRuleError {
  constructor(readonly version: number, readonly direction: 'newer' | 'older') {
    super('S-13', undefined, direction === 'newer'
      ? `session format version ${version} is newer than this runtime supports (${SESSION_FORMAT_VERSION}); upgrade dsh to load it`
      : `session format version ${version} is older than this runtime supports (${SESSION_FORMAT_VERSION}); no migration exists`)
    this.name = 'SessionVersionError'
  }
}

/**
 * Returns a frozen copy of a valid header or throws `SessionRuleError('S-13', ...)`
 * (`SessionVersionError` for another format version). This is the one header check; the file
 * codec and the persistence backends read stored headers through `checkStoredHeader`.
 */
export function checkHeader(header: unknown): SessionHeader {
  const fail = (detail: string): never => { throw new SessionRuleError('S-13', undefined, detail) }
  if (!isPlainObject(header)) return fail('the session header must be an object')
  const version = header.version
  if (version !== SESSION_FORMAT_VERSION) {
    if (typeof version === 'number') throw new SessionVersionError(version, version > SESSION_FORMAT_VERSION ? 'newer' : 'older')
    fail(`session header version must be a number, got ${JSON.stringify(version) ?? String(version)}`)
  }
  for (const key of Object.keys(header)) {
    if (!HEADER_KEYS.has(key)) fail(`unknown header key ${JSON.stringify(key)}`)
  }
  if (header.type !== 'session') fail(`header type must be "session", got ${JSON.stringify(header.type)}`)
  if (typeof header.id !== 'string' || header.id.length === 0) fail('header id must be a non-empty string')
  if (!Number.isSafeInteger(header.createdAt)) fail('header createdAt must be a safe integer (epoch ms)')
  if (!Number.isSafeInteger(header.delegationDepth) || (header.delegationDepth as number) < 0) fail('header delegationDepth must be a non-negative integer')
  for (const key of ['cwd', 'parentSession', 'agentPreset'] as const) {
    if (header[key] !== undefined && typeof header[key] !== 'string') fail(`header ${key} must be a string`)
  }
  if (header.seedLength !== undefined && (!Number.isSafeInteger(header.seedLength) || (header.seedLength as number) < 0)) {
    fail('header seedLength must be a non-negative integer')
  }
  try {
    return snapshotJson(header, 'header') as unknown as SessionHeader
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error))
  }
}

/**
 * A header as read from storage: `checkHeader`, except that a current-version header written
 * without `delegationDepth` (older writers) reads as depth 0. In-memory callers use the strict
 * `checkHeader`, since every writer of this runtime sets the field.
 */
export function checkStoredHeader(value: unknown): SessionHeader {
  const lenient = isPlainObject(value) && value.version === SESSION_FORMAT_VERSION && !Object.hasOwn(value, 'delegationDepth')
  return checkHeader(lenient ? { ...value, delegationDepth: 0 } : value)
}
