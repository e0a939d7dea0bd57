/**
 * The lines of a JSONL log as records (`RawRecord`): from a buffer held whole, or read from an
 * open descriptor a chunk at a time.
 */
import { readSync } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import type { RawRecord } from '../records.js'

export const NEWLINE = 0x0a

/** A JSONL line; `where` is worded only when a message needs it (a load reads 100k lines). */
export class LineRecord implements RawRecord {
  constructor(readonly text: string, readonly complete: boolean, readonly position: number, readonly bytes: number, private readonly lineNo: number) {}
  get where(): string {
    return `line ${this.lineNo}`
  }
}

export function* lines(buffer: Buffer, start: number, firstLine: number): Generator<RawRecord> {
  let position = start
  let lineNo = firstLine
  while (position < buffer.length) {
    const newline = buffer.indexOf(NEWLINE, position)
    const end = newline < 0 ? buffer.length : newline
    const bytes = (newline < 0 ? end : end + 1) - position
    yield new LineRecord(buffer.toString('utf8', position, end), newline >= 0, position, bytes, lineNo)
    position += bytes
    lineNo++
  }
}

/**
 * The lines of a file from offset 0 up to `end` (its size when stat'ed), read `chunk` bytes at a
 * time with synchronous reads of the open descriptor: the same records as `lines()` over the
 * whole file, without holding it whole. `bytesRead` is how far it got (less than `end` if the
 * file shrank meanwhile).
 */
export class ChunkedLines implements IterableIterator<RawRecord> {
  private buffer = Buffer.alloc(0)
  /** File offset of `buffer[0]`. */
  private base = 0
  private offset = 0
  private lineNo = 1
  bytesRead = 0

  constructor(private readonly fd: number, private end: number, private readonly chunk = 1 << 16) {}

  [Symbol.iterator](): IterableIterator<RawRecord> {
    return this
  }

  next(): IteratorResult<RawRecord> {
    for (;;) {
      const newline = this.buffer.indexOf(NEWLINE, this.offset)
      if (newline >= 0) {
        const start = this.offset
        this.offset = newline + 1
        return { done: false, value: new LineRecord(this.buffer.toString('utf8', start, newline), true, this.base + start, newline + 1 - start, this.lineNo++) }
      }
      if (this.bytesRead >= this.end) {
        if (this.offset >= this.buffer.length) return { done: true, value: undefined }
        const start = this.offset
        this.offset = this.buffer.length
        return { done: false, value: new LineRecord(this.buffer.toString('utf8', start), false, this.base + start, this.buffer.length - start, this.lineNo++) }
      }
      // Refill, keeping the partial line at the front; a line longer than a chunk doubles the
      // read instead of copying itself once per chunk.
      const rest = this.buffer.length - this.offset
      const want = Math.min(Math.max(this.chunk, rest), this.end - this.bytesRead)
      const next = Buffer.allocUnsafe(rest + want)
      this.buffer.copy(next, 0, this.offset)
      let filled = 0
      while (filled < want) {
        const got = readSync(this.fd, next, rest + filled, want - filled, this.bytesRead + filled)
        if (got === 0) break
        filled += got
      }
      if (filled < want) this.end = this.bytesRead + filled
      this.base += this.offset
      this.buffer = next.subarray(0, rest + filled)
      this.offset = 0
      this.bytesRead += filled
    }
  }
}

/** A line of a file read by `readLines`: its text, whether a newline ended it, where and how long. */
export interface LinePiece {
  readonly text: string
  readonly complete: boolean
  /** File offset of its first byte. */
  readonly position: number
  /** Its length in bytes, the newline included. */
  readonly bytes: number
}

/**
 * The lines of an open file from offset `start` up to `end`, read asynchronously `chunk` bytes at
 * a time and handed out a read's worth at once; the last piece is incomplete when the range does
 * not end with a newline. A line longer than a chunk doubles the next read instead of copying
 * itself once per chunk. Stops early when the file turns out shorter than `end`.
 */
export async function* readLines(handle: FileHandle, start: number, end: number, chunk = 1 << 16): AsyncGenerator<LinePiece[]> {
  let buffer = Buffer.alloc(0)
  /** File offset of `buffer[0]`, and of the next byte to read. */
  let base = start
  let read = start
  for (;;) {
    const piece: LinePiece[] = []
    let offset = 0
    for (let newline = buffer.indexOf(NEWLINE); newline >= 0; newline = buffer.indexOf(NEWLINE, offset)) {
      piece.push({ text: buffer.toString('utf8', offset, newline), complete: true, position: base + offset, bytes: newline + 1 - offset })
      offset = newline + 1
    }
    const rest = buffer.length - offset
    if (read >= end) {
      if (rest > 0) piece.push({ text: buffer.toString('utf8', offset), complete: false, position: base + offset, bytes: rest })
      if (piece.length > 0) yield piece
      return
    }
    if (piece.length > 0) yield piece
    const want = Math.min(Math.max(chunk, rest), end - read)
    const next = Buffer.allocUnsafe(rest + want)
    buffer.copy(next, 0, offset)
    let filled = 0
    while (filled < want) {
      const { bytesRead } = await handle.read(next, rest + filled, want - filled, read + filled)
      if (bytesRead === 0) break
      filled += bytesRead
    }
    if (filled < want) end = read + filled
    base += offset
    buffer = next.subarray(0, rest + filled)
    read += filled
  }
}
