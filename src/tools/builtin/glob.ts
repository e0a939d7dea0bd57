/**
 * `glob`: files matching a pattern, newest first. node_modules and .git are never searched, and
 * files on the sandbox's deny-read list are left out silently (`./hidden.ts`).
 */
import { stat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { Context } from 'cordis'
import type { Tool, ToolOutput } from '../api.js'
import type { JsonSchema } from '../json-schema.js'
import { realOf, type ReadCheck } from '../../sandbox/secrets.js'
import { BuiltinErrorCode, FsError, fsFailure } from './errors.js'
import { readGuard, refuseHidden } from './hidden.js'
import { displayPath, resolvePath } from './paths.js'
import { sandboxingOf, type Sandboxing } from './sandboxing.js'
import { spillText, withSpill } from './spill.js'

export interface GlobToolConfig {
  /** Paths shown inline; the full list of a larger result is spilled to a file. */
  readonly maxResults?: number
  readonly timeoutMs?: number
}

export const GLOB_DEFAULTS = { maxResults: 100, timeoutMs: 60_000 } as const

/** Folders the search tools never enter. */
export const IGNORED_DIRECTORIES = ['**/node_modules/**', '**/.git/**'] as const

export interface GlobArgs {
  readonly pattern: string
  readonly path?: string
}

export const globParameters = {
  type: 'object',
  properties: {
    pattern: { type: 'string', minLength: 1, description: 'Glob pattern relative to path, e.g. "**/*.ts" or "src/**/*.{js,json}".' },
    path: { type: 'string', description: 'Folder to search in (default: the session working directory).' },
  },
  required: ['pattern'],
} as const satisfies JsonSchema

/** Stats in bounded batches so a huge match list does not open thousands of handles at once. */
async function withMtimes(paths: readonly string[], signal: AbortSignal): Promise<{ path: string; mtimeMs: number }[]> {
  const out: { path: string; mtimeMs: number }[] = []
  const batch = 64
  for (let i = 0; i < paths.length; i += batch) {
    signal.throwIfAborted()
    const stats = await Promise.all(paths.slice(i, i + batch).map((path) => stat(path).then((s) => s.mtimeMs, () => undefined)))
    stats.forEach((mtimeMs, j) => { if (mtimeMs !== undefined) out.push({ path: paths[i + j], mtimeMs }) })
  }
  return out
}

/**
 * The paths of `files` not hidden by `hidden`, each checked by its name and its real path (the
 * search follows no link to a file, but a pattern's fixed folders may be links: one `realpath`
 * per folder).
 */
export function visibleFiles(files: readonly string[], hidden: ReadCheck | undefined): string[] {
  if (hidden === undefined) return [...files]
  const folders = new Map<string, string>()
  return files.filter((file) => {
    const folder = dirname(file)
    let real = folders.get(folder)
    if (real === undefined) folders.set(folder, real = realOf(folder))
    return hidden.denied(file, join(real, basename(file))) === undefined
  })
}

/** Matches of `pattern` under `base`, absolute, newest first (ties by path). */
export async function globNewestFirst(pattern: string, base: string, signal: AbortSignal, hidden?: ReadCheck): Promise<string[]> {
  const info = await stat(base).catch((error) => fsFailure(error, base))
  if (!info.isDirectory()) throw new FsError(`${base} is not a directory`, BuiltinErrorCode.notDirectory)
  const matches = await (await import('tinyglobby')).glob(pattern, {
    cwd: base, absolute: true, onlyFiles: true, dot: true, expandDirectories: false,
    ignore: [...IGNORED_DIRECTORIES], followSymbolicLinks: false,
  })
  const dated = await withMtimes(visibleFiles(matches, hidden), signal)
  dated.sort((a, b) => b.mtimeMs - a.mtimeMs || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  return dated.map((entry) => entry.path)
}

export function createGlobTool(config: GlobToolConfig = {}, sandboxing?: Sandboxing): Tool<GlobArgs> {
  const maxResults = config.maxResults ?? GLOB_DEFAULTS.maxResults
  return {
    name: 'glob',
    description: `Find files by glob pattern (e.g. "**/*.ts"), newest first. Shows at most ${maxResults} paths; the full list of a larger result is saved to a file whose path is shown. node_modules and .git are skipped.`,
    parameters: globParameters,
    timeoutMs: config.timeoutMs ?? GLOB_DEFAULTS.timeoutMs,
    isConcurrencySafe: () => true,
    execute: withSpill('glob', async (args, context): Promise<ToolOutput> => {
      const base = resolvePath(context.cwd, args.path ?? '.')
      const hidden = await readGuard(sandboxing, context)
      refuseHidden(hidden, 'glob', args.path ?? '.', base)
      const files = await globNewestFirst(args.pattern, base, context.signal, hidden)
      if (files.length === 0) return { content: [{ type: 'text', text: 'No files found' }], meta: { count: 0 } }
      const shown = files.slice(0, maxResults).map((file) => displayPath(context.cwd, file))
      let text = shown.join('\n')
      let listPath: string | undefined
      if (files.length > maxResults) {
        listPath = await spillText(files.join('\n') + '\n', 'glob', context)
        text += `\n\n[${files.length} files matched; showing the ${maxResults} newest. The full list is saved to ${listPath}]`
      }
      return { content: [{ type: 'text', text }], meta: { count: files.length, ...(listPath ? { listPath } : {}) } }
    }),
  }
}

export class GlobToolPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context, config: GlobToolConfig = {}) {
    const tool = createGlobTool(config, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(tool))
  }
}
