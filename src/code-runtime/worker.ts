/**
 * The worker-thread code runtime: one fresh worker per run, no pool and nothing kept between
 * runs. The worker starts with an empty environment, no Node flags and a heap ceiling; the
 * program runs in a context of its own inside it (`./bootstrap.ts`). The parent enforces the
 * other limits: busy time (the worker's event-loop utilisation, sampled every 25 ms, so time
 * spent waiting on tool calls does not count), the wall-clock ceiling, the output budget, and
 * the caller's abort. Ending a run terminates the worker, aborts the calls still in flight and
 * resolves once they have settled.
 */
import { Worker } from 'node:worker_threads'
import type { JsonValue } from '../session/types.js'
import { DEFAULT_CODE_RUN_LIMITS, type CodeRunFailureKind, type CodeRunRequest, type CodeRunResult, type CodeRuntime, type ToolCallAnswer } from './api.js'
import { BOOTSTRAP_SOURCE } from './bootstrap.js'
import { compileProgram } from './compile.js'

const SAMPLE_MS = 25

const reasonText = (reason: unknown): string =>
  reason instanceof Error ? reason.message : typeof reason === 'string' ? reason : 'aborted'

export function workerCodeRuntime(): CodeRuntime {
  return { name: 'worker', run: runInWorker }
}

async function runInWorker(request: CodeRunRequest): Promise<CodeRunResult> {
  const limits = { ...DEFAULT_CODE_RUN_LIMITS, ...request.limits }
  const logs: string[] = []
  const fail = (kind: CodeRunFailureKind, message: string): CodeRunResult => ({ ok: false, kind, message, logs })
  if (request.signal?.aborted) return fail('abort', reasonText(request.signal.reason))
  let script: string
  try {
    script = await compileProgram(request.code)
  } catch (error) {
    return fail('exception', `SyntaxError: ${(error as Error).message}`)
  }
  if (request.signal?.aborted) return fail('abort', reasonText(request.signal.reason))

  const worker = new Worker(BOOTSTRAP_SOURCE, {
    eval: true,
    env: {},
    argv: [],
    execArgv: [],
    workerData: { script, tools: [...request.tools] },
    resourceLimits: { maxOldGenerationSizeMb: limits.maxOldGenerationSizeMb },
    stdout: true,
    stderr: true,
  })
  // The program has no stdout of its own (its console is a message); whatever Node writes there is dropped.
  worker.stdout.resume()
  worker.stderr.resume()
  const run = new AbortController()
  const inFlight = new Set<Promise<void>>()
  let bytes = 0
  let settled = false

  return new Promise<CodeRunResult>((resolve) => {
    const settle = (result: CodeRunResult) => {
      if (settled) return
      settled = true
      clearInterval(sampler)
      clearTimeout(wall)
      request.signal?.removeEventListener('abort', onAbort)
      run.abort(new Error(result.ok ? 'the program finished' : `the program ended (${result.kind})`))
      void worker.terminate()
      // No call outlives its run: the result waits for the calls it started.
      void Promise.allSettled([...inFlight]).then(() => resolve(result))
    }
    const spend = (text: string): boolean => {
      bytes += Buffer.byteLength(text) + 1
      if (bytes <= limits.maxOutputBytes) return true
      settle(fail('output-limit', `outer output exceeded ${limits.maxOutputBytes} bytes`))
      return false
    }
    const answer = (id: unknown, result: ToolCallAnswer) => {
      if (settled) return
      worker.postMessage(result.ok
        ? { type: 'answer', id, ok: true, ...result.value !== undefined && { value: JSON.stringify(result.value) } }
        : { type: 'answer', id, ok: false, message: result.message })
    }
    const call = (id: unknown, name: string, args: string) => {
      const done = (async () => {
        let result: ToolCallAnswer
        try {
          result = await request.call(name, JSON.parse(args) as JsonValue, run.signal)
        } catch (error) {
          result = { ok: false, message: error instanceof Error ? error.message : String(error) }
        }
        answer(id, result)
      })()
      inFlight.add(done)
      void done.finally(() => inFlight.delete(done))
    }
    worker.on('message', (message: { type?: unknown; [key: string]: unknown }) => {
      if (settled || message === null || typeof message !== 'object') return
      if (message.type === 'log' && typeof message.text === 'string') {
        if (spend(message.text)) logs.push(message.text)
      } else if (message.type === 'call' && typeof message.name === 'string' && typeof message.args === 'string') {
        // Only the names this run was given: the thread is not trusted to ask for others.
        if (request.tools.includes(message.name)) call(message.id, message.name, message.args)
        else answer(message.id, { ok: false, message: `no tool "${message.name}" in this run` })
      } else if (message.type === 'finish') {
        const text = typeof message.text === 'string' ? message.text : undefined
        if (message.kind === 'done') {
          if (text === undefined) settle({ ok: true, logs })
          else if (spend(text)) settle({ ok: true, logs, value: JSON.parse(text) as JsonValue })
        } else if (message.kind === 'exception' || message.kind === 'invalid-output') {
          settle(fail(message.kind, text ?? 'the program failed'))
        }
      }
    })
    worker.on('error', (error) => settle(fail('worker-exit', `worker error: ${error.message}`)))
    worker.on('exit', (code) => settle(fail('worker-exit', `worker exited with code ${code} before completing`)))
    const sampler = setInterval(() => {
      const busy = worker.performance.eventLoopUtilization().active
      if (busy > limits.computeMs) settle(fail('timeout', `compute budget exhausted (${Math.round(busy)}ms busy)`))
    }, SAMPLE_MS)
    const wall = setTimeout(() => settle(fail('timeout', `wall-clock ceiling reached (${limits.maxWallMs}ms)`)), limits.maxWallMs)
    const onAbort = () => settle(fail('abort', reasonText(request.signal?.reason)))
    request.signal?.addEventListener('abort', onAbort, { once: true })
  })
}
