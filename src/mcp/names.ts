/**
 * MC-2: public tool names. `mcp__<server>__<tool>` when that is a valid provider function name
 * (`^[A-Za-z0-9_-]{1,64}$`); otherwise the sanitised string cut to 51 characters, `_`, and the
 * first 12 hex digits of SHA-256 of `server + "\0" + tool`. A pure function of the pair, so
 * names survive restarts and reconnects.
 */
import { createHash } from 'node:crypto'

export const MAX_TOOL_NAME = 64
const VALID = /^[A-Za-z0-9_-]{1,64}$/
const UNSAFE = /[^A-Za-z0-9_-]/g

export function publicToolName(server: string, tool: string): string {
  const plain = `mcp__${server}__${tool}`
  if (VALID.test(plain)) return plain
  const hash = createHash('sha256').update(`${server}\0${tool}`).digest('hex').slice(0, 12)
  return `${plain.replace(UNSAFE, '_').slice(0, 51)}_${hash}`
}

/** The prefix every tool of `server` starts with (hooks match `mcp__github__.*`). */
export function toolPrefix(server: string): string {
  return `mcp__${server.replace(UNSAFE, '_')}__`
}

/** Server names: what users type as keys of `mcpServers`; dots and spaces are fine (hashed names). */
export function checkServerName(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'a server name must be a non-empty string'
  if (name.length > 64) return `server name ${JSON.stringify(name)} is longer than 64 characters`
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return `server name ${JSON.stringify(name)} contains control characters`
  return undefined
}
