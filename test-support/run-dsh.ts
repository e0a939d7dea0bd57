/**
 * Runs the real `dsh` binary (bin/dsh.js over dist/) as a child process, the way a user would.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const repoRoot = join(import.meta.dirname, '..')
export const dshBin = join(repoRoot, 'bin', 'dsh.js')

export interface DshResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunDshOptions {
  readonly env?: Readonly<Record<string, string | undefined>>
  readonly cwd?: string
  /** Called once the process is spawned (e.g. to send it signals). */
  readonly onSpawn?: (child: import('node:child_process').ChildProcess) => void
  /** Written to the process's standard input, which is then closed (default: no stdin). */
  readonly input?: string
}

/**
 * The line a text-mode headless run ends with on stderr (docs/cli.md); group 1 is the session id.
 */
export const SESSION_HINT = /^dsh: session (\S+); continue with: dsh --session \1 "\.\.\."$/m

/** stderr without the session hint line, for tests that expect nothing else there. */
export function withoutSessionHint(stderr: string): string {
  return stderr.replace(/^dsh: session \S+; continue with: dsh --session \S+ "\.\.\."\n/m, '')
}

/** A fresh, empty home folder and workspace for one test. */
export function tempHome(): { home: string; cwd: string } {
  return { home: mkdtempSync(join(tmpdir(), 'dsh-home-')), cwd: mkdtempSync(join(tmpdir(), 'dsh-work-')) }
}

export function runDsh(args: readonly string[], options: RunDshOptions = {}): Promise<DshResult> {
  const env: Record<string, string | undefined> = { ...process.env, DEEPSEEK_API_KEY: undefined, DEEPSEEK_BASE_URL: undefined, DSH_MODEL: undefined, ...options.env }
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key]
  const child = spawn(process.execPath, [dshBin, ...args], { cwd: options.cwd, env: env as NodeJS.ProcessEnv, stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] })
  if (options.input !== undefined) child.stdin!.end(options.input)
  options.onSpawn?.(child)
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (text: string) => { stdout += text })
  child.stderr!.setEncoding('utf8').on('data', (text: string) => { stderr += text })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}
