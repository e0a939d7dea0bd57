/**
 * Crash repair (C-1..C-4), cold load only: a log that ends inside an open turn gets closers
 * appended, never truncated. Pure and deterministic: seqs continue from the last event, every
 * closer reuses the last event's time (no invented future), message ids derive from call id and
 * seq, so running repair twice, or on two machines, yields the same log.
 */
import type { ToolCallBlock } from '../llm/types.js'
import { TOOL_NOT_STARTED } from './invariants.js'
import { snapshotJson } from './snapshot.js'
import type { SessionEvent } from './types.js'

export const TOOL_OUTCOME_UNKNOWN = 'TOOL_OUTCOME_UNKNOWN'

/** Code mode's inner-call events (docs/code-mode.md): repair closes an inner call left open. */
const DISPATCH_START = 'tool/code-dispatch-start'
const DISPATCH = 'tool/code-dispatch'
interface InnerDispatch { readonly rootCallId: string; readonly parentCallId: string; readonly subCallId: string; readonly name: string; readonly arguments: unknown }

export function unknownOutcomeText(name: string, callId: string): string {
  return `Tool call ${name} (${callId}) was interrupted: the process stopped before its result was durably recorded, `
    + 'so its outcome is unknown and it may or may not have taken effect. Verify the external state before retrying; '
    + 'retry directly only if the tool is read-only or idempotent.'
}

export function notStartedText(name: string, callId: string): string {
  return `Tool call ${name} (${callId}) never ran: the process stopped before it started, so it had no effect. Call it again if it is still needed.`
}

/**
 * The closers for a log ending inside an open turn, or `[]` when no turn is open (so applying
 * them and asking again yields `[]`). In order: one error `tool/code-dispatch` per inner call of a
 * `run_code` program that entered the pipeline and never committed, one error `tool/result` per
 * unpaired tool call of the open step's last assistant message (C-2), `step/end` if a step is open, then
 * `turn/end {reason: {kind: 'interrupted'}}` (C-3). Repair depends on the events alone.
 */
export function interruptedTurnClosers(events: readonly SessionEvent[]): SessionEvent[] {
  let turnStart = -1
  for (let i = events.length - 1; i >= 0; i--) {
    if (events[i].type === 'turn/end') return []
    if (events[i].type === 'turn/start') { turnStart = i; break }
  }
  if (turnStart < 0) return []
  const last = events[events.length - 1]
  const turn = (events[turnStart].data as { turn: number }).turn
  let stepStart = -1
  let step = 0
  for (let i = turnStart + 1; i < events.length; i++) {
    if (events[i].type === 'step/start') { stepStart = i; step = (events[i].data as { step: number }).step }
    if (events[i].type === 'step/end') stepStart = -1
  }

  const closers: SessionEvent[] = []
  const close = (type: string, data: unknown, extra: Partial<SessionEvent> = {}): void => {
    closers.push(snapshotJson({ type, seq: last.seq + 1 + closers.length, time: last.time, data, ...extra }, 'closer') as unknown as SessionEvent)
  }

  if (stepStart >= 0) {
    const calls = new Map<string, number>()
    const answered = new Set<string>()
    /** A program's calls (code mode) that entered the pipeline and never committed, by subCallId. */
    const openInner = new Map<string, InnerDispatch>()
    let assistant: SessionEvent<'assistant/message'> | undefined
    for (let i = stepStart + 1; i < events.length; i++) {
      const event = events[i]
      if (event.type === 'assistant/message') assistant = event as SessionEvent<'assistant/message'>
      else if (event.type === 'tool/call') calls.set((event.data as { callId: string }).callId, event.seq)
      else if (event.type === 'tool/result') answered.add((event.data as SessionEvent<'tool/result'>['data']).message.content[0].toolCallId)
      else if (event.type === DISPATCH_START) openInner.set((event.data as InnerDispatch).subCallId, event.data as InnerDispatch)
      else if (event.type === DISPATCH) openInner.delete((event.data as InnerDispatch).subCallId)
    }
    // Inner calls first, as they would have committed before their program's result.
    for (const inner of openInner.values()) {
      if (answered.has(inner.rootCallId)) continue
      const { rootCallId, parentCallId, subCallId, name } = inner
      close(DISPATCH, { rootCallId, parentCallId, subCallId, name, arguments: inner.arguments, isError: true, content: [{ type: 'text', text: `Error: ${unknownOutcomeText(name, subCallId)}` }] })
    }
    const toolCalls = (assistant?.data.message.content ?? []).filter((b): b is ToolCallBlock => b.type === 'tool-call')
    for (const { id: callId, name } of toolCalls) {
      if (answered.has(callId)) continue
      const callSeq = calls.get(callId)
      const seq = last.seq + 1 + closers.length
      const message = {
        id: `interrupted-tool-result-${callId}-${seq}`,
        role: 'user',
        content: [{
          type: 'tool-result',
          toolCallId: callId,
          content: [{ type: 'text', text: callSeq === undefined ? notStartedText(name, callId) : unknownOutcomeText(name, callId) }],
          isError: true,
        }],
        source: { kind: 'tool', callId },
      }
      const error = callSeq === undefined
        ? { name: 'ToolNotStartedError', code: TOOL_NOT_STARTED }
        : { name: 'ToolOutcomeUnknownError', code: TOOL_OUTCOME_UNKNOWN }
      close('tool/result', { turn, step, message, error }, {
        ...callSeq !== undefined && { sourceEventSeqs: [callSeq] },
        surfaceOp: 'append',
      })
    }
    close('step/end', { turn, step })
  }
  close('turn/end', { turn, reason: { kind: 'interrupted' } })
  return closers
}
