/**
 * `@` file completion in the terminal app: the workspace's files (src/host/workspace-files.ts,
 * shared with the web UI: git's view in a work tree, a capped walk elsewhere, re-listed after a
 * few seconds) ranked by the same fuzzy match as the web's.
 */
import { searchFiles, workspaceFiles } from '../host/workspace-files.js'

export class FileIndex {
  constructor(private readonly cwd: string) {}

  /** Up to `limit` paths matching `query`, best first. */
  async complete(query: string, limit = 6): Promise<string[]> {
    return searchFiles(await workspaceFiles(this.cwd), query, limit)
  }
}
