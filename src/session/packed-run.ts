/**
 * A compact in-memory form for runs of streamed deltas (R-1..R-3), and the event list that
 * holds them.
 *
 * Most of a long log is `assistant/chunk` deltas, read again only by replay, export and the
 * surfaces (never by `deriveMessages()`). Loaded from a packed row, a run stays one `PackedRun`
 * (its deltas and time gaps as stored) instead of one frozen three-object event per delta, and
 * the list standing for the log holds that run in each of its members' slots. Reading a slot
 * builds the member event on demand: the same envelope, key order and frozen data as unpacking
 * the row (R-5), so every reader sees exactly the events it saw before. Two reads of one member
 * are equal, not necessarily the same object.
 */
import { ChunkRowError, chunkRowProblem, type ChunkRow, type ChunkRowType } from './chunk-rows.js'
import type { SessionEvent } from './types.js'

const DELTA_TYPE: Record<ChunkRowType, 'text-delta' | 'reasoning-delta' | 'tool-call-delta'> = {
  'text-chunks': 'text-delta',
  'reasoning-chunks': 'reasoning-delta',
  'tool-call-chunks': 'tool-call-delta',
}

const hasOwn = Object.prototype.hasOwnProperty

export class PackedRun {
  private constructor(
    readonly deltaType: 'text-delta' | 'reasoning-delta' | 'tool-call-delta',
    readonly seq0: number,
    readonly time0: number,
    readonly turn: number,
    readonly step: number,
    readonly index: number,
    /** n-1 gaps (the stored row's array, never exposed). */
    private readonly dt: readonly number[],
    /** Texts or argument deltas (the stored row's array, never exposed). */
    private readonly payloads: readonly string[],
    readonly id: string | undefined,
    readonly name: string | undefined,
    readonly hasName: boolean,
  ) {}

  /**
   * A persisted row (seq0/time0 present), checked as `unpackRow` checks it (R-3 shape, member
   * times in the safe-integer range); throws `ChunkRowError` otherwise. Keeps the row's arrays.
   */
  static fromRow(row: ChunkRow): PackedRun {
    const problem = chunkRowProblem(row as unknown as Record<string, unknown>, false)
    if (problem !== null) throw new ChunkRowError(problem)
    const { turn, step, index, dt } = row.data
    let time = row.time0!
    for (let k = 0; k < dt.length; k++) {
      time += dt[k]
      if (!Number.isSafeInteger(time)) throw new ChunkRowError(`${row.type} row: member times leave the safe-integer range`)
    }
    if (row.type === 'tool-call-chunks') {
      const hasName = hasOwn.call(row.data, 'name')
      return new PackedRun('tool-call-delta', row.seq0!, row.time0!, turn, step, index, dt, row.data.args, row.data.id, hasName ? row.data.name : undefined, hasName)
    }
    return new PackedRun(DELTA_TYPE[row.type], row.seq0!, row.time0!, turn, step, index, dt, row.data.texts, undefined, undefined, false)
  }

  /** Number of member events. */
  get length(): number {
    return this.payloads.length
  }

  /** Every member, in seq order, each a frozen event exactly as unpacking the row gives it. */
  members(): SessionEvent[] {
    const { turn, step, index, deltaType, id, name, hasName, payloads, dt } = this
    const out: SessionEvent[] = new Array(payloads.length)
    let time = this.time0
    for (let k = 0; k < payloads.length; k++) {
      if (k > 0) time += dt[k - 1]
      const chunk = deltaType === 'tool-call-delta'
        ? hasName
          ? { type: deltaType, index, id, name, argumentsDelta: payloads[k] }
          : { type: deltaType, index, id, argumentsDelta: payloads[k] }
        : { type: deltaType, index, text: payloads[k] }
      const data = { turn, step, chunk: Object.freeze(chunk) }
      out[k] = Object.freeze({ type: 'assistant/chunk', seq: this.seq0 + k, time, data: Object.freeze(data) }) as SessionEvent
    }
    return out
  }

  /** The first member alone (what admitting a run checks). */
  first(): SessionEvent {
    const { turn, step, index, deltaType, id, name, hasName, payloads } = this
    const chunk = deltaType === 'tool-call-delta'
      ? hasName
        ? { type: deltaType, index, id, name, argumentsDelta: payloads[0] }
        : { type: deltaType, index, id, argumentsDelta: payloads[0] }
      : { type: deltaType, index, text: payloads[0] }
    return Object.freeze({ type: 'assistant/chunk', seq: this.seq0, time: this.time0, data: Object.freeze({ turn, step, chunk: Object.freeze(chunk) }) }) as SessionEvent
  }
}

/** One slot of a log: an event, or the run that member `seq - run.seq0` belongs to. */
export type EventSlot = SessionEvent | PackedRun

/**
 * The members of the run read last (by any list): a walk through the log builds each run once,
 * and at most one run's members are held here.
 */
let cachedRun: PackedRun | undefined
let cachedMembers: SessionEvent[] = []

/** The event in `slot` at position `seq`. */
export function eventAt(slot: EventSlot, seq: number): SessionEvent {
  if (!(slot instanceof PackedRun)) return slot
  if (cachedRun !== slot) {
    cachedMembers = slot.members()
    cachedRun = slot
  }
  return cachedMembers[seq - slot.seq0]
}

/** The slots behind each list made by `eventList` (a list that holds no run is the array itself). */
const slotsByList = new WeakMap<object, { readonly slots: EventSlot[]; readonly first: number }>()

/** Reads through to `slots`, materialising runs; slot `i` stands for seq `first + i`. */
function listHandler(first: number): ProxyHandler<EventSlot[]> {
  return {
    get(target, key) {
      const value = (target as unknown as Record<string | symbol, unknown>)[key]
      return value instanceof PackedRun ? eventAt(value, first + +(key as string)) : value
    },
    getOwnPropertyDescriptor(target, key) {
      const descriptor = Reflect.getOwnPropertyDescriptor(target, key)
      if (descriptor !== undefined && descriptor.value instanceof PackedRun) descriptor.value = eventAt(descriptor.value, first + +(key as string))
      return descriptor
    },
  }
}

/**
 * A read-only view of `slots` as events: indexing, `length`, iteration and every array method
 * see the materialised events. Later pushes to `slots` show through. `first` is the seq of
 * slot 0 (a seek read starts later). Returns `slots` itself when `packed` is false (no run in
 * it, nothing to materialise).
 */
export function eventList(slots: EventSlot[], packed = true, first = 0): readonly SessionEvent[] {
  if (!packed) return slots as SessionEvent[]
  const list = new Proxy(slots, listHandler(first)) as unknown as readonly SessionEvent[]
  slotsByList.set(list, { slots, first })
  return list
}

/**
 * The slots behind a list of events starting at seq 0 (one made by `eventList`, or a plain
 * array), so runs can be passed on without materialising them.
 */
export function slotsOf(list: readonly SessionEvent[]): readonly EventSlot[] {
  const made = slotsByList.get(list)
  if (made === undefined) return list
  if (made.first !== 0) throw new RangeError('slotsOf: the list does not start at seq 0')
  return made.slots
}

/** `list` (from seq 0) followed by `more`, runs kept packed. */
export function concatEvents(list: readonly SessionEvent[], more: readonly SessionEvent[]): readonly SessionEvent[] {
  if (more.length === 0) return list
  const made = slotsByList.get(list)
  if (made === undefined) return [...list, ...more]
  return eventList([...made.slots, ...more], true, made.first)
}

/**
 * For folds that read a log forward: calls `visit` with each event from seq `from` on whose
 * type is in `types`, in seq order, and returns the list's length (where the next fold starts).
 * The same as indexing `events`, but packed delta runs are skipped without being materialised
 * unless `types` names `assistant/chunk` (a resumed long session is mostly deltas, and every
 * fold walks it once).
 */
export function scanEvents<E extends { readonly type: string }>(events: readonly E[], from: number, types: ReadonlySet<string>, visit: (event: E) => void): number {
  const made = slotsByList.get(events)
  if (made === undefined) {
    const length = events.length
    for (let seq = Math.max(0, from); seq < length; seq++) {
      const event = events[seq]
      if (types.has(event.type)) visit(event)
    }
    return length
  }
  const { slots, first } = made
  const deltas = types.has('assistant/chunk')
  for (let i = Math.max(0, from - first); i < slots.length; i++) {
    const slot = slots[i]
    if (slot instanceof PackedRun) {
      if (deltas) visit(eventAt(slot, first + i) as unknown as E)
      else i = slot.seq0 + slot.length - 1 - first
    } else if (types.has(slot.type)) {
      visit(slot as unknown as E)
    }
  }
  return first + slots.length
}
