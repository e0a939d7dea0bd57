/**
 * The browser side of the dsh web API: `call` posts JSON to `/api/<method>` (the token rides in
 * the HttpOnly cookie the server set when the page was opened), `SessionStream` follows a
 * session's log over SSE and resumes after the last seq it saw.
 */
import type { InboxSnapshot, SessionEvent, SessionSummary } from './types'

export type { InboxSnapshot, SessionEvent, SessionSummary }

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

export async function call<T = any>(method: string, params: Record<string, unknown> = {}): Promise<T> {
  let response: Response
  try {
    response = await fetch(`/api/${method}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(params),
      credentials: 'same-origin',
    })
  } catch {
    throw new ApiError(0, 'OFFLINE', 'the dsh web server is not reachable')
  }
  const body = await response.json().catch(() => ({}))
  if (!response.ok) throw new ApiError(response.status, body?.error?.code ?? 'HTTP', body?.error?.message ?? `HTTP ${response.status}`)
  return body.result as T
}

/** How long the page waits before asking a server that did not answer again. */
export const RECONNECT_MS = 2000

export interface StreamHandlers {
  log(event: SessionEvent): void
  status(status: { id: string; status: 'idle' | 'running'; inbox: InboxSnapshot }): void
  summary(summary: SessionSummary | { id: string; deleted: true }): void
  connection(state: 'open' | 'retrying' | 'closed'): void
  /** The session's pending `ask_user_question` calls (sent on connect and on every change). */
  questions?(pending: { id: string; questions: any[] }): void
  /** The session's pending approval requests with the wider grants each offers (sent on connect and on every change). */
  approvals?(pending: { id: string; approvals: any[] }): void
  /** Live output of a running call (bash): the text since the last such event. */
  output?(chunk: { callId: string; text: string }): void
  /** The session's background jobs (sent on connect and whenever one starts, is stopped or ends). */
  jobs?(list: { id: string; jobs: JobSummary[] }): void
}

/** A background job as `job_list` describes it (docs/jobs.md). */
export interface JobSummary {
  readonly id: string
  readonly label: string
  readonly status: 'running' | 'stopping' | 'completed' | 'killed' | 'failed'
  readonly detail?: string
  readonly startedAt: number
}

/**
 * An EventSource that survives server restarts: the browser's own reconnect sends Last-Event-ID;
 * when the browser gives up (e.g. the server was down for a while) we reopen from the last seq.
 */
export class SessionStream {
  private source?: EventSource
  private lastSeq: number
  private timer?: ReturnType<typeof setTimeout>
  private closed = false

  constructor(private readonly sessionId: string | null, from: number, private readonly handlers: StreamHandlers) {
    this.lastSeq = from - 1
    this.open()
  }

  private open(): void {
    const params = new URLSearchParams()
    if (this.sessionId !== null) params.set('session', this.sessionId)
    params.set('from', String(this.lastSeq + 1))
    const source = new EventSource(`/api/events?${params}`)
    this.source = source
    source.addEventListener('log', (message) => {
      const event = JSON.parse((message as MessageEvent).data) as SessionEvent
      if (event.seq <= this.lastSeq) return
      this.lastSeq = event.seq
      this.handlers.log(event)
    })
    source.addEventListener('status', message => this.handlers.status(JSON.parse((message as MessageEvent).data)))
    source.addEventListener('summary', message => this.handlers.summary(JSON.parse((message as MessageEvent).data)))
    source.addEventListener('questions', message => this.handlers.questions?.(JSON.parse((message as MessageEvent).data)))
    source.addEventListener('approvals', message => this.handlers.approvals?.(JSON.parse((message as MessageEvent).data)))
    source.addEventListener('output', message => this.handlers.output?.(JSON.parse((message as MessageEvent).data)))
    source.addEventListener('jobs', message => this.handlers.jobs?.(JSON.parse((message as MessageEvent).data)))
    source.addEventListener('ready', () => this.handlers.connection('open'))
    source.onerror = () => {
      if (this.closed) return
      if (source.readyState === EventSource.CLOSED) {
        this.handlers.connection('closed')
        this.timer = setTimeout(() => this.open(), RECONNECT_MS)
      } else this.handlers.connection('retrying')
    }
  }

  close(): void {
    this.closed = true
    clearTimeout(this.timer)
    this.source?.close()
  }
}

/**
 * Events per history page (docs/web.md, "History pages"): opening a session asks for the newest
 * page (whole turns, about this many events, more than a screen holds); scrolling to the top of
 * it asks for the page before. A session shorter than this comes in one request, as a whole.
 */
export const HISTORY_PAGE = 1500

/** A `sessions.history` answer (docs/web.md). */
export interface HistoryPage {
  header: any
  summary: SessionSummary
  events: SessionEvent[]
  /** The log's length: the event stream continues from here. */
  length: number
  /** First seq of `events` (a turn start); 0 when the page reaches the start of the session. */
  from: number
  /** Earlier events exist: ask again with `before: from`. */
  more: boolean
  /** State-carrying events before `from`, for the fold (`LogFold.seed`). */
  seed?: SessionEvent[]
  live: boolean
  inbox: InboxSnapshot
  model: string | null
}

const prefetched = new Map<string, Promise<HistoryPage>>()

function newestPage(id: string): Promise<HistoryPage> {
  return call<HistoryPage>('sessions.history', { id, limit: HISTORY_PAGE })
}

/**
 * Starts loading a session's newest history page before the app has rendered (main.tsx does this
 * for the session in the address while extension scripts load), so opening a long session does
 * not wait for two round trips one after the other.
 */
export function prefetchHistory(id: string): void {
  const request = newestPage(id)
  request.catch(() => undefined)
  prefetched.set(id, request)
}

/** The newest history page of `id`: the prefetched request once, else a new one. */
export function loadHistory(id: string): Promise<HistoryPage> {
  const request = prefetched.get(id)
  prefetched.delete(id)
  return request ?? newestPage(id)
}

/**
 * The page before seq `before`: about `limit` events (at least the turns back to `down to`, when
 * given: a jump to an earlier message loads everything between in one request).
 */
export function loadEarlier(id: string, before: number, downTo?: number): Promise<HistoryPage> {
  const limit = downTo === undefined ? HISTORY_PAGE : Math.max(HISTORY_PAGE, before - downTo)
  return call<HistoryPage>('sessions.history', { id, before, limit })
}
