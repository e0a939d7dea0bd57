import { homedir } from 'node:os'
import { isAbsolute, relative, resolve, sep } from 'node:path'

/** Resolves a tool's path argument: `~/` is the home folder, a relative path is against `cwd`. */
export function resolvePath(cwd: string, path: string): string {
  if (path === '~') return homedir()
  if (path.startsWith('~/')) return resolve(homedir(), path.slice(2))
  return resolve(cwd, path)
}

/** How a path is shown to the model: relative to `cwd` when inside it, else absolute. */
export function displayPath(cwd: string, absolute: string): string {
  const rel = relative(cwd, absolute)
  if (rel === '') return '.'
  if (rel.startsWith('..' + sep) || rel === '..' || isAbsolute(rel)) return absolute
  return rel.split(sep).join('/')
}

/** True when the first bytes look binary (a NUL byte, as git and grep decide). */
export function looksBinary(buffer: Uint8Array): boolean {
  const end = Math.min(buffer.length, 8192)
  for (let i = 0; i < end; i++) if (buffer[i] === 0) return true
  return false
}

/** The longest prefix of `buffer` within `maxBytes` that does not split a UTF-8 character. */
export function utf8Head(buffer: Buffer, maxBytes: number): string {
  if (buffer.length <= maxBytes) return buffer.toString('utf8')
  let end = maxBytes
  while (end > 0 && (buffer[end] & 0xc0) === 0x80) end--
  return buffer.subarray(0, end).toString('utf8')
}

/** The longest suffix of `buffer` within `maxBytes` that does not start inside a UTF-8 character. */
export function utf8Tail(buffer: Buffer, maxBytes: number): string {
  if (buffer.length <= maxBytes) return buffer.toString('utf8')
  let start = buffer.length - maxBytes
  while (start < buffer.length && (buffer[start] & 0xc0) === 0x80) start++
  return buffer.subarray(start).toString('utf8')
}
