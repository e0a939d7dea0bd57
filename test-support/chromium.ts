/**
 * Finds the Debian `chromium` browser for the web UI's end-to-end tests, installing it with
 * apt-get when it is missing and we may (root, apt present). Returns undefined, with the reason,
 * when there is no browser: the tests then skip and say why.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const path = join(dir, name)
    if (dir && existsSync(path)) return path
  }
  return undefined
}

export function findChromium(): { path?: string; reason?: string } {
  const configured = process.env.DSH_CHROMIUM
  if (configured) return existsSync(configured) ? { path: configured } : { reason: `DSH_CHROMIUM=${configured} does not exist` }
  for (const name of NAMES) {
    const path = onPath(name)
    if (path) return { path }
  }
  if (process.getuid?.() !== 0 || !onPath('apt-get')) return { reason: 'no chromium on PATH (install the Debian chromium package)' }
  const install = spawnSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium'], { stdio: 'ignore', timeout: 540_000 })
  const path = onPath('chromium')
  return path ? { path } : { reason: `apt-get install chromium failed (exit ${install.status})` }
}

function newest(dir: string): number {
  let time = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    time = Math.max(time, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs)
  }
  return time
}

/** Rebuilds the browser bundle when web/ is newer than dist/web/app (npm ci builds it already). */
export function ensureWebBuild(repoRoot: string): void {
  const index = join(repoRoot, 'dist', 'web', 'app', 'index.html')
  if (existsSync(index) && statSync(index).mtimeMs >= newest(join(repoRoot, 'web', 'src'))) return
  execFileSync(process.execPath, [join(repoRoot, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', join(repoRoot, 'web', 'vite.config.ts'), '--logLevel', 'warn'], { cwd: repoRoot, stdio: 'inherit' })
}
