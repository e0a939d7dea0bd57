/**
 * Newline-delimited JSON-RPC 2.0 over a pair of streams, shared by the SDK server, the ACP server
 * and the TypeScript client. One frame per line; lines split on `\n` only, so U+2028 / U+2029
 * (which JSON.stringify leaves raw inside strings) never cut a frame. A bad frame gets the
 * standard error answer and the peer keeps reading: nothing a client sends can stop it.
 */
import type { z } from 'zod'

export const ErrorCodes = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** Ours: the request is valid but the server cannot serve it now (busy session, no persistence...). */
  serverError: -32000,
  /** The request was given up by the side that sent it (LSP's and ACP's `RequestCancelled`). */
  requestCancelled: -32800,
  /** A request before the handshake (`initialize`) succeeded (LSP's `ServerNotInitialized`). */
  serverNotInitialized: -32002,
} as const

/** The most of one value (characters) an error message quotes back; the rest is counted, not sent. */
export const MAX_ECHO_CHARS = 200
/** The longest error message a peer sends (characters): a backstop for any echo not clipped at its source. */
export const MAX_ERROR_MESSAGE_CHARS = 2000

/**
 * `text` as an error message may quote it: unchanged up to `max` characters, else its start and
 * `… (N bytes)`. A client's 55 MB parameter is not sent back to it in the answer.
 */
export function clip(text: string, max = MAX_ECHO_CHARS): string {
  if (text.length <= max) return text
  return `${text.slice(0, max)}… (${Buffer.byteLength(text, 'utf8')} bytes)`
}

export type JsonRpcId = string | number | null

export interface JsonRpcErrorObject {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

/** Throw from a handler to answer with this exact code and message. */
export class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message)
    this.name = 'RpcError'
  }

  toJSON(): JsonRpcErrorObject {
    return this.data === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, data: this.data }
  }
}

/** Default bound of one frame (characters): room for large inline images, far below V8's string limit. */
export const MAX_FRAME_CHARS = 64 * 1024 * 1024

/**
 * Splits text into lines on `\n` only; a `\r` before the `\n` is dropped. Each piece of input is
 * scanned once (a frame arriving in many pieces is joined once, at its newline). A line longer
 * than `maxChars` is dropped as it arrives and reported once at its newline.
 */
export class LineSplitter {
  private parts: string[] = []
  private size = 0
  private overflow = false

  constructor(private readonly maxChars = MAX_FRAME_CHARS, private readonly onOverflow?: () => void) {}

  push(text: string): string[] {
    const lines: string[] = []
    let start = 0
    for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', start)) {
      const tail = text.slice(start, at)
      start = at + 1
      if (this.overflow || this.size + tail.length > this.maxChars) {
        this.reset()
        this.onOverflow?.()
        continue
      }
      let line = tail
      if (this.parts.length > 0) {
        this.parts.push(tail)
        line = this.parts.join('')
        this.reset()
      }
      lines.push(line.endsWith('\r') ? line.slice(0, -1) : line)
    }
    if (start < text.length && !this.overflow) {
      const rest = text.slice(start)
      this.size += rest.length
      if (this.size > this.maxChars) {
        this.parts = []
        this.overflow = true
      } else this.parts.push(rest)
    }
    return lines
  }

  /** The unterminated rest at end of input (a last frame without newline still counts). */
  end(): string | undefined {
    const overflow = this.overflow
    const rest = this.parts.join('')
    this.reset()
    if (overflow) this.onOverflow?.()
    return overflow || rest.trim() === '' ? undefined : rest
  }

  private reset(): void {
    this.parts = []
    this.size = 0
    this.overflow = false
  }
}

export interface MethodSpec<S extends z.ZodType = z.ZodType> {
  readonly params: S
  readonly run: (params: z.output<S>) => unknown
}

/** A request handler with its params schema: bad params are answered -32602 before `run`. */
export function method<S extends z.ZodType>(params: S, run: (params: z.output<S>) => unknown): MethodSpec<S> {
  return { params, run }
}

export interface NotificationFrame {
  readonly method: string
  readonly params?: unknown
}

export interface PeerOptions {
  readonly input: NodeJS.ReadableStream
  readonly output: NodeJS.WritableStream
  /** Requests this side answers, by method name. */
  readonly methods?: Readonly<Record<string, MethodSpec>>
  /** Notifications this side accepts; others are logged and dropped (notifications get no answer). */
  readonly notifications?: Readonly<Record<string, MethodSpec>>
  /** Any notification received, before the per-method handler. */
  readonly onNotification?: (frame: NotificationFrame) => void
  /** Diagnostics (never the output stream). */
  readonly log?: (message: string) => void
  /** Longest accepted frame in characters (default MAX_FRAME_CHARS); longer ones get -32600. */
  readonly maxFrameChars?: number
  /**
   * The handshake method (`initialize`): until one succeeds, every other request is answered
   * -32002 (a request arriving while it runs waits for it) and notifications are dropped.
   */
  readonly initializeFirst?: string
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The error member of an answer, its message cut to MAX_ERROR_MESSAGE_CHARS. */
function errorObject(code: number, message: string, data?: unknown): JsonRpcErrorObject {
  const capped = clip(message, MAX_ERROR_MESSAGE_CHARS)
  return data === undefined ? { code, message: capped } : { code, message: capped, data }
}

function isId(value: unknown): value is JsonRpcId {
  return value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
}

function paramsError(error: z.ZodError): string {
  const issue = error.issues[0]
  if (issue === undefined) return 'invalid params'
  // Keys in the path come from the client, as may the message.
  const path = issue.path.length > 0 ? clip(issue.path.map(String).join('.')) : 'params'
  return `invalid params: ${path}: ${clip(issue.message)}`
}

export interface RequestOptions {
  readonly signal?: AbortSignal
  /** The notification that tells the other side a request was given up (e.g. `$/cancel_request`). */
  readonly cancelNotification?: string
}

export class JsonRpcPeer {
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void; method: string }>()
  private nextId = 0
  /** Requests from the other side still being handled. */
  private readonly handling = new Set<Promise<void>>()
  private closedReason: Error | undefined
  /** Resolves when the input ended (EOF) or failed. */
  readonly closed: Promise<void>

  /** Set when the output failed (the other side went away): later frames are dropped, not fatal. */
  private outputError: Error | undefined
  /** `initializeFirst`: whether a handshake succeeded, and the one running. */
  private initialized = false
  private initializing: Promise<unknown> | undefined

  constructor(private readonly options: PeerOptions) {
    // EPIPE and friends arrive as 'error' events; unhandled they would kill the process.
    // The other side closing its end (EPIPE, a destroyed stream) is how a client says goodbye:
    // nothing to report. Anything else is logged once.
    options.output.on('error', (error: Error) => {
      const code = (error as NodeJS.ErrnoException).code
      const quiet = code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' || code === 'ECONNRESET'
      if (this.outputError === undefined && !quiet) options.log?.(`output closed: ${error.message}`)
      this.outputError = error
    })
    const maxChars = options.maxFrameChars ?? MAX_FRAME_CHARS
    const splitter = new LineSplitter(maxChars, () => {
      this.error(null, ErrorCodes.invalidRequest, `Invalid Request: frame longer than ${maxChars} characters (dropped)`)
    })
    const input = options.input
    if ('setEncoding' in input && typeof input.setEncoding === 'function') input.setEncoding('utf8')
    this.closed = new Promise(resolve => {
      const finish = (reason: Error) => {
        if (this.closedReason !== undefined) return
        const rest = splitter.end()
        if (rest !== undefined) this.receive(rest)
        this.closedReason = reason
        for (const { reject, method } of this.pending.values()) reject(new RpcError(ErrorCodes.internalError, `${method}: ${reason.message}`))
        this.pending.clear()
        resolve()
      }
      input.on('data', (text: string | Buffer) => {
        for (const line of splitter.push(typeof text === 'string' ? text : text.toString('utf8'))) this.receive(line)
      })
      input.on('end', () => finish(new Error('the connection closed')))
      input.on('close', () => finish(new Error('the connection closed')))
      input.on('error', (error: Error) => finish(error))
    })
  }

  /** Writes one frame; U+2028/U+2029 stay raw (the reader splits on `\n` only). */
  send(frame: object): void {
    if (this.outputError !== undefined) return
    try {
      this.options.output.write(`${JSON.stringify(frame)}\n`)
    } catch (error) {
      this.options.log?.(`cannot write a frame: ${describe(error)}`)
    }
  }

  notify(method: string, params?: unknown): void {
    this.send(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params })
  }

  /**
   * Sends a request; resolves with its result, rejects with an `RpcError` for an error answer.
   * With `signal`: aborting it while the answer is due rejects at once (`requestCancelled`) and,
   * with `cancelNotification`, tells the other side (`{requestId}`); a late answer is dropped quietly.
   */
  request<T = unknown>(method: string, params?: unknown, options: RequestOptions = {}): Promise<T> {
    if (this.closedReason !== undefined) return Promise.reject(new RpcError(ErrorCodes.internalError, `${method}: ${this.closedReason.message}`))
    const { signal, cancelNotification } = options
    if (signal?.aborted) return Promise.reject(new RpcError(ErrorCodes.requestCancelled, `${method}: cancelled`))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        const entry = this.pending.get(id)
        if (entry === undefined) return
        // Kept (with no-op callbacks) so the answer the other side may still send is not news.
        this.pending.set(id, { resolve: () => {}, reject: () => {}, method })
        if (cancelNotification !== undefined) this.notify(cancelNotification, { requestId: id })
        reject(new RpcError(ErrorCodes.requestCancelled, `${method}: cancelled`))
      }
      const settle = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A) => {
        signal?.removeEventListener('abort', onAbort)
        fn(...args)
      }
      this.pending.set(id, { resolve: settle(resolve as (value: unknown) => void), reject: settle(reject), method })
      signal?.addEventListener('abort', onAbort, { once: true })
      this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params })
    })
  }

  /** Rejects every request still waiting for an answer (e.g. the other side died). */
  failPending(reason: string): void {
    for (const { reject, method } of this.pending.values()) reject(new RpcError(ErrorCodes.internalError, `${method}: ${reason}`))
    this.pending.clear()
  }

  /** Resolves once every request received so far has been answered. */
  async settled(): Promise<void> {
    while (this.handling.size > 0) await Promise.all(this.handling)
  }

  /** Resolves once everything written so far has been handed to the output. */
  drain(): Promise<void> {
    return new Promise(resolve => {
      try {
        this.options.output.write('', () => resolve())
      } catch {
        resolve()
      }
    })
  }

  private error(id: JsonRpcId, code: number, message: string, data?: unknown): void {
    this.send({ jsonrpc: '2.0', id, error: errorObject(code, message, data) })
  }

  private receive(line: string): void {
    if (line.trim() === '') return
    let frame: unknown
    try {
      frame = JSON.parse(line)
    } catch (error) {
      this.error(null, ErrorCodes.parseError, `Parse error: ${describe(error)}`)
      return
    }
    if (Array.isArray(frame)) {
      this.error(null, ErrorCodes.invalidRequest, 'Invalid Request: batch frames are not supported; send one object per line')
      return
    }
    if (frame === null || typeof frame !== 'object') {
      this.error(null, ErrorCodes.invalidRequest, `Invalid Request: a frame must be a JSON object, not ${frame === null ? 'null' : typeof frame}`)
      return
    }
    const f = frame as Record<string, unknown>
    const id = isId(f.id) ? f.id : null
    if (f.jsonrpc !== '2.0') {
      this.error(id, ErrorCodes.invalidRequest, 'Invalid Request: "jsonrpc" must be "2.0"')
      return
    }
    if (f.method === undefined && ('result' in f || 'error' in f)) {
      this.answer(f)
      return
    }
    if (typeof f.method !== 'string') {
      this.error(id, ErrorCodes.invalidRequest, 'Invalid Request: "method" must be a string')
      return
    }
    if ('id' in f && !isId(f.id)) {
      this.error(null, ErrorCodes.invalidRequest, 'Invalid Request: "id" must be a string, a number or null')
      return
    }
    if (f.params !== undefined && (f.params === null || typeof f.params !== 'object')) {
      if ('id' in f) this.error(id, ErrorCodes.invalidParams, 'invalid params: "params" must be an object or an array')
      return
    }
    if ('id' in f) {
      const handled = this.handleRequest(id, f.method, f.params)
      this.handling.add(handled)
      void handled.finally(() => this.handling.delete(handled))
    }
    else this.handleNotification(f.method, f.params)
  }

  private answer(frame: Record<string, unknown>): void {
    const pending = typeof frame.id === 'number' ? this.pending.get(frame.id) : undefined
    if (pending === undefined) {
      this.options.log?.(`dropped an answer for unknown request id ${JSON.stringify(frame.id)}`)
      return
    }
    this.pending.delete(frame.id as number)
    if ('error' in frame) {
      const error = frame.error as Partial<JsonRpcErrorObject> | null
      pending.reject(new RpcError(typeof error?.code === 'number' ? error.code : ErrorCodes.internalError, typeof error?.message === 'string' ? error.message : 'error', error?.data))
    } else pending.resolve(frame.result)
  }

  private async handleRequest(id: JsonRpcId, name: string, params: unknown): Promise<void> {
    const spec = this.options.methods?.[name]
    if (spec === undefined || !Object.hasOwn(this.options.methods!, name)) {
      this.error(id, ErrorCodes.methodNotFound, `Method not found: ${clip(name)}`)
      return
    }
    const first = this.options.initializeFirst
    const handshake = first !== undefined && name === first
    if (first !== undefined && !handshake && !this.initialized) {
      await this.initializing
      if (!this.initialized) {
        this.error(id, ErrorCodes.serverNotInitialized, `Server not initialized: send ${first} before ${name}`)
        return
      }
    }
    const parsed = spec.params.safeParse(params ?? {})
    if (!parsed.success) {
      this.error(id, ErrorCodes.invalidParams, paramsError(parsed.error))
      return
    }
    try {
      let running: Promise<unknown>
      try {
        running = Promise.resolve(spec.run(parsed.data))
      } catch (error) {
        running = Promise.reject(error)
      }
      if (handshake) this.initializing = running.then(() => { this.initialized = true }, () => {})
      const result = await running
      this.send({ jsonrpc: '2.0', id, result: result ?? null })
    } catch (error) {
      if (error instanceof RpcError) this.error(id, error.code, error.message, error.data)
      else this.error(id, ErrorCodes.internalError, `Internal error: ${describe(error)}`)
    }
  }

  private handleNotification(name: string, params: unknown): void {
    if (this.options.initializeFirst !== undefined && !this.initialized) {
      this.options.log?.(`ignored notification ${clip(name)} before ${this.options.initializeFirst}`)
      return
    }
    try {
      this.options.onNotification?.({ method: name, ...(params === undefined ? {} : { params }) })
    } catch (error) {
      this.options.log?.(`notification listener failed on ${name}: ${describe(error)}`)
    }
    const spec = this.options.notifications?.[name]
    if (spec === undefined || !Object.hasOwn(this.options.notifications!, name)) {
      if (this.options.onNotification === undefined) this.options.log?.(`ignored unknown notification ${name}`)
      return
    }
    const parsed = spec.params.safeParse(params ?? {})
    if (!parsed.success) {
      this.options.log?.(`ignored notification ${name}: ${paramsError(parsed.error)}`)
      return
    }
    Promise.resolve().then(() => spec.run(parsed.data)).catch(error => this.options.log?.(`notification ${name} failed: ${describe(error)}`))
  }
}
