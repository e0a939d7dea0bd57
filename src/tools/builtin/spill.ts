/**
 * Output spill shared by the built-in tools. A result too large for the model's context is
 * written to a private folder (0700, one per process, removed at exit) as a 0600 file and the
 * result keeps a preview plus the file's path, so nothing is lost and the model can page through
 * the rest with `read` or search it with `grep`.
 */
import { randomBytes } from 'node:crypto'
import { createWriteStream, rmSync, type WriteStream } from 'node:fs'
import { chmod, mkdtemp, writeFile } from 'node:fs/promises'
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

/** The process's private spill folder, created on first use. */
export function spillDirectory(): Promise<string> {
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
export async function spillText(text: string | Uint8Array, label: string): Promise<string> {
  const path = join(await spillDirectory(), spillName(label))
  await writeFile(path, text, { mode: 0o600, flag: 'wx' })
  return path
}

/** Opens a new 0600 spill file for streaming writes (used by `bash`). */
export async function openSpillStream(label: string): Promise<{ path: string; stream: WriteStream }> {
  const path = join(await spillDirectory(), spillName(label))
  return { path, stream: createWriteStream(path, { mode: 0o600, flags: 'wx' }) }
}

export interface SpillOptions {
  readonly thresholdBytes?: number
  readonly previewBytes?: number
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
  const path = await spillText(text, label)
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
export function withSpill<A, C>(label: string, body: (args: A, context: C) => Promise<ToolOutput>, options?: SpillOptions) {
  return async (args: A, context: C): Promise<ToolOutput> => spillOutput(await body(args, context), label, options)
}
