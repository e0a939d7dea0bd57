/**
 * The web server's guards: loopback binding, the Host header check (DNS rebinding) and the
 * per-launch token. Pure functions so they are tested without a socket.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { isIP } from 'node:net'

export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true
  if (isIP(bare) === 4) return bare.startsWith('127.')
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1'
  return false
}

/** Splits a Host header into name and port (`[::1]:3080`, `localhost:3080`, `example`). */
export function parseHostHeader(header: string): { name: string; port?: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(header.trim())
  if (match === null) return undefined
  return { name: match[1].replace(/^\[|\]$/g, '').toLowerCase(), ...match[2] === undefined ? {} : { port: Number(match[2]) } }
}

/**
 * DNS rebinding guard: a page from another site that resolves its own name to 127.0.0.1 still
 * sends its own name as Host. Only loopback names, the bound host and explicitly trusted names pass.
 */
export function hostAllowed(header: string | undefined, allowed: { bound: string; trusted: readonly string[]; port: number }): boolean {
  if (header === undefined) return false
  const parsed = parseHostHeader(header)
  if (parsed === undefined) return false
  if (parsed.port !== undefined && parsed.port !== allowed.port) return false
  if (isLoopbackHost(parsed.name)) return true
  const name = parsed.name
  return name === allowed.bound.toLowerCase() || allowed.trusted.some(trusted => trusted.toLowerCase() === name)
}

export function newToken(): string {
  return randomBytes(24).toString('base64url')
}

export function tokenMatches(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined
  for (const part of header.split(';')) {
    const index = part.indexOf('=')
    if (index <= 0 || part.slice(0, index).trim() !== name) continue
    try {
      return decodeURIComponent(part.slice(index + 1).trim())
    } catch {
      return undefined // malformed: no token (401), never a crash
    }
  }
  return undefined
}
