/**
 * Vitest global setup: tests that spawn the real `dsh` binary need dist/ to match src/.
 * Rebuilds once per run when any source file is newer than the last build (npm ci builds it
 * through the prepare script, so CI normally skips this), bundle included, so the tests run the
 * launcher users get (bin/dsh.js takes dist/bundle while it matches dist/.buildstamp).
 */
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildStamp, builtIsFresh } from '../src/conformance/build-freshness.js'

const root = join(import.meta.dirname, '..')

export default function setup(): void {
  if (builtIsFresh(root)) return
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' })
  execFileSync(process.execPath, [join(root, 'scripts', 'shipped-config.mjs')], { stdio: 'inherit' })
  writeFileSync(buildStamp(root), `${new Date().toISOString()}\n`)
  execFileSync(process.execPath, [join(root, 'scripts', 'bundle.mjs')], { stdio: 'inherit' })
}
