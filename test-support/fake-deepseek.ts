/**
 * A scripted DeepSeek-compatible chat-completions server for tests: a real HTTP server on
 * 127.0.0.1 (port 0) that answers each POST with the next queued response, written as real SSE
 * bytes, and records every request body. No fetch mocking: clients talk to it over HTTP.
 *
 *   const server = await FakeDeepSeek.start()
 *   server.enqueue(streamResponse([{ reasoning: 'hm' }, { text: 'Hi' }, { finish: 'stop', usage: { prompt_tokens: 5, completion_tokens: 2 } }]))
 *   // point the adapter at server.url, run, then inspect server.requests[0].body
 *   await server.close()
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { StreamChunk, TokenUsage } from '../src/llm/types.js'

/** A piece of the response body, a pause, or a wait for the test to release the stream. */
export type FakeSegment = string | Uint8Array | { readonly delayMs: number } | { readonly until: Promise<unknown> }

export interface FakeResponse {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
  readonly segments?: readonly FakeSegment[]
  /**
   * After the last segment: `close` ends the body cleanly (default), `hang` keeps the response
   * open until `close()`, `destroy` resets the connection.
   */
  readonly end?: 'close' | 'hang' | 'destroy'
}

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly raw: string
  /** The JSON body, or undefined when it was not JSON. */
  readonly body: any
  /** Resolves when the response is over: fully written, or the client went away. */
  readonly closed: Promise<void>
  /**
   * The server's own time for this request (the model's time, for benchmarks): from the moment
   * the request arrived to the end of the response, in ms (`performance.now()`); `endedAt` is set
   * once the last byte was handed to the socket.
   */
  readonly timing: { readonly receivedAt: number; endedAt?: number }
  /** Which accepted connection (1, 2, ...; see `FakeDeepSeek.connections`) the request came on. */
  readonly connection: number
}

export class FakeDeepSeek {
  readonly requests: RecordedRequest[] = []
  /**
   * The body `GET …/models` answers (OpenAI's `{data: [{id}]}`), for model discovery; unset, such
   * a request takes a scripted response like any other. Those requests land in `modelRequests`.
   */
  models: unknown = undefined
  readonly modelRequests: { path: string; headers: IncomingHttpHeaders }[] = []
  private readonly queue: FakeResponse[] = []
  private readonly waiters: { count: number; resolve: () => void }[] = []
  private readonly open = new Set<ServerResponse>()
  private accepted = 0
  private readonly connectionIds = new WeakMap<Socket, number>()
  private readonly connectionWaiters: { count: number; resolve: () => void }[] = []

  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<FakeDeepSeek> {
    let fake: FakeDeepSeek | undefined
    const server = createServer((req, res) => {
      const receivedAt = performance.now()
      const parts: Buffer[] = []
      req.on('data', (part: Buffer) => parts.push(part))
      req.on('end', () => { void fake!.respond(req.method ?? 'GET', req.url ?? '/', req.headers, Buffer.concat(parts).toString('utf8'), res, receivedAt, fake!.connectionIds.get(req.socket) ?? 0) })
    })
    server.on('connection', (socket: Socket) => { fake!.accept(socket) })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    fake = new FakeDeepSeek(server, `http://127.0.0.1:${port}`)
    return fake
  }

  /** Queues responses; each request takes the next one. */
  enqueue(...responses: FakeResponse[]): this {
    this.queue.push(...responses)
    return this
  }

  /** Scripted responses not yet used. */
  get pending(): number {
    return this.queue.length
  }

  /**
   * Drops the responses no request took (a test whose turn count depends on timing, e.g. queued
   * prompts merging into one turn), so the next test of a shared server starts from its own script.
   */
  discardPending(): number {
    return this.queue.splice(0).length
  }

  /** TCP connections accepted so far (a client may open one before it sends a request on it). */
  get connections(): number {
    return this.accepted
  }

  /** Resolves once `count` connections have been accepted in total. */
  waitForConnections(count: number): Promise<void> {
    if (this.accepted >= count) return Promise.resolve()
    return new Promise(resolve => this.connectionWaiters.push({ count, resolve }))
  }

  private accept(socket: Socket): void {
    this.connectionIds.set(socket, ++this.accepted)
    for (const waiter of this.connectionWaiters.filter(w => this.accepted >= w.count)) {
      this.connectionWaiters.splice(this.connectionWaiters.indexOf(waiter), 1)
      waiter.resolve()
    }
  }

  /** Resolves once `count` requests have arrived in total. */
  waitForRequests(count: number): Promise<void> {
    if (this.requests.length >= count) return Promise.resolve()
    return new Promise(resolve => this.waiters.push({ count, resolve }))
  }

  /** Stops the server, cutting any response still open (`hang`). */
  async close(): Promise<void> {
    this.server.closeAllConnections()
    for (const res of this.open) res.destroy()
    await new Promise<void>(resolve => this.server.close(() => resolve()))
  }

  private async respond(method: string, path: string, headers: IncomingHttpHeaders, raw: string, res: ServerResponse, receivedAt: number, connection: number): Promise<void> {
    if (method === 'GET' && this.models !== undefined && /\/models\/?$/.test(path)) {
      this.modelRequests.push({ path, headers })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(this.models))
      return
    }
    let body: unknown
    try { body = JSON.parse(raw) } catch { body = undefined }
    const closed = new Promise<void>(resolve => res.on('close', () => resolve()))
    const timing: { receivedAt: number; endedAt?: number } = { receivedAt }
    res.on('finish', () => { timing.endedAt = performance.now() })
    this.requests.push({ method, path, headers, raw, body, closed, timing, connection })
    for (const waiter of this.waiters.filter(w => this.requests.length >= w.count)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1)
      waiter.resolve()
    }
    const script = this.queue.shift() ?? errorResponse(500, { error: { message: 'fake-deepseek: no scripted response left' } })
    this.open.add(res)
    res.on('close', () => { this.open.delete(res) })
    const status = script.status ?? 200
    res.writeHead(status, {
      ...status === 200 ? { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } : { 'content-type': 'application/json' },
      ...script.headers,
    })
    res.flushHeaders()
    for (const segment of script.segments ?? []) {
      if (res.destroyed) return
      if (typeof segment === 'string' || segment instanceof Uint8Array) {
        await new Promise<void>(resolve => res.write(segment, () => resolve()))
      } else if ('delayMs' in segment) {
        await new Promise(resolve => setTimeout(resolve, segment.delayMs))
      } else {
        await segment.until
      }
    }
    if (res.destroyed) return
    if (script.end === 'hang') return
    if (script.end === 'destroy') res.socket?.destroy()
    else res.end()
  }
}

/** One SSE event carrying `data` (objects are JSON-encoded). */
export function sseEvent(data: unknown): string {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`
}

export function sseComment(text: string): string {
  return `: ${text}\n\n`
}

export interface WireUsageLike {
  prompt_tokens?: number
  completion_tokens?: number
  prompt_cache_hit_tokens?: number
  prompt_cache_miss_tokens?: number
  prompt_tokens_details?: { cached_tokens?: number }
  completion_tokens_details?: { reasoning_tokens?: number }
}

/** A StreamChunk-like script step, turned into DeepSeek wire chunks by `streamResponse`. */
export type StreamStep =
  | { readonly reasoning: string }
  | { readonly text: string }
  | { readonly toolCall: { readonly index?: number; readonly id?: string; readonly name?: string; readonly arguments?: string } }
  /** The finish chunk (empty delta); `usage` rides on it when given. */
  | { readonly finish: string; readonly usage?: WireUsageLike }
  /** A separate usage-only chunk (`choices: []`). */
  | { readonly usage: WireUsageLike }
  | { readonly comment: string }
  | { readonly delayMs: number }
  | { readonly until: Promise<unknown> }
  /** Bytes written as they are (e.g. a malformed event). */
  | { readonly raw: string }

export interface StreamResponseOptions {
  /** End with `data: [DONE]` (default true). */
  readonly done?: boolean
  readonly end?: FakeResponse['end']
  readonly headers?: Readonly<Record<string, string>>
  /** Re-split the body text into byte pieces of this size (cuts through events and UTF-8). */
  readonly chunkBytes?: number
  readonly model?: string
  /** Leave out the id/object/created/model envelope fields (smaller bodies for byte-level tests). */
  readonly bare?: boolean
}

/** Builds a streamed completion from steps, shaped like DeepSeek's `chat.completion.chunk`s. */
export function streamResponse(steps: readonly StreamStep[], options: StreamResponseOptions = {}): FakeResponse {
  const model = options.model ?? 'deepseek-v4-flash'
  const envelope = options.bare === true ? {} : { id: 'fake-completion', object: 'chat.completion.chunk', created: 0, model }
  const chunk = (choices: unknown[], usage?: WireUsageLike) => sseEvent({ ...envelope, choices, ...usage !== undefined ? { usage } : {} })
  const segments: FakeSegment[] = []
  for (const step of steps) {
    if ('reasoning' in step) segments.push(chunk([{ index: 0, delta: { content: null, reasoning_content: step.reasoning }, finish_reason: null }]))
    else if ('text' in step) segments.push(chunk([{ index: 0, delta: { content: step.text }, finish_reason: null }]))
    else if ('toolCall' in step) {
      const call = step.toolCall
      const fn = { ...call.name !== undefined ? { name: call.name } : {}, ...call.arguments !== undefined ? { arguments: call.arguments } : {} }
      segments.push(chunk([{ index: 0, delta: { tool_calls: [{ index: call.index ?? 0, ...call.id !== undefined ? { id: call.id, type: 'function' } : {}, function: fn }] }, finish_reason: null }]))
    } else if ('finish' in step) segments.push(chunk([{ index: 0, delta: { content: '' }, finish_reason: step.finish }], step.usage))
    else if ('usage' in step) segments.push(chunk([], step.usage))
    else if ('comment' in step) segments.push(sseComment(step.comment))
    else if ('raw' in step) segments.push(step.raw)
    else segments.push(step)
  }
  if (options.done !== false) segments.push(sseEvent('[DONE]'))
  return {
    status: 200,
    headers: options.headers,
    segments: options.chunkBytes === undefined ? segments : rechunk(segments, options.chunkBytes),
    end: options.end,
  }
}

/** A JSON error response (e.g. 429 with `Retry-After`). */
export function errorResponse(status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): FakeResponse {
  return { status, headers, segments: [typeof body === 'string' ? body : JSON.stringify(body)] }
}

/** The body bytes of a response (pauses dropped). */
export function bodyBytes(response: FakeResponse): Buffer {
  return Buffer.concat((response.segments ?? []).flatMap(s => typeof s === 'string' ? [Buffer.from(s)] : s instanceof Uint8Array ? [Buffer.from(s)] : []))
}

/** The same response cut after `bytes` bytes of body, then a clean EOF. */
export function truncated(response: FakeResponse, bytes: number): FakeResponse {
  return { ...response, segments: [bodyBytes(response).subarray(0, bytes)], end: 'close' }
}

/** Text pieces re-split into fixed-size byte pieces; pauses stay where they were. */
function rechunk(segments: readonly FakeSegment[], size: number): FakeSegment[] {
  const out: FakeSegment[] = []
  for (const segment of segments) {
    if (typeof segment !== 'string' && !(segment instanceof Uint8Array)) { out.push(segment); continue }
    const bytes = typeof segment === 'string' ? Buffer.from(segment) : segment
    for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size))
  }
  return out
}

/**
 * The wire script that makes the DeepSeek adapter emit `chunks` again (e.g. `assistant/chunk`
 * data from a recorded session). Block-start/end are implied by the deltas; the finish decides
 * how the response ends: `stop`/`tool-calls`/`max-tokens` as finish reasons, EMPTY_RESPONSE as
 * a content-less stop, STREAM_CLOSED as EOF without [DONE], a failure with an HTTP status as
 * that error response, TIMEOUT or an abort as a stream that hangs, other codes as the
 * lower-cased finish reason.
 */
export function chunksResponse(chunks: readonly StreamChunk[], options: StreamResponseOptions = {}): FakeResponse {
  const steps: StreamStep[] = []
  const toolIndex = new Map<number, number>()
  let usage: WireUsageLike | undefined
  let finish: Extract<StreamChunk, { type: 'finish' }> | undefined
  for (const chunk of chunks) {
    if (chunk.type === 'reasoning-delta' && chunk.text !== '') steps.push({ reasoning: chunk.text })
    else if (chunk.type === 'text-delta' && chunk.text !== '') steps.push({ text: chunk.text })
    else if (chunk.type === 'tool-call-delta') {
      const known = toolIndex.has(chunk.index)
      if (!known) toolIndex.set(chunk.index, toolIndex.size)
      steps.push({ toolCall: {
        index: toolIndex.get(chunk.index)!,
        ...!known && chunk.id !== '' ? { id: chunk.id } : {},
        ...chunk.name !== undefined ? { name: chunk.name } : {},
        arguments: chunk.argumentsDelta,
      } })
    } else if (chunk.type === 'usage') usage = wireUsage(chunk.usage)
    else if (chunk.type === 'finish') { finish = chunk; break }
  }
  const reason = finish?.reason ?? { kind: 'stop' as const }
  const withFinish = (wire: string) => [...steps, { finish: wire, ...usage !== undefined ? { usage } : {} }]
  switch (reason.kind) {
    case 'stop': return streamResponse(withFinish('stop'), options)
    case 'tool-calls': return streamResponse(withFinish('tool_calls'), options)
    case 'max-tokens': return streamResponse(withFinish('length'), options)
    case 'aborted': return streamResponse(steps, { ...options, done: false, end: 'hang' })
    case 'error': {
      const { code, status, message, providerRetryAfterMs } = reason.failure
      if (status !== undefined) {
        // Adapter messages read "<provider>: HTTP <status>: <provider text>"; send the provider text.
        return errorResponse(status, { error: { message: message.replace(/^[^:]*: HTTP \d+: /, '') } }, providerRetryAfterMs === undefined ? {} : { 'retry-after': String(Math.ceil(providerRetryAfterMs / 1000)) })
      }
      if (code === 'EMPTY_RESPONSE') return streamResponse(withFinish('stop'), options)
      if (code === 'STREAM_CLOSED') return streamResponse(steps, { ...options, done: false })
      if (code === 'TIMEOUT') return streamResponse(steps, { ...options, done: false, end: 'hang' })
      return streamResponse(withFinish(code.toLowerCase()), options)
    }
  }
}

/** TokenUsage back to DeepSeek's wire usage (cache hits are part of prompt_tokens there). */
function wireUsage(usage: TokenUsage): WireUsageLike {
  const cached = usage.cacheReadTokens
  return {
    prompt_tokens: (usage.inputTokens ?? 0) + (cached ?? 0),
    completion_tokens: usage.outputTokens ?? 0,
    ...cached !== undefined ? { prompt_cache_hit_tokens: cached } : {},
    ...usage.reasoningTokens !== undefined ? { completion_tokens_details: { reasoning_tokens: usage.reasoningTokens } } : {},
  }
}
