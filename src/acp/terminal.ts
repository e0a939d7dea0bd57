/**
 * `bash` in the editor's terminal (ACP `clientCapabilities.terminal`): an `EditorTerminal` that
 * speaks `terminal/create`, `terminal/wait_for_exit`, `terminal/kill`, `terminal/output` and
 * `terminal/release` to the client.
 *
 * One run: create (the tool's argv as `command` + `args`, its scrubbed environment, cwd and
 * output limit), tell the server the terminal id (it embeds the terminal in the tool call), wait
 * for the exit while watching the timeout and the call's abort signal (either one: kill, then
 * wait a short grace for the exit), read the output, and release the terminal whatever happened.
 */
import { z } from 'zod'
import type { JsonRpcPeer } from '../sdk/jsonrpc.js'
import type { EditorTerminal, EditorTerminalRequest, EditorTerminalRun } from '../tools/editor-terminal.js'

/** After `terminal/kill`, how long the exit status is awaited before the output is read anyway. */
const KILL_GRACE_MS = 2_000

const created = z.object({ terminalId: z.string().min(1) }).loose()
const exitStatus = z.object({ exitCode: z.number().int().nullish(), signal: z.string().nullish() }).loose()
const output = z.object({ output: z.string(), truncated: z.boolean(), exitStatus: exitStatus.nullish() }).loose()

type ExitStatus = z.output<typeof exitStatus>

export interface AcpTerminalOptions {
  readonly peer: () => JsonRpcPeer | undefined
  readonly sessionId: string
  /** The terminal exists: embed it in the tool call (before it is released). */
  readonly onCreated: (callId: string, terminalId: string) => void
}

function parsed<T>(schema: z.ZodType<T>, method: string, answer: unknown): T {
  const result = schema.safeParse(answer)
  if (!result.success) throw new Error(`the editor answered ${method} with ${JSON.stringify(answer)?.slice(0, 200)}`)
  return result.data
}

export function acpTerminal(options: AcpTerminalOptions): EditorTerminal {
  const { sessionId } = options
  return {
    async run(request: EditorTerminalRequest): Promise<EditorTerminalRun> {
      const peer = options.peer()
      if (peer === undefined) throw new Error('the editor is gone')
      const started = performance.now()
      const [command, ...args] = request.argv
      const answer = await peer.request('terminal/create', {
        sessionId,
        command,
        args,
        env: Object.entries(request.env).map(([name, value]) => ({ name, value })),
        cwd: request.cwd,
        outputByteLimit: request.outputByteLimit,
      })
      const { terminalId } = parsed(created, 'terminal/create', answer)
      const ids = { sessionId, terminalId }
      let timer: NodeJS.Timeout | undefined
      let onAbort: (() => void) | undefined
      try {
        options.onCreated(request.callId, terminalId)
        const exited = peer.request('terminal/wait_for_exit', ids).then(status => parsed(exitStatus, 'terminal/wait_for_exit', status))
        // The exit may never come (the editor is gone): a rejection here is read below, not thrown.
        exited.catch(() => undefined)
        const stop = new Promise<'timeout' | 'abort'>(resolve => {
          timer = setTimeout(() => resolve('timeout'), request.timeoutMs)
          onAbort = () => resolve('abort')
          if (request.signal.aborted) onAbort()
          else request.signal.addEventListener('abort', onAbort, { once: true })
        })
        const first = await Promise.race([exited.then(status => ({ status }), () => ({ status: undefined })), stop.then(reason => ({ reason }))])
        let status: ExitStatus | undefined
        let reason: 'timeout' | 'abort' | undefined
        if ('reason' in first) {
          reason = first.reason
          await peer.request('terminal/kill', ids).catch(() => undefined)
          let grace: NodeJS.Timeout | undefined
          status = await Promise.race([
            exited.catch(() => undefined),
            new Promise<undefined>(resolve => { grace = setTimeout(() => resolve(undefined), KILL_GRACE_MS) }),
          ])
          clearTimeout(grace)
        } else status = first.status
        const captured = await peer.request('terminal/output', ids)
          .then(answer => parsed(output, 'terminal/output', answer), () => ({ output: '', truncated: false, exitStatus: undefined }))
        const final = status ?? captured.exitStatus ?? undefined
        return {
          output: captured.output,
          truncated: captured.truncated,
          exitCode: final?.exitCode ?? null,
          signal: final?.signal ?? null,
          timedOut: reason === 'timeout',
          aborted: reason === 'abort',
          durationMs: Math.round(performance.now() - started),
        }
      } finally {
        clearTimeout(timer)
        if (onAbort !== undefined) request.signal.removeEventListener('abort', onAbort)
        await peer.request('terminal/release', ids).catch(() => undefined)
      }
    },
  }
}
