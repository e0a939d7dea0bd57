/**
 * Live output of running calls (bash), from the event stream's `output` events: not in the log,
 * so it lives here, outside the fold, keyed by call id. A card reads it with `useLiveOutput`
 * until its result arrives.
 */
import { useSyncExternalStore } from 'react'

const KEPT_CHARS = 16_384
const outputs = new Map<string, string>()
const listeners = new Set<() => void>()

export function appendLiveOutput(callId: string, text: string): void {
  outputs.set(callId, ((outputs.get(callId) ?? '') + text).slice(-KEPT_CHARS))
  for (const listener of listeners) listener()
}

/** Forgets every call's output (a step ended, or another session is shown). */
export function clearLiveOutput(): void {
  if (outputs.size === 0) return
  outputs.clear()
  for (const listener of listeners) listener()
}

export function useLiveOutput(callId: string): string | undefined {
  return useSyncExternalStore(
    listener => { listeners.add(listener); return () => { listeners.delete(listener) } },
    () => outputs.get(callId),
  )
}
