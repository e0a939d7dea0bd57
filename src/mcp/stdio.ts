/**
 * The stdio transport of a server dsh starts (MC-8). Unlike the SDK's own stdio client transport,
 * it runs the server in a process group of its own and stops that whole group:
 *
 * - `close()` ends the server's stdin, waits for it to exit, then sends SIGTERM to its group and
 *   SIGKILL to what is left, so a server that ignores end of input, and the processes it started,
 *   are gone when the promise resolves. The waits hold the event loop (unlike the SDK's, whose
 *   unref'd timers let the process exit first).
 * - a server that exits by itself has what is left of its group stopped the same way.
 * - at process exit every group still running is sent SIGKILL synchronously (a last chance for an
 *   exit that did not wait for `close()`, such as a second Ctrl-C).
 * - if dsh is killed outright (SIGKILL), a guard process notices and kills the groups
 *   (`./stdio-guard.ts`).
 *
 * Messages are newline-delimited JSON, read without copying the buffered bytes on every chunk.
 * A message larger than `maxMessageBytes` is dropped, not buffered: when it answers a request, that
 * request gets an error response (`MESSAGE_TOO_LARGE`) and the connection stays up.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { PassThrough, type Readable } from 'node:stream'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import { guardGroup } from './stdio-guard.js'

/**
 * The JSON-RPC error of a request whose answer was over the message size limit: this code, with
 * `data.droppedBytes` (the SDK's own codes are -32000 and -32001; -32042 is the protocol's).
 */
export const MESSAGE_TOO_LARGE = -32_090
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
/** How long a closing server gets after end of input, then after SIGTERM. */
export const STOP_GRACE_MS = 2_000
/** How much of the start and end of a dropped message is kept to find its request id. */
const EDGE_BYTES = 256

export interface StdioServerSpec {
  readonly command: string
  readonly args: readonly string[]
  readonly env: NodeJS.ProcessEnv
  readonly cwd?: string
  readonly maxMessageBytes?: number
}

const GROUPS = process.platform !== 'win32'

/** Groups started and not yet stopped, for the synchronous kill at exit. */
const running = new Set<number>()
let exitHook = false

function killSync(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(GROUPS ? -pid : pid, signal)
    return true
  } catch {
    return false
  }
}

function track(pid: number): void {
  running.add(pid)
  if (exitHook) return
  exitHook = true
  process.on('exit', () => { for (const group of running) killSync(group, 'SIGKILL') })
}

/** True while any process of the group (or the process, without groups) is there. */
function groupAlive(pid: number): boolean {
  return killSync(pid, 0 as unknown as NodeJS.Signals)
}

/** Whether `promise` settled within `ms` (the timer is cleared when it does). */
function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise.then(() => true),
    new Promise<boolean>(resolve => { timer = setTimeout(() => resolve(false), ms) }),
  ]).finally(() => clearTimeout(timer))
}

function until(condition: () => boolean, ms: number): Promise<boolean> {
  return new Promise(resolve => {
    const deadline = Date.now() + ms
    const check = () => {
      if (condition()) return resolve(true)
      if (Date.now() >= deadline) return resolve(false)
      setTimeout(check, 25)
    }
    check()
  })
}

/**
 * The request id of a JSON-RPC message from its first and last bytes: `"id"` as the first or
 * last member of the top-level object (where every SDK puts it). Undefined when neither edge
 * shows it.
 */
export function edgeId(head: string, tail: string): string | number | undefined {
  const value = /("(?:[^"\\]|\\.)*"|-?\d+)/.source
  const atStart = new RegExp(`^\\s*\\{(?:\\s*"(?:[^"\\\\]|\\\\.)*"\\s*:\\s*(?:"(?:[^"\\\\]|\\\\.)*"|-?\\d+|null|true|false)\\s*,)*?\\s*"id"\\s*:\\s*${value}`).exec(head)
  const atEnd = new RegExp(`[{,]\\s*"id"\\s*:\\s*${value}\\s*\\}\\s*$`).exec(tail)
  const raw = atStart?.[1] ?? atEnd?.[1]
  if (raw === undefined) return undefined
  return raw.startsWith('"') ? JSON.parse(raw) as string : Number(raw)
}

/** Splits a byte stream into lines; a line over `max` bytes is reported by its size and edges. */
class LineReader {
  private parts: Buffer[] = []
  private bytes = 0
  private head: Buffer | undefined
  private tail = Buffer.alloc(0)

  constructor(private readonly max: number, private readonly onLine: (line: string) => void, private readonly onOversized: (bytes: number, head: string, tail: string) => void) {}

  push(chunk: Buffer): void {
    let start = 0
    while (start < chunk.length) {
      const end = chunk.indexOf(0x0a, start)
      const piece = chunk.subarray(start, end < 0 ? chunk.length : end)
      this.add(piece)
      if (end < 0) return
      this.finish()
      start = end + 1
    }
  }

  private add(piece: Buffer): void {
    if (piece.length === 0) return
    this.bytes += piece.length
    if (this.head === undefined && this.bytes <= this.max) {
      this.parts.push(piece)
      return
    }
    if (this.head === undefined) {
      const all = Buffer.concat(this.parts)
      this.parts = []
      this.head = all.subarray(0, EDGE_BYTES)
      this.tail = Buffer.from(all.subarray(Math.max(0, all.length - EDGE_BYTES)))
    }
    this.tail = Buffer.concat([this.tail, piece]).subarray(-EDGE_BYTES)
  }

  private finish(): void {
    const { head, tail, bytes } = this
    const parts = this.parts
    this.parts = []
    this.bytes = 0
    this.head = undefined
    this.tail = Buffer.alloc(0)
    if (head !== undefined) return this.onOversized(bytes, head.toString('utf8'), tail.toString('utf8'))
    const line = Buffer.concat(parts).toString('utf8').replace(/\r$/, '')
    if (line.trim() !== '') this.onLine(line)
  }
}

/** Whether `error` is the answer `GroupStdioTransport` gives for a dropped message. */
export function droppedMessage(error: { code?: unknown; data?: unknown }): boolean {
  return error.code === MESSAGE_TOO_LARGE && typeof (error.data as { droppedBytes?: unknown } | undefined)?.droppedBytes === 'number'
}

export class GroupStdioTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  private child: ChildProcess | undefined
  private exited: Promise<void> | undefined
  private stopping: Promise<void> | undefined
  private readonly stderrStream = new PassThrough()
  private readonly max: number

  constructor(private readonly spec: StdioServerSpec) {
    this.max = spec.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES
  }

  /** The server's stderr, there before `start()` so no early line is lost. */
  get stderr(): Readable {
    return this.stderrStream
  }

  get pid(): number | undefined {
    return this.child?.pid
  }

  start(): Promise<void> {
    if (this.child !== undefined) throw new Error('the stdio transport is already started')
    return new Promise((resolve, reject) => {
      const child = this.child = spawn(this.spec.command, [...this.spec.args], {
        env: this.spec.env,
        ...(this.spec.cwd !== undefined ? { cwd: this.spec.cwd } : {}),
        stdio: ['pipe', 'pipe', 'pipe'],
        // Its own process group: the group's id is the server's pid, and signalling -pid reaches
        // every process it starts that stays in the group.
        detached: GROUPS,
        windowsHide: true,
      })
      this.exited = new Promise(done => child.once('exit', () => done()))
      child.once('error', error => {
        reject(error)
        this.onerror?.(error)
      })
      child.once('spawn', () => {
        track(child.pid!)
        guardGroup(child.pid!)
        resolve()
      })
      // Exited by itself (a crash) or after `close()`: what is left of the group goes too, which
      // also closes the pipes a child of the server may hold.
      child.once('exit', () => { void this.stop() })
      child.once('close', () => this.onclose?.())
      child.stdin!.on('error', error => this.onerror?.(error))
      child.stdout!.on('error', error => this.onerror?.(error))
      child.stderr!.pipe(this.stderrStream)
      const reader = new LineReader(this.max, line => this.receive(line), (bytes, head, tail) => this.oversized(bytes, head, tail))
      child.stdout!.on('data', (chunk: Buffer) => reader.push(chunk))
    })
  }

  private receive(line: string): void {
    let message: JSONRPCMessage
    try {
      message = deserializeMessage(line)
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)))
      return
    }
    this.onmessage?.(message)
  }

  private oversized(bytes: number, head: string, tail: string): void {
    const reason = `the server sent a ${bytes}-byte message, over the limit of ${this.max} bytes (maxMessageBytes); it was dropped`
    const id = edgeId(head, tail)
    if (id === undefined) {
      this.onerror?.(new Error(reason))
      return
    }
    this.onmessage?.({ jsonrpc: '2.0', id, error: { code: MESSAGE_TOO_LARGE, message: reason, data: { droppedBytes: bytes, limit: this.max } } })
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin
      if (stdin === undefined || stdin === null || this.stopping !== undefined) return reject(new Error('Not connected'))
      if (stdin.write(serializeMessage(message))) resolve()
      else stdin.once('drain', resolve)
    })
  }

  /** Ends input, then stops the group; resolves once no process of it is left. */
  async close(): Promise<void> {
    const child = this.child
    if (child === undefined) return
    try { child.stdin?.end() } catch { /* already closed */ }
    await within(this.exited!, STOP_GRACE_MS)
    await this.stop()
  }

  /** SIGTERM to the group if any of it is left, SIGKILL after the grace. */
  private stop(): Promise<void> {
    const pid = this.child?.pid
    if (pid === undefined) return Promise.resolve()
    this.stopping ??= (async () => {
      if (groupAlive(pid)) {
        killSync(pid, 'SIGTERM')
        if (!await until(() => !groupAlive(pid), STOP_GRACE_MS)) killSync(pid, 'SIGKILL')
      }
      running.delete(pid)
      guardGroup(pid, false)
    })()
    return this.stopping
  }
}
