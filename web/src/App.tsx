/**
 * The web app: the session list, the open conversation (history, live stream, approvals and
 * questions) and the dialogs around them. Its parts live beside it: sidebar.tsx, settings.tsx,
 * chat-header.tsx, rows.tsx, composer.tsx, util.ts.
 */
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react'
import { ApiError, HISTORY_PAGE, RECONNECT_MS, SessionStream, call, loadEarlier, loadHistory, type InboxSnapshot, type JobSummary, type SessionSummary } from './api'
import { LogFold, type Item } from './fold'
import { DelegationContext, TodoStrip } from './cards'
import { useSearchFocus } from './search'
import { FirstRun } from './providers'
import { SessionStateBar } from './goal'
import type { GoalView } from './session-state'
import { imageParams, type PendingImage } from './attachments'
import { QuestionCards, type PendingQuestion } from './question'
import { useBottomPin, type ViewAnchor } from './pin'
import { appendLiveOutput, clearLiveOutput } from './live-output'
import { takeNotices } from './rewind'
import { ApprovalDetails, KNOB_EVENTS, detailsOf, type PendingApproval } from './permissions'
import { Composer, QueueDock } from './composer'
import { ChatHeader } from './chat-header'
import { Row, copyCode } from './rows'
import { Settings } from './settings'
import { NewSession, Sidebar } from './sidebar'
import { initialTheme, sessionFromUrl, setUrlSession, useEscape, type Theme } from './util'

export function App() {
  const [theme, setTheme] = useState<Theme>(initialTheme)
  const [sessions, setSessions] = useState<SessionSummary[]>([])
  const [selected, setSelected] = useState<string | null>(sessionFromUrl)
  const [view, setView] = useState<'chat' | 'settings' | 'new'>(() => sessionFromUrl() ? 'chat' : 'new')
  const [connection, setConnectionState] = useState<'open' | 'retrying' | 'closed'>('open')
  const lastConnection = useRef<'open' | 'retrying' | 'closed'>('open')

  useEffect(() => {
    document.documentElement.dataset.theme = theme
    localStorage.setItem('dsh-theme', theme)
  }, [theme])

  const refresh = useCallback(() => {
    call<SessionSummary[]>('sessions.list', { archived: 'include' }).then(setSessions, () => {})
  }, [])
  useEffect(refresh, [refresh])

  // After an outage the sidebar reloads: summaries sent meanwhile were missed.
  const setConnection = useCallback((state: 'open' | 'retrying' | 'closed') => {
    if (state === 'open' && lastConnection.current !== 'open') refresh()
    lastConnection.current = state
    setConnectionState(state)
  }, [refresh])

  const onSummary = useCallback((summary: SessionSummary | { id: string; deleted: true }) => {
    setSessions(list => {
      const rest = list.filter(entry => entry.id !== summary.id)
      if ('deleted' in summary) return rest
      return [summary, ...rest].sort((a, b) => b.updatedAt - a.updatedAt)
    })
  }, [])

  const select = useCallback((id: string | null) => {
    setSelected(id)
    setUrlSession(id)
    setView(id === null ? 'new' : 'chat')
  }, [])

  const current = sessions.find(entry => entry.id === selected)
  // Below 760 px the sidebar is a drawer opened by the menu button.
  const [drawer, setDrawer] = useState(false)
  useEscape(() => setDrawer(false), drawer)
  const closing = <T extends unknown[]>(action: (...args: T) => void) => (...args: T) => { setDrawer(false); action(...args) }

  return (
    <div className={`app ${drawer ? 'drawer-open' : ''}`}>
      <Sidebar sessions={sessions} selected={selected} onSelect={closing(select)} onNew={closing(() => { setView('new') })}
        onSettings={closing(() => setView('settings'))} theme={theme} onTheme={() => setTheme(theme === 'dark' ? 'light' : 'dark')}
        onImported={closing((summary: SessionSummary) => { onSummary(summary); select(summary.id) })} />
      {drawer ? <div className="drawer-backdrop" onClick={() => setDrawer(false)} data-testid="drawer-backdrop" /> : null}
      <DelegationContext.Provider value={{ sessionId: selected, sessions, onSelect: select }}>
      <main className="main">
        <div className="mobile-bar">
          <button className="icon-button menu-button" aria-label="Sessions and settings" aria-expanded={drawer} onClick={() => setDrawer(!drawer)} data-testid="menu-button">☰</button>
          <span className="logo">dsh</span>
        </div>
        {connection !== 'open' ? (
          <div className="banner" role="status">{connection === 'retrying' ? 'Reconnecting to dsh web…' : 'The dsh web server is not answering. Retrying; if it was restarted with a new token, open the link it printed.'}</div>
        ) : null}
        <TrustBanner />
        {view === 'settings' ? <Settings onClose={() => setView(selected ? 'chat' : 'new')} />
          : view === 'new' || selected === null ? <FirstRun><NewSession sessions={sessions} onCreated={summary => { onSummary(summary); select(summary.id) }} /></FirstRun>
            : <Chat key={selected} id={selected} summary={current} onSummary={onSummary} onConnection={setConnection}
              onSelect={select} onOpenSettings={() => setView('settings')} />}
        {view !== 'chat' || selected === null ? <GlobalStream onSummary={onSummary} onConnection={setConnection} /> : null}
      </main>
      </DelegationContext.Provider>
    </div>
  )
}

interface TrustView { available: boolean; folder?: string; needsTrust?: boolean; code?: string[]; problem?: string }

/**
 * The launch folder's hook files and .mcp.json servers wait for trust (docs/security.md, "Project
 * trust"): what would run, and one button to trust the folder (as `/trust on`). "Not now" hides it
 * until the page is opened again.
 */
function TrustBanner() {
  const [view, setView] = useState<TrustView | null>(null)
  const [hidden, setHidden] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  useEffect(() => { call<TrustView>('trust.status').then(setView, () => setView(null)) }, [])
  if (hidden || view === null || !view.available || view.needsTrust !== true) return null
  const trust = async () => {
    if (!window.confirm(`Trust ${view.folder}? Its hook files and .mcp.json servers run with your user's rights, outside the sandbox. Only do this for a repository you trust.`)) return
    setBusy(true)
    try {
      setView(await call<TrustView>('trust.on'))
      setError(null)
    } catch (failure) {
      setError((failure as Error).message)
    } finally {
      setBusy(false)
    }
  }
  return (
    <div className="banner trust-banner" role="status" data-testid="trust-banner">
      <div className="trust-text">
        <span><span className="mono">{view.folder}</span> brings code that runs with your user's rights once the folder is trusted. None of it runs now:</span>
        <ul className="trust-code">{(view.code ?? []).map(line => <li key={line}><code>{line}</code></li>)}</ul>
        {view.problem ? <div className="muted">{view.problem}</div> : null}
        {error ? <div className="trust-error" data-testid="trust-error">{error}</div> : null}
      </div>
      <div className="trust-actions">
        <button className="primary" disabled={busy} onClick={() => void trust()} data-testid="trust-on">Trust and start</button>
        <button className="ghost" onClick={() => setHidden(true)} data-testid="trust-later">Not now</button>
      </div>
    </div>
  )
}

/** Keeps the sidebar current while no conversation stream is open. */
function GlobalStream(props: { onSummary: (summary: any) => void; onConnection: (state: 'open' | 'retrying' | 'closed') => void }) {
  const { onSummary, onConnection } = props
  useEffect(() => {
    const stream = new SessionStream(null, 0, { log() {}, status() {}, summary: onSummary, connection: onConnection })
    return () => stream.close()
  }, [onSummary, onConnection])
  return null
}

const PAGE = 120

function Chat(props: {
  id: string; summary?: SessionSummary; onSummary(summary: any): void; onConnection(state: 'open' | 'retrying' | 'closed'): void
  onSelect(id: string | null): void; onOpenSettings(): void
}) {
  const { id, onSummary, onConnection } = props
  const foldRef = useRef(new LogFold())
  const [items, setItems] = useState<readonly Item[]>([])
  const [todos, setTodos] = useState<readonly { content: string; status: string }[]>([])
  const [goal, setGoal] = useState<GoalView | undefined>(undefined)
  const [planMode, setPlanMode] = useState(false)
  const [status, setStatus] = useState<'idle' | 'running'>('idle')
  const [inbox, setInboxState] = useState<InboxSnapshot>({ nextTurn: [], nextStep: [], version: -1 })
  /**
   * The queue comes from the live stream and from the answers to sends and edits, over two
   * connections: an answer can land after the stream already showed a newer queue. Each snapshot
   * carries the log length it was read at (every queue change is logged); an older one is dropped,
   * and an answer must be newer than what the stream showed.
   */
  const setInbox = useCallback((next: InboxSnapshot, fromAnswer = false) => {
    const version = next.version ?? 0
    setInboxState(held => {
      const current = held.version ?? 0
      return (fromAnswer ? version <= current : version < current) ? held : next
    })
  }, [])
  const takeAnswerInbox = useCallback((next: InboxSnapshot) => setInbox(next, true), [setInbox])
  const [model, setModel] = useState<string | null>(null)
  const [loaded, setLoaded] = useState(false)
  const [shown, setShown] = useState(PAGE)
  const [questions, setQuestions] = useState<PendingQuestion[]>([])
  /** Pending approvals' wider grants (the stream's `approvals`), and how many knob events came (the pickers read again). */
  const [approvals, setApprovals] = useState<ReadonlyMap<string, PendingApproval>>(() => new Map())
  const [knobs, setKnobs] = useState(0)
  const [jobs, setJobs] = useState<JobSummary[]>([])
  /** History pages (docs/web.md): the first loaded seq, and whether the server has earlier ones. */
  const [from, setFrom] = useState(0)
  const [more, setMore] = useState(false)
  const [earlierState, setEarlierState] = useState<'idle' | 'loading' | 'failed'>('idle')
  const paging = useRef({ from: 0, more: false, busy: false })
  /** Set before rows are added above the view: the row at its top is put back where it was after they land. */
  const keep = useRef<ViewAnchor | null>(null)
  const scroller = useRef<HTMLDivElement>(null)
  const inner = useRef<HTMLDivElement>(null)
  // The pin to the bottom follows the reader (pin.ts, docs/web.md "Scrolling").
  const pin = useBottomPin(scroller, inner)
  const stick = pin.stick
  /** The first row drawn at the last render: another one means rows were drawn above. */
  const firstKey = useRef<string | undefined>(undefined)

  const publish = useCallback(() => {
    setItems(foldRef.current.items)
    setTodos(foldRef.current.todos)
    setGoal(foldRef.current.state.goal)
    setPlanMode(foldRef.current.state.planMode)
  }, [])

  useEffect(() => {
    let stream: SessionStream | undefined
    let cancelled = false
    let retry: ReturnType<typeof setTimeout> | undefined
    const fold = foldRef.current
    const load = () => loadHistory(id).then(history => {
      if (cancelled) return
      // The newest page starts at a turn: its seed gives the state the events before it set.
      fold.seed(history.seed ?? [])
      fold.apply(history.events)
      // What going back to an earlier message did to the files (rewind.tsx), once.
      for (const notice of takeNotices(id)) fold.notice(notice.level, notice.text)
      paging.current = { from: history.from ?? 0, more: history.more === true, busy: false }
      setFrom(paging.current.from)
      setMore(paging.current.more)
      publish()
      // Summaries pushed while no stream was open (e.g. right after a fork) are not lost.
      onSummary(history.summary)
      setStatus(history.summary.status)
      setInbox(history.inbox)
      setModel(history.model)
      setLoaded(true)
      // Batch live events per animation frame: streaming deltas arrive faster than frames.
      let pending: any[] = []
      let frame = 0
      stream = new SessionStream(id, history.length, {
        log(event) {
          // A step's calls all have their results by its end: their live output is done with.
          if (event.type === 'step/end' || event.type === 'turn/end') clearLiveOutput()
          if (KNOB_EVENTS.has(event.type)) setKnobs(count => count + 1)
          pending.push(event)
          if (frame === 0) frame = requestAnimationFrame(() => {
            frame = 0
            const batch = pending
            pending = []
            if (fold.apply(batch)) publish()
          })
        },
        status(next) { setStatus(next.status); setInbox(next.inbox) },
        summary: onSummary,
        connection: onConnection,
        questions: pending => setQuestions(pending.questions),
        approvals: pending => setApprovals(detailsOf(pending.approvals as PendingApproval[])),
        jobs: list => setJobs(list.jobs),
        output: chunk => appendLiveOutput(chunk.callId, chunk.text),
      })
    }, error => {
      if (cancelled) return
      // The server is not answering (restarting): the banner says so and the history is asked for
      // again, as the event stream reconnects; the stream opened after it clears the banner.
      if (error instanceof ApiError && error.code === 'OFFLINE') {
        onConnection('closed')
        retry = setTimeout(load, RECONNECT_MS)
        return
      }
      fold.notice('error', (error as Error).message)
      publish()
      setLoaded(true)
    })
    load()
    return () => { cancelled = true; clearTimeout(retry); stream?.close(); clearLiveOutput() }
  }, [id, onSummary, onConnection, publish])

  useLayoutEffect(() => {
    const first = items.length > shown ? items[items.length - shown]?.key : items[0]?.key
    const above = firstKey.current !== undefined && first !== firstKey.current
    firstKey.current = first
    if (!stick.current && keep.current !== null) {
      // Rows were added above (an earlier page, or more of the loaded ones): the view stays put.
      pin.restore(keep.current)
    } else pin.follow(above)
    keep.current = null
  }, [items, loaded, shown])

  /**
   * Loads the history page before the first loaded seq (down to `downTo` at least, for a jump to
   * an earlier message) and puts its items above, keeping the view where it is.
   */
  const earlier = useCallback(async (downTo?: number) => {
    const state = paging.current
    if (!state.more || state.busy) return
    state.busy = true
    setEarlierState('loading')
    try {
      const page = await loadEarlier(id, state.from, downTo)
      if (paging.current !== state) return
      const older = new LogFold()
      older.seed(page.seed ?? [])
      older.apply(page.events)
      if (!stick.current) keep.current = pin.anchor()
      foldRef.current.prepend(older)
      state.from = page.from
      state.more = page.more
      setFrom(page.from)
      setMore(page.more)
      setShown(count => count + older.items.length)
      publish()
      setEarlierState('idle')
    } catch {
      setEarlierState('failed')
    } finally {
      state.busy = false
    }
  }, [id, publish])

  const onScroll = () => {
    const element = scroller.current
    if (!element) return
    pin.scrolled()
    if (element.scrollTop < 200 && shown < items.length) {
      // Render more of the loaded items and keep the view where it was.
      keep.current = pin.anchor()
      setShown(count => count + PAGE)
    } else if (element.scrollTop < 200 && !stick.current && paging.current.more && earlierState !== 'failed') void earlier()
  }

  const report = useCallback((error: unknown) => {
    const apiError = error as ApiError
    foldRef.current.notice('error', apiError.code === 'NOT_READY' ? `${apiError.message} — add it in Settings.` : apiError.message)
    publish()
  }, [publish])

  const send = async (text: string, mode: 'prompt' | 'steer', mentions?: string[], images: readonly PendingImage[] = []) => {
    stick.current = true
    try {
      const result = await call(mode, { id, text, ...mentions?.length ? { mentions } : {}, ...images.length > 0 ? { images: imageParams(images) } : {} })
      takeAnswerInbox(result.inbox)
      // A slash command's outcome is shown as a notice (its command/run and command/done are in the log),
      // except a goal change: its goal line in the conversation already says what happened.
      if (result.command?.text && !(result.command.kind === 'success' && /^\/goal\s+\S/.test(text))) {
        foldRef.current.notice(result.command.kind === 'error' ? 'error' : 'info', result.command.text, true)
        publish()
      }
      return true
    } catch (error) {
      report(error)
      return false
    }
  }

  // A content-search hit opens the session at its message (search.tsx).
  useSearchFocus({ id, items, loaded, container: inner, shown, setShown, stick, from, more, earlier })
  const visible = items.length > shown ? items.slice(items.length - shown) : items
  const title = props.summary?.title ?? 'Untitled session'
  return (
    <div className="chat">
      <ChatHeader id={id} title={title} summary={props.summary} status={status} knobs={knobs} jobs={jobs} model={model} onModel={setModel} onSelect={props.onSelect} onSummary={onSummary} onError={report} />
      <div className="conversation" ref={scroller} onScroll={onScroll} onClick={copyCode} data-testid="conversation">
        <div className="conversation-inner" ref={inner}>
          {items.length > shown ? <button className="link-button earlier" onClick={() => setShown(shown + PAGE)}>Show earlier messages ({items.length - shown})</button>
            : more ? <button className="link-button earlier" disabled={earlierState === 'loading'} onClick={() => void earlier()} data-testid="load-earlier">
              {earlierState === 'loading' ? 'Loading earlier messages…' : earlierState === 'failed' ? 'Could not load earlier messages: try again' : 'Load earlier messages'}</button>
              : loaded && items.length > 0 && from === 0 && props.summary && props.summary.length > HISTORY_PAGE ? <div className="session-start" data-testid="session-start">Beginning of the session</div> : null}
          {!loaded ? <div className="thinking loading"><span className="spinner" /> Loading the conversation…</div> : null}
          {loaded && items.length === 0 ? <div className="empty-chat"><h2>{title}</h2><p className="muted">{props.summary?.cwd ?? ''}</p><p className="muted">Send a message to start. Enter sends, Shift+Enter adds a line, Ctrl+Enter steers a running turn.</p></div> : null}
          <ApprovalDetails.Provider value={approvals}>
            {visible.map((item, index) => <div key={item.key} className="item-anchor" data-seq={item.seq}><Row item={item} sessionId={id} isLast={index === visible.length - 1 && status === 'idle'} onSelect={props.onSelect} onError={report} /></div>)}
          </ApprovalDetails.Provider>
          <QuestionCards questions={questions} onError={report} />
          {status === 'running' && !items.some(item => item.kind === 'assistant' && item.streaming) ? <div className="thinking" data-testid="thinking"><span className="spinner" /> Working…</div> : null}
        </div>
      </div>
      <div className="dock">
        <SessionStateBar sessionId={id} goal={goal} planMode={planMode} onError={report} />
        {/* A plan is pinned while it guides work; once finished and idle it is read inline. */}
        {todos.length > 0 && (status === 'running' || todos.some(todo => todo.status !== 'completed')) ? <TodoStrip todos={todos} /> : null}
        <QueueDock id={id} running={status === 'running'} inbox={inbox} onInbox={takeAnswerInbox} onError={report} />
        <Composer sessionId={id} running={status === 'running'} onSend={send} onStop={() => call('cancel', { id, keepInbox: true }).catch(report)} />
      </div>
    </div>
  )
}
