/**
 * Vitest global setup: tests that spawn the real `dsh` binary need dist/ to match src/.
 * Rebuilds once per run when any source file is newer than the last build (npm ci builds it
 * through the prepare script, so CI normally skips this).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..')
const stamp = join(root, 'dist', '.buildstamp')

function newestSource(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path))
    else if (/\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

export default function setup(): void {
  const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0
  if (built >= newestSource(join(root, 'src'))) return
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' })
  execFileSync(process.execPath, [join(root, 'scripts', 'shipped-config.mjs')], { stdio: 'inherit' })
  writeFileSync(stamp, `${new Date().toISOString()}\n`)
}
