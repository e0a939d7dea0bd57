/**
 * The confined code runtime: the worker of `./worker.ts` inside a Node process of its own that
 * runs in the OS sandbox (the caller's argv prefix: bubblewrap with the file system read-only,
 * the secrets of the deny-read list hidden, no network, a pid namespace of its own). A program
 * that got out of its context would hold only that process: it can write no file, reach no
 * host and see no secret, so `run_code` never exceeds what `bash` may do, and does less.
 *
 * The process speaks JSON lines on stdin/stdout: the first line starts the run (the thread's
 * source, the compiled program, the tool names, the limits); then the thread's messages go out
 * and the answers come in. The busy-time budget is sampled inside (the worker's event-loop
 * utilisation), the rest of the limits are the parent's. Closing kills its process group.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { CodeRuntime } from './api.js'
import { BOOTSTRAP_SOURCE } from './bootstrap.js'
import { runProgram, type OpenChannel, type ThreadMessage } from './run.js'

/** The confined process's main (CommonJS, `node -e`). */
const PROGRAM_HOST = String.raw`'use strict'
const { Worker } = require('node:worker_threads')
const { createInterface } = require('node:readline')
const out = (message) => process.stdout.write(JSON.stringify(message) + '\n')
const end = (kind, text) => { out({ type: 'finish', kind, text }); process.exit(0) }
let worker
createInterface({ input: process.stdin }).on('line', (line) => {
  let message
  try { message = JSON.parse(line) } catch { return }
  if (message.type === 'start' && worker === undefined) {
    const { computeMs, maxOldGenerationSizeMb } = message.limits
    worker = new Worker(message.bootstrap, {
      eval: true, env: {}, argv: [], execArgv: [],
      workerData: { script: message.script, tools: message.tools },
      resourceLimits: { maxOldGenerationSizeMb }, stdout: true, stderr: true,
    })
    worker.stdout.resume()
    worker.stderr.resume()
    worker.on('message', out)
    worker.on('error', (error) => end('worker-exit', 'worker error: ' + error.message))
    worker.on('exit', (code) => end('worker-exit', 'worker exited with code ' + code + ' before completing'))
    setInterval(() => {
      const busy = worker.performance.eventLoopUtilization().active
      if (busy > computeMs) end('timeout', 'compute budget exhausted (' + Math.round(busy) + 'ms busy)')
    }, 25)
  } else if (message.type === 'answer' && worker !== undefined) {
    worker.postMessage(message)
  }
}).on('close', () => process.exit(0))
`

export interface ConfinedRuntimeOptions {
  /** The sandbox's argv prefix for one run (read-only, no network), asked for each run. */
  prefix(): Promise<readonly string[]>
  /** The Node binary run inside (default this process's). */
  readonly node?: string
  /**
   * The program thread's source (default `./bootstrap.ts`). Tests give one that runs the
   * program with Node's whole API, to show that the process's confinement holds by itself.
   */
  readonly threadSource?: string
}

export function confinedCodeRuntime(options: ConfinedRuntimeOptions): CodeRuntime {
  return { name: 'confined', run: (request) => runProgram(request, openConfined(options)) }
}

const STDERR_KEPT = 4096

function openConfined(options: ConfinedRuntimeOptions): OpenChannel {
  return async ({ script, tools, limits }, handlers) => {
    const prefix = await options.prefix()
    const argv = [...prefix, options.node ?? process.execPath, '-e', PROGRAM_HOST]
    // PATH only, so the runner is found; the program's thread gets an empty environment.
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, detached: true })
    let closed = false
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr = (stderr + text).slice(-STDERR_KEPT) })
    child.stdin.on('error', () => undefined)
    createInterface({ input: child.stdout }).on('line', (line) => {
      let message: ThreadMessage
      try {
        message = JSON.parse(line) as ThreadMessage
      } catch {
        return
      }
      handlers.message(message)
    })
    child.on('error', (error) => { if (!closed) handlers.ended('worker-exit', `the sandboxed program host could not start: ${error.message}`) })
    child.on('close', (code, signal) => {
      if (closed) return
      const why = stderr.trim().split('\n').slice(-3).join(' | ')
      handlers.ended('worker-exit', `the sandboxed program host exited (${signal ?? `code ${code}`}) before completing${why ? `: ${why}` : ''}`)
    })
    const send = (message: object) => { if (!closed && child.stdin.writable) child.stdin.write(`${JSON.stringify(message)}\n`) }
    send({ type: 'start', bootstrap: options.threadSource ?? BOOTSTRAP_SOURCE, script, tools: [...tools], limits })
    return {
      send,
      close: () => {
        if (closed) return
        closed = true
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL')
        } catch {
          child.kill('SIGKILL')
        }
      },
    }
  }
}
