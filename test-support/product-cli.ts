/**
 * The real product CLIs for the product-subagent tests, installed from the npm registry into a
 * cache folder under the system temp folder keyed by version (a rerun finds them there). Returns
 * the command to run, or why there is none: the tests then skip and say how to get it.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const CODEX_VERSION = '0.171.0'
export const CLAUDE_CODE_VERSION = '2.1.337'

export interface InstalledCli {
  readonly command?: readonly string[]
  readonly reason?: string
}

function install(pkg: string, version: string, extra: readonly string[], base: string, find: (dir: string) => string | undefined): InstalledCli {
  const dir = join(base, 'dsh-product-cli', `${pkg.replace(/[@/]/g, '_')}-${version}`)
  const how = `npm install --prefix ${dir} ${pkg}@${version}${extra.length > 0 ? ` ${extra.join(' ')}` : ''}`
  let found = find(dir)
  if (found === undefined) {
    mkdirSync(dir, { recursive: true })
    const result = spawnSync('npm', ['install', '--prefix', dir, `${pkg}@${version}`, '--no-audit', '--no-fund', '--loglevel=error', ...extra], { encoding: 'utf8', timeout: 300_000 })
    found = find(dir)
    if (found === undefined) return { reason: `${pkg}@${version} could not be installed (npm exit ${result.status ?? result.signal ?? result.error?.message}); run: ${how}` }
  }
  const probe = spawnSync(found, ['--version'], { encoding: 'utf8', timeout: 60_000 })
  if (probe.status !== 0) return { reason: `${found} --version failed (exit ${probe.status ?? probe.signal}); reinstall with: ${how}` }
  return { command: [found] }
}

/**
 * `base`: the folder the cache lies in (default the system temp folder). Sandboxed runs need one
 * outside /tmp: workspace-write gives the sandbox a /tmp of its own, where the CLI is not.
 */
export function codexCli(base = tmpdir()): InstalledCli {
  return install('@openai/codex', CODEX_VERSION, [], base, (dir) => {
    const bin = join(dir, 'node_modules', '.bin', 'codex')
    return existsSync(bin) && existsSync(join(dir, 'node_modules', '@openai', `codex-${process.platform}-${process.arch}`)) ? bin : undefined
  })
}

/** The wrapper package asks for a newer Node than the tests run on; its native binary does not care. */
export function claudeCodeCli(base = tmpdir()): InstalledCli {
  return install('@anthropic-ai/claude-code', CLAUDE_CODE_VERSION, ['--engine-strict=false'], base, (dir) => {
    const bin = join(dir, 'node_modules', '@anthropic-ai', `claude-code-${process.platform}-${process.arch}`, 'claude')
    return existsSync(bin) ? bin : undefined
  })
}
