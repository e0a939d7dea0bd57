/**
 * A background job's output: what the model has not read yet, bounded in memory, and (once the
 * job has printed more than that bound) all of it in a 0600 file next to the session's other
 * spilled outputs. stdout and stderr interleave in arrival order, as in a terminal.
 */
import type { Readable } from 'node:stream'
import { StreamingSpill, type SpillPlace } from '../tools/builtin/spill.js'

export interface JobOutputLimits {
  /** Unread output kept in memory; older unread bytes are dropped (and counted). */
  readonly keepBytes: number
  /** The output file stops growing here. */
  readonly maxFileBytes: number
}

export class JobOutput {
  /** Bytes seen so far. */
  total = 0
  private unread: Buffer[] = []
  private unreadBytes = 0
  /** Unread bytes dropped from memory since the last read. */
  private dropped = 0
  /** Everything so far, until the output outgrows memory and moves to the file. */
  private history: Buffer[] = []
  private spill: StreamingSpill | undefined
  private readonly sources = new Set<Readable>()
  private readonly decoder = new TextDecoder()
  /** Every attached stream is held back together (they share one file). */
  private readonly producer = {
    pause: () => { for (const source of this.sources) source.pause() },
    resume: () => { for (const source of this.sources) source.resume() },
  }

  constructor(private readonly label: string, private readonly limits: JobOutputLimits, private readonly place?: SpillPlace) {}

  /** The file with all of the output, once there is one. */
  get outputFile(): string | undefined {
    return this.spill?.path
  }

  attach(stream: Readable): void {
    this.sources.add(stream)
    stream.on('data', (chunk: Buffer) => this.push(chunk))
    stream.once('close', () => this.sources.delete(stream))
  }

  /** The unread output as text, with a note first when some of it was dropped; marks it read. */
  read(): string {
    const bytes = Buffer.concat(this.unread)
    this.unread = []
    this.unreadBytes = 0
    const text = this.decoder.decode(bytes, { stream: true })
    if (this.dropped === 0) return text
    const where = this.outputFile !== undefined ? `; all of the output is in ${this.outputFile}` : ''
    const note = `[... ${this.dropped} earlier bytes of output not shown${where} ...]\n`
    this.dropped = 0
    return note + text
  }

  /** Resolves once everything received is in the file (when there is one). */
  async close(): Promise<void> {
    await this.spill?.end()
  }

  private push(chunk: Buffer): void {
    this.total += chunk.length
    this.unread.push(chunk)
    this.unreadBytes += chunk.length
    const keep = this.limits.keepBytes
    while (this.unreadBytes > keep && this.unread.length > 0) {
      const first = this.unread[0]!
      const excess = this.unreadBytes - keep
      if (first.length <= excess) {
        this.unread.shift()
        this.unreadBytes -= first.length
        this.dropped += first.length
      } else {
        this.unread[0] = first.subarray(excess)
        this.unreadBytes -= excess
        this.dropped += excess
      }
    }
    if (this.spill !== undefined) {
      this.spill.write(chunk)
      return
    }
    this.history.push(chunk)
    if (this.total > keep) {
      this.spill = new StreamingSpill(`job-${this.label}`, this.limits.maxFileBytes, this.producer, this.place)
      this.spill.start(this.history)
      this.history = []
    }
  }
}
