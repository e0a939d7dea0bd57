/**
 * One HTTP(S) POST with a pull reader over the response body: the model transport's wire
 * (openai-stream.ts). node:http instead of fetch because fetch costs ~25 ms to set up undici on
 * the first request and a WHATWG Request, Response and byte stream per request, all on the
 * per-step path (docs/benchmarks.md). What the transport relied on from fetch is kept:
 * keep-alive connections (agents set up as Node's global ones, ./connections.ts), a 307/308
 * redirect followed with the same body, gzip/deflate/br bodies decoded, and the signal ending
 * the request and the body alike.
 */
import * as http from 'node:http'
import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import { agentFor } from './connections.js'

export interface HeaderLookup {
  get(name: string): string | null
}

export type ReadResult = { done: true; value?: undefined } | { done: false; value: Uint8Array }

export interface HttpExchange {
  readonly response: { readonly status: number; readonly headers: HeaderLookup }
  /** One read of the (decoded) body; rejects on a transport error or abort. */
  readonly body: { next(): Promise<ReadResult> }
  /**
   * Ends the exchange. `drain` (the stream ended with its `[DONE]`): the bytes still in flight
   * (the chunked terminator) are read so the connection goes back to the pool, within
   * DRAIN_MS. Otherwise a body not read to its end is cut and its connection not reused.
   */
  close(drain?: boolean): void
}

const MAX_REDIRECTS = 20
const DRAIN_MS = 1000
const noop = () => {}

/**
 * `hold`: the request is prepared (connection taken, headers set) but its first byte leaves only
 * once `hold` resolves; a rejected hold fails the request with its reason, nothing sent.
 */
export async function post(url: string, headers: Readonly<Record<string, string>>, body: Buffer, signal: AbortSignal, hold?: Promise<unknown>): Promise<HttpExchange> {
  let target = new URL(url)
  for (let redirects = 0; ; redirects++) {
    const response = await send(target, headers, body, signal, hold)
    const location = response.headers.location
    // fetch re-sends a POST only on 307/308; on 301-303 it would switch to a bodiless GET, which
    // no chat endpoint answers, so those surface as the HTTP status they are.
    if ((response.statusCode === 307 || response.statusCode === 308) && location !== undefined && redirects < MAX_REDIRECTS) {
      response.resume()
      target = new URL(location, target)
      continue
    }
    return exchange(response, signal)
  }
}

async function send(target: URL, headers: Readonly<Record<string, string>>, body: Buffer, signal: AbortSignal, hold: Promise<unknown> | undefined): Promise<IncomingMessage> {
  signal.throwIfAborted()
  if (target.protocol !== 'https:' && target.protocol !== 'http:') throw new TypeError(`unsupported URL scheme ${target.protocol}`)
  // https (and TLS) loads only when a URL asks for it.
  const request: typeof http.request = target.protocol === 'https:' ? (await import('node:https')).request : http.request
  // The transport's own keep-alive agents take a connection opened ahead (./connections.ts).
  const agent = await agentFor(target)
  return new Promise((resolve, reject) => {
    const outgoing = request(target, { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } })
    const onAbort = () => outgoing.destroy(signal.reason as Error)
    signal.addEventListener('abort', onAbort, { once: true })
    // Stays attached for the request's life: a late socket error must not go unhandled.
    outgoing.on('error', error => {
      signal.removeEventListener('abort', onAbort)
      reject(error)
    })
    outgoing.on('response', response => {
      signal.removeEventListener('abort', onAbort)
      resolve(response)
    })
    if (hold === undefined) outgoing.end(body)
    else {
      hold.then(() => {
        // Aborted meanwhile: destroyed, and the error above has answered.
        if (!outgoing.destroyed) outgoing.end(body)
      }, (reason: unknown) => { outgoing.destroy(reason instanceof Error ? reason : new Error(String(reason))) })
    }
  })
}

async function exchange(response: IncomingMessage, signal: AbortSignal): Promise<HttpExchange> {
  response.on('error', noop)
  const stream = await decoded(response)
  const iterator = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>
  const onAbort = () => {
    stream.destroy(signal.reason as Error)
    response.destroy(signal.reason as Error)
  }
  signal.addEventListener('abort', onAbort, { once: true })
  if (signal.aborted) onAbort()
  const raw = response.headers
  return {
    response: {
      status: response.statusCode ?? 0,
      headers: {
        get: name => {
          const value = raw[name.toLowerCase()]
          return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
        },
      },
    },
    body: {
      next: async () => {
        const result = await iterator.next()
        return result.done === true ? { done: true } : { done: false, value: result.value }
      },
    },
    close: drain => {
      signal.removeEventListener('abort', onAbort)
      if (stream !== response) stream.destroy()
      if (response.complete || response.destroyed) return
      if (drain !== true || stream !== response) {
        response.destroy()
        return
      }
      const timer = setTimeout(() => response.destroy(), DRAIN_MS).unref()
      response.once('close', () => clearTimeout(timer))
      response.resume()
    },
  }
}

/** The body as the server meant it (fetch decodes these encodings too). */
async function decoded(response: IncomingMessage): Promise<Readable> {
  const encoding = response.headers['content-encoding']?.trim().toLowerCase()
  if (encoding === undefined || encoding === '' || encoding === 'identity') return response
  const zlib = await import('node:zlib')
  const { pipeline } = await import('node:stream')
  const decoder = encoding === 'gzip' || encoding === 'x-gzip' ? zlib.createGunzip()
    : encoding === 'deflate' ? zlib.createInflate()
      : encoding === 'br' ? zlib.createBrotliDecompress()
        : undefined
  if (decoder === undefined) return response
  pipeline(response, decoder, noop)
  return decoder
}

/** The whole body as text (error bodies are small). */
export async function readText(body: HttpExchange['body']): Promise<string> {
  const parts: Uint8Array[] = []
  for (;;) {
    const result = await body.next()
    if (result.done) return Buffer.concat(parts).toString('utf8')
    parts.push(result.value)
  }
}
