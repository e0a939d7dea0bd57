/**
 * Runs a product CLI as a child: its own process group (so stopping it ends the whole tree:
 * SIGTERM, then SIGKILL after the grace), the prompt on stdin, stdout read as JSON lines.
 * stderr is kept as a short tail for the host's log only: it never reaches the model.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { ProductOutcome, StreamReader } from './api.js'

export interface ChildRun {
  readonly argv: readonly string[]
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly stdin: string
  readonly reader: StreamReader
  readonly product: string
  readonly signal: AbortSignal
  readonly killGraceMs: number
  /** Each assistant text as the reader sees it grow (progress for surfaces). */
  readonly onLine?: (event: Record<string, unknown>) => void
  readonly onSpawn?: (pid: number) => void
}

export interface ChildResult {
  readonly outcome: ProductOutcome
  /** The run was stopped by the signal. */
  readonly cancelled: boolean
  readonly stderrTail: string
}

const STDERR_TAIL = 4096

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal)
  } catch {
    // Already gone.
  }
}

export function runChild(run: ChildRun): Promise<ChildResult> {
  const [command, ...args] = run.argv
  return new Promise((resolve) => {
    let stderr = ''
    let cancelled = false
    let settled = false
    const child = spawn(command!, args, { cwd: run.cwd, env: run.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true })
    let killTimer: NodeJS.Timeout | undefined
    const stop = () => {
      if (child.pid === undefined || settled) return
      cancelled = true
      killGroup(child.pid, 'SIGTERM')
      killTimer = setTimeout(() => { if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL') }, run.killGraceMs)
      killTimer.unref()
    }
    const finish = (result: ChildResult) => {
      if (settled) return
      settled = true
      clearTimeout(killTimer)
      run.signal.removeEventListener('abort', stop)
      // Whatever the CLI left behind in its group goes with it.
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL')
      resolve(result)
    }
    child.on('error', (error: NodeJS.ErrnoException) => {
      const category = error.code === 'ENOENT' ? 'not-found' : error.code === 'EACCES' ? 'not-executable' : 'spawn-failed'
      finish({ outcome: { ok: false, facts: { product: run.product, stage: 'spawn', category }, partial: '' }, cancelled: false, stderrTail: '' })
    })
    if (child.pid !== undefined) run.onSpawn?.(child.pid)
    child.stdin.on('error', () => undefined)
    child.stdin.end(run.stdin)
    child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr = (stderr + text).slice(-STDERR_TAIL) })
    const lines = createInterface({ input: child.stdout })
    lines.on('line', (line) => {
      if (!line.startsWith('{')) return
      let event: unknown
      try {
        event = JSON.parse(line)
      } catch {
        return
      }
      if (typeof event !== 'object' || event === null || Array.isArray(event)) return
      run.reader.line(event as Record<string, unknown>)
      run.onLine?.(event as Record<string, unknown>)
    })
    // Both the exit and the end of stdout: every line is read before the outcome is decided.
    const closed = new Promise<void>(done => lines.once('close', () => done()))
    child.once('exit', (code, signal) => {
      // Processes it left in its group would hold stdout open: they end with it.
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL')
      void closed.then(() => finish({ outcome: run.reader.finish({ code, signal }), cancelled, stderrTail: stderr }))
    })
    if (run.signal.aborted) stop()
    else run.signal.addEventListener('abort', stop, { once: true })
  })
}
