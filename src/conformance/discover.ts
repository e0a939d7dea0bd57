/** Finding files under the directories given on the command line. */
import { readdirSync, statSync, type Dirent } from 'node:fs'
import { join } from 'node:path'

const IGNORED_DIRS = new Set(['node_modules', '.git'])

/**
 * Every file under `root` whose name passes `accept`, sorted by path. Symlinked directories are
 * not followed (no cycles); symlinked files are. Throws when `root` is not a directory.
 */
export function findFiles(root: string, accept: (name: string) => boolean): string[] {
  if (!statSync(root).isDirectory()) throw new Error(`not a directory: ${root}`)
  const out: string[] = []
  const walk = (dir: string): void => {
    let entries: Dirent[]
    try {
      entries = readdirSync(dir, { withFileTypes: true })
    } catch (error) {
      throw new Error(`cannot read directory ${dir}: ${error instanceof Error ? error.message : String(error)}`)
    }
    for (const entry of entries) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (!IGNORED_DIRS.has(entry.name)) walk(path)
      } else if ((entry.isFile() || (entry.isSymbolicLink() && isFile(path))) && accept(entry.name)) {
        out.push(path)
      }
    }
  }
  walk(root)
  return out.sort()
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/**
 * Session log file names: `session.jsonl`, `session.N.jsonl`, `seed.jsonl` and the normalised
 * expected logs. Replay scripts and protocol/stdout captures are other formats.
 */
export function isSessionLogName(name: string): boolean {
  return /^(?:session(?:\.\d+)?|seed|session\.expected|parent\.expected|child\.expected)\.jsonl$/.test(name)
}

/**
 * Recorded scenario folders: every folder under `root` inside an `examples/` path segment for
 * which `classify` (given a file-name test for that folder) returns a scenario. Workspaces are
 * never searched; a matched folder's subfolders are searched only when `descend` is true.
 * Sorted by folder; an absent root yields none.
 */
export function findScenarioDirs<T extends { readonly dir: string }>(
  root: string,
  classify: (dir: string, has: (name: string) => boolean) => T | undefined,
  options: { readonly descend?: boolean } = {},
): T[] {
  const out: T[] = []
  const walk = (dir: string): void => {
    const entries = readdirSync(dir, { withFileTypes: true })
    const has = (name: string) => entries.some(entry => entry.isFile() && entry.name === name)
    const parts = dir.split(/[\\/]/)
    // Scenario folders live under `examples/`; the packaged Python SDK's runs are scenarios too.
    const scenario = parts.includes('examples') || parts.includes('python-sdk-single-exe') ? classify(dir, has) : undefined
    if (scenario !== undefined) {
      out.push(scenario)
      if (!options.descend) return
    }
    for (const entry of entries) {
      if (entry.isDirectory() && entry.name !== 'workspace' && !IGNORED_DIRS.has(entry.name)) walk(join(dir, entry.name))
    }
  }
  if (isDirectory(root)) walk(root)
  return out.sort((a, b) => a.dir.localeCompare(b.dir))
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}
