/**
 * The host side of the sandbox's allowlist network mode: a small HTTP proxy that dsh runs on a
 * Unix socket (mode 0600). Sandboxed commands have no network of their own; a bridge inside the
 * sandbox hands their proxy connections to this socket, and this proxy decides each one.
 *
 * - `CONNECT host:port` (https, git, anything over TCP) opens a tunnel; an absolute-form
 *   `GET http://host:port/path` is forwarded. Anything else is a bad request (400).
 * - Decision, in order: `allowed(host, port)` (the host policy, `./hosts.ts`), else `ask` (the
 *   approvals; concurrent asks for one host:port share one promise), else refused. Names are
 *   resolved only after that, so an unlisted name is never even looked up.
 * - Every resolved address is checked with `forbiddenAddress`: one loopback, link-local (cloud
 *   metadata), unspecified, multicast or broadcast address refuses the connection, even for a
 *   listed name. The proxy then connects to an address it checked, never looking the name up
 *   again, so a rebinding name cannot swap in the host's own services afterwards.
 * - A refusal is a short `text/plain` answer (403; 400 bad request, 502 unresolved or
 *   unreachable, 503 busy) with an `X-Dsh-Refused: <reason>` header and a one-line hint.
 * - `onConnection` hears of every attempt once, when its outcome is known; besides the above it
 *   may say `busy` (over `maxConnections`) or `closed` (the client left before it was connected).
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import { lstat, unlink } from 'node:fs/promises'
import { chmodSync } from 'node:fs'
import { createServer, request, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import { connect, isIP, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { forbiddenAddress, normalizeHost } from './hosts.js'

export interface ProxyConnection {
  /** As asked, lower-cased (IPv6 without brackets). */
  readonly host: string
  readonly port: number
  /** CONNECT tunnel or plain absolute-form HTTP request. */
  readonly kind: 'connect' | 'http'
  readonly outcome: 'allowed' | 'refused'
  /** Why refused: 'not-listed' | 'declined' | 'loopback' | 'link-local' | 'unspecified' | 'multicast' | 'broadcast' | 'unresolved' | 'bad-request' | 'unreachable' | 'busy' | 'closed' */
  readonly reason?: string
  /** The address connected to (allowed) or the forbidden one (refused by address). */
  readonly address?: string
}

export interface FilteringProxyOptions {
  readonly socketPath: string
  /** The host policy: true lets the host:port through without asking. */
  allowed(host: string, port: number): boolean
  /** Asked for a host `allowed` refuses; true lets this connection through. Absent ⇒ 'not-listed'; false or a throw ⇒ 'declined'. */
  ask?(host: string, port: number): Promise<boolean>
  /** Called once per connection attempt, after the decision (a throw here is swallowed). */
  onConnection?(connection: ProxyConnection): void
  /** Name resolution (default: node:dns lookup with all: true). */
  lookup?(host: string): Promise<readonly { address: string; family: 4 | 6 }[]>
  /** The one-line body of a refusal (default `defaultRefusalHint`). */
  refusalHint?(connection: ProxyConnection): string
  /** Upper bound of simultaneous tunnels+requests (default 256); past it new ones get 503. */
  readonly maxConnections?: number
}

const STATUS: Readonly<Record<string, number>> = { 'bad-request': 400, unresolved: 502, unreachable: 502, busy: 503 }
const HOP_BY_HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade'])
const CONNECT_TIMEOUT_MS = 10_000
/** A refused client that keeps its side open is cut after this long. */
const LINGER_MS = 5_000

type Refusal = { readonly reason: string; readonly address?: string }
type Target = { readonly host: string; readonly port: number }
type Send = (status: number, headers: Record<string, string | number>, body: string) => void

export function defaultRefusalHint(connection: ProxyConnection): string {
  const { host, port, reason, address } = connection
  const target = `${host.includes(':') ? `[${host}]` : host}:${port}`
  switch (reason) {
    case 'not-listed': return `dsh sandbox: ${target} is not in sandbox.allowedHosts (network: allowlist); add it in settings or run with --network full`
    case 'declined': return `dsh sandbox: the connection to ${target} was declined; add the host to sandbox.allowedHosts if it should be reachable`
    case 'unresolved': return `dsh sandbox: ${target} could not be resolved; check the host name`
    case 'unreachable': return `dsh sandbox: ${target} could not be reached; check the host and port`
    case 'bad-request': return 'dsh sandbox: not a proxy request; send an absolute http:// URL, or CONNECT host:port for https and other protocols'
    case 'busy': return 'dsh sandbox: too many connections through the sandbox proxy at once; retry when some have finished'
    default: return `dsh sandbox: ${target} resolves to ${address ?? 'an address'} (${reason}), which sandboxed commands never reach`
  }
}

const defaultLookup = (host: string) => dnsLookup(host, { all: true }) as Promise<{ address: string; family: 4 | 6 }[]>

/** `host:port` or `[v6]:port` of a CONNECT request. */
function parseAuthority(target: string): Target | undefined {
  const match = /^(?:(\[[^\]]*\])|([^:[\]]+)):([0-9]{1,5})$/.exec(target)
  if (match === null) return undefined
  const host = normalizeHost(match[1] ?? match[2])
  const port = Number(match[3])
  return host !== undefined && port >= 1 && port <= 65535 ? { host, port } : undefined
}

/** An absolute-form `http://` request target. */
function parseUrl(target: string): (Target & { authority: string; path: string }) | undefined {
  if (!/^http:\/\//i.test(target)) return undefined
  if (!URL.canParse(target)) return undefined
  const url = new URL(target)
  const host = normalizeHost(url.hostname)
  const port = url.port === '' ? 80 : Number(url.port)
  return host === undefined || port < 1 ? undefined : { host, port, authority: url.host, path: `${url.pathname}${url.search}` }
}

/** Headers without the hop-by-hop ones, including those the Connection header names. */
function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const named = String(headers.connection ?? '').toLowerCase().split(',').map(name => name.trim())
  const kept: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name) && !named.includes(name)) kept[name] = value
  return kept
}

/** Removes a stale socket file at `path`; refuses to touch a live socket or any other file. */
async function clearStale(path: string): Promise<void> {
  const info = await lstat(path).catch(() => undefined)
  if (info === undefined) return
  if (!info.isSocket()) throw new Error(`sandbox proxy: ${path} exists and is not a socket; not replacing it`)
  const live = await new Promise<boolean>(resolve => {
    const probe = connect(path).once('connect', () => { probe.destroy(); resolve(true) }).once('error', () => resolve(false))
  })
  if (live) throw new Error(`sandbox proxy: ${path} is in use by a running server`)
  await unlink(path)
}

export class FilteringProxy {
  #active = 0
  readonly #sockets = new Set<Duplex>()
  readonly #asks = new Map<string, Promise<boolean>>()
  #closing: Promise<void> | undefined

  private constructor(private readonly options: FilteringProxyOptions, private readonly server: Server) {}

  /** Listens on `options.socketPath` (mode 0600), replacing a stale socket file there. */
  static async start(options: FilteringProxyOptions): Promise<FilteringProxy> {
    await clearStale(options.socketPath)
    const server = createServer()
    const proxy = new FilteringProxy(options, server)
    server.on('connection', (socket: Socket) => proxy.#track(socket))
    server.on('request', (req: IncomingMessage, res: ServerResponse) => void proxy.#forward(req, res).catch(() => res.destroy()))
    server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => void proxy.#tunnel(req, socket as Socket, head).catch(() => socket.destroy()))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(options.socketPath, () => {
        server.off('error', reject)
        try { chmodSync(options.socketPath, 0o600) } catch (error) { server.close(); reject(error); return }
        resolve()
      })
    })
    return proxy
  }

  get socketPath(): string { return this.options.socketPath }
  /** Live tunnels and requests. */
  get active(): number { return this.#active }

  /** Stops listening, destroys open tunnels and requests, removes the socket file. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>(resolve => {
      this.server.close(() => resolve())
      for (const socket of this.#sockets) socket.destroy()
    }).then(() => unlink(this.options.socketPath).catch(() => undefined))
    return this.#closing
  }

  #track(socket: Duplex): void {
    this.#sockets.add(socket)
    socket.on('error', () => undefined)
    socket.once('close', () => this.#sockets.delete(socket))
  }

  /** Counts one tunnel or request until `done` closes; false (and nothing counted) when full. */
  #hold(done: Duplex | ServerResponse): boolean {
    if (this.#active >= (this.options.maxConnections ?? 256)) return false
    this.#active += 1
    done.once('close', () => { this.#active -= 1 })
    return true
  }

  #record(connection: ProxyConnection): void { try { this.options.onConnection?.(connection) } catch { /* contained */ } }

  #hint(connection: ProxyConnection): string {
    let hint: unknown
    try { hint = this.options.refusalHint?.(connection) } catch { /* the default */ }
    return typeof hint === 'string' ? hint : defaultRefusalHint(connection)
  }

  #permitted(host: string, port: number): boolean { try { return this.options.allowed(host, port) === true } catch { return false } }

  /** The ask for host:port, shared by concurrent attempts; joined synchronously. */
  #asked(host: string, port: number): Promise<boolean> {
    const ask = this.options.ask
    if (ask === undefined) return Promise.resolve(false)
    const key = `${host}:${port}`
    const pending = this.#asks.get(key)
      ?? (async () => { try { return (await ask(host, port)) === true } catch { return false } })().finally(() => this.#asks.delete(key))
    this.#asks.set(key, pending)
    return pending
  }

  async #resolve(host: string): Promise<readonly string[] | undefined> {
    if (isIP(host) !== 0) return [host]
    const lookup = this.options.lookup ?? defaultLookup
    const addresses = await Promise.resolve(host).then(lookup).then(found => found.map(entry => entry.address), () => [])
    return addresses.length > 0 && addresses.every(address => typeof address === 'string' && isIP(address) !== 0) ? addresses : undefined
  }

  /** Decides, resolves, checks every address and connects to one of them. */
  async #open(host: string, port: number, client: Duplex): Promise<{ readonly socket: Socket; readonly address: string } | Refusal> {
    if (!this.#permitted(host, port) && !(await this.#asked(host, port))) return { reason: this.options.ask === undefined ? 'not-listed' : 'declined' }
    const addresses = await this.#resolve(host)
    if (addresses === undefined) return { reason: 'unresolved' }
    for (const address of addresses) {
      const reason = forbiddenAddress(address)
      if (reason !== undefined) return { reason, address }
    }
    for (const address of addresses) {
      if (client.destroyed) return { reason: 'closed' }
      const upstream = connect({ host: address, port })
      this.#track(upstream)
      upstream.setTimeout(CONNECT_TIMEOUT_MS, () => upstream.destroy())
      const socket = await new Promise<Socket | undefined>(resolve => {
        upstream.once('close', () => resolve(undefined)).once('connect', () => resolve(upstream.setTimeout(0)))
      })
      if (socket === undefined) continue
      if (client.destroyed) { socket.destroy(); return { reason: 'closed' } }
      return { socket, address }
    }
    return { reason: 'unreachable', address: addresses[addresses.length - 1] }
  }

  /** Records a refusal (unless `quiet`) and answers it through `send`. */
  #refuse(connection: ProxyConnection, send: Send, quiet = false): void {
    if (!quiet) this.#record(connection)
    const reason = connection.reason ?? 'declined'
    if (reason === 'closed') return
    const body = `${this.#hint(connection).replace(/[\r\n]+/g, ' ')}\n`
    send(STATUS[reason] ?? 403, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'X-Dsh-Refused': reason, Connection: 'close' }, body)
  }

  /** Holds a place for `done`, decides and connects; refuses and yields undefined when it cannot. */
  async #attempt(kind: ProxyConnection['kind'], raw: string, target: Target | undefined, client: Duplex, done: Duplex | ServerResponse, send: Send): Promise<Socket | undefined> {
    const host = target?.host ?? raw.toLowerCase().slice(0, 255)
    const port = target?.port ?? 0
    const refuse = (refusal: Refusal) => void this.#refuse({ host, port, kind, outcome: 'refused', ...refusal }, send)
    if (!this.#hold(done)) return refuse({ reason: 'busy' })
    if (target === undefined) return refuse({ reason: 'bad-request' })
    const opened = await this.#open(host, port, client)
    if ('reason' in opened) return refuse(opened)
    this.#record({ host, port, kind, outcome: 'allowed', address: opened.address })
    return opened.socket
  }

  async #tunnel(req: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    client.on('error', () => undefined)
    // Until the tunnel opens, a client that ends its side has left (half-open is for tunnels).
    const leave = () => client.destroy()
    client.once('end', leave)
    const upstream = await this.#attempt('connect', req.url ?? '', parseAuthority(req.url ?? ''), client, client, (status, headers, body) => {
      if (client.destroyed) return
      const linger = setTimeout(() => client.destroy(), LINGER_MS)
      client.once('close', () => clearTimeout(linger))
      client.resume()
      client.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${body}`)
    })
    if (upstream === undefined) return
    client.off('end', leave)
    upstream.once('close', () => client.destroy())
    client.once('close', () => upstream.destroy())
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    if (head.length > 0) upstream.write(head)
    client.pipe(upstream).pipe(client)
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = parseUrl(req.url ?? '')
    const send: Send = (status, headers, body) => { if (!res.destroyed) res.writeHead(status, headers).end(body) }
    const upstream = await this.#attempt('http', req.url ?? '', target, req.socket, res, send)
    if (upstream === undefined || target === undefined) return
    res.once('close', () => upstream.destroy())
    // The Host header is the request target's (RFC 9112 §3.2.2): a different one sent by the
    // client would reach another site on the checked address.
    const headers = { ...endToEnd(req.headers), host: target.authority }
    const out = request({ createConnection: () => upstream, method: req.method, path: target.path, headers })
    out.on('response', answer => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers))
      answer.on('error', () => res.destroy()).pipe(res)
    })
    out.on('error', () => {
      if (res.headersSent) res.destroy()
      else this.#refuse({ host: target.host, port: target.port, kind: 'http', outcome: 'refused', reason: 'unreachable' }, send, true)
    })
    req.pipe(out)
  }
}
