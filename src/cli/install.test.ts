/**
 * The package as a stranger installs it (#44.5): `npm pack`, the tarball installed into a fresh
 * project, then the installed `dsh` run from another folder (`--version`, a headless run against
 * a fake model over real HTTP) and the SDK client imported as `dsh/sdk` by a script of that
 * project. The native SQLite module is optional: the install here is made with its build failing
 * (build from source, no headers), and succeeds without it; JSONL works and choosing SQLite says
 * how to get the module.
 *
 * Dependencies come from npm's cache through the repository's lockfile (`npm ci` filled it), the
 * registry only for what the cache lacks. The test packs dist/ as the global setup built it.
 */
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { repoRoot } from '../../test-support/run-dsh.js'

const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' })
const npmMissing = npm.status !== 0 ? 'npm is not on PATH' : undefined
if (npmMissing !== undefined) console.warn(`skipping the packed-install test: ${npmMissing}`)

/** The environment of npm and of the installed dsh: no npm_* variables of the npm that runs vitest. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key) && !key.startsWith('DEEPSEEK_') && !key.startsWith('DSH_')) env[key] = value
  return { ...env, ...extra }
}

interface LockEntry { dev?: boolean; devOptional?: boolean; optional?: boolean; [key: string]: unknown }

/**
 * A lockfile for a project depending on only the tarball: the repository's lock entries of dsh's
 * runtime dependencies (dev-only ones dropped), so `npm ci` installs exactly the tested versions.
 */
function consumerLock(tarball: string): unknown {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Record<string, unknown>
  const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }
  const packages: Record<string, unknown> = {
    '': { name: 'consumer', dependencies: { dsh: `file:${tarball}` } },
    'node_modules/dsh': {
      version: pkg.version, resolved: `file:${tarball}`, license: pkg.license, bin: pkg.bin, engines: pkg.engines,
      dependencies: pkg.dependencies, optionalDependencies: pkg.optionalDependencies,
    },
  }
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === '' || entry.dev === true) continue
    const { devOptional, ...rest } = entry
    packages[path] = devOptional === true ? { ...rest, optional: true } : rest
  }
  return { name: 'consumer', lockfileVersion: 3, requires: true, packages }
}

let server: FakeDeepSeek
let root: string
let project: string
let installLog = ''
const usage = { prompt_tokens: 10, completion_tokens: 3 }

beforeAll(async () => {
  if (npmMissing !== undefined) return
  server = await FakeDeepSeek.start()
  root = mkdtempSync(join(tmpdir(), 'dsh-install-'))
  project = join(root, 'project')
  const packed = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', root], { cwd: repoRoot, encoding: 'utf8', env: cleanEnv({}) })
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`)
  const tarball = (JSON.parse(packed.stdout) as [{ filename: string }])[0].filename
  mkdirSync(project)
  copyFileSync(join(root, tarball), join(project, tarball))
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies: { dsh: `file:${tarball}` } }))
  writeFileSync(join(project, 'package-lock.json'), JSON.stringify(consumerLock(tarball)))
  // better-sqlite3's build fails as on a machine with no prebuilt binary reachable and no headers.
  const install = spawnSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel', 'warn'], {
    cwd: project, encoding: 'utf8',
    env: cleanEnv({ npm_config_build_from_source: 'true', npm_config_nodedir: join(root, 'no-headers') }),
  })
  installLog = `${install.stdout}${install.stderr}`
  if (install.status !== 0) throw new Error(`npm ci of the packed tarball failed:\n${installLog}`)
}, 300_000)

afterAll(async () => {
  await server?.close()
  if (root !== undefined) rmSync(root, { recursive: true, force: true })
})

interface Ran { status: number | null; stdout: string; stderr: string }

/** Runs a program to its end without blocking this process (the fake model answers from it). */
function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (text: string) => { stdout += text })
  child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr += text })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', status => resolve({ status, stdout, stderr }))
  })
}

/** The installed command, run from a folder of its own (not the project, not the clone). */
function dsh(args: readonly string[], env: Record<string, string> = {}): Promise<Ran> {
  const elsewhere = mkdtempSync(join(root, 'elsewhere-'))
  const home = mkdtempSync(join(root, 'home-'))
  return run(join(project, 'node_modules', '.bin', 'dsh'), args, elsewhere, cleanEnv({ DSH_HOME: home, ...env }))
}

describe.skipIf(npmMissing !== undefined)('the packed package, installed (#44.5)', () => {
  it('installs without the native SQLite module when it cannot be built, and the command runs from another folder', async () => {
    expect(existsSync(join(project, 'node_modules', 'better-sqlite3'))).toBe(false)
    const version = await dsh(['--version'])
    expect(version.stderr).toBe('')
    expect(version.stdout).toBe(`dsh ${(JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version}\n`)
    expect(version.status).toBe(0)
  })

  it('a headless run of the installed command against a fake model stores its session as JSONL', async () => {
    server.enqueue(streamResponse([{ text: 'PONG' }, { finish: 'stop', usage }]))
    const home = mkdtempSync(join(root, 'home-'))
    const result = await dsh(['--output', 'json', 'say pong'], { DSH_HOME: home, DEEPSEEK_API_KEY: 'test-key', DEEPSEEK_BASE_URL: server.url })
    expect(result.status, result.stderr).toBe(0)
    const { sessionId } = JSON.parse(result.stdout) as { sessionId: string }
    expect(JSON.parse(result.stdout)).toMatchObject({ type: 'result', output: 'PONG', reason: { kind: 'completed' } })
    const listed = await dsh(['sessions', '--json'], { DSH_HOME: home })
    expect(listed.status, listed.stderr).toBe(0)
    expect((JSON.parse(listed.stdout) as { id: string }[]).map(s => s.id)).toEqual([sessionId])
  })

  it('choosing the SQLite store says how to get the module, in one line, and exits 1', async () => {
    const patch = join(root, 'sqlite.yml')
    writeFileSync(patch, '- id: persistence\n  name: persistence-sqlite\n')
    const result = await dsh(['--patch', patch, 'sessions'])
    expect(result.status).toBe(1)
    const lines = result.stderr.trimEnd().split('\n').filter(line => !line.startsWith('dsh: warning:'))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/needs the native module better-sqlite3/)
    expect(lines[0]).toContain('npm_config_nodedir=')
  })

  it('a script of the project drives the installed SDK server through `dsh/sdk`', async () => {
    server.enqueue(streamResponse([{ text: 'from the sdk' }, { finish: 'stop', usage }]))
    const work = mkdtempSync(join(root, 'work-'))
    writeFileSync(join(project, 'client.mjs'), [
      "import { DshClient } from 'dsh/sdk'",
      'const client = await DshClient.start({ cwd: process.argv[2] })',
      "const result = await client.run('hello')",
      'await client.close()',
      'console.log(JSON.stringify({ text: result.finalResponse, reason: result.reason }))',
    ].join('\n'))
    const home = mkdtempSync(join(root, 'home-'))
    const result = await run(process.execPath, [join(project, 'client.mjs'), work], work, cleanEnv({ DSH_HOME: home, DEEPSEEK_API_KEY: 'test-key', DEEPSEEK_BASE_URL: server.url }))
    expect(result.status, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ text: 'from the sdk', reason: { kind: 'completed' } })
  })
})
