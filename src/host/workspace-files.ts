/**
 * The files of a workspace, for `@` mentions in the terminal app and the web UI: git's own view
 * when the folder is in a work tree (tracked and untracked files, without what .gitignore leaves
 * out), otherwise a breadth-first walk that skips version-control folders, dependencies and build
 * output. Either way the list stops at a cap, so a folder of 240,000 files (a home folder) answers
 * in well under a second rather than after walking all of them, and the walk never blocks the
 * event loop for long. Plus the fuzzy ranking both surfaces complete with.
 */
import { execFile } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { scrubbedEnvironment } from '../config/credentials.js'

/** At most this many files are listed from one workspace. */
export const MAX_LISTED_FILES = 20_000

const SKIPPED_DIRS = new Set(['.git', 'node_modules', '.hg', '.svn', 'dist', 'build', '.cache', '.next', 'coverage', '__pycache__', '.venv'])
const GIT_TIMEOUT_MS = 5000
const CACHE_MS = 3000

const cache = new Map<string, { at: number; files: Promise<string[]> }>()

function gitFiles(root: string, max: number): Promise<string[] | undefined> {
  return new Promise(done => {
    // A repository's own config must not run anything here (core.fsmonitor names a program), and
    // git gets no secrets in its environment (the one rule of src/config/credentials.ts).
    const args = ['-c', 'core.fsmonitor=false', '-C', root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard']
    execFile('git', args, { timeout: GIT_TIMEOUT_MS, maxBuffer: 256 * 1024 * 1024, env: scrubbedEnvironment() }, (error, stdout) => {
      if (error) return done(undefined)
      const files: string[] = []
      let at = 0
      while (at < stdout.length && files.length < max) {
        const end = stdout.indexOf('\0', at)
        const path = stdout.slice(at, end < 0 ? stdout.length : end)
        if (path !== '') files.push(path)
        at = end < 0 ? stdout.length : end + 1
      }
      done(files)
    })
  })
}

/** Folders read at once by the walk. */
const WALK_CONCURRENCY = 16

/** Files under `root`, shallowest first, stopping at `max`; folders read asynchronously, a few at a time. */
async function walkFiles(root: string, max: number): Promise<string[]> {
  const files: string[] = []
  let level = ['']
  while (level.length > 0 && files.length < max) {
    const deeper: string[] = []
    for (let at = 0; at < level.length && files.length < max; at += WALK_CONCURRENCY) {
      const batch = level.slice(at, at + WALK_CONCURRENCY)
      const listed = await Promise.all(batch.map(folder => readdir(join(root, folder), { withFileTypes: true }).catch(() => [])))
      for (let n = 0; n < batch.length && files.length < max; n += 1) {
        const folder = batch[n]!
        for (const entry of listed[n]!.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) {
          const path = folder === '' ? entry.name : `${folder}/${entry.name}`
          if (entry.isDirectory()) {
            if (!SKIPPED_DIRS.has(entry.name)) deeper.push(path)
          } else if (entry.isFile()) {
            files.push(path)
            if (files.length >= max) break
          }
        }
      }
    }
    level = deeper
  }
  return files
}

/** The workspace's files, relative with `/` separators, sorted; cached for a few seconds per folder. */
export function workspaceFiles(root: string, options: { readonly max?: number } = {}): Promise<string[]> {
  const max = options.max ?? MAX_LISTED_FILES
  const key = `${max}\0${root}`
  const hit = cache.get(key)
  if (hit !== undefined && Date.now() - hit.at < CACHE_MS) return hit.files
  const files = gitFiles(root, max).then(listed => listed ?? walkFiles(root, max)).then(listed => listed.sort(), () => [])
  cache.set(key, { at: Date.now(), files })
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
