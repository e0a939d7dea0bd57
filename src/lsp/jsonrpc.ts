/**
 * JSON-RPC 2.0 over the Language Server Protocol's stdio framing: each message is a
 * `Content-Length: N\r\n\r\n` header block followed by N bytes of UTF-8 JSON. Requests carry a
 * deadline of their own; a connection that closes rejects everything still waiting.
 */
import type { Readable, Writable } from 'node:stream'

export interface RpcError {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

/** A failed request: the server's error answer, a timeout, or the connection's end. */
export class RpcFailure extends Error {
  constructor(message: string, readonly kind: 'error' | 'timeout' | 'closed', readonly rpc?: RpcError) {
    super(message)
    this.name = 'RpcFailure'
  }
}

const HEADER_END = Buffer.from('\r\n\r\n')

/** Splits a byte stream into framed messages; a header without Content-Length is skipped. */
export class FrameReader {
  private buffer: Buffer = Buffer.alloc(0)
  constructor(private readonly onMessage: (text: string) => void) {}

  push(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk])
    for (;;) {
      const end = this.buffer.indexOf(HEADER_END)
      if (end < 0) return
      const header = this.buffer.subarray(0, end).toString('ascii')
      const match = /content-length:\s*(\d+)/i.exec(header)
      const start = end + HEADER_END.length
      if (match === null) {
        this.buffer = this.buffer.subarray(start)
        continue
      }
      const length = Number(match[1])
      if (this.buffer.length < start + length) return
      const body = this.buffer.subarray(start, start + length).toString('utf8')
      this.buffer = this.buffer.subarray(start + length)
      this.onMessage(body)
    }
  }
}

export function frame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8')
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'ascii'), body])
}

interface Pending {
  readonly method: string
  readonly resolve: (value: unknown) => void
  readonly reject: (error: RpcFailure) => void
  readonly timer: NodeJS.Timeout
}

export interface ConnectionHandlers {
  /** A notification from the server. */
  notification?(method: string, params: unknown): void
  /** A request from the server; the answer is its result (undefined answers null). */
  request?(method: string, params: unknown): unknown
}

export class RpcConnection {
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private closedWith: string | undefined

  constructor(private readonly input: Readable, private readonly output: Writable, private readonly handlers: ConnectionHandlers = {}) {
    const reader = new FrameReader(text => this.receive(text))
    input.on('data', (chunk: Buffer) => reader.push(chunk))
    output.on('error', () => {})
  }

  get closed(): boolean {
    return this.closedWith !== undefined
  }

  request<T = unknown>(method: string, params: unknown, timeoutMs: number): Promise<T> {
    if (this.closedWith !== undefined) return Promise.reject(new RpcFailure(this.closedWith, 'closed'))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new RpcFailure(`no answer to ${method} within ${timeoutMs} ms`, 'timeout'))
      }, timeoutMs)
      this.pending.set(id, { method, resolve: resolve as (value: unknown) => void, reject, timer })
      this.send({ jsonrpc: '2.0', id, method, params })
    })
  }

  notify(method: string, params: unknown): void {
    if (this.closedWith === undefined) this.send({ jsonrpc: '2.0', method, params })
  }

  /** Rejects every waiting request with `reason`; later requests fail at once. */
  close(reason: string): void {
    if (this.closedWith !== undefined) return
    this.closedWith = reason
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer)
      this.pending.delete(id)
      pending.reject(new RpcFailure(reason, 'closed'))
    }
  }

  private send(message: unknown): void {
    this.output.write(frame(message))
  }

  private receive(text: string): void {
    let message: { id?: number | string | null; method?: string; params?: unknown; result?: unknown; error?: RpcError }
    try {
      message = JSON.parse(text) as typeof message
    } catch {
      return
    }
    if (typeof message !== 'object' || message === null) return
    if (typeof message.method === 'string') {
      if (message.id === undefined || message.id === null) {
        this.handlers.notification?.(message.method, message.params)
        return
      }
      this.answer(message.id, message.method, message.params)
      return
    }
    if (typeof message.id !== 'number') return
    const pending = this.pending.get(message.id)
    if (pending === undefined) return
    this.pending.delete(message.id)
    clearTimeout(pending.timer)
    if (message.error !== undefined) pending.reject(new RpcFailure(`${pending.method} failed: ${message.error.message}`, 'error', message.error))
    else pending.resolve(message.result ?? null)
  }

  private answer(id: number | string, method: string, params: unknown): void {
    if (this.closedWith !== undefined) return
    try {
      const result = this.handlers.request?.(method, params)
      this.send({ jsonrpc: '2.0', id, result: result ?? null })
    } catch (error) {
      this.send({ jsonrpc: '2.0', id, error: { code: -32603, message: error instanceof Error ? error.message : String(error) } })
    }
  }
}
