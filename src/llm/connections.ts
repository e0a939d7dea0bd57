/**
 * The model transport's connections (http-post.ts): one keep-alive agent per scheme, set up as
 * Node's global agents are, that can also be handed a connection opened ahead of the request
 * (`warmConnection`). A turn opens its endpoint's connection while dsh still works on the step
 * (instructions, the prompt, the D-3 checkpoint), and the terminal app and the web page open it
 * as soon as a prompt is typed, so the TCP and TLS handshakes (two or three round trips to a distant API, and
 * a keep-alive connection is dropped after 5 s idle) are not on the way to the first token.
 * Opening a connection sends no request and nothing of the session: the checkpoint's rule is
 * about what leaves in a request (D-3, request-hold.ts).
 */
import * as http from 'node:http'
import { isIP, type Socket } from 'node:net'
import { urlToHttpOptions } from 'node:url'

/** As Node's global agents (keep-alive, most recently used socket first, 5 s idle timeout). */
const AGENT_OPTIONS: http.AgentOptions = { keepAlive: true, scheduling: 'lifo', timeout: 5000 }

/** A connection opened ahead and not taken by a request within this long is closed. */
export const WARM_IDLE_MS = 30_000

/**
 * After a connection opened ahead fails (offline, a name that does not resolve, a refused port),
 * no other is opened to that host for this long: typing asks once a second, and each attempt
 * may hold a libuv pool thread on a slow name lookup, the pool the session's fsyncs go through.
 */
export const WARM_RETRY_MS = 10_000

interface Waiting {
  readonly socket: Socket
  readonly timer: NodeJS.Timeout
  readonly forget: () => void
}

interface Pool {
  readonly agent: http.Agent
  readonly waiting: Map<string, Waiting>
  /** host:port -> when a connection opened ahead to it last failed (Date.now()). */
  readonly failed: Map<string, number>
  /** Opens a connection to `host:port` as the agent itself would. */
  open(host: string, port: number): Socket
  /** The agent's pool name for `host:port` (its free sockets are kept under it). */
  name(host: string, port: number): string
}

let plain: Pool | undefined
let secure: Promise<Pool> | undefined
const pools: Pool[] = []

function makePool(agent: http.Agent, open: Pool['open'], name: Pool['name']): Pool {
  const pool: Pool = { agent, waiting: new Map(), failed: new Map(), open, name }
  const original = agent.createConnection.bind(agent) as (...args: unknown[]) => Socket | undefined
  // `createConnection` is the agent's documented seam for where its sockets come from.
  agent.createConnection = ((options: { host?: string; port?: number | string }, ...rest: unknown[]) => {
    const key = `${options.host}:${options.port}`
    const waiting = pool.waiting.get(key)
    if (waiting !== undefined && !waiting.socket.destroyed) {
      waiting.forget()
      // Held unreferenced while it waited: a request in flight keeps the process alive again.
      waiting.socket.ref()
      return waiting.socket
    }
    return original(options, ...rest)
  }) as typeof agent.createConnection
  pools.push(pool)
  return pool
}

function plainPool(): Pool {
  plain ??= makePool(
    new http.Agent(AGENT_OPTIONS),
    (host, port) => (http.Agent.prototype as unknown as { createConnection(options: object): Socket }).createConnection({ host, port }),
    (host, port) => plain!.agent.getName({ host, port }),
  )
  return plain
}

async function securePool(): Promise<Pool> {
  // https (and TLS) loads only when a URL asks for it.
  secure ??= import('node:https').then(https => {
    const agent = new https.Agent(AGENT_OPTIONS)
    const servername = (host: string) => isIP(host) === 0 ? host : undefined
    const create = https.Agent.prototype.createConnection as unknown as (this: http.Agent, options: object) => Socket
    return makePool(
      agent,
      (host, port) => create.call(agent, { host, port, servername: servername(host) }),
      (host, port) => agent.getName({ host, port, servername: servername(host) } as http.ClientRequestArgs),
    )
  })
  return secure
}

/** The keep-alive agent for a request to `target` (its scheme checked by the caller). */
export async function agentFor(target: URL): Promise<http.Agent> {
  return target.protocol === 'https:' ? (await securePool()).agent : plainPool().agent
}

/**
 * Opens a connection to `url`'s host for the next request to it, unless the agent already keeps
 * one free or one was opened ahead and is still waiting. Best effort: a failure is dropped (the
 * request opens its own connection and reports what went wrong), and nothing is thrown.
 */
export function warmConnection(url: string, idleMs = WARM_IDLE_MS): void {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return
  const { hostname } = urlToHttpOptions(target)
  if (hostname === undefined || hostname === null || hostname === '') return
  const host = hostname
  const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80)
  const opening = target.protocol === 'https:' ? securePool() : Promise.resolve(plainPool())
  opening.then(pool => { open(pool, host, port, idleMs) }, () => undefined)
}

function open(pool: Pool, host: string, port: number, idleMs: number): void {
  const key = `${host}:${port}`
  const present = pool.waiting.get(key)
  if (present !== undefined && !present.socket.destroyed) return
  const failedAt = pool.failed.get(key)
  if (failedAt !== undefined && Date.now() - failedAt < WARM_RETRY_MS) return
  if ((pool.agent.freeSockets[pool.name(host, port)]?.length ?? 0) > 0) return
  let socket: Socket
  try {
    socket = pool.open(host, port)
  } catch {
    pool.failed.set(key, Date.now())
    return
  }
  const drop = () => { forget() }
  const fail = () => {
    pool.failed.set(key, Date.now())
    forget()
  }
  const forget = () => {
    clearTimeout(timer)
    socket.off('error', fail)
    socket.off('close', drop)
    if (pool.waiting.get(key)?.socket === socket) pool.waiting.delete(key)
  }
  const timer = setTimeout(() => {
    forget()
    socket.destroy()
  }, idleMs).unref()
  // A connection that fails or closes while it waits is forgotten; the request opens another.
  socket.on('error', fail)
  socket.on('close', drop)
  socket.unref()
  pool.waiting.set(key, { socket, timer, forget })
}

/** Connections opened ahead and still waiting (tests and diagnostics). */
export function waitingConnections(): number {
  return pools.reduce((sum, pool) => sum + pool.waiting.size, 0)
}
