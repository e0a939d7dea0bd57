/**
 * A `fetch` whose every request goes through a network gate's filtering proxy (its Unix socket):
 * `web_fetch` under the `allowlist` network mode obeys the very rules, questions and records of
 * confined commands (docs/security.md, "Network"). https goes through a CONNECT tunnel with TLS
 * on top (the certificate is checked against the URL's host as usual), http as an absolute-form
 * request. Redirects are followed by hand, each hop through the proxy again (`redirect:
 * 'manual'` returns the 3xx itself). GET, and a request with a string body (`web_search`'s JSON
 * POSTs); a redirect of a request with a body is not followed.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { Readable } from 'node:stream'
import { connect as tlsConnect } from 'node:tls'

const MAX_REDIRECTS = 10

/** A proxy refusal, with the proxy's own explanation (one line). */
export class ProxyRefused extends Error {
  constructor(message: string, readonly reason: string) {
    super(message)
    this.name = 'ProxyRefused'
  }
}

function authority(url: URL): { host: string; port: number } {
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port }
}

async function refusal(response: IncomingMessage): Promise<ProxyRefused> {
  let text = ''
  response.setEncoding('utf8')
  for await (const chunk of response) { if (text.length < 2048) text += chunk as string }
  const reason = String(response.headers['x-dsh-refused'] ?? `HTTP ${response.statusCode}`)
  return new ProxyRefused(text.trim().split('\n')[0] || `the network proxy refused the connection (${reason})`, reason)
}

interface HopRequest {
  readonly method: string
  readonly headers: Record<string, string>
  readonly body?: string
  readonly signal?: AbortSignal
}

/** One hop: the response head and body stream of `url`. */
function hop(socketPath: string, url: URL, init: HopRequest): Promise<IncomingMessage> {
  const { host, port } = authority(url)
  const { method, body, signal } = init
  const headers = body !== undefined ? { ...init.headers, 'content-length': String(Buffer.byteLength(body)) } : init.headers
  return new Promise((resolve, reject) => {
    if (url.protocol === 'http:') {
      const request = httpRequest({ socketPath, method, path: url.href, headers: { ...headers, host: url.host }, ...(signal ? { signal } : {}) }, (response) => {
        if (response.headers['x-dsh-refused'] !== undefined) void refusal(response).then(reject, reject)
        else resolve(response)
      })
      request.once('error', reject)
      request.end(body)
      return
    }
    const connect = httpRequest({ socketPath, method: 'CONNECT', path: `${url.hostname}:${port}`, ...(signal ? { signal } : {}) })
    connect.once('error', reject)
    connect.once('connect', (response, socket, head) => {
      if (response.statusCode !== 200) {
        // The refusal's body follows its head on the socket: its first line explains.
        let text = head.toString('utf8')
        const done = () => {
          socket.destroy()
          const reason = String(response.headers['x-dsh-refused'] ?? `HTTP ${response.statusCode}`)
          reject(new ProxyRefused(text.trim().split('\n')[0] || `the network proxy refused ${host}:${port} (${reason})`, reason))
        }
        socket.on('data', (chunk: Buffer) => { if (text.length < 2048) text += chunk.toString('utf8') })
        socket.once('end', done)
        socket.once('close', done)
        socket.once('error', done)
        return
      }
      if (head.length > 0) socket.unshift(head)
      const tls = tlsConnect({ socket, servername: host })
      tls.once('error', reject)
      const request = httpsRequest({ method, host, port, path: `${url.pathname}${url.search}`, headers: { ...headers, host: url.host }, createConnection: () => tls, agent: false, ...(signal ? { signal } : {}) }, resolve)
      request.once('error', reject)
      request.end(body)
    })
    connect.end()
  })
}

/** A `fetch` (GET, or a method with a string body) through the proxy at `socketPath`. */
export function proxiedFetch(socketPath: string): typeof globalThis.fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    let url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url)
    const headers: Record<string, string> = {}
    new Headers(init?.headers).forEach((value, name) => { headers[name] = value })
    const signal = init?.signal ?? undefined
    if (init?.body !== undefined && init.body !== null && typeof init.body !== 'string') throw new TypeError('proxiedFetch sends string bodies only')
    const payload = init?.body ?? undefined
    const request: HopRequest = { method: init?.method ?? 'GET', headers, ...(payload !== undefined ? { body: payload } : {}), ...(signal ? { signal } : {}) }
    for (let redirects = 0; ; redirects += 1) {
      const response = await hop(socketPath, url, request)
      const status = response.statusCode ?? 502
      const location = response.headers.location
      if (status >= 300 && status < 400 && location !== undefined && init?.redirect !== 'manual' && payload === undefined) {
        response.resume()
        if (redirects >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`)
        url = new URL(location, url)
        if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`redirected to ${url.protocol} URL`)
        continue
      }
      const head = new Headers()
      for (const [name, value] of Object.entries(response.headers)) {
        if (value === undefined) continue
        for (const one of Array.isArray(value) ? value : [value]) head.append(name, one)
      }
      const body = status === 204 || status === 304 ? null : Readable.toWeb(response) as ReadableStream<Uint8Array>
      const result = new Response(body, { status, statusText: response.statusMessage ?? '', headers: head })
      Object.defineProperty(result, 'url', { value: url.href })
      return result
    }
  }) as typeof globalThis.fetch
}
