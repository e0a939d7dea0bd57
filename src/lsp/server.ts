/**
 * One running language server: a process (its own process group, killed with the group), the
 * JSON-RPC connection on its stdio, the `initialize` handshake, the documents it has open (kept
 * in step with the files before each query) and the diagnostics it publishes.
 */
import type { ChildProcess } from 'node:child_process'
import { pathToFileURL } from 'node:url'
import { guardGroup } from '../mcp/stdio-guard.js'
import { RpcConnection, RpcFailure } from './jsonrpc.js'

export interface ServerLaunch {
  /** argv: the program (or a sandbox runner's prefix) first. */
  readonly argv: readonly string[]
  readonly cwd: string
  readonly env: NodeJS.ProcessEnv
  readonly root: string
  readonly initializationOptions?: unknown
  readonly requestTimeoutMs: number
  /** Told of each request once it is written to the server (status and tests). */
  readonly sent?: (method: string, pid: number | undefined) => void
}

export interface Diagnostic {
  readonly range: { start: { line: number; character: number }; end: { line: number; character: number } }
  readonly severity?: number
  readonly message: string
  readonly code?: string | number
  readonly source?: string
}

interface OpenDocument {
  version: number
  text: string
  /** Diagnostics published since the last sync, if any. */
  fresh?: readonly Diagnostic[]
  last?: readonly Diagnostic[]
  waiters: Set<() => void>
}

const GROUPS = process.platform !== 'win32'
/** Servers still running, killed synchronously at process exit. */
const running = new Set<LanguageServer>()
let exitHook = false

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return
  try {
    process.kill(GROUPS ? -pid : pid, signal)
  } catch {
    // Gone already.
  }
}

export class LanguageServer {
  private child: ChildProcess | undefined
  private connection: RpcConnection | undefined
  private readonly documents = new Map<string, OpenDocument>()
  private stderrTail = ''
  private exitReason: string | undefined
  private readonly exitListeners = new Set<(reason: string) => void>()
  private stopping = false
  private publishedAny = false

  constructor(readonly name: string, private readonly launch: ServerLaunch) {}

  get pid(): number | undefined {
    return this.child?.pid
  }

  /** Set once the process has exited (or could not start): why, in a few words. */
  get exited(): string | undefined {
    return this.exitReason
  }

  onExit(listener: (reason: string) => void): () => void {
    this.exitListeners.add(listener)
    return () => this.exitListeners.delete(listener)
  }

  /** Starts the process and completes `initialize`; throws with the server's stderr when it cannot. */
  async start(): Promise<void> {
    const { spawn } = await import('node:child_process')
    const [command, ...args] = this.launch.argv
    const child = this.child = spawn(command!, args, { cwd: this.launch.cwd, env: this.launch.env, stdio: ['pipe', 'pipe', 'pipe'], detached: GROUPS })
    running.add(this)
    if (!exitHook) {
      exitHook = true
      process.on('exit', () => { for (const server of running) killGroup(server.pid, 'SIGKILL') })
    }
    if (child.pid !== undefined) guardGroup(child.pid)
    child.stderr!.setEncoding('utf8').on('data', (text: string) => { this.stderrTail = (this.stderrTail + text).slice(-2000) })
    const connection = this.connection = new RpcConnection(child.stdout!, child.stdin!, {
      notification: (method, params) => { if (method === 'textDocument/publishDiagnostics') this.published(params) },
      request: (method, params) => {
        // workspace/configuration wants one answer per item; nothing is configured that way.
        if (method === 'workspace/configuration') return ((params as { items?: unknown[] })?.items ?? []).map(() => null)
        return null
      },
    })
    const exited = new Promise<string>(resolve => {
      child.once('error', error => this.ended(`could not start: ${error.message}`, resolve))
      child.once('exit', (code, signal) => this.ended(signal !== null ? `exited (signal ${signal})` : `exited with code ${code}`, resolve))
    })
    const rootUri = pathToFileURL(this.launch.root).href
    const initialize = connection.request('initialize', {
      processId: process.pid,
      rootUri,
      rootPath: this.launch.root,
      workspaceFolders: [{ uri: rootUri, name: this.launch.root.split('/').pop() || this.launch.root }],
      initializationOptions: this.launch.initializationOptions ?? {},
      capabilities: {
        general: { positionEncodings: ['utf-16'] },
        textDocument: {
          synchronization: { didSave: false, dynamicRegistration: false },
          definition: { linkSupport: true },
          implementation: { linkSupport: true },
          references: {},
          hover: { contentFormat: ['plaintext', 'markdown'] },
          documentSymbol: { hierarchicalDocumentSymbolSupport: true },
          publishDiagnostics: { versionSupport: true },
        },
        workspace: { symbol: {}, workspaceFolders: true, configuration: true },
      },
    }, this.launch.requestTimeoutMs * 4)
    try {
      await Promise.race([initialize, exited.then(reason => { throw new RpcFailure(reason, 'closed') })])
    } catch (error) {
      this.kill()
      throw new Error(`${this.describe(error)}${this.stderrNote()}`)
    }
    connection.notify('initialized', {})
  }

  /** Opens or updates `path` to `text` (didOpen, then didChange with the whole text when it differs). */
  sync(path: string, languageId: string, text: string): void {
    const uri = pathToFileURL(path).href
    const open = this.documents.get(uri)
    if (open === undefined) {
      this.documents.set(uri, { version: 1, text, waiters: new Set() })
      this.connection?.notify('textDocument/didOpen', { textDocument: { uri, languageId, version: 1, text } })
      return
    }
    if (open.text === text) return
    open.version++
    open.text = text
    open.fresh = undefined
    this.connection?.notify('textDocument/didChange', { textDocument: { uri, version: open.version }, contentChanges: [{ text }] })
  }

  async request<T>(method: string, params: unknown): Promise<T> {
    const connection = this.connection
    if (connection === undefined || this.exitReason !== undefined) throw new Error(`the ${this.name} language server ${this.exitReason ?? 'is not running'}`)
    try {
      const answer = connection.request<T>(method, params, this.launch.requestTimeoutMs)
      this.launch.sent?.(method, this.pid)
      return await answer
    } catch (error) {
      if (error instanceof RpcFailure && error.kind === 'timeout') {
        // A server that does not answer is not trusted with the next call: it is stopped here.
        this.kill()
        throw new Error(`the ${this.name} language server did not answer ${method} within ${this.launch.requestTimeoutMs} ms; it was stopped and the next call starts it again`)
      }
      if (error instanceof RpcFailure && error.kind === 'closed') throw new Error(`the ${this.name} language server ${error.message} during ${method}${this.stderrNote()}; the next call starts it again`)
      throw error
    }
  }

  /**
   * The diagnostics of `path` published after its last sync, waiting up to `waitMs` for them (the
   * request deadline before the server's first report); when none came in that time, the last
   * ones published (undefined when there never were any). Servers publish a file's diagnostics
   * in parts (typescript-language-server: syntax, then semantic, then suggestions, each a new
   * report of all so far), so after a report the call waits until `settleMs` pass without one.
   */
  async diagnostics(path: string, waitMs: number, settleMs: number): Promise<readonly Diagnostic[] | undefined> {
    const open = this.documents.get(pathToFileURL(path).href)
    if (open === undefined) return undefined
    // Until a server has published anything it is still loading the project: that first
    // analysis gets the request deadline, not the wait for a change's diagnostics.
    if (!this.publishedAny) waitMs = Math.max(waitMs, this.launch.requestTimeoutMs)
    const deadline = Date.now() + waitMs
    if (open.fresh === undefined) await this.nextReport(open, waitMs)
    while (open.fresh !== undefined && this.exitReason === undefined) {
      const left = deadline + settleMs - Date.now()
      if (left <= 0 || !(await this.nextReport(open, Math.min(settleMs, left)))) break
    }
    if (this.exitReason !== undefined && open.fresh === undefined) throw new Error(`the ${this.name} language server ${this.exitReason} while waiting for diagnostics${this.stderrNote()}`)
    return open.fresh ?? open.last
  }

  /** Whether a report for `open` arrives within `ms` (false at the deadline or the server's exit). */
  private nextReport(open: OpenDocument, ms: number): Promise<boolean> {
    return new Promise<boolean>(resolve => {
      const finish = (reported: boolean) => { clearTimeout(timer); open.waiters.delete(arrived); stop(); resolve(reported) }
      const arrived = () => finish(true)
      const timer = setTimeout(() => finish(false), ms)
      const stop = this.onExit(() => finish(false))
      open.waiters.add(arrived)
    })
  }

  /** Ends the server: `shutdown`/`exit` when it answers quickly, then its process group is killed. */
  async stop(): Promise<void> {
    if (this.stopping || this.child === undefined) return
    this.stopping = true
    const connection = this.connection
    if (connection !== undefined && this.exitReason === undefined) {
      try {
        await connection.request('shutdown', null, 500)
        connection.notify('exit', null)
      } catch {
        // It is killed below.
      }
    }
    this.kill()
  }

  /** SIGKILL to the whole group, now. */
  kill(): void {
    killGroup(this.child?.pid, 'SIGKILL')
    if (this.child?.pid !== undefined) guardGroup(this.child.pid, false)
  }

  private published(params: unknown): void {
    const { uri, diagnostics, version } = (params ?? {}) as { uri?: string; diagnostics?: Diagnostic[]; version?: number }
    if (typeof uri !== 'string' || !Array.isArray(diagnostics)) return
    this.publishedAny = true
    const open = this.documents.get(uri)
    if (open === undefined) return
    // A report for an older version of the text says nothing about the current one.
    if (typeof version === 'number' && version !== open.version) return
    open.fresh = diagnostics
    open.last = diagnostics
    for (const waiter of [...open.waiters]) waiter()
  }

  private ended(reason: string, resolve: (reason: string) => void): void {
    if (this.exitReason !== undefined) return
    this.exitReason = reason
    running.delete(this)
    this.connection?.close(reason)
    // What the server started is stopped with it.
    killGroup(this.child?.pid, 'SIGKILL')
    if (this.child?.pid !== undefined) guardGroup(this.child.pid, false)
    resolve(reason)
    for (const listener of [...this.exitListeners]) listener(reason)
  }

  private describe(error: unknown): string {
    if (error instanceof RpcFailure && error.kind === 'timeout') return `did not answer initialize within ${this.launch.requestTimeoutMs * 4} ms`
    return error instanceof Error ? error.message : String(error)
  }

  private stderrNote(): string {
    const tail = this.stderrTail.trim().split('\n').slice(-3).join(' | ').slice(-400)
    return tail === '' ? '' : ` (stderr: ${tail})`
  }
}
