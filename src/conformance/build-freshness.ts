/**
 * Whether `dist/` was built from the current sources: `dist/.buildstamp` (written by
 * `npm run prepare` and by the test set-up's rebuild) is newer than every non-test source file.
 */
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

function newestSource(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path))
    else if (/\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

export function buildStamp(root: string): string {
  return join(root, 'dist', '.buildstamp')
}

export function builtIsFresh(root: string): boolean {
  const stamp = buildStamp(root)
  return existsSync(stamp) && statSync(stamp).mtimeMs >= newestSource(join(root, 'src'))
}
