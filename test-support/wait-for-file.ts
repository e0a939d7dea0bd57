/** Waiting for a file a child process creates (a tool body saying it started), without polling. */
import { existsSync, watch } from 'node:fs'
import { dirname } from 'node:path'

/** Resolves once `path` exists: fs.watch on its folder, plus a check for a file already there. */
export function waitForFile(path: string): Promise<void> {
  return new Promise(resolve => {
    const watcher = watch(dirname(path), () => {
      if (!existsSync(path)) return
      watcher.close()
      resolve()
    })
    if (existsSync(path)) {
      watcher.close()
      resolve()
    }
  })
}
