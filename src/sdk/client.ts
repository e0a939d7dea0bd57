/**
 * The TypeScript client of the JSON-RPC SDK server: spawns `dsh --profile sdk` (or any command
 * speaking the same protocol), sends requests, hands out notifications and shuts the process
 * down cleanly (stdin EOF, then SIGTERM, then SIGKILL). See docs/protocols.md.
 *
 *   const client = await DshClient.start({ cwd: '/path/to/project' })
 *   const { finalResponse } = await client.run('Summarise README.md')
 *   await client.close()
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { ContentBlock } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/types.js'
import { finalResponse } from './final-response.js'
import { z } from 'zod'
import { ErrorCodes, JsonRpcPeer, method, RpcError, type NotificationFrame } from './jsonrpc.js'

const questionRequestParams = z.object({
  sessionId: z.string(), id: z.string(), callId: z.string(), questions: z.array(z.object({ id: z.string(), question: z.string() }).loose()),
}).loose()

const approvalRequestParams = z.object({
  sessionId: z.string(), id: z.string(), toolName: z.string(), callId: z.string(), reason: z.string(), arguments: z.string().optional(),
  scopes: z.array(z.enum(['session', 'always'])).optional(),
}).loose()

export { RpcError, ErrorCodes } from './jsonrpc.js'

/** The repository's launcher: `bin/dsh.js` two folders above this module (src/sdk or dist/sdk). */
export const DSH_BIN = fileURLToPath(new URL('../../bin/dsh.js', import.meta.url))

export interface InitializeParams {
  readonly cwd?: string
  readonly provider?: string
  readonly model?: string
  readonly maxTokens?: number
  /** Also send `session.output`: running calls' output, live (`RunOptions.onOutput`). */
  readonly output?: boolean
}

/** A piece of a running call's output (`session.output`, with `initialize {output: true}`). */
export interface CallOutput {
  readonly callId: string
  readonly toolName: string
  readonly stream: 'stdout' | 'stderr'
  readonly text: string
  /** Characters of this call's output dropped just before `text` (a flood keeps its latest 64 KB per notification). */
  readonly dropped?: number
}

export interface ClientOptions {
  /** Executable and its arguments (default: this Node running `bin/dsh.js --profile <profile>`). */
  readonly command?: readonly [string, ...string[]]
  /** Profile for the default command (default `sdk`). */
  readonly profile?: string
  /** `--patch` files for the default command, applied in order. */
  readonly patches?: readonly string[]
  /** Environment of the server (default: this process's). Undefined values remove a variable. */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Working folder of the server process, and the session cwd sent by `initialize`. */
  readonly cwd?: string
  /** Sent as `initialize` params by `start` (merged over `{cwd}`); `false` skips initialize. */
  readonly initialize?: InitializeParams | false
  /** Where the server's stderr goes: collected in `stderr` (default), inherited, or dropped. */
  readonly stderr?: 'collect' | 'inherit' | 'ignore'
  /** `close()`: wait this long after stdin EOF before SIGTERM (default 5000 ms). */
  readonly eofTimeoutMs?: number
  /** `close()`: wait this long after SIGTERM before SIGKILL (default 5000 ms). */
  readonly termTimeoutMs?: number
  /**
   * Answers the server's approval requests (a tool call or a sandbox escalation waiting for the
   * user). Without it every request fails closed (the server records `unavailable`).
   */
  readonly onApproval?: (request: ApprovalRequestParams) => ApprovalAnswer | Promise<ApprovalAnswer>
  /**
   * Answers the model's `ask_user_question` calls (`question/request`): the answers, or
   * `cancelled` when the user dismissed them. Without it every question fails closed.
   */
  readonly onQuestion?: (request: QuestionRequestParams) => QuestionReply | Promise<QuestionReply>
}

/** `question/request` params: the questions the model asks the user. */
export interface QuestionRequestParams {
  readonly sessionId: string
  readonly id: string
  readonly callId: string
  readonly questions: readonly { readonly id: string; readonly question: string; readonly header?: string; readonly options?: readonly { readonly label: string; readonly description?: string }[]; readonly multiSelect?: boolean }[]
}

/** One answer per question: chosen option labels and/or free text; or `cancelled`. */
export type QuestionReply = readonly { readonly id: string; readonly selected?: readonly string[]; readonly text?: string }[] | 'cancelled'

/**
 * `allowed-session` (for the rest of the session) and `allowed-always` (added to the settings)
 * only for a request whose `scopes` offer `session` / `always`; for any other the server logs
 * the answer on stderr and the request fails closed (`unavailable`).
 */
export type ApprovalAnswer = 'allowed-once' | 'allowed-session' | 'allowed-always' | 'rejected' | 'cancelled'

/** `approval/request` params: what the server asks the user to approve. */
export interface ApprovalRequestParams {
  readonly sessionId: string
  readonly id: string
  readonly toolName: string
  readonly callId: string
  readonly reason: string
  /** The call's raw JSON arguments (what will run). */
  readonly arguments?: string
  /** Wider grants the answer may name: `session` (`allowed-session`), `always` (`allowed-always`). */
  readonly scopes?: readonly ('session' | 'always')[]
  /** The permission rule `allowed-session` / `allowed-always` adds, as it will be written. */
  readonly grants?: string
  /** The session's working folder. */
  readonly cwd?: string
  /** The ask rule that made it ask. */
  readonly askedBy?: { readonly text: string; readonly kind: 'allow' | 'ask' | 'deny'; readonly source: string }
}

export interface Notification {
  readonly method: string
  readonly params: any
}

export interface RunResult {
  readonly sessionId: string
  /** Text of the last assistant message with text in the turn that ended the run. */
  readonly finalResponse: string
  /** Every `session.event` of the session received during the run, in order. */
  readonly events: readonly SessionEvent[]
  /**
   * Every notification about the session received during the run (`session.event`,
   * `session.status`), and about the children it delegated to (`subagent.started`,
   * `subagent.finished`, the children's own `session.event` / `session.status`), interleaved.
   */
  readonly notifications: readonly Notification[]
  /** How the last turn of the run ended. */
  readonly reason?: TurnEndReason
}

export interface RunOptions {
  /** Continue (or create with this id) a session; default: a new session with a fresh id. */
  readonly sessionId?: string
  /** Called for each event as it arrives. */
  readonly onEvent?: (event: SessionEvent) => void
  /**
   * Called with each piece of a running call's output, before the call's `tool/result` (the
   * server sends it when initialized with `{output: true}`: `DshClient.start({initialize: {output: true}})`).
   */
  readonly onOutput?: (output: CallOutput) => void
}

export interface PromptReceipt {
  readonly messageId: string
  readonly sessionId: string
}

/** What a slash command did (`session/command`). */
export interface CommandResult {
  readonly sessionId: string
  /** `success`/`error`: `text` is for the user; `prompt`: its input was queued as `messageId`. */
  readonly kind: 'success' | 'error' | 'prompt'
  readonly text?: string
  readonly messageId?: string
}

export interface CommandInfo {
  readonly name: string
  readonly description: string
  readonly argumentHint?: string
}

export interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface CloseResult extends ExitInfo {
  /** What ended the process: its own exit after stdin EOF, or the signal `close()` had to send. */
  readonly via: 'eof' | 'sigterm' | 'sigkill' | 'already-exited'
}

export class DshClient {
  /** Server stderr so far (with `stderr: 'collect'`). */
  stderr = ''
  readonly exited: Promise<ExitInfo>
  private exitInfo: ExitInfo | undefined
  private readonly listeners = new Set<(notification: Notification) => void>()
  private readonly peer: JsonRpcPeer
  private outputEnded = false

  private constructor(readonly process: ChildProcess, private readonly options: ClientOptions) {
    const child = process
    this.exited = new Promise(resolve => {
      child.on('close', (code, signal) => {
        this.exitInfo = { code, signal }
        resolve(this.exitInfo)
      })
    })
    child.on('error', error => { this.stderr += `spawn failed: ${error.message}\n` })
    child.stdout!.on('close', () => { this.outputEnded = true })
    child.stdout!.on('end', () => { this.outputEnded = true })
    if (child.stderr !== null) child.stderr.setEncoding('utf8').on('data', (text: string) => { this.stderr += text })
    // Writes to a server that already exited must not crash the caller.
    child.stdin!.on('error', () => undefined)
    const onApproval = options.onApproval
    const onQuestion = options.onQuestion
    this.peer = new JsonRpcPeer({
      input: child.stdout!,
      output: child.stdin!,
      onNotification: frame => this.dispatch(frame),
      // No callback: the method is unknown here, the server gets an error and fails closed.
      methods: {
        ...(onApproval !== undefined ? {
          'approval/request': method(approvalRequestParams, async params => ({ outcome: await onApproval(params as ApprovalRequestParams) })),
        } : {}),
        ...(onQuestion !== undefined ? {
          'question/request': method(questionRequestParams, async (params) => {
            const answer = await onQuestion(params as unknown as QuestionRequestParams)
            return answer === 'cancelled' ? { outcome: 'cancelled' } : { answers: answer }
          }),
        } : {}),
      },
    })
    void this.exited.then(info => this.peer.failPending(`the server exited (${info.signal ?? `code ${info.code}`})${this.stderrTail()}`))
  }

  /** Spawns the server and (unless `initialize: false`) initializes it. */
  static async start(options: ClientOptions = {}): Promise<DshClient> {
    const [command, ...args] = options.command ?? [process.execPath, DSH_BIN, '--profile', options.profile ?? 'sdk', ...(options.patches ?? []).flatMap(file => ['--patch', file])]
    const env: Record<string, string> = {}
    for (const [key, value] of Object.entries({ ...process.env, ...options.env })) if (value !== undefined) env[key] = value
    const child = spawn(command, args, {
      cwd: options.cwd,
      env,
      stdio: ['pipe', 'pipe', options.stderr === 'inherit' ? 'inherit' : options.stderr === 'ignore' ? 'ignore' : 'pipe'],
    })
    const client = new DshClient(child, options)
    if (options.initialize !== false) {
      try {
        await client.initialize({ ...(options.cwd !== undefined ? { cwd: options.cwd } : {}), ...options.initialize })
      } catch (error) {
        await client.close()
        throw error
      }
    }
    return client
  }

  private stderrTail(): string {
    const tail = this.stderr.trim().split('\n').slice(-5).join('\n')
    return tail === '' ? '' : `; stderr:\n${tail}`
  }

  private dispatch(frame: NotificationFrame): void {
    const notification: Notification = { method: frame.method, params: frame.params }
    for (const listener of this.listeners) listener(notification)
  }

  /** Any request by name (including methods this class has no helper for). */
  request<T = unknown>(method: string, params?: unknown): Promise<T> {
    return this.peer.request<T>(method, params).catch(async (error: unknown) => {
      if (!this.outputEnded) throw error
      // The server went away: name how it ended instead of "connection closed".
      const info = await this.exited
      throw new RpcError(ErrorCodes.internalError, `${method}: the server exited (${info.signal ?? `code ${info.code}`})${this.stderrTail()}`)
    })
  }

  initialize(params: InitializeParams = {}): Promise<Record<string, unknown>> {
    return this.request('initialize', params)
  }

  /**
   * Opens a session without prompting it. `mcpServers` (the ACP `session/new` shape) start MCP
   * servers whose tools only this session sees, stopped with it.
   */
  createSession(options: { sessionId?: string; mcpServers?: readonly Record<string, unknown>[] } = {}): Promise<{ sessionId: string }> {
    return this.request('session/create', options)
  }

  /** Queues a prompt: resolves with the enqueue receipt, not the answer (see `run`). */
  prompt(content: string | readonly ContentBlock[], sessionId?: string): Promise<PromptReceipt> {
    const contentBlocks = typeof content === 'string' ? [{ type: 'text', text: content }] : content
    return this.request('session/prompt', { ...(sessionId !== undefined ? { sessionId } : {}), contentBlocks })
  }

  /**
   * Runs a slash command (`/status`, `/compact`, `/model NAME`, `/trust on`...) in a session, as
   * typed by a user; a new session when `sessionId` is absent. Text that names no command is
   * refused (prompts go through `prompt`).
   */
  command(text: string, sessionId?: string): Promise<CommandResult> {
    return this.request('session/command', { ...(sessionId !== undefined ? { sessionId } : {}), text })
  }

  /** The slash commands a session (or a new one) can run. */
  async commands(sessionId?: string): Promise<readonly CommandInfo[]> {
    const { commands } = await this.request<{ commands: CommandInfo[] }>('session/commands', sessionId !== undefined ? { sessionId } : {})
    return commands
  }

  cancel(sessionId: string, options: { keepInbox?: boolean } = {}): Promise<{ cancelled: boolean }> {
    return this.request('session/cancel', { sessionId, ...options })
  }

  list(): Promise<{ sessions: Record<string, unknown>[] }> {
    return this.request('session/list', {})
  }

  load(sessionId: string, options: { events?: boolean } = {}): Promise<{ sessionId: string; length: number; turns: number; repaired: number; status: string; events?: SessionEvent[] }> {
    return this.request('session/load', { sessionId, ...options })
  }

  /** Every notification, as it arrives. Returns the unsubscribe function. */
  onNotification(listener: (notification: Notification) => void): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  /** Session events of one session (or of all with `undefined`), as they arrive. */
  subscribe(sessionId: string | undefined, listener: (event: SessionEvent, sessionId: string) => void): () => void {
    return this.onNotification(notification => {
      if (notification.method !== 'session.event') return
      if (sessionId !== undefined && notification.params?.sessionId !== sessionId) return
      listener(notification.params.event as SessionEvent, notification.params.sessionId as string)
    })
  }

  /**
   * Sends a prompt and resolves when the session is idle again: the final response, the events
   * and the notifications of the run. A turn that ends in error still resolves (see `reason`).
   */
  run(content: string | readonly ContentBlock[], options: RunOptions = {}): Promise<RunResult> {
    const sessionId = options.sessionId ?? randomUUID()
    const events: SessionEvent[] = []
    const notifications: Notification[] = []
    let reason: TurnEndReason | undefined
    let running = false
    return new Promise<RunResult>((resolve, reject) => {
      // The run's own session and the children it delegates to (SA-17: their notifications interleave).
      const run = new Set([sessionId])
      const off = this.onNotification(notification => {
        const params = notification.params as { sessionId?: unknown; parentSessionId?: unknown; childSessionId?: unknown } | undefined
        if (notification.method === 'subagent.started' && run.has(params?.parentSessionId as string)) run.add(params?.childSessionId as string)
        const mine = run.has(params?.sessionId as string) || (notification.method.startsWith('subagent.') && run.has(params?.parentSessionId as string))
        if (!mine) return
        notifications.push(notification)
        if (params?.sessionId !== sessionId) return
        if (notification.method === 'session.event') {
          const event = notification.params.event as SessionEvent
          events.push(event)
          if (event.type === 'turn/end') reason = (event.data as { reason: TurnEndReason }).reason
          options.onEvent?.(event)
        } else if (notification.method === 'session.output') {
          const { callId, toolName, stream, text, dropped } = notification.params as CallOutput
          options.onOutput?.({ callId, toolName, stream, text, ...dropped !== undefined ? { dropped } : {} })
        } else if (notification.method === 'session.status') {
          if (notification.params.status === 'running') running = true
          else if (running) {
            off()
            resolve({ sessionId, finalResponse: finalResponse(events), events, notifications, ...(reason !== undefined ? { reason } : {}) })
          }
        }
      })
      this.prompt(content, sessionId).catch((error: unknown) => {
        off()
        reject(error)
      })
      void this.exited.then(info => {
        off()
        reject(new RpcError(-32603, `the server exited during the run (${info.signal ?? `code ${info.code}`})${this.stderrTail()}`))
      })
    })
  }

  /** The `shutdown` request: running turns are cancelled, sessions flushed, then the server exits. */
  async shutdown(): Promise<ExitInfo> {
    await this.request('shutdown', {})
    this.process.stdin?.end()
    return this.exited
  }

  /** stdin EOF (the server finishes running turns and exits), then SIGTERM, then SIGKILL. */
  async close(): Promise<CloseResult> {
    if (this.exitInfo !== undefined) return { ...this.exitInfo, via: 'already-exited' }
    const waitExit = (ms: number) => new Promise<boolean>(resolve => {
      const timer = setTimeout(() => resolve(false), ms)
      void this.exited.then(() => { clearTimeout(timer); resolve(true) })
    })
    this.process.stdin?.end()
    if (await waitExit(this.options.eofTimeoutMs ?? 5_000)) return { ...this.exitInfo!, via: 'eof' }
    this.process.kill('SIGTERM')
    if (await waitExit(this.options.termTimeoutMs ?? 5_000)) return { ...this.exitInfo!, via: 'sigterm' }
    this.process.kill('SIGKILL')
    await this.exited
    return { ...this.exitInfo!, via: 'sigkill' }
  }
}
