/**
 * A hold on sending one model request: the request may be built (body encoded, connection taken)
 * while the hold is pending, but not one byte of it leaves before the hold resolves, and a
 * rejected hold fails it unsent. The checkpoint policy (D-3) holds every request of a live
 * session on the flush before it, so the flush's disk wait and the request's preparation overlap
 * instead of following each other (docs/decisions.md, "The pre-request checkpoint overlaps the
 * request's preparation").
 *
 * Keyed by the call's options object, the one `llm/stream` listeners and the adapter share. Only
 * a call made through `ctx.llm.stream` honours holds (`acceptsRequestHolds`): an adapter that
 * waits for the hold itself says so (`LlmAdapter.awaitsRequestHold`); for any other the LLM
 * service waits for it before calling the adapter at all. Whoever else runs the `llm/stream`
 * waterfall gets no such promise, so a listener that must keep a request back waits instead.
 */
import type { LlmCallOptions } from './types.js'

const holds = new WeakMap<LlmCallOptions, Promise<unknown>>()
const honoured = new WeakSet<LlmCallOptions>()

/** Set by the LLM service for the calls it streams: their innermost step waits for the hold. */
export function honourRequestHolds(options: LlmCallOptions): void {
  honoured.add(options)
}

/** Whether a hold set on `options` keeps its request back (else the caller must wait itself). */
export function acceptsRequestHolds(options: LlmCallOptions): boolean {
  return honoured.has(options)
}

/** The request of `options` is not sent before `until` resolves (added to any hold already set). */
export function holdRequest(options: LlmCallOptions, until: Promise<unknown>): void {
  const held = holds.get(options)
  const hold = held === undefined ? until : Promise.all([held, until])
  // Observed by whoever sends (or by the listener that set it): never an unhandled rejection.
  hold.catch(() => undefined)
  holds.set(options, hold)
}

/** What the request of `options` must wait for before it is sent, if anything. */
export function requestHold(options: LlmCallOptions): Promise<unknown> | undefined {
  return holds.get(options)
}
