/**
 * The worker-thread code runtime: one fresh worker per run, no pool and nothing kept between
 * runs. The worker starts with an empty environment, no Node flags and a heap ceiling; the
 * program runs in a context of its own inside it (`./bootstrap.ts`). Its busy time is the
 * worker's event-loop utilisation, so time spent waiting on tool calls does not count.
 * This provider is containment in dsh's own process; `./confined.ts` adds the OS sandbox.
 */
import { Worker } from 'node:worker_threads'
import type { CodeRuntime } from './api.js'
import { BOOTSTRAP_SOURCE } from './bootstrap.js'
import { runProgram, type OpenChannel, type ThreadMessage } from './run.js'

export function workerCodeRuntime(): CodeRuntime {
  return { name: 'worker', run: (request) => runProgram(request, openWorker) }
}

export const openWorker: OpenChannel = async ({ script, tools, limits }, handlers) => {
  const worker = new Worker(BOOTSTRAP_SOURCE, {
    eval: true,
    env: {},
    argv: [],
    execArgv: [],
    workerData: { script, tools: [...tools] },
    resourceLimits: { maxOldGenerationSizeMb: limits.maxOldGenerationSizeMb },
    stdout: true,
    stderr: true,
  })
  // The program has no stdout of its own (its console is a message); whatever Node writes there is dropped.
  worker.stdout.resume()
  worker.stderr.resume()
  let closed = false
  worker.on('message', (message: ThreadMessage) => handlers.message(message))
  worker.on('error', (error) => { if (!closed) handlers.ended('worker-exit', `worker error: ${error.message}`) })
  worker.on('exit', (code) => { if (!closed) handlers.ended('worker-exit', `worker exited with code ${code} before completing`) })
  return {
    send: (message) => { if (!closed) worker.postMessage(message) },
    busyMs: () => worker.performance.eventLoopUtilization().active,
    close: () => {
      if (closed) return
      closed = true
      void worker.terminate()
    },
  }
}
