/**
 * The transport shared by every streaming adapter (L-7, L-9): one POST over node:http(s)
 * (./http-post.ts; cheaper per request than fetch and its web streams), SSE framing with
 * eventsource-parser, an idle watchdog, HTTP error classification and the translation into
 * StreamChunks by the wire's `SseEventTranslator` (chat completions here; Anthropic Messages in
 * ./anthropic). One call is one provider attempt: nothing here retries (L-5).
 */
import { createParser } from 'eventsource-parser'
import { post, readText, type HeaderLookup, type HttpExchange, type ReadResult } from './http-post.js'
import { LlmError } from './errors.js'
import { ChatCompletionTranslator } from './openai-wire.js'
import type { StreamChunk } from './types.js'

export const DEFAULT_IDLE_TIMEOUT_MS = 300_000

export interface ChatCompletionRequest {
  /** Full endpoint URL, e.g. `https://api.deepseek.com/chat/completions`. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** The JSON body: bytes already encoded (`encodeRequestBody`), or a value to serialise. */
  readonly body: unknown
  readonly signal?: AbortSignal
  /** Not one byte is sent before this resolves; a rejection fails the request unsent (./request-hold.ts). */
  readonly hold?: Promise<unknown>
  /** Longest wait for the next bytes of the response (headers included). */
  readonly idleTimeoutMs?: number
  /** Names the adapter in error messages. */
  readonly label: string
}

/** Statuses a WHATWG fetch gives no body (L-9 treats a 2xx of these as EMPTY_RESPONSE). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304])

const REQUEST_ID_HEADERS = ['x-request-id', 'x-ds-request-id', 'request-id', 'x-trace-id']

/** How the request reaches the provider: `post` (node:http) in production. */
export type ChatCompletionTransport = typeof post

/**
 * One response's SSE events -> StreamChunks, for one wire format. `event` translates one event
 * (its data, and its `event:` name when the wire names events) into `out` and says whether it
 * ended the response (its final chunks pushed); a bad event throws an LlmError.
 */
export interface SseEventTranslator {
  requestId?: string
  event(data: string, name: string | undefined, out: StreamChunk[]): boolean
  /** What ends a complete response, for the STREAM_CLOSED message (`[DONE]`, `message_stop`). */
  readonly end: string
}

/** Chat completions: `data: [DONE]` ends the response (L-7). */
class ChatCompletionEvents implements SseEventTranslator {
  readonly end = '[DONE]'
  constructor(private readonly translator: ChatCompletionTranslator) {}
  set requestId(id: string | undefined) { this.translator.requestId = id }
  get requestId(): string | undefined { return this.translator.requestId }

  event(data: string, _name: string | undefined, out: StreamChunk[]): boolean {
    // A JSON event starts with `{`, so only other data can be a (padded) `[DONE]`.
    if (data.charCodeAt(0) !== 123 && data.trim() === '[DONE]') {
      for (const chunk of this.translator.done()) out.push(chunk)
      return true
    }
    this.translator.data(data, out)
    return false
  }
}

/**
 * POSTs the request and yields the translated chunks; failures are thrown as LlmError.
 * `request` may be a function building it (awaited at the first `next()`, its throw passed on
 * as it is), so an adapter can return this stream without a generator level of its own.
 * `transport` is replaced only to feed recorded bytes through this same path (bench/).
 */
export function streamChatCompletion(request: ChatCompletionRequest | (() => Promise<ChatCompletionRequest>), transport: ChatCompletionTransport = post): AsyncGenerator<StreamChunk> {
  return new ChunkStream(sseReads(request, () => new ChatCompletionEvents(new ChatCompletionTranslator()), transport))
}

/** The same transport for another SSE wire: `translator` makes the translation of one response. */
export function streamSse(request: ChatCompletionRequest | (() => Promise<ChatCompletionRequest>), translator: () => SseEventTranslator, transport: ChatCompletionTransport = post): AsyncGenerator<StreamChunk> {
  return new ChunkStream(sseReads(request, translator, transport))
}

/** The chunks of each body read as one array (never empty); what `ChunkStream` hands out. */
async function* sseReads(lazyRequest: ChatCompletionRequest | (() => Promise<ChatCompletionRequest>), makeTranslator: () => SseEventTranslator, transport: ChatCompletionTransport): AsyncGenerator<readonly StreamChunk[]> {
  const request = typeof lazyRequest === 'function' ? await lazyRequest() : lazyRequest
  const idleTimeoutMs = request.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
  // The adapter's own controller (idle watchdog, teardown) fused with the caller's (L-9): the
  // caller's abort is forwarded with its reason (cheaper per request than AbortSignal.any).
  const consumer = new AbortController()
  const caller = request.signal
  const forward = () => consumer.abort(caller?.reason)
  if (caller?.aborted === true) forward()
  else caller?.addEventListener('abort', forward, { once: true })
  const signal = consumer.signal
  const watchdog = new IdleWatchdog(idleTimeoutMs, () => consumer.abort())
  const classify = (error: unknown, what: string, requestId?: string): LlmError =>
    classifyTransportError(error, { label: request.label, what, idleTimeoutMs, idleFired: watchdog.fired, callerAborted: aborted(request.signal), requestId })

  let exchange: HttpExchange | undefined
  let ended = false
  try {
    if (aborted(request.signal)) throw classify(request.signal?.reason, 'request')
    try {
      watchdog.arm()
      exchange = await transport(request.url, request.headers, bodyBytes(request.body), signal, request.hold)
    } catch (error) {
      throw classify(error, 'request')
    } finally {
      watchdog.disarm()
    }
    const { response, body } = exchange
    const requestId = readRequestId(response.headers)

    if (response.status < 200 || response.status > 299) {
      let text = ''
      try {
        watchdog.arm()
        text = await readText(body)
      } catch (error) {
        if (watchdog.fired || aborted(request.signal)) throw classify(error, 'reading the error body', requestId)
      } finally {
        watchdog.disarm()
      }
      throw classifyHttpError(request.label, response.status, text, response.headers, requestId)
    }
    if (NULL_BODY_STATUSES.has(response.status)) {
      throw new LlmError('EMPTY_RESPONSE', `${request.label}: HTTP ${response.status} without a body`, { status: response.status, requestId })
    }

    const translator = makeTranslator()
    if (requestId !== undefined) translator.requestId = requestId
    // The translation runs in this generator itself (no `yield*` level per read).
    const sse = new SseTranslation(translator, { label: request.label, requestId })
    for (;;) {
      let result: ReadResult
      try {
        watchdog.arm()
        result = await body.next()
      } catch (error) {
        throw classify(error, 'reading the stream', requestId)
      } finally {
        watchdog.disarm()
      }
      const chunks = sse.take(result)
      // After `[DONE]` the response is complete: a consumer that stops at the finish chunk
      // (the loop does) closes a drained exchange, so its connection is reused.
      if (sse.done) ended = true
      if (chunks.length > 0) yield chunks
      if (sse.failure !== undefined) throw sse.failure
      if (sse.done) break
    }
    ended = true
  } finally {
    watchdog.stop()
    caller?.removeEventListener('abort', forward)
    // Closed before the abort below, which would cut a connection that can be reused.
    exchange?.close(ended)
    // A complete exchange was closed drained and left nothing listening: no abort to dispatch.
    if (!ended) consumer.abort()
  }
}

function bodyBytes(body: unknown): Buffer {
  if (Buffer.isBuffer(body)) return body
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  return Buffer.from(JSON.stringify(body), 'utf8')
}

const NO_CHUNKS: readonly StreamChunk[] = []

/**
 * A stream of chunks over a generator of per-read chunk arrays. An async generator step per
 * chunk costs several promise resolutions; here a chunk already translated is handed out as an
 * already-resolved promise, and the generator is resumed once per read. Order, errors (after
 * the chunks before them), `return()` and `throw()` reach the generator as they would have at
 * the chunk the consumer stopped on.
 */
class ChunkStream implements AsyncGenerator<StreamChunk> {
  private batch: readonly StreamChunk[] = NO_CHUNKS
  private position = 0
  private filling: Promise<IteratorResult<StreamChunk>> | undefined
  private closed = false

  constructor(private readonly reads: AsyncGenerator<readonly StreamChunk[]>) {}

  next(): Promise<IteratorResult<StreamChunk>> {
    // A next() while a read is pending waits for it, as an async generator queues its calls.
    if (this.filling !== undefined) {
      const again = () => this.next()
      return this.filling.then(again, again)
    }
    if (this.position < this.batch.length) return Promise.resolve({ value: this.batch[this.position++]!, done: false })
    const filling = this.fill()
    this.filling = filling
    return filling
  }

  async return(value?: unknown): Promise<IteratorResult<StreamChunk>> {
    this.closed = true
    this.drop()
    await this.reads.return(NO_CHUNKS)
    return { value, done: true }
  }

  async throw(error: unknown): Promise<IteratorResult<StreamChunk>> {
    this.drop()
    return this.handOut(await this.reads.throw(error))
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  private drop(): void {
    this.batch = NO_CHUNKS
    this.position = 0
  }

  private async fill(): Promise<IteratorResult<StreamChunk>> {
    try {
      return this.handOut(await this.reads.next())
    } finally {
      this.filling = undefined
    }
  }

  private handOut(result: IteratorResult<readonly StreamChunk[]>): IteratorResult<StreamChunk> {
    // After return() nothing more is handed out, also from a read that was pending.
    if (result.done === true || this.closed) {
      this.drop()
      return { value: undefined, done: true }
    }
    this.batch = result.value
    this.position = 1
    return { value: result.value[0]!, done: false }
  }
}

/**
 * L-9 error precedence: the idle watchdog firing (TIMEOUT) beats the caller's abort (ABORTED),
 * which beats whatever the transport reported (TRANSPORT, or an LlmError already classified).
 */
export function classifyTransportError(error: unknown, state: {
  label: string; what: string; idleTimeoutMs: number; idleFired: boolean; callerAborted: boolean; requestId?: string
}): LlmError {
  const details = { ...state.requestId !== undefined ? { requestId: state.requestId } : {}, cause: error }
  if (state.idleFired) return new LlmError('TIMEOUT', `${state.label}: no data from the provider for ${state.idleTimeoutMs} ms (${state.what})`, details)
  if (state.callerAborted) return new LlmError('ABORTED', `${state.label}: the request was cancelled`, details)
  if (error instanceof LlmError) return error
  const message = error instanceof Error ? describeCause(error) : String(error)
  return new LlmError('TRANSPORT', `${state.label}: ${state.what} failed: ${message}`, details)
}

type Reader = ReadableStreamDefaultReader<Uint8Array>

/** A function, so TypeScript does not keep an `aborted` narrowing across awaits. */
const aborted = (signal: AbortSignal | undefined) => signal?.aborted === true

export interface TranslateHooks {
  /** One read of the body (the transport wraps it in its watchdog and error precedence). */
  read?(reader: Reader): ReturnType<Reader['read']>
  readonly label: string
  readonly requestId?: string
}

/**
 * SSE body -> StreamChunks. Deltas are yielded as their events arrive; `[DONE]` yields the final
 * burst and ends the stream. EOF before `[DONE]` is STREAM_CLOSED (no bytes at all: EMPTY_RESPONSE).
 */
export function translateSse(body: ReadableStream<Uint8Array>, translator: ChatCompletionTranslator, hooks: TranslateHooks): AsyncGenerator<StreamChunk> {
  return new ChunkStream(webStreamReads(body, translator, hooks))
}

async function* webStreamReads(body: ReadableStream<Uint8Array>, translator: ChatCompletionTranslator, hooks: TranslateHooks): AsyncGenerator<readonly StreamChunk[]> {
  const reader = body.getReader()
  const sse = new SseTranslation(new ChatCompletionEvents(translator), hooks)
  try {
    for (;;) {
      const result = await ((hooks.read === undefined ? reader.read() : hooks.read(reader)) as Promise<ReadResult>)
      const chunks = sse.take(result)
      if (chunks.length > 0) yield chunks
      if (sse.failure !== undefined) throw sse.failure
      if (sse.done) return
    }
  } finally {
    // Releases the connection when we stop early ([DONE], an error or the consumer leaving).
    reader.cancel().catch(() => {})
  }
}

/**
 * The SSE translation of one response, fed read by read (a web stream or a node:http response):
 * synchronous, so each caller's own generator yields the chunks of a read as one array, handed
 * out one by one by `ChunkStream`.
 */
class SseTranslation {
  /** True once the end of the response (`[DONE]`) was translated: the stream is over. */
  done = false
  /** Set when the stream failed: thrown by the caller after it yielded the chunks `take` returned. */
  failure: unknown = undefined
  private readonly decoder = new TextDecoder()
  private readonly pending: string[] = []
  private readonly names: (string | undefined)[] = []
  private readonly parser = createParser({ onEvent: event => { this.pending.push(event.data); this.names.push(event.event) } })
  private readonly details: { requestId?: string }
  private received = 0

  constructor(private readonly translator: SseEventTranslator, private readonly hooks: { readonly label: string; readonly requestId?: string }) {
    this.details = hooks.requestId === undefined ? {} : { requestId: hooks.requestId }
  }

  /**
   * The chunks of one read. A malformed event, or EOF before `[DONE]` (STREAM_CLOSED; no bytes at
   * all: EMPTY_RESPONSE), sets `failure` after the chunks that came before it.
   */
  take(result: ReadResult): StreamChunk[] {
    if (result.done) {
      this.parser.feed(this.decoder.decode())
    } else {
      this.received += result.value.byteLength
      this.parser.feed(this.decoder.decode(result.value, { stream: true }))
    }
    const out: StreamChunk[] = []
    const pending = this.pending
    const names = this.names
    // Where the event being translated began in `out`: a bad event adds none of its chunks.
    let before = 0
    try {
      for (let i = 0; i < pending.length; i++) {
        before = out.length
        if (this.translator.event(pending[i]!, names[i], out)) {
          this.done = true
          return out
        }
      }
    } catch (error) {
      // The chunks before the bad event are still delivered, then the failure (as they were
      // when each event was yielded as it was translated).
      this.failure = error
      out.length = before
      return out
    } finally {
      pending.length = 0
      names.length = 0
    }
    if (result.done) {
      const { label } = this.hooks
      this.failure = this.received === 0
        ? new LlmError('EMPTY_RESPONSE', `${label}: the provider sent an empty body`, this.details)
        : new LlmError('STREAM_CLOSED', `${label}: the stream ended before ${this.translator.end}; the truncated response cannot be trusted`, this.details)
    }
    return out
  }
}

/**
 * Re-armed per pending read; firing aborts the adapter's own controller. One timer per request,
 * restarted by `refresh()` at each arm (a read is a few per step: no new timer each time); a
 * timer that expires while disarmed does nothing. Unreferenced: what keeps the process alive
 * during a read is the read itself.
 */
class IdleWatchdog {
  fired = false
  private armed = false
  private timer?: NodeJS.Timeout
  private readonly expire = () => {
    this.timer = undefined
    if (!this.armed) return
    this.fired = true
    this.onFire()
  }

  constructor(private readonly ms: number, private readonly onFire: () => void) {}

  arm(): void {
    this.armed = true
    if (this.timer === undefined) this.timer = setTimeout(this.expire, this.ms).unref()
    else this.timer.refresh()
  }

  disarm(): void {
    this.armed = false
  }

  /** The request is over: no timer is left behind. */
  stop(): void {
    this.armed = false
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }
}

function readRequestId(headers: HeaderLookup): string | undefined {
  for (const name of REQUEST_ID_HEADERS) {
    const value = headers.get(name)
    if (value !== null && value !== '') return value
  }
  return undefined
}

function describeCause(error: Error): string {
  const cause = (error as { cause?: unknown }).cause
  return cause instanceof Error && cause.message !== '' ? `${error.message} (${cause.message})` : error.message
}

const QUOTA = /quota|insufficient[ _]balance|insufficient_quota|billing|out of credits|credit balance/i
const CONTEXT_OVERFLOW = /context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long|too long for the model|exceeds? the (model'?s? )?(maximum|max|context)/i

/** L-9: HTTP status (and wording) -> failure code; Retry-After and the request id are kept. */
export function classifyHttpError(label: string, status: number, bodyText: string, headers: HeaderLookup, requestId?: string, now = Date.now()): LlmError {
  const detail = providerMessage(bodyText)
  let code: string
  if (status === 401 || status === 403) code = 'AUTH'
  else if (status === 413) code = 'INVALID_REQUEST'
  else if (status < 500 && QUOTA.test(detail)) code = 'QUOTA'
  else if (status === 429) code = 'RATE_LIMIT'
  else if (status === 400) code = CONTEXT_OVERFLOW.test(detail) ? 'CONTEXT_WINDOW_EXCEEDED' : 'INVALID_REQUEST'
  else if (status >= 500) code = 'SERVER'
  else code = `HTTP_${status}`
  const retryAfter = parseRetryAfter(headers.get('retry-after'), now)
  return new LlmError(code, `${label}: HTTP ${status}${detail === '' ? '' : `: ${detail}`}`, {
    status,
    ...retryAfter !== undefined ? { providerRetryAfterMs: retryAfter } : {},
    ...requestId !== undefined ? { requestId } : {},
  })
}

/** The provider's own error message when the body is the usual `{error:{message}}` JSON. */
function providerMessage(bodyText: string): string {
  const text = bodyText.trim()
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown }
    if (typeof parsed.error === 'string') return parsed.error
    if (typeof parsed.error?.message === 'string') return parsed.error.message
    if (typeof parsed.message === 'string') return parsed.message
  } catch {
    // Not JSON: the raw text (trimmed) is the best we have.
  }
  return text.length > 500 ? `${text.slice(0, 500)}...` : text
}

/** `Retry-After`: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined
  const trimmed = value.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  const date = Date.parse(trimmed)
  if (Number.isNaN(date)) return undefined
  return Math.max(0, date - now)
}

/** Plugin config checks shared by the adapters; the message names the field and the value. */
export function validateTransportConfig(label: string, config: { baseUrl?: unknown; idleTimeoutMs?: unknown; retry?: unknown }): void {
  if (config.baseUrl !== undefined) {
    if (typeof config.baseUrl !== 'string' || !URL.canParse(config.baseUrl)) {
      throw new LlmError('INVALID_CONFIG', `${label}: baseUrl must be an absolute URL, got ${JSON.stringify(config.baseUrl)}`)
    }
  }
  if (config.idleTimeoutMs !== undefined) {
    const ms = config.idleTimeoutMs
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0 || ms > 2_147_483_647) {
      throw new LlmError('INVALID_CONFIG', `${label}: idleTimeoutMs must be a positive number of milliseconds (at most 2147483647), got ${JSON.stringify(ms)}`)
    }
  }
  if (config.retry !== undefined && config.retry !== 'normal' && config.retry !== 'always') {
    throw new LlmError('INVALID_CONFIG', `${label}: retry must be "normal" or "always", got ${JSON.stringify(config.retry)}`)
  }
}
