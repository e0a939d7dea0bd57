/**
 * Output spill shared by the built-in tools. A result too large for the model's context is
 * written as a 0600 file and the result keeps a preview plus the file's path, so nothing is lost
 * and the model can page through the rest with `read` or search it with `grep`.
 *
 * Where the file goes: with a spill root configured (the command line uses
 * `$DSH_HOME/tool-output`) and a call that belongs to a session, into `<root>/<session>/` (0700),
 * kept as long as the session: the stored log points to it, so it outlives the process and is
 * removed when the session is deleted (`session/deleted`). Otherwise (no root, or no session) into
 * a private per-process temp folder removed at exit.
 */
import { randomBytes } from 'node:crypto'
import { createWriteStream, rmSync, type WriteStream } from 'node:fs'
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ToolOutput } from '../api.js'
import type { JsonValue } from '../../session/types.js'
import { utf8Head } from './paths.js'

/** Text blocks larger than this (UTF-8 bytes) are spilled. */
export const SPILL_THRESHOLD_BYTES = 50 * 1024
/** How much of a spilled text stays inline. */
export const SPILL_PREVIEW_BYTES = 16 * 1024

let directory: Promise<string> | undefined
let configuredRoot: string | undefined

/** The part of a tool call's context the spill rule looks at. */
export interface SpillPlace {
  readonly session?: { readonly id: string }
}

/**
 * Sets the folder under which each session's spill files are kept. Returns the disposer, which
 * restores the previous root.
 */
export function setSpillRoot(root: string): () => void {
  const previous = configuredRoot
  configuredRoot = root
  return () => { if (configuredRoot === root) configuredRoot = previous }
}

/** Session id -> one safe folder name: [A-Za-z0-9_-] kept, every other UTF-8 byte percent-encoded. */
function sessionFolderName(id: string): string {
  let out = ''
  for (const byte of Buffer.from(id, 'utf8')) {
    const char = String.fromCharCode(byte)
    out += /[A-Za-z0-9_-]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out === '' ? '%00' : out
}

/** The folder that keeps `sessionId`'s spill files under `root`. */
export function sessionSpillDirectory(root: string, sessionId: string): string {
  return join(root, sessionFolderName(sessionId))
}

/** Removes a session's spill files (no-op when none were written or no root is configured). */
export async function removeSessionSpill(sessionId: string, root = configuredRoot): Promise<void> {
  if (root === undefined) return
  await rm(sessionSpillDirectory(root, sessionId), { recursive: true, force: true })
}

/** Where a spill for `place` goes: the session's kept folder, or the process's temp folder. */
export async function spillDirectory(place?: SpillPlace): Promise<string> {
  const root = configuredRoot
  const id = place?.session?.id
  if (root === undefined || id === undefined) return processSpillDirectory()
  await mkdir(root, { recursive: true, mode: 0o700 })
  const dir = sessionSpillDirectory(root, id)
  await mkdir(dir, { recursive: true, mode: 0o700 })
  return dir
}

/** The process's private spill folder, created on first use and removed at exit. */
function processSpillDirectory(): Promise<string> {
  directory ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dsh-tool-output-'))
    // mkdtemp already uses 0700; chmod makes that independent of the platform's default.
    await chmod(dir, 0o700)
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    return dir
  })().catch((error) => {
    directory = undefined
    throw error
  })
  return directory
}

function spillName(label: string): string {
  const safe = label.replace(/[^A-Za-z0-9_-]+/g, '-').slice(0, 40) || 'output'
  return `${safe}-${Date.now()}-${randomBytes(4).toString('hex')}.txt`
}

/** Writes `text` to a new 0600 file in the spill folder and returns its path. */
export async function spillText(text: string | Uint8Array, label: string, place?: SpillPlace): Promise<string> {
  const path = join(await spillDirectory(place), spillName(label))
  await writeFile(path, text, { mode: 0o600, flag: 'wx' })
  return path
}

/** Opens a new 0600 spill file for streaming writes (used by `bash`). */
export async function openSpillStream(label: string, place?: SpillPlace): Promise<{ path: string; stream: WriteStream }> {
  const path = join(await spillDirectory(place), spillName(label))
  return { path, stream: createWriteStream(path, { mode: 0o600, flags: 'wx' }) }
}

/** Whom a streaming spill holds back while its file opens or the disk falls behind. */
export interface SpillProducer {
  pause(): void
  resume(): void
}

/**
 * A spill file written while its producer runs (a command's output stream, a background job):
 * `start` opens it with what was buffered so far, holding the producer back until it is open so
 * every chunk lands in order; later chunks follow with `write`, up to `maxBytes`; a producer
 * faster than the disk is paused rather than buffered without bound.
 */
export class StreamingSpill {
  /** Bytes written (at most `maxBytes`). */
  bytes = 0
  private file: WriteStream | undefined
  private filePath: string | undefined
  private opening: Promise<void> | undefined
  /** Chunks that arrived while the file was opening. */
  private waiting: Buffer[] = []
  private draining = false
  private failure: unknown

  constructor(private readonly label: string, private readonly maxBytes: number, private readonly producer: SpillProducer, private readonly place?: SpillPlace) {}

  /** The file, once it is open and nothing failed. */
  get path(): string | undefined {
    return this.failure === undefined ? this.filePath : undefined
  }

  /** Why the file could not be written, if it could not. */
  get error(): unknown {
    return this.failure
  }

  /** Opens the file; `buffered` is written first. */
  start(buffered: readonly Buffer[]): void {
    // Held back until the file is open, so later writes queue in order behind the buffered bytes.
    this.producer.pause()
    this.waiting = [...buffered]
    this.opening = openSpillStream(this.label, this.place).then(({ path, stream }) => {
      this.file = stream
      this.filePath = path
      stream.on('error', (error) => { this.failure = error })
      const waiting = this.waiting
      this.waiting = []
      for (const chunk of waiting) this.write(chunk)
      this.producer.resume()
    }, (error: unknown) => {
      this.failure = error
      this.waiting = []
      this.producer.resume()
    })
  }

  write(chunk: Buffer): void {
    const file = this.file
    if (file === undefined) {
      // `pause()` does not stop chunks already on their way: kept for the file, in order.
      if (this.failure === undefined) this.waiting.push(chunk)
      return
    }
    if (this.bytes >= this.maxBytes) return
    const part = chunk.subarray(0, this.maxBytes - this.bytes)
    this.bytes += part.length
    // Backpressure: a fast producer waits for the disk instead of growing memory.
    if (!file.write(part) && !this.draining) {
      this.draining = true
      this.producer.pause()
      file.once('drain', () => {
        this.draining = false
        this.producer.resume()
      })
    }
  }

  /** Resolves once everything written is in the file. */
  async end(): Promise<void> {
    await this.opening
    const file = this.file
    if (file !== undefined) await new Promise<void>(resolve => file.end(resolve))
  }
}

export interface SpillOptions {
  readonly thresholdBytes?: number
  readonly previewBytes?: number
  /** The call's session, so the file is kept with it. */
  readonly place?: SpillPlace
}

/** The spill footer's wording, shared so every tool points at its file the same way. */
export function spillNotice(totalBytes: number, path: string, what = 'output'): string {
  return `[${what} truncated: ${totalBytes} bytes in total; the full ${what} is saved to ${path} (page through it with read offset/limit, or grep it)]`
}

/** `text` if it is within the threshold, else a preview and the path of the file holding all of it. */
export async function spillIfLarge(text: string, label: string, options: SpillOptions = {}): Promise<{ text: string; path?: string }> {
  const threshold = options.thresholdBytes ?? SPILL_THRESHOLD_BYTES
  const bytes = Buffer.byteLength(text)
  if (bytes <= threshold) return { text }
  const path = await spillText(text, label, options.place)
  const preview = utf8Head(Buffer.from(text), Math.min(options.previewBytes ?? SPILL_PREVIEW_BYTES, threshold))
  return { text: `${preview}${preview.endsWith('\n') ? '' : '\n'}${spillNotice(bytes, path)}`, path }
}

/**
 * Applies the spill rule to every text block of a tool's output. Spilled paths are added to an
 * object `meta` as `spilled: string[]` so UIs can offer the full text.
 */
export async function spillOutput(output: ToolOutput, label: string, options: SpillOptions = {}): Promise<ToolOutput> {
  const spilled: string[] = []
  const content = await Promise.all(output.content.map(async (block) => {
    if (block.type !== 'text') return block
    const result = await spillIfLarge(block.text, label, options)
    if (result.path === undefined) return block
    spilled.push(result.path)
    return { type: 'text' as const, text: result.text }
  }))
  if (spilled.length === 0) return output
  const meta = output.meta
  let merged: JsonValue
  if (meta !== null && typeof meta === 'object' && !Array.isArray(meta)) {
    const record = meta as { readonly [key: string]: JsonValue }
    const earlier = Array.isArray(record.spilled) ? record.spilled : []
    merged = { ...record, spilled: [...earlier, ...spilled] }
  } else {
    merged = meta === undefined ? { spilled } : { value: meta, spilled }
  }
  return { ...output, content, meta: merged }
}

/** Wraps a tool body so its output goes through the spill rule. */
export function withSpill<A, C extends SpillPlace>(label: string, body: (args: A, context: C) => Promise<ToolOutput>, options: SpillOptions = {}) {
  return async (args: A, context: C): Promise<ToolOutput> => spillOutput(await body(args, context), label, { ...options, place: context })
}
