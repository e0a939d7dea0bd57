/**
 * `@` file completion: the workspace's files, listed once per app and matched by path fragment,
 * best first. In a git work tree the list is git's (tracked and untracked files, without what
 * .gitignore leaves out); elsewhere, or when git is missing or slow, a breadth-first walk that
 * skips .git, node_modules and dist. Either way the list stops at a cap, so `dsh` opened in a
 * home folder of 240,000 files answers at once instead of walking all of them first.
 */
import { execFile } from 'node:child_process'
import { opendir } from 'node:fs/promises'
import { join } from 'node:path'
import { scrubbedEnvironment } from '../config/credentials.js'

const MAX_FILES = 20_000
const GIT_TIMEOUT_MS = 3_000
const SKIPPED_FOLDERS = new Set(['.git', 'node_modules', 'dist'])

export class FileIndex {
  private files: Promise<readonly string[]> | undefined
  private readonly max: number

  constructor(private readonly cwd: string, options: { readonly max?: number } = {}) {
    this.max = options.max ?? MAX_FILES
  }

  /** The listed files, sorted; at most the cap. */
  list(): Promise<readonly string[]> {
    this.files ??= gitFiles(this.cwd, this.max)
      .then(files => files ?? walk(this.cwd, this.max))
      .then(files => files.sort())
      .catch(() => [])
    return this.files
  }

  /** Up to `limit` paths containing `query` (case-insensitive): name prefix, then path prefix, then anywhere. */
  async complete(query: string, limit = 6): Promise<string[]> {
    const files = await this.list()
    const q = query.toLowerCase()
    const scored: { path: string; score: number }[] = []
    for (const path of files) {
      const lower = path.toLowerCase()
      const at = lower.indexOf(q)
      if (at < 0) continue
      const name = lower.slice(lower.lastIndexOf('/') + 1)
      const score = name.startsWith(q) ? 0 : at === 0 ? 1 : 2
      scored.push({ path, score: score * 10_000 + path.length })
    }
    return scored.sort((a, b) => a.score - b.score).slice(0, limit).map(entry => entry.path)
  }
}

/** git's files under `cwd` (relative to it), or undefined outside a work tree, without git, or past the timeout. */
function gitFiles(cwd: string, max: number): Promise<string[] | undefined> {
  return new Promise(resolve => {
    execFile('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd, timeout: GIT_TIMEOUT_MS, maxBuffer: 256 * 1024 * 1024, env: scrubbedEnvironment(), windowsHide: true,
    }, (error, stdout) => {
      if (error !== null) return resolve(undefined)
      const files: string[] = []
      let at = 0
      while (at < stdout.length && files.length < max) {
        const end = stdout.indexOf('\0', at)
        const path = stdout.slice(at, end < 0 ? stdout.length : end)
        // A deleted file git still tracks is listed too; it completes to nothing worse than a name.
        if (path !== '') files.push(path)
        at = end < 0 ? stdout.length : end + 1
      }
      resolve(files)
    })
  })
}

/** Files under `cwd`, shallowest first, stopping at `max`. */
async function walk(cwd: string, max: number): Promise<string[]> {
  const files: string[] = []
  let level = ['']
  while (level.length > 0 && files.length < max) {
    const deeper: string[] = []
    for (const folder of level) {
      let entries
      try {
        entries = await opendir(join(cwd, folder), { bufferSize: 256 })
      } catch {
        continue
      }
      for await (const entry of entries) {
        const path = folder === '' ? entry.name : `${folder}/${entry.name}`
        if (entry.isDirectory()) {
          if (!SKIPPED_FOLDERS.has(entry.name)) deeper.push(path)
        } else if (entry.isFile()) {
          files.push(path)
          if (files.length >= max) break
        }
      }
      if (files.length >= max) break
    }
    level = deeper
  }
  return files
}
