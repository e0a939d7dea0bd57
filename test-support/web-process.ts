/**
 * Starts the real `dsh web` (bin/dsh.js over dist/) as a child process and waits for the URL it
 * prints. Used by the web UI's end-to-end tests and the browser benchmark.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { dshBin } from './run-dsh.js'

export interface DshWeb {
  readonly url: string
  readonly origin: string
  readonly port: number
  readonly child: ChildProcess
  output(): string
  stop(): Promise<void>
}

export async function startDshWeb(options: { args?: readonly string[]; env?: Record<string, string | undefined>; cwd?: string }): Promise<DshWeb> {
  const env: Record<string, string | undefined> = { ...process.env, DEEPSEEK_API_KEY: undefined, DEEPSEEK_BASE_URL: undefined, DSH_MODEL: undefined, ...options.env }
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key]
  const child = spawn(process.execPath, [dshBin, 'web', ...options.args ?? [], '--no-open'], { cwd: options.cwd, env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stderr!.setEncoding('utf8').on('data', (text: string) => { output += text })
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = ''
    child.stdout!.setEncoding('utf8').on('data', (text: string) => {
      stdout += text
      output += text
      const match = /dsh web: (http:\/\/\S+)/.exec(stdout)
      if (match) resolve(match[1])
    })
    child.on('exit', code => reject(new Error(`dsh web exited with ${code} before printing its URL:\n${output}`)))
  })
  const parsed = new URL(url)
  const exited = new Promise<void>(resolve => child.on('exit', () => resolve()))
  return {
    url,
    origin: parsed.origin,
    port: Number(parsed.port),
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      await exited
    },
  }
}
