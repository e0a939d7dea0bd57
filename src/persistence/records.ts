/**
 * Stored records shared by the backends: the header line (S-13) and event records, which are
 * either one event envelope or a packed chunk row (R-1..R-4) standing for several events.
 */
import { ENVELOPE_KEYS, type SessionEvent, type SessionHeader } from '../session/types.js'
import { encodeHeader } from '../session/codec.js'
import { SessionVersionError, checkStoredHeader } from '../session/header.js'
import { isPlainObject } from '../session/validators.js'
import { isChunkRowType, packEvents, unpackRow, type ChunkRow } from '../session/chunk-rows.js'
import { PackedRun, eventList, type EventSlot } from '../session/packed-run.js'
import type { BadRecordReason, TornTail } from './api.js'
import { CorruptSessionError, FormatVersionError, PersistenceError, SeqMismatchError } from './api.js'


/** A record that cannot be read; D-5 decides whether it is a crash tail or corruption. */
export class BadRecord extends Error {
  constructor(readonly reason: BadRecordReason, detail: string) {
    super(detail)
    this.name = 'BadRecord'
  }
}

/**
 * S-13 through the session's stored-header check (version before shape, the same leniency as
 * the file codec); failures name the store location, and a version mismatch becomes a
 * `FormatVersionError` naming the direction.
 */
export function checkHeader(value: unknown, where: string): SessionHeader {
  try {
    return checkStoredHeader(value)
  } catch (error) {
    const message = `${where}: ${error instanceof Error ? error.message : String(error)}`
    if (error instanceof SessionVersionError) throw new FormatVersionError(message)
    throw new PersistenceError(message)
  }
}

export { encodeHeader }

/** One event envelope in canonical key order (S-1). */
export function encodeEvent(event: SessionEvent): string {
  const { type, seq, time, data, ignorable, surfaceOp, sourceEventSeqs } = event
  return JSON.stringify({ type, seq, time, data, ignorable, surfaceOp, sourceEventSeqs })
}

/**
 * Checks one parsed envelope (S-1): no unknown top-level key, integer seq equal to `expectedSeq`,
 * safe-integer time, a data field.
 */
export function checkEnvelope(value: unknown, expectedSeq: number): SessionEvent {
  if (!isPlainObject(value)) throw new BadRecord('invalid-envelope', 'record is not a JSON object')
  for (const key in value) {
    if (Object.hasOwn(value, key) && !ENVELOPE_KEYS.has(key)) throw new BadRecord('invalid-envelope', `unknown top-level key ${JSON.stringify(key)}`)
  }
  if (typeof value.type !== 'string' || value.type === '') throw new BadRecord('invalid-envelope', 'missing event type')
  if (value.seq !== expectedSeq) throw new BadRecord('wrong-seq', `seq ${JSON.stringify(value.seq)} where ${expectedSeq} was expected`)
  if (!Number.isSafeInteger(value.time)) throw new BadRecord('invalid-envelope', `time ${JSON.stringify(value.time)} is not a safe integer`)
  if (!('data' in value)) throw new BadRecord('invalid-envelope', 'missing data')
  if (value.ignorable !== undefined && value.ignorable !== true) throw new BadRecord('invalid-envelope', 'ignorable must be true when present')
  return value as unknown as SessionEvent
}

/** Encodes a batch as stored records (one string each), packing chunk runs when asked (R-1..R-4). */
export function encodeRecords(events: readonly SessionEvent[], packed: boolean): string[] {
  const lines = packed ? packEvents(events) : events
  return lines.map((line) => (isChunkRowType(line.type) ? JSON.stringify(line) : encodeEvent(line as SessionEvent)))
}

/** Decodes one parsed record whose first seq must be `expectedSeq`; throws `BadRecord`. */
export function decodeRecord(value: unknown, expectedSeq: number): SessionEvent[] {
  const slot = decodeSlot(value, expectedSeq)
  return slot instanceof PackedRun ? slot.members() : [slot]
}

/**
 * `decodeRecord` keeping a chunk row packed: the row's run (checked exactly as unpacking checks
 * it), or the one event. Throws `BadRecord`.
 */
export function decodeSlot(value: unknown, expectedSeq: number): EventSlot {
  if (isPlainObject(value) && isChunkRowType(value.type)) {
    // Seq first, so a row from the wrong place reads as wrong-seq (D-5); fromRow checks the rest
    // of the R-3 shape (chunkRowProblem, the one place those rules live).
    if (value.seq0 !== expectedSeq) throw new BadRecord('wrong-seq', `seq0 ${JSON.stringify(value.seq0)} where ${expectedSeq} was expected`)
    try {
      return PackedRun.fromRow(value as unknown as ChunkRow)
    } catch (error) {
      throw new BadRecord('invalid-envelope', error instanceof Error ? error.message : String(error))
    }
  }
  return checkEnvelope(value, expectedSeq)
}

/** Parses then decodes one JSON text record. */
export function decodeRecordText(text: string, expectedSeq: number): SessionEvent[] {
  return decodeRecord(parseRecord(text), expectedSeq)
}

function parseRecord(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new BadRecord('unparsable', `not JSON (${error instanceof Error ? error.message : String(error)})`)
  }
}

/** One stored record before decoding: a JSONL line or an SQLite row rendered as JSON text. */
export interface RawRecord {
  readonly text: string
  /** False for a final JSONL line without its newline (D-5). */
  readonly complete: boolean
  /** Backend position: byte offset (JSONL) or stored seq (SQLite). */
  readonly position: number
  readonly bytes: number
  /** Human location for messages, e.g. "line 12 (byte 3456)". */
  readonly where: string
  /**
   * The record as a JSON value, when the backend can build it more cheaply than parsing
   * `text` (database rows: only the stored JSON columns are parsed). Must give what
   * `JSON.parse(text)` gives, and throw `BadRecord` where that would throw.
   */
  value?(): unknown
}

/**
 * D-5 torn-tail classification. Records are decoded in order; the first bad one (unparsable,
 * wrong seq, invalid envelope, or incomplete) ends the committed prefix. A crash while appending
 * can only damage the end of the log, so if any valid record (one that decodes on its own,
 * whatever its seq) follows the bad one, the log is corrupt: refuse, naming where and what, and
 * change nothing. Otherwise everything from the bad record on is a crash tail, reported so the
 * caller can cut it. `source` names the store in messages (a file path, or database and id).
 */
export function scanRecords(sessionId: string, records: Iterable<RawRecord>, startSeq = 0, source = `session ${JSON.stringify(sessionId)}`): { events: readonly SessionEvent[]; torn?: TornTail } {
  // Chunk rows stay packed (one slot per member, all naming the run): see session/packed-run.ts.
  const slots: EventSlot[] = []
  let packed = false
  let bad: { record: RawRecord; reason: BadRecordReason; detail: string } | undefined
  let droppedRecords = 0
  let droppedBytes = 0
  for (const record of records) {
    if (bad === undefined) {
      try {
        if (!record.complete) throw new BadRecord('no-newline', 'the final record is incomplete (no trailing newline)')
        const slot = decodeSlot(record.value === undefined ? parseRecord(record.text) : record.value(), startSeq + slots.length)
        if (slot instanceof PackedRun) {
          packed = true
          for (let k = slot.length; k > 0; k--) slots.push(slot)
        } else {
          slots.push(slot)
        }
        continue
      } catch (error) {
        if (!(error instanceof BadRecord)) throw error
        // D-5: only a damaged end is a torn tail (a line cut short, or bytes that are not JSON).
        // A whole record that parses and breaks the sequence or the envelope (a line lost before
        // it, say) is corruption: the file is left as it is.
        if (record.complete && error.reason !== 'unparsable') {
          throw new CorruptSessionError(
            `${source}: ${record.where}: ${error.reason}: ${error.message}; a valid record stands at ${record.where} (whole, not cut short), so the log is corrupt, not torn by a crash ` +
            `(nothing was changed; \`dsh sessions repair ${sessionId}\` writes a salvaged copy)`, sessionId)
        }
        bad = { record, reason: error.reason, detail: error.message }
      }
    } else if (record.complete && standaloneRecord(record.text) !== undefined) {
      throw new CorruptSessionError(
        `${source}: ${bad.record.where}: ${bad.reason}: ${bad.detail}; a valid record follows at ${record.where}, ` +
        `so the log is corrupt, not torn by a crash (nothing was changed; ` +
        `\`dsh sessions repair ${sessionId}\` writes a salvaged copy)`, sessionId)
    }
    droppedRecords++
    droppedBytes += record.bytes
  }
  const events = eventList(slots, packed, startSeq)
  if (bad === undefined) return { events }
  return {
    events,
    torn: { fromSeq: startSeq + slots.length, reason: bad.reason, detail: `${bad.record.where}: ${bad.detail}`, droppedRecords, droppedBytes, cutAt: bad.record.position },
  }
}

/** The events of a record that is valid on its own (any seq), else undefined. */
function standaloneRecord(text: string): SessionEvent[] | undefined {
  try {
    const value: unknown = JSON.parse(text)
    if (!isPlainObject(value)) return undefined
    const seq = isChunkRowType(value.type) ? value.seq0 : value.seq
    if (!Number.isSafeInteger(seq) || (seq as number) < 0) return undefined
    return decodeRecord(value, seq as number)
  } catch {
    return undefined
  }
}

/** What salvaging a damaged log recovered (see `salvageRecords`). */
export interface Salvage {
  readonly events: SessionEvent[]
  /** One line per record that was not used, naming where and why. */
  readonly skipped: string[]
}

/**
 * Salvage (D-5): reads every record that is valid on its own, places its events by seq (the
 * first copy of a duplicated seq wins; a later copy that differs is reported), and keeps the
 * contiguous run from `startSeq`. Swapped and duplicated lines are recovered whole; a record
 * lost for good ends the run at its seq. Never writes: callers store the result as a copy.
 */
export function salvageRecords(records: Iterable<RawRecord>, startSeq = 0): Salvage {
  const bySeq = new Map<number, { event: SessionEvent; where: string }>()
  const skipped: string[] = []
  for (const record of records) {
    const events = record.complete ? standaloneRecord(record.text) : undefined
    if (events === undefined) {
      skipped.push(`${record.where}: ${record.complete ? 'not a valid record' : 'incomplete final record'}`)
      continue
    }
    for (const event of events) {
      const held = bySeq.get(event.seq)
      if (held === undefined) bySeq.set(event.seq, { event, where: record.where })
      else if (JSON.stringify(held.event) !== JSON.stringify(event)) skipped.push(`${record.where}: seq ${event.seq} differs from the copy at ${held.where}`)
    }
  }
  const events: SessionEvent[] = []
  while (bySeq.has(startSeq + events.length)) events.push(bySeq.get(startSeq + events.length)!.event)
  const lost = [...bySeq.keys()].filter(seq => seq >= startSeq + events.length).length
  if (lost > 0) skipped.push(`seq ${startSeq + events.length} is missing: ${lost} later event${lost === 1 ? '' : 's'} after the gap not kept`)
  return { events, skipped }
}

/** An event row of a database store (SQLite, PostgreSQL): one record, packed rows spanning `count` seqs. */
export interface StoredEventRow {
  readonly seq: number
  readonly count: number
  readonly type: string
  /** Epoch ms (PostgreSQL returns a bigint as text). */
  readonly time: number | string
  /** The record's `data` as JSON text. */
  readonly data: string
  readonly ignorable: number | null
  readonly surface_op: string | null
  readonly source_event_seqs: string | null
}

/**
 * A row as the JSON record it stands for, so every backend shares one decoder. Its value is
 * built from the row's columns, parsing only the JSON ones (`data`, `surface_op`,
 * `source_event_seqs`); the rendered text is made only when a message, a salvage or a
 * corrupt row needs it, and a column that does not parse falls back to parsing that text, so
 * a damaged row is classified exactly as its text would be.
 */
export function rowRecord(row: StoredEventRow): RawRecord {
  return new RowRecord(row)
}

class RowRecord implements RawRecord {
  readonly complete = true
  private rendered: string | undefined

  constructor(private readonly row: StoredEventRow) {}

  get position(): number {
    return this.row.seq
  }

  get where(): string {
    return `row seq ${this.row.seq}`
  }

  get text(): string {
    if (this.rendered !== undefined) return this.rendered
    const row = this.row
    const packed = isChunkRowType(row.type)
    let text = `{"type":${JSON.stringify(row.type)},"${packed ? 'seq0' : 'seq'}":${row.seq},"${packed ? 'time0' : 'time'}":${row.time},"data":${row.data}`
    if (row.ignorable !== null) text += `,"ignorable":${row.ignorable === 1 ? 'true' : row.ignorable}`
    if (row.surface_op !== null) text += `,"surfaceOp":${row.surface_op}`
    if (row.source_event_seqs !== null) text += `,"sourceEventSeqs":${row.source_event_seqs}`
    text += '}'
    return this.rendered = text
  }

  get bytes(): number {
    return Buffer.byteLength(this.text)
  }

  value(): unknown {
    const row = this.row
    const time = typeof row.time === 'number' ? row.time : Number(row.time)
    // Anything but the plain shapes of a healthy row (numbers, a 0/1 flag) is left to the text.
    if (typeof row.type !== 'string' || !Number.isSafeInteger(row.seq) || !Number.isFinite(time) || (typeof row.time === 'string' && !/^-?\d+$/.test(row.time))) return this.parseText()
    let data: unknown
    let surfaceOp: unknown
    let sources: unknown
    try {
      data = JSON.parse(row.data)
      if (row.surface_op !== null) surfaceOp = JSON.parse(row.surface_op)
      if (row.source_event_seqs !== null) sources = JSON.parse(row.source_event_seqs)
    } catch {
      return this.parseText()
    }
    if (isChunkRowType(row.type)) {
      if (row.ignorable !== null || row.surface_op !== null || row.source_event_seqs !== null) return this.parseText()
      return { type: row.type, seq0: row.seq, time0: time, data }
    }
    const value: Record<string, unknown> = { type: row.type, seq: row.seq, time, data }
    if (row.ignorable !== null) {
      if (typeof row.ignorable !== 'number' || !Number.isFinite(row.ignorable)) return this.parseText()
      value.ignorable = row.ignorable === 1 ? true : row.ignorable
    }
    if (row.surface_op !== null) value.surfaceOp = surfaceOp
    if (row.source_event_seqs !== null) value.sourceEventSeqs = sources
    return value
  }

  private parseText(): unknown {
    try {
      return JSON.parse(this.text)
    } catch (error) {
      throw new BadRecord('unparsable', `not JSON (${error instanceof Error ? error.message : String(error)})`)
    }
  }
}

/**
 * A database row already rendered as its record text by the database (SQLite renders exactly
 * what `rowRecord(row).text` renders, see sqlite/backend.ts): decoded like a JSONL line, so a
 * load fetches one text column per row instead of building a row object of eight.
 */
export function renderedRowRecord(seq: number, text: string): RawRecord {
  return new RenderedRow(seq, text)
}

class RenderedRow implements RawRecord {
  readonly complete = true
  constructor(readonly position: number, readonly text: string) {}
  get where(): string {
    return `row seq ${this.position}`
  }
  get bytes(): number {
    return Buffer.byteLength(this.text)
  }
}

/** Seq of the first row that was not kept whole (the kept prefix has `kept` events). */
export function firstRowAfter(rows: readonly StoredEventRow[], kept: number): number {
  for (const row of rows) if (row.seq + row.count > kept) return row.seq
  return kept
}

/**
 * Why a stored header (JSON text) cannot be read by this runtime (a newer format version, a
 * damaged header), or undefined when it can: a listing shows such a session instead of dropping it.
 */
export function headerProblem(text: string, where: string): string | undefined {
  try {
    checkHeader(JSON.parse(text), where)
    return undefined
  } catch (error) {
    return error instanceof Error && !(error instanceof SyntaxError) ? error.message : `${where}: the header is not JSON (${String((error as Error).message ?? error)})`
  }
}

/**
 * How the last turn ended, from a session's last `turn/start` or `turn/end` row: the reason kind,
 * `open` for a start without an end, undefined with no turn row (or an unreadable one).
 */
export function lastTurnOf(row: { readonly type: string; readonly data: string } | undefined): string | undefined {
  if (row === undefined) return undefined
  if (row.type === 'turn/start') return 'open'
  try {
    const data: unknown = JSON.parse(row.data)
    const kind = isPlainObject(data) && isPlainObject(data.reason) ? data.reason.kind : undefined
    return typeof kind === 'string' ? kind : undefined
  } catch {
    return undefined
  }
}

/**
 * What an appended batch changes in a SQL store's session row: turns started, the last title
 * set, the last archive flag. Throws `SeqMismatchError` when the batch has a gap in its seqs.
 */
export function batchBookkeeping(id: string, events: readonly SessionEvent[]): { turns: number; title: string | null; archived?: boolean } {
  for (let i = 1; i < events.length; i++) {
    if (events[i].seq !== events[0].seq + i) {
      throw new SeqMismatchError(`session ${JSON.stringify(id)}: batch is not contiguous at seq ${events[i].seq} (expected ${events[0].seq + i})`, id)
    }
  }
  let turns = 0
  let title: string | null = null
  let archived: boolean | undefined
  for (const event of events) {
    if (event.type === 'turn/start') turns++
    if (event.type === 'session/title') {
      const value = (event.data as { title?: unknown } | null)?.title
      if (typeof value === 'string') title = value
    }
    if (event.type === 'session/archived') archived = (event.data as { archived?: unknown } | null)?.archived === true
  }
  return archived === undefined ? { turns, title } : { turns, title, archived }
}

/**
 * The SQL stores' event rows for a batch, as column values in the order
 * seq, count, type, time, data, ignorable, surface_op, source_event_seqs: a packed chunk run
 * (`packed`) is one row carrying its count, any other event one row of its own.
 */
export function eventRowValues(events: readonly SessionEvent[], packed: boolean): unknown[][] {
  const rows: unknown[][] = []
  for (const line of packed ? packEvents(events) : events) {
    if (isChunkRowType(line.type)) {
      const row = line as { type: string; seq0: number; time0: number; data: { texts?: unknown[]; args?: unknown[] } }
      rows.push([row.seq0, (row.data.texts ?? row.data.args ?? []).length, row.type, row.time0, JSON.stringify(row.data), null, null, null])
    } else {
      const event = line as SessionEvent
      rows.push([event.seq, 1, event.type, event.time, JSON.stringify(event.data), event.ignorable ? 1 : null,
        event.surfaceOp === undefined ? null : JSON.stringify(event.surfaceOp),
        event.sourceEventSeqs === undefined ? null : JSON.stringify(event.sourceEventSeqs)])
    }
  }
  return rows
}
