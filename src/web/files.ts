/**
 * Files of a workspace for `@` mentions: a bounded list (git's own view when the folder is in a
 * repository, so `.gitignore` is respected; otherwise a walk that skips `.git` and
 * `node_modules`), fuzzy search over it, and reading mentioned files as reference blocks the
 * model can read. Every path is checked to stay inside the workspace, symlinks included.
 */
import { execFile } from 'node:child_process'
import { closeSync, openSync, readSync, readdirSync, realpathSync, statSync } from 'node:fs'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { scrubbedEnvironment } from '../config/credentials.js'
import { WebApiError } from './api.js'

/** At most this many files are listed from one workspace. */
export const MAX_LISTED_FILES = 20_000
/** A mentioned file is attached up to this many bytes (cut at a line end, marked truncated). */
export const MAX_MENTION_BYTES = 64 * 1024
/** All mentions of one message together. */
export const MAX_MENTION_TOTAL_BYTES = 256 * 1024
export const MAX_MENTIONS = 10

const SKIPPED_DIRS = new Set(['.git', 'node_modules', '.hg', '.svn', 'dist', 'build', '.cache', '.next', 'coverage', '__pycache__', '.venv'])
const MAX_DEPTH = 16
const CACHE_MS = 3000

const cache = new Map<string, { at: number; files: Promise<string[]> }>()

function gitFiles(root: string): Promise<string[] | undefined> {
  return new Promise(done => {
    // A repository's own config must not run anything here (core.fsmonitor names a program), and
    // git gets no secrets in its environment (the one rule of src/config/credentials.ts).
    const args = ['-c', 'core.fsmonitor=false', '-C', root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard']
    execFile('git', args, { timeout: 5000, maxBuffer: 32 * 1024 * 1024, env: scrubbedEnvironment() }, (error, stdout) => {
      if (error) return done(undefined)
      done(stdout.split('\0').filter(path => path !== '').slice(0, MAX_LISTED_FILES))
    })
  })
}

function walkFiles(root: string): string[] {
  const out: string[] = []
  const visit = (dir: string, depth: number) => {
    if (depth > MAX_DEPTH || out.length >= MAX_LISTED_FILES) return
    let entries
    try { entries = readdirSync(join(root, dir), { withFileTypes: true }) } catch { return }
    entries.sort((a, b) => a.name.localeCompare(b.name))
    for (const entry of entries) {
      if (out.length >= MAX_LISTED_FILES) return
      const path = dir === '' ? entry.name : `${dir}/${entry.name}`
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) visit(path, depth + 1)
      } else if (entry.isFile()) out.push(path)
    }
  }
  visit('', 0)
  return out
}

/** The workspace's files, relative with `/` separators; cached for a few seconds per folder. */
export function workspaceFiles(root: string): Promise<string[]> {
  const hit = cache.get(root)
  if (hit !== undefined && Date.now() - hit.at < CACHE_MS) return hit.files
  const files = gitFiles(root).then(listed => listed ?? walkFiles(root))
  cache.set(root, { at: Date.now(), files })
  if (cache.size > 32) cache.delete(cache.keys().next().value!)
  return files
}

/**
 * Fuzzy score of `path` for `query` (case-insensitive subsequence), or undefined when it does not
 * match. Consecutive letters, letters at the start of a path segment or word and matches in the
 * file name score higher; shorter paths win ties.
 */
export function fuzzyScore(path: string, query: string): number | undefined {
  const hay = path.toLowerCase()
  const needle = query.toLowerCase().replace(/\s+/g, '')
  if (needle === '') return 0
  const nameStart = hay.lastIndexOf('/') + 1
  // Greedy matching from the start of each path segment; the best of them counts.
  let best: number | undefined
  for (let start = 0; start < hay.length; start = hay.indexOf('/', start) + 1 || hay.length) {
    const score = greedy(hay, needle, start, nameStart)
    if (score !== undefined && (best === undefined || score > best)) best = score
    if (start === hay.length - 1) break
  }
  if (best === undefined) return undefined
  // A name containing the query as it is typed is what people mean most of the time.
  if (hay.slice(nameStart).includes(needle)) best += 10
  return best - path.length / 100
}

function greedy(hay: string, needle: string, from: number, nameStart: number): number | undefined {
  let score = 0
  let previous = -2
  for (const char of needle) {
    const index = hay.indexOf(char, from)
    if (index < 0) return undefined
    score += 1
    if (index === previous + 1) score += 5
    const before = index === 0 ? '/' : hay[index - 1]!
    if (before === '/' || before === '-' || before === '_' || before === '.') score += 3
    if (index >= nameStart) score += 2
    previous = index
    from = index + 1
  }
  return score
}

export function searchFiles(files: readonly string[], query: string, limit: number): string[] {
  const scored: { path: string; score: number }[] = []
  for (const path of files) {
    const score = fuzzyScore(path, query)
    if (score !== undefined) scored.push({ path, score })
  }
  scored.sort((a, b) => b.score - a.score || a.path.localeCompare(b.path))
  return scored.slice(0, limit).map(entry => entry.path)
}

/**
 * The real path of `given` (relative to `root`) when it is a regular file inside the workspace;
 * a clear 400 otherwise (absolute paths, `..`, NUL bytes, symlinks that lead out, folders).
 */
export function insideWorkspace(root: string, given: string): { path: string; real: string } {
  const bad = (why: string) => new WebApiError(400, 'BAD_MENTION', `@${given}: ${why}`)
  if (given === '' || given.length > 1024 || given.includes('\0')) throw bad('not a file path')
  if (isAbsolute(given) || /^[a-zA-Z]:[\\/]/.test(given)) throw bad('mentions are relative to the workspace folder')
  const path = resolve(root, given)
  const rootReal = realpathSync(root)
  const within = (candidate: string, base: string) => candidate !== base && !relative(base, candidate).startsWith('..') && !isAbsolute(relative(base, candidate))
  if (!within(path, resolve(root))) throw bad('outside the workspace folder')
  let real: string
  try { real = realpathSync(path) } catch { throw bad('no such file in the workspace') }
  if (!within(real, rootReal)) throw bad('leads outside the workspace folder')
  if (!statSync(real).isFile()) throw bad('not a regular file')
  return { path: relative(resolve(root), path).split(sep).join('/'), real }
}

/** The reference block of one mentioned file: `<file path=… [truncated]>` … `</file>`. */
export interface MentionBlock { readonly type: 'text'; readonly text: string }

function readPrefix(path: string, bytes: number): { data: Buffer; size: number } {
  const fd = openSync(path, 'r')
  try {
    const size = statSync(path).size
    const data = Buffer.alloc(Math.min(size, bytes))
    let read = 0
    while (read < data.length) {
      const n = readSync(fd, data, read, data.length - read, read)
      if (n === 0) break
      read += n
    }
    return { data: data.subarray(0, read), size }
  } finally {
    closeSync(fd)
  }
}

/** Escapes a path for the `path="…"` attribute of a reference block. */
function attribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')
}

/**
 * Reads mentioned files as reference blocks (docs/web.md): each file's text up to
 * MAX_MENTION_BYTES (cut at a line end), all of them up to MAX_MENTION_TOTAL_BYTES. A binary
 * file is referenced by name only. Duplicates are read once.
 */
export function mentionBlocks(root: string, mentions: unknown): MentionBlock[] {
  if (mentions === undefined || mentions === null) return []
  if (!Array.isArray(mentions) || mentions.some(entry => typeof entry !== 'string')) throw new WebApiError(400, 'BAD_PARAMS', '"mentions" must be a list of workspace-relative file paths')
  const unique = [...new Set(mentions as string[])]
  if (unique.length > MAX_MENTIONS) throw new WebApiError(400, 'BAD_MENTION', `at most ${MAX_MENTIONS} files can be mentioned in one message (got ${unique.length})`)
  const checked = unique.map(given => insideWorkspace(root, given))
  let budget = MAX_MENTION_TOTAL_BYTES
  return checked.map(({ path, real }) => {
    const { data, size } = readPrefix(real, Math.min(MAX_MENTION_BYTES, Math.max(0, budget)))
    if (data.subarray(0, 8192).includes(0)) return { type: 'text', text: `<file path="${attribute(path)}" binary="true" bytes="${size}"></file>` }
    let text = data.toString('utf8')
    let truncated = size > data.length
    if (truncated) {
      const end = text.lastIndexOf('\n')
      if (end > 0) text = text.slice(0, end + 1)
      // A multi-byte character cut at the end reads as U+FFFD: drop it.
      text = text.replace(/\uFFFD$/, '')
    }
    budget -= Buffer.byteLength(text)
    if (!text.endsWith('\n') && text !== '') text += '\n'
    truncated ||= false
    const note = truncated ? ` truncated="true" bytes="${size}"` : ''
    return { type: 'text', text: `<file path="${attribute(path)}"${note}>\n${text}</file>` }
  })
}

/** Whether a user content block is a mention's reference block (the conversation shows it as a chip). */
export function isMentionBlock(text: string): boolean {
  return /^<file path="[^"]*"[^>]*>/.test(text)
}
