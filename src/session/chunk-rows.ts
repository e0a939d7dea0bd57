/**
 * Chunk rows: storage packing of streamed deltas (contracts R-1..R-6).
 *
 * Providers stream token-sized deltas, so a log holds long runs of `assistant/chunk` events
 * whose JSON envelopes dwarf their payloads. On disk, a run of at least MIN_RUN consecutive
 * deltas of one kind, block and step becomes one row. Packing is purely a storage layout: the
 * events a reader gets back are exactly the events that were written, and anything not of
 * the exact whitelisted shape is stored verbatim, losing compression but never data.
 *
 * Two forms exist. The persisted form keeps `seq`/`time` on events and `seq0`/`time0` on rows.
 * The projected form (R-6, used by recorded fixtures) strips them: a reader assigns seq in file
 * order (a row of k members takes k seqs) and time 0, plus the dt gaps inside a row.
 */
import type { SessionEvent } from './types.js'

export const MIN_RUN = 3

export const CHUNK_ROW_TYPES = ['text-chunks', 'reasoning-chunks', 'tool-call-chunks'] as const
export type ChunkRowType = typeof CHUNK_ROW_TYPES[number]

interface RunLocation {
  readonly turn: number
  readonly step: number
  readonly index: number
  /** n-1 time gaps between consecutive members; member k's time = time0 + dt[0] + ... + dt[k-1]. */
  readonly dt: readonly number[]
}
export interface TextRunData extends RunLocation { readonly texts: readonly string[] }
export interface ToolCallRunData extends RunLocation { readonly id: string; readonly name?: string; readonly args: readonly string[] }

/** A packed row. `seq0`/`time0` are absent in the projected form. */
export type ChunkRow =
  | { readonly type: 'text-chunks'; readonly seq0?: number; readonly time0?: number; readonly data: TextRunData }
  | { readonly type: 'reasoning-chunks'; readonly seq0?: number; readonly time0?: number; readonly data: TextRunData }
  | { readonly type: 'tool-call-chunks'; readonly seq0?: number; readonly time0?: number; readonly data: ToolCallRunData }

/** An event as stored: the envelope, without `seq`/`time` in the projected form. */
export type StoredEvent = Omit<SessionEvent, 'seq' | 'time'> & { readonly seq?: number; readonly time?: number }

/** One line of a stored log after the header. */
export type StoredLine = StoredEvent | ChunkRow

export interface PackOptions {
  /** Strip seq/time (seq0/time0 on rows): the projected form of R-6. */
  readonly projected?: boolean
}

/** Thrown for a malformed row or line; the codec adds the line number. */
export class ChunkRowError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ChunkRowError'
  }
}

const ROW_KIND: Record<string, ChunkRowType> = {
  'text-delta': 'text-chunks',
  'reasoning-delta': 'reasoning-chunks',
  'tool-call-delta': 'tool-call-chunks',
}
const DELTA_TYPE: Record<ChunkRowType, string> = {
  'text-chunks': 'text-delta',
  'reasoning-chunks': 'reasoning-delta',
  'tool-call-chunks': 'tool-call-delta',
}

export function isChunkRowType(type: unknown): type is ChunkRowType {
  return type === 'text-chunks' || type === 'reasoning-chunks' || type === 'tool-call-chunks'
}

const hasOwn = Object.prototype.hasOwnProperty

function keyCount(value: object): number {
  return Object.keys(value).length
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** A packable delta. A class so every member has one shape (the hot loop stays monomorphic). */
class Member {
  constructor(
    readonly kind: ChunkRowType,
    /** Undefined for a projected input event: adjacency is then file order. */
    readonly seq: number | undefined,
    readonly time: number,
    readonly turn: number,
    readonly step: number,
    readonly index: number,
    readonly payload: string,
    readonly id: string | undefined,
    /** Undefined when the delta has no `name` key (presence matters, R-2). */
    readonly name: string | undefined,
  ) {}
}

/** field-by-field check; an event with any key beyond the known ones stays verbatim. */
function classify(event: SessionEvent | StoredEvent, inputProjected: boolean): Member | null {
  if (event.type !== 'assistant/chunk') return null
  if (keyCount(event) !== (inputProjected ? 2 : 4)) return null
  const { seq, time } = event
  if (!inputProjected && (!Number.isSafeInteger(seq) || !Number.isSafeInteger(time))) return null
  const data = event.data
  if (!isPlainObject(data) || keyCount(data) !== 3) return null
  const { turn, step, chunk } = data
  if (!Number.isSafeInteger(turn) || !Number.isSafeInteger(step) || !isPlainObject(chunk)) return null
  const kind = ROW_KIND[chunk.type as string]
  if (kind === undefined || !Number.isSafeInteger(chunk.index)) return null
  if (kind === 'tool-call-chunks') {
    const hasName = hasOwn.call(chunk, 'name')
    if (keyCount(chunk) !== (hasName ? 5 : 4)) return null
    if (typeof chunk.id !== 'string' || typeof chunk.argumentsDelta !== 'string') return null
    if (hasName && typeof chunk.name !== 'string') return null
    return new Member(kind, seq, time ?? 0, turn as number, step as number, chunk.index as number, chunk.argumentsDelta, chunk.id, hasName ? chunk.name as string : undefined)
  }
  if (keyCount(chunk) !== 3 || typeof chunk.text !== 'string') return null
  return new Member(kind, seq, time ?? 0, turn as number, step as number, chunk.index as number, chunk.text, undefined, undefined)
}

/** whether `next` continues the run that `prev` ends. */
function continues(prev: Member, next: Member): boolean {
  if (next.kind !== prev.kind || next.turn !== prev.turn || next.step !== prev.step || next.index !== prev.index) return false
  if (!Number.isSafeInteger(next.time - prev.time)) return false
  if (next.seq === undefined || prev.seq === undefined) {
    if (next.seq !== prev.seq) return false
  } else if (next.seq !== prev.seq + 1) return false
  // `name` must match in presence as well as value (undefined === undefined covers absence).
  return next.kind !== 'tool-call-chunks' || (next.id === prev.id && next.name === prev.name)
}

function buildRow(run: readonly Member[], projected: boolean): ChunkRow {
  const first = run[0]
  const dt: number[] = []
  const payloads: string[] = [first.payload]
  for (let k = 1; k < run.length; k++) {
    dt.push(run[k].time - run[k - 1].time)
    payloads.push(run[k].payload)
  }
  const head = projected ? {} : { seq0: first.seq as number, time0: first.time }
  if (first.kind === 'tool-call-chunks') {
    const data: ToolCallRunData = first.name === undefined
      ? { turn: first.turn, step: first.step, index: first.index, dt, id: first.id!, args: payloads }
      : { turn: first.turn, step: first.step, index: first.index, dt, id: first.id!, name: first.name, args: payloads }
    return { type: 'tool-call-chunks', ...head, data }
  }
  return { type: first.kind, ...head, data: { turn: first.turn, step: first.step, index: first.index, dt, texts: payloads } }
}

function stripSeqTime(event: SessionEvent | StoredEvent): StoredEvent {
  if (!hasOwn.call(event, 'seq') && !hasOwn.call(event, 'time')) return event
  const { seq: _seq, time: _time, ...rest } = event
  return rest
}

/**
 * R-1..R-4: pack runs of at least MIN_RUN whitelisted deltas into rows; every other event is
 * returned as is (the same object in the persisted form). Linear in the number of events.
 * In the projected form the input may itself be projected (no seq/time): adjacency is then
 * file order, and gaps are computed from whatever times are present (0 when absent).
 */
export function packEvents(events: readonly (SessionEvent | StoredEvent)[], options: PackOptions = {}): StoredLine[] {
  const projected = options.projected === true
  const out: StoredLine[] = []
  let run: Member[] = []
  let runStart = 0
  const flush = (end: number): void => {
    if (run.length === 0) return
    if (run.length >= MIN_RUN) out.push(buildRow(run, projected))
    else for (let i = runStart; i < end; i++) out.push(projected ? stripSeqTime(events[i]) : events[i])
    run = []
  }
  for (let i = 0; i < events.length; i++) {
    const event = events[i]
    const inputProjected = !hasOwn.call(event, 'seq') && !hasOwn.call(event, 'time')
    // A persisted row needs seq0/time0, so projected input packs only into projected output.
    const member = inputProjected && !projected ? null : classify(event, inputProjected)
    if (member !== null && run.length > 0 && continues(run[run.length - 1], member)) {
      run.push(member)
      continue
    }
    flush(i)
    if (member !== null) {
      run.push(member)
      runStart = i
    } else {
      out.push(projected ? stripSeqTime(event) : event)
    }
  }
  flush(events.length)
  return out
}

const TOOL_ROW_KEYS: readonly string[] = ['turn', 'step', 'index', 'dt', 'id', 'name', 'args']
const TEXT_ROW_KEYS: readonly string[] = ['turn', 'step', 'index', 'dt', 'texts']
const RUN_PLACE_KEYS = ['turn', 'step', 'index'] as const

function everyString(list: readonly unknown[]): boolean {
  for (let i = 0; i < list.length; i++) if (typeof list[i] !== 'string') return false
  return true
}

function everySafeInteger(list: readonly unknown[]): boolean {
  for (let i = 0; i < list.length; i++) if (!Number.isSafeInteger(list[i])) return false
  return true
}

/** R-3 shape check of a row; returns what is wrong, or null. Cheap: no allocation on success. */
export function chunkRowProblem(row: Record<string, unknown>, projected: boolean): string | null {
  const allowed = projected ? 2 : 4
  for (const key in row) {
    if (!hasOwn.call(row, key)) continue
    if (key !== 'type' && key !== 'data' && (projected || (key !== 'seq0' && key !== 'time0'))) {
      return `unknown key "${key}" on a ${String(row.type)} row`
    }
  }
  if (!projected && !Number.isSafeInteger(row.seq0)) return `${String(row.type)} row: seq0 must be a non-negative safe integer`
  if (!projected && !Number.isSafeInteger(row.time0)) return `${String(row.type)} row: time0 must be a safe integer`
  if (keyCount(row) !== allowed) return `${String(row.type)} row: expected keys ${projected ? 'type, data' : 'type, seq0, time0, data'}`
  const data = row.data
  if (!isPlainObject(data)) return `${String(row.type)} row: data must be an object`
  const isTool = row.type === 'tool-call-chunks'
  const listKey = isTool ? 'args' : 'texts'
  const known = isTool ? TOOL_ROW_KEYS : TEXT_ROW_KEYS
  for (const key in data) if (hasOwn.call(data, key) && !known.includes(key)) return `${String(row.type)} row: unknown data key "${key}"`
  for (let i = 0; i < RUN_PLACE_KEYS.length; i++) {
    const key = RUN_PLACE_KEYS[i]
    if (!Number.isSafeInteger(data[key])) return `${String(row.type)} row: data.${key} must be a safe integer`
  }
  const list = data[listKey]
  if (!Array.isArray(list) || list.length === 0 || !everyString(list)) {
    return `${String(row.type)} row: data.${listKey} must be a non-empty array of strings`
  }
  const dt = data.dt
  if (!Array.isArray(dt) || dt.length !== list.length - 1 || !everySafeInteger(dt)) {
    return `${String(row.type)} row: data.dt must hold ${list.length - 1} safe-integer gaps (one fewer than ${listKey})`
  }
  if (isTool) {
    if (typeof data.id !== 'string') return 'tool-call-chunks row: data.id must be a string'
    if (hasOwn.call(data, 'name') && typeof data.name !== 'string') return 'tool-call-chunks row: data.name must be a string when present'
  }
  return null
}

/** The number of events a stored line stands for (1, or the member count of a row). */
export function lineEventCount(line: StoredLine): number {
  if (!isChunkRowType(line.type)) return 1
  const data = (line as ChunkRow).data as Partial<TextRunData & ToolCallRunData> | undefined
  const list = line.type === 'tool-call-chunks' ? data?.args : data?.texts
  return Array.isArray(list) && list.length > 0 ? list.length : 1
}

/**
 * Expand one row into its member events. `seq0`/`time0` come from the row in the persisted
 * form; the caller supplies them for a projected row. Throws ChunkRowError on a malformed row.
 */
export function unpackRow(row: ChunkRow, at?: { seq: number; time: number }): SessionEvent[] {
  const projected = !hasOwn.call(row, 'seq0') && !hasOwn.call(row, 'time0')
  const problem = chunkRowProblem(row as unknown as Record<string, unknown>, projected)
  if (problem !== null) throw new ChunkRowError(problem)
  let seq = projected ? at?.seq ?? 0 : row.seq0!
  let time = projected ? at?.time ?? 0 : row.time0!
  const data = row.data
  const deltaType = DELTA_TYPE[row.type]
  const { turn, step, index, dt } = data
  const out: SessionEvent[] = []
  if (row.type === 'tool-call-chunks') {
    const { id, args } = row.data
    const hasName = hasOwn.call(row.data, 'name')
    for (let k = 0; k < args.length; k++) {
      if (k > 0) time = advance(time, dt[k - 1], row.type)
      const chunk = hasName
        ? { type: deltaType, index, id, name: row.data.name, argumentsDelta: args[k] }
        : { type: deltaType, index, id, argumentsDelta: args[k] }
      out.push({ type: 'assistant/chunk', seq: seq++, time, data: { turn, step, chunk } } as SessionEvent)
    }
  } else {
    const { texts } = row.data
    for (let k = 0; k < texts.length; k++) {
      if (k > 0) time = advance(time, dt[k - 1], row.type)
      out.push({ type: 'assistant/chunk', seq: seq++, time, data: { turn, step, chunk: { type: deltaType, index, text: texts[k] } } } as SessionEvent)
    }
  }
  return out
}

function advance(time: number, gap: number, type: string): number {
  const next = time + gap
  if (!Number.isSafeInteger(next)) throw new ChunkRowError(`${type} row: member times leave the safe-integer range`)
  return next
}

export interface UnpackOptions {
  /** Seq of the first line's first event in the projected form (default 0). */
  readonly startSeq?: number
}

/**
 * Inverse of packEvents. Lines with seq/time keep them; projected lines get seq
 * assigned in file order from `startSeq` and time 0 (+dt inside rows). Does not check seq
 * contiguity of persisted lines: that is the codec's job, which knows line numbers.
 */
export function unpackLines(lines: readonly StoredLine[], options: UnpackOptions = {}): SessionEvent[] {
  const out: SessionEvent[] = []
  let nextSeq = options.startSeq ?? 0
  for (const line of lines) {
    if (isChunkRowType(line.type)) {
      const members = unpackRow(line as ChunkRow, { seq: nextSeq, time: 0 })
      for (const member of members) out.push(member)
      nextSeq = members[members.length - 1].seq + 1
    } else if (hasOwn.call(line, 'seq')) {
      const event = line as SessionEvent
      out.push(event)
      nextSeq = event.seq + 1
    } else {
      // Spread keeps the stored key order after the assigned envelope fields.
      const { type, ...rest } = line as StoredEvent
      out.push({ type, seq: nextSeq++, time: 0, ...rest } as SessionEvent)
    }
  }
  return out
}
