/**
 * Helpers shared by the writer locks of the backends (one writer per session): who this process
 * is, and whether a recorded holder is provably gone (a dead pid on this very host).
 */
import { hostname } from 'node:os'
import type { WriterHolder } from './api.js'

export function currentHolder(now = new Date()): WriterHolder {
  return { pid: process.pid, host: hostname(), since: now.toISOString() }
}

/** True only when the holder ran on this host and its process no longer exists. */
export function holderIsStale(holder: WriterHolder): boolean {
  if (holder.host !== hostname()) return false
  if (holder.pid === process.pid) return false
  try {
    process.kill(holder.pid, 0)
    return false
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

/** Parses a stored holder record; undefined when it is not one (a torn or foreign file). */
export function parseHolder(text: string): (WriterHolder & { token: string }) | undefined {
  try {
    const value = JSON.parse(text) as Record<string, unknown>
    if (!Number.isSafeInteger(value.pid) || typeof value.host !== 'string' || typeof value.since !== 'string' || typeof value.token !== 'string') return undefined
    return value as unknown as WriterHolder & { token: string }
  } catch {
    return undefined
  }
}
