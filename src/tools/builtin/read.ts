/**
 * `read`: a text file as numbered lines (`cat -n` style, 1-based), a page at a time.
 * Not spilled: its own limits keep a page under the spill threshold. A path on the sandbox's
 * deny-read list is refused (`./hidden.ts`), by its name and by what was opened.
 */
import { createHash } from 'node:crypto'
import { readSync } from 'node:fs'
import { StringDecoder } from 'node:string_decoder'
import { Context } from 'cordis'
import { untraced } from '../../kernel/index.js'
import type { Tool, ToolOutput } from '../api.js'
import type { JsonSchema } from '../json-schema.js'
import { BuiltinErrorCode, FsError, fsFailure, openRegularFile } from './errors.js'
import { ledgerKey, type FileObservations, type FileVersion } from './ledger.js'
import { editorFiles } from '../editor-files.js'
import { looksBinary, resolvePath } from './paths.js'
import { openedPath, readGuard, refuseHidden } from './hidden.js'
import { sandboxingOf, type Sandboxing } from './sandboxing.js'

export interface ReadToolConfig {
  /** Lines per call when `limit` is not given, and the most `limit` may ask for. */
  readonly maxLines?: number
  /** Longer lines are cut and marked. */
  readonly maxLineChars?: number
  /** Bytes of formatted output per call. */
  readonly maxBytes?: number
  readonly timeoutMs?: number
}

export const READ_DEFAULTS = { maxLines: 2000, maxLineChars: 2000, maxBytes: 50 * 1024, timeoutMs: 60_000 } as const

export interface ReadArgs {
  readonly file_path: string
  readonly offset?: number
  readonly limit?: number
}

export const readParameters = {
  type: 'object',
  properties: {
    file_path: { type: 'string', minLength: 1, description: 'Path of the file to read; a relative path is resolved against the session working directory.' },
    offset: { type: 'integer', minimum: 1, description: '1-based line number to start from (default 1).' },
    limit: { type: 'integer', minimum: 1, description: 'Number of lines to read (default and maximum 2000).' },
  },
  required: ['file_path'],
} as const satisfies JsonSchema

/** What `read` gives a program (code mode). */
export const READ_OUTPUT_TYPE = `{
  path: string;
  offset: number;
  lines: {
    number: number;
    text: string;
  }[];
  totalLines: number;
}`

export interface ReadPage {
  /** Formatted lines `     N\ttext`. */
  readonly lines: string[]
  readonly firstLine: number
  readonly lastLine: number
  readonly totalLines: number
  /** Lines cut at `maxLineChars`. */
  readonly cutLines: number
  /** The page stopped at `maxBytes` before reaching `limit`. */
  readonly byteLimited: boolean
  readonly version: FileVersion
}

/**
 * Streams the file once: hashes every byte (for the ledger), counts all lines, and keeps only
 * the requested page, so memory stays bounded by the page size for any file size.
 */
export async function readPage(path: string, offset: number, limit: number, limits: Required<Omit<ReadToolConfig, 'timeoutMs'>>, signal?: AbortSignal, editorText?: string, opened?: (fd: number) => void): Promise<ReadPage> {
  const hash = createHash('sha256')
  const decoder = new StringDecoder('utf8')
  const lines: string[] = []
  let size = 0
  let lineNo = 0
  let carry = ''
  let bytes = 0
  let cutLines = 0
  let byteLimited = false
  let full = false
  let newlines = 0
  let lastByte = -1

  const take = (line: string) => {
    lineNo++
    if (full || lineNo < offset) return
    if (lines.length >= limit) { full = true; return }
    if (line.endsWith('\r')) line = line.slice(0, -1)
    if (line.length > limits.maxLineChars) {
      line = `${line.slice(0, limits.maxLineChars)}… [line cut: ${line.length} chars]`
      cutLines++
    }
    const formatted = `${String(lineNo).padStart(6)}\t${line}`
    const cost = Buffer.byteLength(formatted) + 1
    if (bytes + cost > limits.maxBytes && lines.length > 0) { full = true; byteLimited = true; return }
    bytes += cost
    lines.push(formatted)
  }

  const handle = editorText === undefined ? await openRegularFile(path) : undefined
  // A small file (the usual case) is read at once, synchronously: a page-cache read of a few
  // KB takes microseconds, where the stream costs a pool round trip (an event-loop turn) per
  // read plus one for the end of file. Larger files, and a call already cancelled, stream.
  let small: Buffer[] | undefined
  if (handle !== undefined && opened !== undefined) {
    try {
      opened(handle.fd)
    } catch (error) {
      void handle.close().catch(() => undefined)
      throw error
    }
  }
  if (handle !== undefined && !(signal?.aborted ?? false)) {
    try {
      small = readSmall(handle.fd)
    } catch (error) {
      void handle.close().catch(() => undefined)
      throw error
    }
    if (small !== undefined) void handle.close().catch(() => undefined)
  }
  const stream = small === undefined ? handle?.createReadStream(signal ? { signal } : {}) : undefined
  const chunks: AsyncIterable<Buffer> | Iterable<Buffer> = small ?? stream ?? [Buffer.from(editorText ?? '', 'utf8')]
  for await (const chunk of chunks) {
    if (size === 0 && looksBinary(chunk)) {
      stream?.destroy()
      throw new FsError(`${path} looks like a binary file; read only shows text`, BuiltinErrorCode.binary)
    }
    size += chunk.length
    hash.update(chunk)
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) newlines++
    lastByte = chunk[chunk.length - 1]
    // Once the page is full only the byte count of newlines matters: skip decoding.
    if (full) continue
    const text = carry + decoder.write(chunk)
    let start = 0
    for (let nl = text.indexOf('\n'); nl !== -1 && !full; nl = text.indexOf('\n', start)) {
      take(text.slice(start, nl))
      start = nl + 1
    }
    carry = full ? '' : text.slice(start)
  }
  if (!full) {
    const rest = carry + decoder.end()
    if (rest.length > 0) take(rest)
  }
  // An unterminated last line counts as a line, like `wc -l` plus one.
  const totalLines = newlines + (size > 0 && lastByte !== 10 ? 1 : 0)
  const firstLine = lines.length > 0 ? offset : 0
  return {
    lines, firstLine, lastLine: lines.length > 0 ? offset + lines.length - 1 : 0, totalLines,
    cutLines, byteLimited, version: { size, sha256: hash.digest('hex') },
  }
}

/** Files up to this size are read synchronously by `readPage`. */
const SMALL_FILE_BYTES = 64 * 1024

/**
 * The whole file behind `fd` as one chunk when it is at most SMALL_FILE_BYTES long (read to
 * the end, whatever the size was at open), else undefined with nothing consumed.
 */
function readSmall(fd: number): Buffer[] | undefined {
  const buffer = Buffer.allocUnsafe(SMALL_FILE_BYTES + 1)
  let length = 0
  while (length < buffer.length) {
    const read = readSync(fd, buffer, length, buffer.length - length, length)
    if (read === 0) return length === 0 ? [] : [buffer.subarray(0, length)]
    length += read
  }
  return undefined
}

export function createReadTool(ledger: FileObservations, config: ReadToolConfig = {}, sandboxing?: Sandboxing): Tool<ReadArgs> {
  const limits = {
    maxLines: config.maxLines ?? READ_DEFAULTS.maxLines,
    maxLineChars: config.maxLineChars ?? READ_DEFAULTS.maxLineChars,
    maxBytes: config.maxBytes ?? READ_DEFAULTS.maxBytes,
  }
  return {
    name: 'read',
    description: `Read a text file. Returns numbered lines ("     N\\t<line>", 1-based). At most ${limits.maxLines} lines, ${limits.maxLineChars} characters per line and ${Math.round(limits.maxBytes / 1024)} KB per call; a footer tells how to continue with offset. Reading a file is required before write or edit may change it.`,
    parameters: readParameters,
    timeoutMs: config.timeoutMs ?? READ_DEFAULTS.timeoutMs,
    isConcurrencySafe: () => true,
    outputType: READ_OUTPUT_TYPE,
    async execute(args, context): Promise<ToolOutput> {
      const path = resolvePath(context.cwd, args.file_path)
      const hidden = await readGuard(sandboxing, context)
      refuseHidden(hidden, 'read', args.file_path, path)
      const offset = args.offset ?? 1
      const limit = Math.min(args.limit ?? limits.maxLines, limits.maxLines)
      // An editor that holds the session's files answers with what it shows (unsaved edits too).
      const files = editorFiles(context.scope)
      const editorText = files?.readText === undefined ? undefined : await files.readText(path).catch((error) => fsFailure(error, path))
      // What was opened is checked again: a link swapped in since the check above is caught.
      const reopened = hidden === undefined ? undefined : (fd: number) => refuseHidden(hidden, 'read', args.file_path, path, openedPath(fd))
      const page = await readPage(path, offset, limit, limits, context.signal, editorText, reopened).catch((error) => fsFailure(error, path))
      ledger.record(ledgerKey(context), path, page.version)
      if (page.totalLines === 0) {
        return { content: [{ type: 'text', text: '(empty file)' }], meta: { path, firstLine: 0, lastLine: 0, totalLines: 0 }, value: { path, offset, lines: [], totalLines: 0 } }
      }
      if (offset > page.totalLines) {
        throw new FsError(`offset ${offset} is past the end of ${path} (${page.totalLines} lines)`, BuiltinErrorCode.offsetOutOfRange)
      }
      let text = page.lines.join('\n')
      if (page.lastLine < page.totalLines) {
        const why = page.byteLimited ? ` (${Math.round(limits.maxBytes / 1024)} KB per call)` : ''
        text += `\n\n[showing lines ${page.firstLine}-${page.lastLine} of ${page.totalLines}${why}; continue with offset=${page.lastLine + 1}]`
      }
      if (page.cutLines > 0) text += `\n[${page.cutLines} line(s) longer than ${limits.maxLineChars} characters were cut]`
      return {
        content: [{ type: 'text', text }],
        meta: { path, firstLine: page.firstLine, lastLine: page.lastLine, totalLines: page.totalLines, cutLines: page.cutLines },
        value: { path, offset, lines: page.lines.map((line, index) => ({ number: page.firstLine + index, text: line.slice(line.indexOf('\t') + 1) })), totalLines: page.totalLines },
      }
    },
  }
}

export interface ReadToolPluginConfig extends ReadToolConfig {}

/** Registers `read` on `ctx.tools`, sharing `ctx.readLedger` with write and edit. */
export class ReadToolPlugin {
  static readonly inject = ['tools', 'readLedger']
  constructor(ctx: Context, config: ReadToolPluginConfig = {}) {
    // Untraced: `record` runs on every read and does not use the caller's context. The plugin
    // injects `readLedger`, so a new ledger reloads it.
    const tool = createReadTool(untraced(ctx.readLedger), config, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(tool))
  }
}
