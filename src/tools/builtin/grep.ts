/**
 * `grep`: lines matching a JavaScript regular expression, as `path:line: text`. Pure Node: files
 * come from tinyglobby, binary files (a NUL byte in the first 8 KB) and very large files are
 * skipped, and node_modules and .git are never searched. Files on the sandbox's deny-read list are
 * skipped silently (`./hidden.ts`); a search path that is itself on it is refused.
 */
import { stat } from 'node:fs/promises'
import { Context } from 'cordis'
import type { Tool, ToolOutput } from '../api.js'
import type { JsonSchema } from '../json-schema.js'
import type { ReadCheck } from '../../sandbox/secrets.js'
import { BuiltinErrorCode, FsError, fsFailure, openRegularFile } from './errors.js'
import { IGNORED_DIRECTORIES } from './glob.js'
import { openedPath, readGuard, refuseHidden } from './hidden.js'
import { displayPath, looksBinary, resolvePath } from './paths.js'
import { sandboxingOf, type Sandboxing } from './sandboxing.js'
import { withSpill } from './spill.js'

export interface GrepToolConfig {
  readonly maxMatches?: number
  /** A matching line longer than this is cut. */
  readonly maxLineChars?: number
  /** Files larger than this are skipped (and counted). */
  readonly maxFileBytes?: number
  readonly timeoutMs?: number
}

export const GREP_DEFAULTS = { maxMatches: 250, maxLineChars: 500, maxFileBytes: 10 * 1024 * 1024, timeoutMs: 60_000 } as const

export interface GrepArgs {
  readonly pattern: string
  readonly path?: string
  readonly include?: string
}

export const grepParameters = {
  type: 'object',
  properties: {
    pattern: { type: 'string', minLength: 1, description: 'JavaScript regular expression, matched against each line (e.g. "function\\\\s+\\\\w+").' },
    path: { type: 'string', description: 'File or folder to search (default: the session working directory).' },
    include: { type: 'string', description: 'Glob filter for file names, e.g. "*.ts" or "*.{ts,tsx}"; a pattern without "/" matches at any depth.' },
  },
  required: ['pattern'],
} as const satisfies JsonSchema

export interface GrepMatch {
  readonly path: string
  readonly line: number
  readonly text: string
}

export interface GrepResult {
  readonly matches: GrepMatch[]
  readonly limitReached: boolean
  readonly filesSearched: number
  readonly skippedLarge: number
}

export function compilePattern(pattern: string): RegExp {
  try {
    return new RegExp(pattern)
  } catch (error) {
    throw new FsError(`invalid regular expression ${JSON.stringify(pattern)}: ${(error as Error).message}`, BuiltinErrorCode.invalidPattern)
  }
}

async function candidateFiles(base: string, include: string | undefined): Promise<string[]> {
  const info = await stat(base).catch((error) => fsFailure(error, base))
  if (info.isFile()) return [base]
  const pattern = include === undefined ? '**/*' : include.includes('/') ? include : `**/${include}`
  const files = await (await import('tinyglobby')).glob(pattern, {
    cwd: base, absolute: true, onlyFiles: true, dot: true, expandDirectories: false,
    ignore: [...IGNORED_DIRECTORIES], followSymbolicLinks: false,
  })
  return files.sort()
}

/** A file's bytes, or why it is not searched (a hidden file is not searched, and not counted). */
async function load(file: string, maxFileBytes: number, hidden: ReadCheck | undefined): Promise<Buffer | 'large' | undefined> {
  const info = await stat(file).catch(() => undefined)
  // FIFOs, sockets and devices are never searched: reading one could block or never end.
  if (info === undefined || !info.isFile()) return undefined
  if (info.size > maxFileBytes) return 'large'
  const handle = await openRegularFile(file).catch(() => undefined)
  if (handle === undefined) return undefined
  try {
    // Checked by what was opened: the real path, whatever links led there.
    if (hidden?.denied(file, openedPath(handle.fd)) !== undefined) return undefined
    return await handle.readFile()
  } catch {
    return undefined
  } finally {
    await handle.close().catch(() => undefined)
  }
}

/** Files are read a batch at a time (I/O overlaps) and scanned in path order. */
const READ_BATCH = 16

export async function grepFiles(regex: RegExp, base: string, include: string | undefined, limits: Required<Omit<GrepToolConfig, 'timeoutMs'>>, signal: AbortSignal, hidden?: ReadCheck): Promise<GrepResult> {
  const files = await candidateFiles(base, include)
  const matches: GrepMatch[] = []
  let filesSearched = 0
  let skippedLarge = 0
  for (let start = 0; start < files.length; start += READ_BATCH) {
    signal.throwIfAborted()
    const batch = files.slice(start, start + READ_BATCH)
    const buffers = await Promise.all(batch.map((file) => load(file, limits.maxFileBytes, hidden)))
    for (let f = 0; f < batch.length; f++) {
      const buffer = buffers[f]
      if (buffer === 'large') { skippedLarge++; continue }
      if (!buffer || looksBinary(buffer)) continue
      filesSearched++
      const lines = buffer.toString('utf8').split('\n')
      for (let i = 0; i < lines.length; i++) {
        let line = lines[i]
        if (line.endsWith('\r')) line = line.slice(0, -1)
        if (!regex.test(line)) continue
        if (matches.length >= limits.maxMatches) return { matches, limitReached: true, filesSearched, skippedLarge }
        const text = line.length > limits.maxLineChars ? `${line.slice(0, limits.maxLineChars)}… [cut]` : line
        matches.push({ path: batch[f], line: i + 1, text })
      }
    }
  }
  return { matches, limitReached: false, filesSearched, skippedLarge }
}

export function createGrepTool(config: GrepToolConfig = {}, sandboxing?: Sandboxing): Tool<GrepArgs> {
  const limits = {
    maxMatches: config.maxMatches ?? GREP_DEFAULTS.maxMatches,
    maxLineChars: config.maxLineChars ?? GREP_DEFAULTS.maxLineChars,
    maxFileBytes: config.maxFileBytes ?? GREP_DEFAULTS.maxFileBytes,
  }
  return {
    name: 'grep',
    description: `Search file contents with a JavaScript regular expression. Prints matching lines as "path:line: text", at most ${limits.maxMatches} matches. Binary files, node_modules and .git are skipped. Narrow the search with path and include (e.g. "*.ts").`,
    parameters: grepParameters,
    timeoutMs: config.timeoutMs ?? GREP_DEFAULTS.timeoutMs,
    isConcurrencySafe: () => true,
    execute: withSpill('grep', async (args, context): Promise<ToolOutput> => {
      const regex = compilePattern(args.pattern)
      const base = resolvePath(context.cwd, args.path ?? '.')
      const hidden = await readGuard(sandboxing, context)
      refuseHidden(hidden, 'grep', args.path ?? '.', base)
      const result = await grepFiles(regex, base, args.include, limits, context.signal, hidden)
      const meta = { matches: result.matches.length, limitReached: result.limitReached, filesSearched: result.filesSearched, skippedLarge: result.skippedLarge }
      const notes: string[] = []
      if (result.limitReached) notes.push(`[match limit of ${limits.maxMatches} reached; narrow the pattern, path or include to see the rest]`)
      if (result.skippedLarge > 0) notes.push(`[${result.skippedLarge} file(s) over ${Math.round(limits.maxFileBytes / 1024 / 1024)} MB skipped]`)
      if (result.matches.length === 0) return { content: [{ type: 'text', text: ['No matches found', ...notes].join('\n') }], meta }
      const lines = result.matches.map((m) => `${displayPath(context.cwd, m.path)}:${m.line}: ${m.text}`)
      const text = notes.length > 0 ? `${lines.join('\n')}\n\n${notes.join('\n')}` : lines.join('\n')
      return { content: [{ type: 'text', text }], meta }
    }),
  }
}

export class GrepToolPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context, config: GrepToolConfig = {}) {
    const tool = createGrepTool(config, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(tool))
  }
}
