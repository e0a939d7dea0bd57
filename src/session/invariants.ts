/**
 * Structural rules of the log: the envelope (S-1, S-3 marker, S-6, S-7) and the turn/step
 * invariants (S-15), the latter as an incremental folder so append and hydrate pay O(1) per
 * event. `check` never mutates; `apply` assumes a passed check (validate before commit, S-10).
 */
import type { LogPosition } from './api.js'
import { ENVELOPE_KEYS, SURFACE_EVENT_TYPES, SessionRuleError, type SessionEvent } from './types.js'
import { createEventTypeRegistry, type EventTypeRegistry } from './registry.js'
import { isPlainObject } from './validators.js'

const SURFACE_TYPES: ReadonlySet<string> = new Set(SURFACE_EVENT_TYPES)
const SURFACE_OP_KEYS = ['end', 'op', 'start']

export const TOOL_NOT_STARTED = 'TOOL_NOT_STARTED'

export function isReplace(event: Pick<SessionEvent, 'surfaceOp'>): boolean {
  return typeof event.surfaceOp === 'object' && event.surfaceOp !== null
}

/**
 * The envelope of one event at position `expectedSeq`: known top-level keys only, a string type,
 * contiguous seq, safe-integer time, `ignorable` only as `true`, and the S-6/S-7 rules on
 * `surfaceOp` and `sourceEventSeqs`.
 */
export function checkEnvelope(event: unknown, expectedSeq: number): asserts event is SessionEvent {
  if (!isPlainObject(event)) throw new SessionRuleError('S-1', expectedSeq, 'an event must be an object')
  for (const key in event) {
    if (Object.hasOwn(event, key) && !ENVELOPE_KEYS.has(key)) throw new SessionRuleError('S-1', expectedSeq, `unknown top-level key ${JSON.stringify(key)} in the envelope`)
  }
  if (typeof event.type !== 'string' || event.type.length === 0) throw new SessionRuleError('S-1', expectedSeq, 'type must be a non-empty string')
  if (event.seq !== expectedSeq) {
    throw new SessionRuleError('S-1', expectedSeq, `seq ${JSON.stringify(event.seq)} is not contiguous (expected ${expectedSeq})`)
  }
  if (!Number.isSafeInteger(event.time)) throw new SessionRuleError('S-1', expectedSeq, `time must be a safe integer, got ${JSON.stringify(event.time)}`)
  if (!Object.hasOwn(event, 'data')) throw new SessionRuleError('S-1', expectedSeq, 'data is missing')
  if (Object.hasOwn(event, 'ignorable') && event.ignorable !== true) {
    throw new SessionRuleError('S-3', expectedSeq, `ignorable may only be true, got ${JSON.stringify(event.ignorable)}`)
  }
  const surface = SURFACE_TYPES.has(event.type)
  const hasOp = Object.hasOwn(event, 'surfaceOp')
  const hasSources = Object.hasOwn(event, 'sourceEventSeqs')
  if (surface && !hasOp) throw new SessionRuleError('S-6', expectedSeq, `${event.type} requires a surfaceOp`)
  if (!surface && hasOp) throw new SessionRuleError('S-6', expectedSeq, `surfaceOp is forbidden on ${event.type}`)
  if (!surface && hasSources) throw new SessionRuleError('S-6', expectedSeq, `sourceEventSeqs is forbidden on ${event.type}`)
  if (hasOp) checkSurfaceOp(event.surfaceOp, expectedSeq)
  if (hasSources) checkSourceEventSeqs(event.sourceEventSeqs, event.type, expectedSeq)
}

function checkSurfaceOp(op: unknown, seq: number): void {
  if (op === 'append') return
  const keys = isPlainObject(op) ? Object.keys(op).sort() : []
  const exact = isPlainObject(op) && keys.length === 3 && keys.every((k, i) => k === SURFACE_OP_KEYS[i]) && op.op === 'replace'
  if (!exact || !Number.isSafeInteger(op.start) || !Number.isSafeInteger(op.end) || (op.start as number) < 0 || (op.end as number) < 0) {
    throw new SessionRuleError('S-6', seq, `surfaceOp must be 'append' or exactly {op:'replace', start, end} with seqs, got ${JSON.stringify(op)}`)
  }
}

function checkSourceEventSeqs(value: unknown, type: string, seq: number): void {
  if (!Array.isArray(value)) throw new SessionRuleError('S-7', seq, 'sourceEventSeqs must be an array of seqs')
  if (value.length === 0 && type !== 'assistant/message') {
    throw new SessionRuleError('S-7', seq, `sourceEventSeqs may be empty only on assistant/message, not on ${type}`)
  }
  // The usual list ascends: strictly increasing, non-negative and below seq says it all.
  let previous = -1
  let ascending = true
  for (let i = 0; i < value.length; i++) {
    const source: unknown = value[i]
    if (!Number.isSafeInteger(source) || (source as number) <= previous) { ascending = false; break }
    previous = source as number
  }
  if (ascending && previous < seq) return
  const seen = new Set<number>()
  for (const source of value) {
    if (!Number.isSafeInteger(source) || source < 0) throw new SessionRuleError('S-7', seq, `sourceEventSeqs entry ${JSON.stringify(source)} is not a non-negative integer`)
    if (source >= seq) throw new SessionRuleError('S-7', seq, `sourceEventSeqs entry ${source} is not below the event's own seq`)
    if (seen.has(source)) throw new SessionRuleError('S-7', seq, `sourceEventSeqs entry ${source} is repeated`)
    seen.add(source)
  }
}

/** The id of the call a tool/result answers (S-12: its single block's toolCallId). */
export function resultCallId(event: SessionEvent): string {
  return (event.data as { message: { content: readonly { toolCallId: string }[] } }).message.content[0].toolCallId
}

interface TurnStepData { turn: number; step: number }

/** An S-15 refusal (a function, not a closure made per check: this runs for every event). */
function fail(event: SessionEvent, detail: string): never {
  throw new SessionRuleError('S-15', event.seq, `${event.type}: ${detail}`)
}

/** S-15 as an incremental fold. */
export class LogFolder {
  private turn = 0
  private step = 0
  private turnOpen = false
  private stepOpen = false
  /** tool/call ids of the open step -> their seqs. */
  private readonly calls = new Map<string, number>()
  /** Call ids of the open step that already have an appended result. */
  private readonly results = new Set<string>()

  get position(): LogPosition {
    return { turn: this.turn, step: this.step, turnOpen: this.turnOpen, stepOpen: this.stepOpen }
  }

  /** Throws `SessionRuleError('S-15', ...)` if `event` may not follow the events folded so far. */
  check(event: SessionEvent): void {
    const data = event.data as TurnStepData
    switch (event.type) {
      case 'turn/start':
        if (this.turnOpen) fail(event, `turn ${this.turn} is still open`)
        if (data.turn !== this.turn + 1) fail(event, `turn ${data.turn} does not follow turn ${this.turn} (turns start at 1 and are contiguous)`)
        return
      case 'turn/end':
        if (!this.turnOpen) fail(event, 'no turn is open')
        if (data.turn !== this.turn) fail(event, `names turn ${data.turn} but the open turn is ${this.turn}`)
        if (this.stepOpen) fail(event, `step ${this.step} is still open`)
        return
      case 'step/start':
        if (!this.turnOpen) fail(event, 'needs an open turn')
        if (this.stepOpen) fail(event, `step ${this.step} is still open`)
        if (data.turn !== this.turn) fail(event, `names turn ${data.turn} but the open turn is ${this.turn}`)
        if (data.step !== this.step + 1) fail(event, `step ${data.step} does not follow step ${this.step} (steps restart at 1 per turn)`)
        return
      case 'step/end':
        this.checkOpenStep(event, data)
        return
      case 'assistant/chunk':
      case 'assistant/message':
        this.checkOpenStep(event, data)
        return
      case 'tool/call': {
        this.checkOpenStep(event, data)
        const callId = (event.data as { callId: string }).callId
        if (this.calls.has(callId)) fail(event, `call ${JSON.stringify(callId)} was already logged at seq ${this.calls.get(callId)}`)
        return
      }
      case 'tool/result': {
        if (isReplace(event)) {
          // A replacing result rewrites an earlier node; it needs only an open turn.
          if (!this.turnOpen) fail(event, 'a replacing tool/result needs an open turn')
          return
        }
        this.checkOpenStep(event, data)
        const callId = resultCallId(event)
        const notStarted = (event.data as { error?: { code?: string } }).error?.code === TOOL_NOT_STARTED
        if (!notStarted && !this.calls.has(callId)) fail(event, `no tool/call ${JSON.stringify(callId)} precedes it in step ${this.step}`)
        if (this.results.has(callId)) fail(event, `call ${JSON.stringify(callId)} already has a result in step ${this.step}`)
        return
      }
      case 'todo/write':
      case 'request/header':
      case 'request/context':
        if (!this.turnOpen) fail(event, 'must happen inside an open turn')
        return
    }
  }

  private checkOpenStep(event: SessionEvent, data: TurnStepData): void {
    if (!this.stepOpen) fail(event, 'needs an open step')
    if (data.turn !== this.turn || data.step !== this.step) {
      fail(event, `names turn ${data.turn} step ${data.step} but the open step is turn ${this.turn} step ${this.step}`)
    }
  }

  /** Folds a checked event. */
  apply(event: SessionEvent): void {
    switch (event.type) {
      case 'turn/start':
        this.turn = (event.data as TurnStepData).turn
        this.step = 0
        this.turnOpen = true
        return
      case 'turn/end':
        this.turnOpen = false
        return
      case 'step/start':
        this.step = (event.data as TurnStepData).step
        this.stepOpen = true
        this.calls.clear()
        this.results.clear()
        return
      case 'step/end':
        this.stepOpen = false
        this.calls.clear()
        this.results.clear()
        return
      case 'tool/call':
        this.calls.set((event.data as { callId: string }).callId, event.seq)
        return
      case 'tool/result':
        if (!isReplace(event)) this.results.add(resultCallId(event))
        return
    }
  }
}

/**
 * Checks a whole log: envelope, known types (S-3) and data shapes against `registry`, and S-15
 * (not the surface; a Session checks that). Throws the first violation as a `SessionRuleError`
 * and otherwise returns the final position. Pure; for tools and tests holding a bare array.
 */
export function checkLogInvariants(events: readonly unknown[], registry: EventTypeRegistry = createEventTypeRegistry()): LogPosition {
  const folder = new LogFolder()
  for (let i = 0; i < events.length; i++) {
    const event = events[i]
    checkEnvelope(event, i)
    if (!checkEventType(registry, event)) continue
    folder.check(event)
    folder.apply(event)
  }
  return folder.position
}

/**
 * S-3 and S-2 for one enveloped event: returns false for an ignorable unknown event (kept, but
 * skipped by invariants and projections), true for a known event whose data is valid; throws
 * otherwise.
 */
export function checkEventType(registry: EventTypeRegistry, event: SessionEvent): boolean {
  const definition = registry.get(event.type)
  if (!definition) {
    if (event.ignorable === true) return false
    throw new SessionRuleError('S-3', event.seq, `unknown event type ${JSON.stringify(event.type)} (not registered and not marked ignorable)`)
  }
  const problem = definition.validate?.(event.data)
  if (problem) throw new SessionRuleError('S-2', event.seq, `invalid ${event.type}${definition.owner ? ` (owner ${definition.owner})` : ''}: ${problem}`)
  return true
}
