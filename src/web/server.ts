/**
 * The `dsh web` HTTP server: static files of the browser app, `POST /api/<method>` dispatched to
 * `ctx.webApi`, and `GET /api/events`, a server-sent event stream of one session's log that
 * resumes from a seq (`from`, or `Last-Event-ID` after a reconnect) plus sidebar updates.
 *
 * Guards: every request's Host must be loopback, the bound host or a trusted name (DNS
 * rebinding); the page and the API need the per-launch token (`?token=` once, then a
 * SameSite=Strict cookie or the `X-Dsh-Token` header); API posts must be JSON from our origin.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { extname, join, normalize, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Context } from 'cordis'
import type { Session } from '../session/api.js'
import type { SessionEvent } from '../session/types.js'
import type { AgentStatus } from '../agent/api.js'
import { WebApiError } from './api.js'
import { inboxSnapshot, withoutFinishedChunks, type WebApiPlugin } from './methods.js'
import { hostAllowed, readCookie, tokenMatches } from './security.js'
import { readAttachment } from './attachments.js'
import { IMAGE_MEDIA_TYPES } from '../session/attachments.js'
import './api.js'
import '../approval/api.js'

export interface WebServerOptions {
  readonly host: string
  readonly port: number
  readonly token: string
  /** Extra Host header names accepted (only with an explicit trust flag). */
  readonly trustedHosts?: readonly string[]
  /** Folder of the built browser app (default: dist/web/app next to this module). */
  readonly staticDir?: string
}

/** Room for a prompt with a few images (base64). */
const MAX_BODY = 48 * 1024 * 1024
const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
/** How much of a running call's live output one `output` event carries at most (its latest part). */
const LIVE_OUTPUT_CHARS = 8192
const HEARTBEAT_MS = 15_000

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json', '.woff2': 'font/woff2',
}

/** The built app: `dist/web/app` beside the compiled module, or from the sources during development. */
export function defaultStaticDir(): string {
  const beside = fileURLToPath(new URL('./app/', import.meta.url))
  if (existsSync(join(beside, 'index.html'))) return beside
  return fileURLToPath(new URL('../../dist/web/app/', import.meta.url))
}

const NO_TOKEN_PAGE = `<!doctype html><meta charset="utf-8"><title>dsh</title>
<body style="font:15px system-ui;margin:15vh auto;max-width:34em;color:#333">
<h2>dsh web needs its link</h2><p>Open the address that <code>dsh web</code> printed in the terminal
(it carries a per-launch token). If the server was restarted, the old link no longer works.</p>`

export class WebServer {
  private server?: Server
  private readonly streams = new Set<ServerResponse>()
  private readonly staticDir: string
  private boundPort = 0

  constructor(private readonly ctx: Context, private readonly options: WebServerOptions) {
    this.staticDir = options.staticDir ?? defaultStaticDir()
  }

  get port(): number {
    return this.boundPort
  }

  get url(): string {
    const host = this.options.host.includes(':') ? `[${this.options.host}]` : this.options.host
    return `http://${host}:${this.boundPort}/?token=${encodeURIComponent(this.options.token)}`
  }

  private get cookieName(): string {
    return `dsh_token_${this.boundPort}`
  }

  async listen(): Promise<void> {
    const server = createServer((request, response) => {
      this.handle(request, response).catch(error => this.fail(response, error))
    })
    this.server = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.options.port, this.options.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    const address = server.address()
    this.boundPort = typeof address === 'object' && address !== null ? address.port : this.options.port
  }

  async close(): Promise<void> {
    for (const stream of this.streams) stream.end()
    this.streams.clear()
    const server = this.server
    if (server === undefined) return
    await new Promise<void>(resolve => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }

  private authorised(request: IncomingMessage): boolean {
    const header = request.headers['x-dsh-token']
    const given = typeof header === 'string' ? header : readCookie(request.headers.cookie, this.cookieName)
    return tokenMatches(given, this.options.token)
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    response.setHeader('X-Content-Type-Options', 'nosniff')
    response.setHeader('Referrer-Policy', 'no-referrer')
    response.setHeader('X-Frame-Options', 'DENY')
    const allowed = { bound: this.options.host, trusted: this.options.trustedHosts ?? [], port: this.boundPort }
    if (!hostAllowed(request.headers.host, allowed)) {
      this.json(response, 403, { error: { code: 'BAD_HOST', message: `Host "${request.headers.host ?? ''}" is not allowed (dsh web answers loopback names only unless started with --trust-host)` } })
      return
    }
    const url = new URL(request.url ?? '/', 'http://dsh.invalid')
    if (url.pathname.startsWith('/api/')) {
      if (!this.authorised(request)) {
        this.json(response, 401, { error: { code: 'UNAUTHORIZED', message: 'missing or wrong token: open the link printed by dsh web' } })
        return
      }
      if (url.pathname === '/api/events' && request.method === 'GET') return this.stream(request, response, url)
      if (url.pathname === '/api/attachment' && request.method === 'GET') return this.attachment(response, url)
      if (request.method !== 'POST') {
        this.json(response, 405, { error: { code: 'METHOD', message: 'API methods are called with POST' } })
        return
      }
      return this.call(request, response, url.pathname.slice('/api/'.length))
    }
    if (url.pathname.startsWith('/ext/') && request.method === 'GET') {
      if (!this.authorised(request)) return this.page(response, 401, NO_TOKEN_PAGE)
      const asset = this.ctx.webApi.asset(decodePath(url.pathname.slice('/ext/'.length)))
      if (asset === undefined) {
        this.json(response, 404, { error: { code: 'NOT_FOUND', message: `${url.pathname} not found` } })
        return
      }
      response.writeHead(200, { 'Content-Type': asset.contentType, 'Cache-Control': 'no-store' })
      response.end(asset.body)
      return
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      this.json(response, 405, { error: { code: 'METHOD', message: `${request.method} is not allowed here` } })
      return
    }
    return this.serveStatic(request, response, url)
  }

  private serveStatic(request: IncomingMessage, response: ServerResponse, url: URL): void {
    const isPage = url.pathname === '/' || url.pathname === '/index.html'
    if (isPage) {
      const token = url.searchParams.get('token')
      if (token !== null) {
        if (!tokenMatches(token, this.options.token)) return this.page(response, 401, NO_TOKEN_PAGE)
        // Trade the token in the address for a cookie, and take it out of the address bar.
        url.searchParams.delete('token')
        response.setHeader('Set-Cookie', `${this.cookieName}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Strict`)
        response.writeHead(303, { Location: `/${url.search}` })
        response.end()
        return
      }
      if (!this.authorised(request)) return this.page(response, 401, NO_TOKEN_PAGE)
    }
    // Browsers ask for /favicon.ico on their own: answer with the app's icon instead of a 404.
    const wanted = isPage ? '/index.html' : url.pathname === '/favicon.ico' ? '/favicon.svg' : url.pathname
    const relative = normalize(decodePath(wanted)).replace(/^([/\\])+/, '')
    const path = join(this.staticDir, relative)
    if (!path.startsWith(this.staticDir.endsWith(sep) ? this.staticDir : this.staticDir + sep) || !existsSync(path) || !statSync(path).isFile()) {
      if (isPage) return this.page(response, 500, '<p>The browser app is not built: run <code>npm run build</code>.</p>')
      this.json(response, 404, { error: { code: 'NOT_FOUND', message: `${url.pathname} not found` } })
      return
    }
    const body = readFileSync(path)
    // Model output is untrusted: even if markup slipped through, no inline or foreign script runs.
    if (isPage) response.setHeader('Content-Security-Policy', CSP)
    response.writeHead(200, {
      'Content-Type': TYPES[extname(path)] ?? 'application/octet-stream',
      'Cache-Control': relative.startsWith('assets') ? 'public, max-age=31536000, immutable' : 'no-store',
      'Content-Length': body.length,
    })
    response.end(request.method === 'HEAD' ? undefined : body)
  }

  private async call(request: IncomingMessage, response: ServerResponse, name: string): Promise<void> {
    // The media type exactly (parameters after ';' ignored): a substring test would let a
    // cross-site form send text/plain;charset=application/json without a preflight.
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
    if (type !== 'application/json') throw new WebApiError(415, 'CONTENT_TYPE', 'API calls must send Content-Type: application/json')
    const origin = request.headers.origin
    if (origin !== undefined && origin !== 'null') {
      const originHost = (() => { try { return new URL(origin).host } catch { return '' } })()
      if (originHost !== request.headers.host) throw new WebApiError(403, 'BAD_ORIGIN', `cross-origin call from ${origin} refused`)
    }
    const method = this.ctx.webApi.get(name)
    if (method === undefined) throw new WebApiError(404, 'NO_METHOD', `no API method "${name}" (known: ${this.ctx.webApi.names().join(', ')})`)
    const raw = await readBody(request)
    let params: unknown
    try {
      params = raw === '' ? {} : JSON.parse(raw)
    } catch {
      throw new WebApiError(400, 'BAD_JSON', 'the request body is not valid JSON')
    }
    if (params === null || typeof params !== 'object' || Array.isArray(params)) throw new WebApiError(400, 'BAD_PARAMS', 'the request body must be a JSON object')
    const controller = new AbortController()
    response.on('close', () => controller.abort())
    const result = await method(params as Record<string, unknown>, { signal: controller.signal })
    this.json(response, 200, { result: result ?? null })
  }

  private async stream(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const api = this.ctx.webApi as unknown as WebApiPlugin
    const sessionId = url.searchParams.get('session')
    let from = Number(url.searchParams.get('from') ?? '0')
    const lastId = request.headers['last-event-id']
    if (typeof lastId === 'string' && /^\d+$/.test(lastId)) from = Number(lastId) + 1
    if (!Number.isInteger(from) || from < 0) throw new WebApiError(400, 'BAD_PARAMS', '"from" must be a non-negative integer')
    // Live appends by other processes or hosts sharing the store (a backend with `watch`):
    // listen before reading, so nothing committed between the read and the listen is missed.
    const backend = this.ctx.get('sessionPersistence')?.backend
    const remote = sessionId && backend?.watch && this.ctx.sessions.get(sessionId) === undefined
      ? { ready: false, closed: false, chain: Promise.resolve(), dispose: undefined as (() => void) | undefined }
      : undefined
    const pull = () => {
      if (remote === undefined || !remote.ready || remote.closed || sessionId === null) return
      remote.chain = remote.chain.then(async () => {
        // Once the session is live here, its local events are the stream.
        if (remote.closed || this.ctx.sessions.get(sessionId) !== undefined) return
        const events = backend!.loadStoredFrom ? await backend!.loadStoredFrom(sessionId, next) : (await backend!.loadStored(sessionId))?.events.slice(next) ?? []
        if (!remote.closed) sendLog(events)
      }).catch(() => undefined)
    }
    if (remote !== undefined) remote.dispose = await backend!.watch!(sessionId!, pull)
    // A stored session is streamed as stored until something loads it (see WebApiPlugin.view).
    let view
    try {
      view = sessionId ? await api.view(sessionId) : undefined
    } catch (error) {
      remote?.dispose?.()
      throw error
    }

    response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive' })
    this.streams.add(response)
    const send = (event: string, data: unknown, id?: number) => {
      response.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
    }
    response.write('retry: 1000\n\n')
    /** The next seq this stream owes the page. */
    let next = from
    const sendLog = (events: readonly SessionEvent[]) => {
      for (const event of events) {
        if (event.seq < next) continue
        send('log', event, event.seq)
        next = event.seq + 1
      }
    }
    const status = () => {
      if (sessionId === null) return
      const agent = this.ctx.agents.get(sessionId)
      send('status', { id: sessionId, status: (agent?.status ?? 'idle') as AgentStatus, inbox: inboxSnapshot(agent) })
    }
    if (view !== undefined) {
      sendLog(withoutFinishedChunks(view.events.slice(from)))
      next = Math.max(next, view.events.length)
      status()
    }
    send('ready', { session: sessionId, length: view?.events.length ?? 0 })
    if (remote !== undefined) {
      remote.ready = true
      pull()
    }

    const disposers: (() => void)[] = []
    if (sessionId) {
      disposers.push(this.ctx.on('session/event', (session: Session, event: SessionEvent) => {
        if (session.id !== sessionId) return
        // Events appended without notification (crash-repair closers of a load) come first.
        if (event.seq > next) sendLog(session.events.slice(next, event.seq))
        sendLog([event])
        // The inbox logs a splice before applying it: read the lists once the splice is applied.
        if (event.type === 'agent/inbox/spliced') queueMicrotask(status)
      }))
      disposers.push(this.ctx.on('session/created', session => {
        if (session.id === sessionId && session.length > next) sendLog(session.events.slice(next))
      }))
      disposers.push(this.ctx.on('agent/status', agent => { if (agent.id === sessionId) status() }))
      disposers.push(...this.sideChannels(sessionId, send))
    }
    disposers.push(this.ctx.on('web/session-changed', id => {
      const live = this.ctx.sessions.get(id)
      send('summary', live === undefined ? { id, deleted: true } : api.summary(live))
    }))
    const heartbeat = setInterval(() => response.write(': ping\n\n'), HEARTBEAT_MS)
    heartbeat.unref()
    response.on('close', () => {
      if (remote !== undefined) {
        remote.closed = true
        remote.dispose?.()
      }
      clearInterval(heartbeat)
      for (const dispose of disposers) dispose()
      this.streams.delete(response)
    })
  }

  /**
   * What a session's stream sends besides its log: live output of running calls, the pending
   * questions and approvals, and the background jobs, each now and on every change. Returns the
   * disposers.
   */
  private sideChannels(sessionId: string, send: (event: string, data: unknown) => void): (() => void)[] {
    const disposers: (() => void)[] = []
    // Live output of running calls (bash), not in the log: sent as `output` events, gathered
    // per call for a tenth of a second so a chatty command is a few events a second.
    const output = new Map<string, string>()
    let outputTimer: NodeJS.Timeout | undefined
    disposers.push(this.ctx.on('tools/output', chunk => {
      if (chunk.session?.id !== sessionId) return
      output.set(chunk.callId, ((output.get(chunk.callId) ?? '') + chunk.text).slice(-LIVE_OUTPUT_CHARS))
      outputTimer ??= setTimeout(() => {
        outputTimer = undefined
        for (const [callId, text] of output) send('output', { callId, text })
        output.clear()
      }, 100)
    }))
    disposers.push(() => clearTimeout(outputTimer))
    // ask_user_question: the session's pending questions, now (a late page) and on every change.
    const questions = () => send('questions', { id: sessionId, questions: this.ctx.get('approval')?.pendingQuestions(sessionId) ?? [] })
    questions()
    disposers.push(this.ctx.on('approval/question', question => { if (question.sessionId === sessionId) questions() }))
    disposers.push(this.ctx.on('approval/question-settled', question => { if (question.sessionId === sessionId) queueMicrotask(questions) }))
    // Approval requests waiting for an answer, with the wider grants each offers (the log's
    // `approval/asked` has no scopes): now (a late page) and whenever one is asked or settled.
    const approvals = () => send('approvals', { id: sessionId, approvals: this.ctx.get('approval')?.pending(sessionId) ?? [] })
    approvals()
    disposers.push(this.ctx.on('approval/pending', request => { if (request.sessionId === sessionId) approvals() }))
    disposers.push(this.ctx.on('approval/settled', request => { if (request.sessionId === sessionId) queueMicrotask(approvals) }))
    // Background jobs of the session (docs/jobs.md): on connect and whenever one starts or ends.
    const jobs = () => send('jobs', { id: sessionId, jobs: this.ctx.get('jobs')?.list(sessionId) ?? [] })
    jobs()
    disposers.push(this.ctx.on('jobs/changed', id => { if (id === sessionId) jobs() }))
    return disposers
  }

  /** A session's image by content hash (immutable, so cacheable); never rendered as a page. */
  private async attachment(response: ServerResponse, url: URL): Promise<void> {
    const found = await readAttachment(this.ctx, url.searchParams.get('session'), url.searchParams.get('id'))
    const image = IMAGE_MEDIA_TYPES.includes(found.mediaType)
    response.writeHead(200, {
      'Content-Type': image ? found.mediaType : 'application/octet-stream',
      'Content-Length': found.data.length,
      'Cache-Control': 'private, max-age=31536000, immutable',
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': "default-src 'none'",
      ...image ? {} : { 'Content-Disposition': 'attachment' },
    })
    response.end(found.data)
  }

  private json(response: ServerResponse, status: number, body: unknown): void {
    if (response.headersSent) return void response.end()
    const text = JSON.stringify(body)
    response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' })
    response.end(text)
  }

  private page(response: ServerResponse, status: number, html: string): void {
    response.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' })
    response.end(html)
  }

  private fail(response: ServerResponse, error: unknown): void {
    if (error instanceof WebApiError) {
      this.json(response, error.status, { error: { code: error.code, message: error.message } })
      return
    }
    const message = error instanceof Error ? error.message : String(error)
    const known = clientError(error)
    if (known !== undefined) {
      this.json(response, known.status, { error: { code: known.code, message } })
      return
    }
    this.json(response, 500, { error: { code: 'INTERNAL', message } })
  }
}

/**
 * Failures caused by what was asked for, not by the server: a damaged or newer-format session
 * (the message names file, line and problem) and bad fork boundaries are 4xx, never 500.
 */
function clientError(error: unknown): { status: number; code: string } | undefined {
  if (!(error instanceof Error)) return undefined
  if (error.name === 'CorruptSessionError') return { status: 422, code: 'CORRUPT_SESSION' }
  if (error.name === 'FormatVersionError') return { status: 422, code: 'SESSION_VERSION' }
  if (error.name === 'SessionsError') {
    const code = (error as Error & { code?: string }).code
    if (code === 'INVALID_BOUNDARY' || code === 'OPEN_TURN') return { status: 400, code }
    if (code === 'NOT_FOUND') return { status: 404, code: 'NO_SESSION' }
  }
  return undefined
}

function decodePath(path: string): string {
  try {
    return decodeURIComponent(path)
  } catch {
    throw new WebApiError(400, 'BAD_PATH', `malformed path ${path}`)
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    request.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY) {
        reject(new WebApiError(413, 'TOO_LARGE', `request body over ${MAX_BODY} bytes`))
        request.destroy()
        return
      }
      chunks.push(chunk)
    })
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}
