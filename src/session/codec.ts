/**
 * The session log file format: a header line (S-13), then one JSON object per line, each an
 * event envelope (S-1) or a packed chunk row. Two forms: persisted (seq/time on every
 * line) and projected (seq/time stripped, R-6). See docs/session-format.md.
 *
 * The line helpers (`encodeLine`, `decodeLine`, `LogLineReader`) read and write whole files and
 * single lines (replay, conformance, tools); they do no work proportional to the log size. The
 * persistence backends decode with `persistence/records.ts` instead, which classifies each bad
 * record for the D-5 torn-tail rule; both share the header check, `ENVELOPE_KEYS` and the rows.
 */
import {
  chunkRowProblem, isChunkRowType, packEvents, unpackRow,
  type ChunkRow, type StoredEvent, type StoredLine,
} from './chunk-rows.js'
import { checkStoredHeader } from './header.js'
import { ENVELOPE_KEYS, type SessionEvent, type SessionHeader } from './types.js'
import { isPlainObject } from './validators.js'

/** A problem in a stored log; `line` is 1-based (the header is line 1). */
export class SessionFileError extends Error {
  constructor(readonly line: number | undefined, readonly detail: string) {
    super(line === undefined ? detail : `line ${line}: ${detail}`)
    this.name = 'SessionFileError'
  }
}

const hasOwn = Object.prototype.hasOwnProperty

function describe(value: unknown): string {
  if (value === undefined) return 'missing'
  const text = JSON.stringify(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/** One line of JSON, without the newline. */
export function encodeLine(line: StoredLine | SessionEvent | SessionHeader): string {
  return JSON.stringify(line)
}

/** Writes the header with every known key in a fixed order; `delegationDepth` always (S-13). */
export function encodeHeader(header: SessionHeader): string {
  const out: Record<string, unknown> = { type: 'session', version: header.version, id: header.id, createdAt: header.createdAt }
  if (header.cwd !== undefined) out.cwd = header.cwd
  if (header.parentSession !== undefined) out.parentSession = header.parentSession
  if (header.seedLength !== undefined) out.seedLength = header.seedLength
  if (header.origin !== undefined) out.origin = header.origin
  out.delegationDepth = header.delegationDepth ?? 0
  if (header.agentPreset !== undefined) out.agentPreset = header.agentPreset
  return JSON.stringify(out)
}

function parseJson(text: string, line: number | undefined): unknown {
  try {
    return JSON.parse(text)
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error)
    throw new SessionFileError(line, `unparsable JSON (${reason})`)
  }
}

/**
 * S-13: validate a parsed header line. A first line that is not a `{"type":"session"}` object
 * is a missing header; otherwise the session core's `checkStoredHeader` runs (version first,
 * then shape; a header without `delegationDepth` reads as depth 0), its message given a line.
 */
export function readHeader(value: unknown, line = 1): SessionHeader {
  if (!isPlainObject(value) || value.type !== 'session') {
    const what = isPlainObject(value) && typeof value.type === 'string' ? `a "${value.type}" line` : describe(value)
    throw new SessionFileError(line, `missing session header: expected {"type":"session",...}, found ${what}`)
  }
  if (value.version === undefined) throw new SessionFileError(line, 'session header has no version')
  try {
    return checkStoredHeader(value)
  } catch (error) {
    throw new SessionFileError(line, error instanceof Error ? error.message : String(error))
  }
}

export function decodeHeader(text: string): SessionHeader {
  return readHeader(parseJson(text, 1), 1)
}

/**
 * Parse one stored line after the header and check its envelope: a known top-level key set
 * (S-1), seq/time as safe integers when present (both or neither), `ignorable` only `true`,
 * rows of the exact R-3 shape. Data shapes are the session's business (hydrate checks them).
 */
export function decodeLine(text: string, line?: number): StoredLine {
  const value = parseJson(text, line)
  if (!isPlainObject(value)) throw new SessionFileError(line, `expected a JSON object, found ${describe(value)}`)
  const type = value.type
  if (typeof type !== 'string' || type === '') throw new SessionFileError(line, `missing or non-string "type" (found ${describe(type)})`)
  if (type === 'session') throw new SessionFileError(line, 'a second session header; the header belongs on line 1 only')
  if (isChunkRowType(type)) {
    const projected = !hasOwn.call(value, 'seq0') && !hasOwn.call(value, 'time0')
    const problem = chunkRowProblem(value, projected)
    if (problem !== null) throw new SessionFileError(line, problem)
    return value as unknown as ChunkRow
  }
  for (const key in value) {
    if (hasOwn.call(value, key) && !ENVELOPE_KEYS.has(key)) {
      throw new SessionFileError(line, `unknown top-level key "${key}" on a ${type} event (allowed: ${[...ENVELOPE_KEYS].join(', ')})`)
    }
  }
  if (!hasOwn.call(value, 'data')) throw new SessionFileError(line, `${type} event has no "data"`)
  const hasSeq = hasOwn.call(value, 'seq')
  if (hasSeq !== hasOwn.call(value, 'time')) throw new SessionFileError(line, `${type} event has ${hasSeq ? 'seq without time' : 'time without seq'}`)
  if (hasSeq && !(Number.isSafeInteger(value.seq) && (value.seq as number) >= 0)) {
    throw new SessionFileError(line, `${type} event: seq must be a non-negative safe integer, found ${describe(value.seq)}`)
  }
  if (hasSeq && !Number.isSafeInteger(value.time)) {
    throw new SessionFileError(line, `${type} event: time must be a safe integer (epoch ms), found ${describe(value.time)}`)
  }
  if (hasOwn.call(value, 'ignorable') && value.ignorable !== true) {
    throw new SessionFileError(line, `${type} event: ignorable may only be true, found ${describe(value.ignorable)}`)
  }
  return value as unknown as StoredEvent
}

/** Whether a stored line carries its own seq (persisted form) or not (projected form). */
export function isProjectedLine(line: StoredLine): boolean {
  return !hasOwn.call(line, isChunkRowType(line.type) ? 'seq0' : 'seq')
}

export interface LineReaderOptions {
  /** Form of the log; when omitted, the first line decides. */
  readonly projected?: boolean
  /** Seq the next line must start at (default 0). */
  readonly startSeq?: number
}

/**
 * Incremental reader: feed lines after the header in order; each call returns the events the
 * line stands for, checking that the form does not change mid-file and that seqs are
 * contiguous, so a reader can stop at the first bad line.
 */
export class LogLineReader {
  private projectedForm: boolean | undefined
  /** Seq the next event must have. */
  nextSeq: number

  constructor(options: LineReaderOptions = {}) {
    this.projectedForm = options.projected
    this.nextSeq = options.startSeq ?? 0
  }

  get projected(): boolean | undefined {
    return this.projectedForm
  }

  /** Decode and expand one line; throws SessionFileError naming `lineNumber`. */
  read(text: string, lineNumber?: number): { line: StoredLine; events: SessionEvent[] } {
    const line = decodeLine(text, lineNumber)
    return { line, events: this.expand(line, lineNumber) }
  }

  /** Expand an already decoded line. */
  expand(line: StoredLine, lineNumber?: number): SessionEvent[] {
    const projected = isProjectedLine(line)
    if (this.projectedForm === undefined) this.projectedForm = projected
    else if (projected !== this.projectedForm) {
      throw new SessionFileError(lineNumber, this.projectedForm
        ? `${line.type} line carries seq/time in a projected log (no other line does)`
        : `${line.type} line has no seq/time in a persisted log`)
    }
    let events: SessionEvent[]
    if (isChunkRowType(line.type)) {
      const row = line as ChunkRow
      if (!projected && row.seq0 !== this.nextSeq) {
        throw new SessionFileError(lineNumber, `wrong seq: ${row.type} row starts at seq0 ${row.seq0}, expected ${this.nextSeq}`)
      }
      try {
        events = unpackRow(row, { seq: this.nextSeq, time: 0 })
      } catch (error) {
        throw new SessionFileError(lineNumber, error instanceof Error ? error.message : String(error))
      }
    } else if (projected) {
      const { type, ...rest } = line as StoredEvent
      events = [{ type, seq: this.nextSeq, time: 0, ...rest } as SessionEvent]
    } else {
      const event = line as SessionEvent
      if (event.seq !== this.nextSeq) throw new SessionFileError(lineNumber, `wrong seq: ${event.type} event has seq ${event.seq}, expected ${this.nextSeq}`)
      events = [event]
    }
    this.nextSeq += events.length
    return events
  }
}

export interface ParsedSessionFile {
  readonly header: SessionHeader
  readonly events: SessionEvent[]
  /** The stored lines after the header, as decoded (rows still packed). */
  readonly lines: StoredLine[]
  readonly projected: boolean
}

export interface ParseOptions {
  /** Expected form; when omitted it is detected from the first line after the header. */
  readonly projected?: boolean
}

/**
 * Parse a whole log file. Strict: every line must decode, seqs must be contiguous from 0, the
 * form must not change mid-file, and blank lines are refused (only a final newline is allowed).
 */
export function parseSessionFile(text: string, options: ParseOptions = {}): ParsedSessionFile {
  const texts = text.split('\n')
  if (texts.length > 1 && texts[texts.length - 1] === '') texts.pop()
  if (texts.length === 0 || (texts.length === 1 && texts[0] === '')) throw new SessionFileError(1, 'empty file: missing session header')
  const header = decodeHeader(texts[0])
  const reader = new LogLineReader({ projected: options.projected })
  const events: SessionEvent[] = []
  const lines: StoredLine[] = []
  for (let i = 1; i < texts.length; i++) {
    if (texts[i] === '') throw new SessionFileError(i + 1, 'blank line')
    const { line, events: expanded } = reader.read(texts[i], i + 1)
    lines.push(line)
    for (const event of expanded) events.push(event)
  }
  return { header, events, lines, projected: reader.projected ?? options.projected ?? false }
}

export interface EncodeOptions {
  /** Pack delta runs into chunk rows (default true). */
  readonly packed?: boolean
  /** Strip seq/time: the projected form (default false). */
  readonly projected?: boolean
}

/** The stored lines for `events` (without the header), packed and/or projected as asked. */
export function storedLines(events: readonly SessionEvent[], options: EncodeOptions = {}): StoredLine[] {
  const projected = options.projected === true
  if (options.packed !== false) return packEvents(events, { projected })
  if (!projected) return events.slice()
  return events.map(({ seq: _seq, time: _time, ...rest }) => rest)
}

/** A whole log file: header line, then one line per stored line, each ending in a newline. */
export function encodeSessionFile(header: SessionHeader, events: readonly SessionEvent[], options: EncodeOptions = {}): string {
  let out = encodeHeader(header) + '\n'
  for (const line of storedLines(events, options)) out += encodeLine(line) + '\n'
  return out
}

