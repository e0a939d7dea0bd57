/**
 * `@` file completion: the workspace's files (tinyglobby, .git and node_modules left out, capped),
 * listed once per app and matched by path fragment, best first.
 */
import { glob } from 'tinyglobby'

const MAX_FILES = 20_000

export class FileIndex {
  private files: Promise<readonly string[]> | undefined

  constructor(private readonly cwd: string) {}

  private list(): Promise<readonly string[]> {
    this.files ??= glob(['**/*'], {
      cwd: this.cwd, dot: true, onlyFiles: true, followSymbolicLinks: false,
      ignore: ['**/.git/**', '**/node_modules/**', '**/dist/**'],
    }).then(files => files.slice(0, MAX_FILES).sort()).catch(() => [])
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
