import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react'
import { ApiError, HISTORY_PAGE, RECONNECT_MS, SessionStream, call, loadEarlier, loadHistory, type InboxSnapshot, type JobSummary, type SessionSummary } from './api'
import { ImportSession } from './import'
import { LogFold, describeEnd, type Item, type Usage } from './fold'
import { renderMarkdown } from './markdown'
import { DelegationContext, TodoStrip, ToolCallCard, formatMs } from './cards'
import { References, useComposerCompletion } from './completion'
import { SessionTotals, openTrajectory } from './trajectory'
import { ContentSearch, useSearchFocus } from './search'
import { FirstRun, ProviderSettings } from './providers'
import { GoalLine, SessionStateBar } from './goal'
import type { GoalView } from './session-state'
import { AttachButton, AttachmentTray, MessageImages, imageParams, retryImages, useImageAttachments, type PendingImage } from './attachments'
import { FolderPicker } from './folders'
import { ArchiveButton, ArchivedToggle, inArchiveView } from './archive'
import { QuestionCards, type PendingQuestion } from './question'
import { useBottomPin, type ViewAnchor } from './pin'
import { appendLiveOutput, clearLiveOutput } from './live-output'
import { EditMessage, takeDraft, takeNotices } from './rewind'
import { ApprovalCard, ApprovalScopes, KNOB_EVENTS, PermissionPickers, scopesOf, type PendingApproval } from './permissions'

type Theme = 'light' | 'dark'

function initialTheme(): Theme {
  const saved = localStorage.getItem('dsh-theme')
  if (saved === 'light' || saved === 'dark') return saved
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
}

function ago(ms: number): string {
  const seconds = Math.max(0, Math.round((Date.now() - ms) / 1000))
  if (seconds < 60) return 'just now'
  if (seconds < 3600) return `${Math.round(seconds / 60)}m`
  if (seconds < 86_400) return `${Math.round(seconds / 3600)}h`
  return `${Math.round(seconds / 86_400)}d`
}

function basename(path: string): string {
  const parts = path.split(/[\\/]/).filter(Boolean)
  return parts.at(-1) ?? path
}

function tokens(n: number | undefined): string {
  if (n === undefined) return '0'
  return n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n)
}

function sessionFromUrl(): string | null {
  return new URLSearchParams(location.search).get('session')
}

function setUrlSession(id: string | null): void {
  const url = new URL(location.href)
  if (id === null) url.searchParams.delete('session')
  else url.searchParams.set('session', id)
  history.replaceState(null, '', url)
}

/** Calls `onEscape` when Escape is pressed anywhere on the page (dialogs, Settings, the drawer). */
function useEscape(onEscape: () => void, active = true): void {
  const latest = useRef(onEscape)
  latest.current = onEscape
  useEffect(() => {
    if (!active) return
    const listener = (event: KeyboardEvent) => {
      if (event.key !== 'Escape' || event.defaultPrevented) return
      // An input that handles Escape itself (title rename, queue edit) keeps it.
      const target = event.target as HTMLElement | null
      if (target?.closest('[data-own-escape]')) return
      latest.current()
    }
    window.addEventListener('keydown', listener)
    return () => window.removeEventListener('keydown', listener)
  }, [active])
}

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

function Sidebar(props: {
  sessions: SessionSummary[]; selected: string | null; onSelect(id: string): void; onNew(): void; onSettings(): void; theme: Theme; onTheme(): void
  onImported(summary: SessionSummary): void
}) {
  const [query, setQuery] = useState('')
  const [archivedView, setArchivedView] = useState(false)
  const archivedCount = props.sessions.filter(session => session.archived).length
  const groups = useMemo(() => {
    const needle = query.trim().toLowerCase()
    const byCwd = new Map<string, SessionSummary[]>()
    for (const session of props.sessions) {
      // Sessions that never got a prompt are not listed, except the one open now.
      if (session.turns === 0 && session.title === null && session.status !== 'running' && session.id !== props.selected) continue
      if (!inArchiveView(session, archivedView)) continue
      if (needle && !(session.title ?? '').toLowerCase().includes(needle) && !session.id.includes(needle)) continue
      const cwd = session.cwd ?? '(no folder)'
      let list = byCwd.get(cwd)
      if (!list) byCwd.set(cwd, list = [])
      list.push(session)
    }
    return [...byCwd]
  }, [props.sessions, query, archivedView])
  return (
    <aside className="sidebar">
      <div className="brand">
        <span className="logo">dsh</span>
        <div className="brand-actions">
          <button className="icon-button" title={props.theme === 'dark' ? 'Light theme' : 'Dark theme'} onClick={props.onTheme} data-testid="theme-toggle">{props.theme === 'dark' ? '☀' : '☾'}</button>
          <button className="icon-button" title="Settings" onClick={props.onSettings} data-testid="open-settings">⚙</button>
        </div>
      </div>
      <div className="new-row">
        <button className="new-session" onClick={props.onNew} data-testid="new-session">+ New session</button>
        <ImportSession onImported={props.onImported} />
      </div>
      <input className="search" placeholder="Search sessions" value={query} onChange={event => setQuery(event.target.value)} aria-label="Search sessions" />
      <nav className="session-groups">
        {archivedView ? <div className="archived-head">Archived sessions</div> : null}
        {groups.length === 0 ? <div className="empty-note">{query ? 'No session title matches.' : archivedView ? 'No archived sessions.' : 'No sessions yet.'}</div> : null}
        {groups.map(([cwd, list]) => (
          <section key={cwd} className="group">
            <div className="group-head" title={cwd}><span className="folder">▸</span>{basename(cwd)}<span className="group-path">{cwd}</span></div>
            {nest(list).map(({ session, depth }) => (
              <button key={session.id} className={`session-row ${session.id === props.selected ? 'active' : ''} ${depth > 0 ? 'child' : ''}`}
                style={depth > 0 ? { paddingLeft: `${12 + depth * 16}px` } : undefined}
                onClick={() => props.onSelect(session.id)} data-testid={depth > 0 ? 'child-session-row' : 'session-row'}>
                <span className={`dot ${session.status}`} title={session.status} />
                <span className="session-title">{depth > 0 ? '↳ ' : ''}{session.label || session.title || 'Untitled session'}</span>
                <span className="session-time">{ago(session.updatedAt)}</span>
              </button>
            ))}
          </section>
        ))}
        <ContentSearch query={query} onOpen={props.onSelect} />
      </nav>
      <ArchivedToggle count={archivedCount} active={archivedView} onToggle={() => setArchivedView(!archivedView)} />
    </aside>
  )
}

/** Children under their parent (creation order), depth-first; a child whose parent is not listed stays top-level. */
function nest(list: readonly SessionSummary[]): { session: SessionSummary; depth: number }[] {
  const ids = new Set(list.map(session => session.id))
  const byParent = new Map<string, SessionSummary[]>()
  for (const session of list) {
    if (session.parentSession === undefined || !ids.has(session.parentSession)) continue
    byParent.set(session.parentSession, [...byParent.get(session.parentSession) ?? [], session])
  }
  const out: { session: SessionSummary; depth: number }[] = []
  const visit = (session: SessionSummary, depth: number) => {
    out.push({ session, depth })
    for (const child of [...byParent.get(session.id) ?? []].sort((a, b) => a.createdAt - b.createdAt)) visit(child, depth + 1)
  }
  for (const session of list) if (session.parentSession === undefined || !ids.has(session.parentSession)) visit(session, 0)
  return out
}

function NewSession(props: { sessions: SessionSummary[]; onCreated(summary: SessionSummary): void }) {
  const [cwd, setCwd] = useState('')
  const [model, setModel] = useState('')
  const [models, setModels] = useState<{ model: string; provider: string }[]>([])
  const [error, setError] = useState('')
  const [busy, setBusy] = useState(false)
  const [serverCwd, setServerCwd] = useState('')
  useEffect(() => {
    call('models.list').then(result => { setModels(result.models); setModel(result.default ?? '') }, () => {})
    call('server.info').then(result => setServerCwd(result.cwd ?? ''), () => {})
  }, [])
  const create = async () => {
    setBusy(true)
    setError('')
    try {
      props.onCreated(await call<SessionSummary>('sessions.create', { cwd: cwd.trim(), ...model ? { model } : {} }))
    } catch (caught) {
      setError((caught as Error).message)
    } finally {
      setBusy(false)
    }
  }
  return (
    <div className="page-center">
      <div className="panel new-panel">
        <h1>New session</h1>
        <p className="muted">The agent reads and changes files in a folder on this machine. Leave it empty for the folder <code>dsh web</code> was started in.</p>
        <label className="field">
          <span>Workspace folder</span>
          <input value={cwd} onChange={event => setCwd(event.target.value)} placeholder={serverCwd || '/path/to/project'} data-testid="new-cwd"
            onKeyDown={event => { if (event.key === 'Enter') void create() }} />
        </label>
        <FolderPicker value={cwd} onChange={setCwd} />
        <label className="field">
          <span>Model</span>
          <select value={model} onChange={event => setModel(event.target.value)} data-testid="new-model">
            {models.map(info => <option key={`${info.provider}/${info.model}`} value={info.model}>{info.model}</option>)}
          </select>
        </label>
        {error ? <div className="inline-error">{error}</div> : null}
        <div className="actions"><button className="primary" onClick={() => void create()} disabled={busy} data-testid="create-session">Start session</button></div>
      </div>
    </div>
  )
}

function Settings(props: { onClose(): void }) {
  const [settings, setSettings] = useState<{ defaultModel: string | null; credentials: { name: string; set: boolean; source: string | null }[] } | null>(null)
  const [models, setModels] = useState<{ model: string; provider: string; ready: string | null }[]>([])
  const [effective, setEffective] = useState<string | null>(null)
  const [keys, setKeys] = useState<Record<string, string>>({})
  const [message, setMessage] = useState('')
  const load = useCallback(() => {
    call('settings.get').then(setSettings, error => setMessage(error.message))
    call('models.list').then(result => { setModels(result.models); setEffective(result.default) }, () => {})
  }, [])
  useEffect(load, [load])
  useEscape(props.onClose)
  const saveKey = async (name: string) => {
    try {
      await call('credentials.set', { name, value: keys[name] ?? '' })
      setKeys({ ...keys, [name]: '' })
      setMessage(`${name} saved.`)
      load()
    } catch (error) {
      setMessage((error as Error).message)
    }
  }
  const setDefault = async (model: string) => {
    try {
      await call('settings.set', { defaultModel: model })
      setMessage(`Default model: ${model}`)
      load()
    } catch (error) {
      setMessage((error as Error).message)
    }
  }
  return (
    <div className="page-center">
      <div className="panel settings-panel" data-testid="settings">
        <div className="panel-head"><h1>Settings</h1><button className="ghost" onClick={props.onClose}>Close</button></div>
        <h2>API keys</h2>
        <p className="muted">Keys are stored in your dsh home folder (<code>.credentials.yaml</code>, mode 600). They are never sent back to the browser.</p>
        {settings?.credentials.map(credential => (
          <div className="key-row" key={credential.name}>
            <div className="key-name"><code>{credential.name}</code><span className={`badge ${credential.set ? 'ok' : 'warn'}`}>{credential.set ? `set (${credential.source})` : 'not set'}</span></div>
            <div className="key-input">
              <input type="password" autoComplete="off" placeholder={credential.set ? 'Replace key…' : 'Paste key…'} value={keys[credential.name] ?? ''}
                onChange={event => setKeys({ ...keys, [credential.name]: event.target.value })} data-testid={`key-${credential.name}`} />
              <button className="primary" onClick={() => void saveKey(credential.name)} disabled={!keys[credential.name]}>Save</button>
            </div>
          </div>
        ))}
        <ProviderSettings onChanged={text => { setMessage(text); load() }} />
        <h2>Default model</h2>
        <div className="model-list">
          {models.map(info => (
            <label key={`${info.provider}/${info.model}`} className={`model-row ${effective === info.model ? 'active' : ''}`}>
              <input type="radio" name="default-model" checked={effective === info.model} onChange={() => void setDefault(info.model)} />
              <span className="mono">{info.model}</span><span className="muted">{info.provider}</span>
              {info.ready ? <span className="badge warn" title={info.ready}>needs a key</span> : <span className="badge ok">ready</span>}
            </label>
          ))}
        </div>
        <McpServers onMessage={setMessage} />
        {message ? <div className="toast">{message}</div> : null}
      </div>
    </div>
  )
}

interface McpServerView {
  name: string; source: string; transport?: string; state: string; enabled: boolean; error?: string
  tools: { name: string; rawName: string; readOnly: boolean }[]
}

/** Settings section: MCP servers with state, tools, errors, an enable toggle and the project trust prompt. */
function McpServers(props: { onMessage(text: string): void }) {
  const [list, setList] = useState<{ available: boolean; servers: McpServerView[]; untrusted: string[] } | null>(null)
  const [busy, setBusy] = useState(false)
  const load = useCallback(() => { call('mcp.list').then(setList, () => setList(null)) }, [])
  useEffect(load, [load])
  const act = async (method: string, params: Record<string, unknown> = {}) => {
    setBusy(true)
    try {
      setList(await call(method, params))
    } catch (error) {
      props.onMessage((error as Error).message)
    } finally {
      setBusy(false)
    }
  }
  if (list === null || !list.available) return null
  return (
    <div data-testid="mcp-servers">
      <h2>MCP servers</h2>
      <p className="muted">Configured in <code>settings.yaml</code> (<code>mcpServers</code>) or the project's <code>.mcp.json</code>; see <code>dsh mcp</code>. Servers run outside the sandbox.</p>
      {list.untrusted.length > 0 ? (
        <div className="mcp-trust" data-testid="mcp-trust">
          <span>This project's <code>.mcp.json</code> wants to start {list.untrusted.join(', ')}. They run code from the repository.</span>
          <button className="primary" disabled={busy} onClick={() => { if (window.confirm(`Start the MCP servers of this project's .mcp.json (${list.untrusted.join(', ')})? Only do this for a repository you trust.`)) void act('mcp.trust') }}>Trust and start</button>
        </div>
      ) : null}
      {list.servers.length === 0 ? <p className="muted">No MCP servers configured.</p> : null}
      {list.servers.map(server => (
        <details className="mcp-server" key={`${server.source}:${server.name}`} data-testid={`mcp-server-${server.name}`}>
          <summary>
            <span className="mono">{server.name}</span>
            <span className="muted">{server.source} · {server.transport ?? '?'}</span>
            <span className={`badge ${server.state === 'connected' ? 'ok' : 'warn'}`}>{server.state}</span>
            <span className="muted">{server.tools.length} tools</span>
            {server.source === 'settings' ? (
              <label className="mcp-toggle" onClick={event => event.stopPropagation()}>
                <input type="checkbox" checked={server.enabled} disabled={busy} onChange={event => void act('mcp.setEnabled', { name: server.name, enabled: event.target.checked })} /> enabled
              </label>
            ) : null}
          </summary>
          {server.error ? <div className="mcp-error">{server.error}</div> : null}
          <ul className="mcp-tools">{server.tools.map(tool => <li key={tool.name}><code>{tool.name}</code>{tool.readOnly ? <span className="muted"> read-only</span> : null}</li>)}</ul>
        </details>
      ))}
    </div>
  )
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
  const [approvals, setApprovals] = useState<ReadonlyMap<string, readonly ('session' | 'always')[]>>(() => new Map())
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
        approvals: pending => setApprovals(scopesOf(pending.approvals as PendingApproval[])),
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
          <ApprovalScopes.Provider value={approvals}>
            {visible.map((item, index) => <div key={item.key} className="item-anchor" data-seq={item.seq}><Row item={item} sessionId={id} isLast={index === visible.length - 1 && status === 'idle'} onSelect={props.onSelect} onError={report} /></div>)}
          </ApprovalScopes.Provider>
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

function ModelPicker(props: { id: string; model: string | null; running: boolean; onModel(model: string): void; onError(error: unknown): void }) {
  const [models, setModels] = useState<{ model: string; provider: string }[]>([])
  const [fallback, setFallback] = useState<string | null>(null)
  useEffect(() => {
    call('models.list').then(result => { setModels(result.models); setFallback(result.default) }, () => {})
  }, [])
  const current = props.model ?? fallback ?? ''
  const change = async (model: string) => {
    try {
      props.onModel((await call('sessions.setModel', { id: props.id, model })).model)
    } catch (error) { props.onError(error) }
  }
  return (
    <select className="model-picker mono" aria-label="Model" value={current} disabled={props.running || models.length === 0} title={props.running ? 'The model can change between turns' : 'Model for the next turns'}
      onChange={event => void change(event.target.value)} data-testid="model-picker">
      {models.map(info => <option key={`${info.provider}/${info.model}`} value={info.model}>{info.model}</option>)}
    </select>
  )
}

/** Background jobs still running in the session (docs/jobs.md): a pill, each job in its tooltip. */
function JobsPill({ jobs }: { jobs: readonly JobSummary[] }) {
  const running = jobs.filter(job => job.status === 'running' || job.status === 'stopping')
  if (running.length === 0) return null
  const list = running.map(job => `${job.id} ${job.status}: ${job.label}`).join('\n')
  return (
    <span className="pill running" data-testid="jobs-pill" title={`${list}\n/jobs lists them, /jobs kill ID stops one`}>
      {running.length} job{running.length === 1 ? '' : 's'} running
    </span>
  )
}

function ChatHeader(props: { id: string; title: string; summary?: SessionSummary; status: string; knobs: number; jobs: readonly JobSummary[]; model: string | null; onModel(model: string): void; onSelect(id: string | null): void; onSummary(summary: SessionSummary): void; onError(error: unknown): void }) {
  const [editing, setEditing] = useState(false)
  const [draft, setDraft] = useState(props.title)
  const rename = async () => {
    setEditing(false)
    if (draft.trim() === '' || draft === props.title) return
    await call('sessions.rename', { id: props.id, title: draft }).catch(props.onError)
  }
  const fork = async () => {
    try {
      const child = await call<SessionSummary>('sessions.fork', { id: props.id })
      props.onSelect(child.id)
    } catch (error) { props.onError(error) }
  }
  const exportLog = async () => {
    try {
      const { filename, jsonl, attachments, missingAttachments } = await call('sessions.export', { id: props.id })
      // A session with images downloads one self-contained file: the log and the images' bytes.
      const bundle = attachments === undefined ? undefined
        : JSON.stringify({ format: 'dsh-session-export', version: 1, log: jsonl, attachments, ...(missingAttachments === undefined ? {} : { missingAttachments }) })
      const link = document.createElement('a')
      link.href = URL.createObjectURL(bundle === undefined ? new Blob([jsonl], { type: 'application/x-ndjson' }) : new Blob([bundle], { type: 'application/json' }))
      link.download = bundle === undefined ? filename : filename.replace(/\.jsonl$/, '.dsh-export.json')
      link.click()
      setTimeout(() => URL.revokeObjectURL(link.href), 1000)
    } catch (error) { props.onError(error) }
  }
  const remove = async () => {
    if (!confirm('Delete this session? It is moved to the trash folder of your dsh home.')) return
    try {
      await call('sessions.delete', { id: props.id })
      props.onSelect(null)
    } catch (error) { props.onError(error) }
  }
  return (
    <header className="chat-header">
      <div className="chat-title">
        {editing ? (
          <input autoFocus data-own-escape className="title-input" value={draft} onChange={event => setDraft(event.target.value)} data-testid="title-input"
            onBlur={() => void rename()} onKeyDown={event => { if (event.key === 'Enter') void rename(); if (event.key === 'Escape') setEditing(false) }} />
        ) : (
          <h1 title="Rename" onClick={() => { setDraft(props.title); setEditing(true) }} data-testid="chat-title">{props.title}</h1>
        )}
        <div className="chat-sub">
          {props.summary?.parentSession ? (
            <button className="link-button" onClick={() => props.onSelect(props.summary!.parentSession!)} data-testid="parent-link">← Parent session</button>
          ) : null}
          <span className={`pill ${props.status}`} data-testid="status">{props.status === 'running' ? 'running' : 'idle'}</span>
          <JobsPill jobs={props.jobs} />
          <SessionTotals id={props.id} status={props.status} length={props.summary?.length} />
          <ModelPicker id={props.id} model={props.model} running={props.status === 'running'} onModel={props.onModel} onError={props.onError} />
          <PermissionPickers id={props.id} status={props.status} knobs={props.knobs} onError={props.onError} />
          {props.summary?.cwd ? <span className="muted mono" title={props.summary.cwd}>{props.summary.cwd}</span> : null}
        </div>
      </div>
      <div className="header-actions">
        <button className="ghost" onClick={() => { setDraft(props.title); setEditing(true) }} data-testid="rename">Rename</button>
        <button className="ghost" onClick={() => void fork()} data-testid="fork">Fork</button>
        <button className="ghost" onClick={() => void exportLog()} data-testid="export">Export</button>
        <ArchiveButton id={props.id} archived={props.summary?.archived === true} onError={props.onError}
          onDone={summary => { props.onSummary(summary); if (summary.archived) props.onSelect(null) }} />
        <button className="ghost danger" onClick={() => void remove()} data-testid="delete">Delete</button>
      </div>
    </header>
  )
}

/** Code blocks come from rendered markdown: one delegated handler serves their Copy buttons. */
function copyCode(event: React.MouseEvent<HTMLElement>): void {
  const button = (event.target as HTMLElement).closest('[data-copy-code]')
  const code = button?.parentElement?.querySelector('pre')?.textContent
  if (!button || code == null) return
  void navigator.clipboard?.writeText(code).then(() => {
    button.textContent = 'Copied'
    setTimeout(() => { button.textContent = 'Copy' }, 1200)
  }, () => {})
}

function usageLine(usage: Usage): string {
  const parts = [`${tokens(usage.inputTokens)} in`, `${tokens(usage.outputTokens)} out`]
  if (usage.cacheReadTokens) parts.push(`${tokens(usage.cacheReadTokens)} cached`)
  if (usage.reasoningTokens) parts.push(`${tokens(usage.reasoningTokens)} reasoning`)
  return parts.join(' · ')
}

const Markdown = memo(function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text])
  return <div className="markdown" dangerouslySetInnerHTML={{ __html: html }} />
})

/** The one live line of a retried model request: attempt n of N, the cause, and the next try. */
function RetryLine({ item }: { item: Extract<Item, { kind: 'retry' }> }) {
  const of = item.maxRetries === null ? '' : ` of ${item.maxRetries}`
  const [now, setNow] = useState(() => Date.now())
  const due = item.time + item.delayMs
  useEffect(() => {
    if (item.state !== 'waiting' || now >= due) return
    const timer = setTimeout(() => setNow(Date.now()), Math.min(1000, Math.max(50, due - now)))
    return () => clearTimeout(timer)
  }, [item.state, now, due])
  const next = item.state === 'waiting' ? (now < due ? ` · next try in ${Math.ceil((due - now) / 1000)} s` : ' · retrying…')
    : item.state === 'trying' ? ' · retrying now…' : ''
  const text = item.state === 'failed' ? `The model server did not answer after ${item.retry} ${item.retry === 1 ? 'retry' : 'retries'} · last cause ${item.cause}`
    : item.state === 'recovered' ? `Recovered after ${item.retry} ${item.retry === 1 ? 'retry' : 'retries'} (${item.cause})`
      : `Model request failed · attempt ${item.retry}${of} · ${item.cause}${next}`
  return <div className={`notice retry-line ${item.state === 'failed' ? 'error' : item.state === 'recovered' ? 'info' : 'warning'}`} role="status" data-testid="retry-line">{text}</div>
}

const Row = memo(function Row({ item, sessionId, isLast, onSelect, onError }: { item: Item; sessionId: string; isLast?: boolean; onSelect(id: string): void; onError(error: unknown): void }) {
  switch (item.kind) {
    case 'shell':
      return <div className="row assistant-row" data-testid="user-shell"><ToolCallCard call={item.call} /></div>
    case 'user':
      return <div className="row user-row" data-testid="user-message"><div className="bubble">{item.images ? <MessageImages sessionId={sessionId} images={item.images} /> : null}{item.text}</div>{item.references ? <References paths={item.references} /> : null}<EditMessage sessionId={sessionId} seq={item.seq} onSelect={onSelect} onError={onError} /></div>
    case 'assistant':
      return (
        <div className={`row assistant-row ${item.streaming ? 'streaming' : ''}`} data-testid="assistant-message">
          {item.reasoning ? (
            <details className="reasoning" open={item.streaming && !item.text}>
              <summary>{item.streaming && !item.text ? 'Thinking…' : 'Reasoning'}</summary>
              <div className="reasoning-text">{item.reasoning}</div>
            </details>
          ) : null}
          {item.text ? (item.streaming ? <div className="markdown streaming-text">{item.text}<span className="caret" /></div> : <Markdown text={item.text} />) : null}
          {item.calls.map(toolCall => <ToolCallCard key={toolCall.id} call={toolCall} />)}
          {item.interrupted ? <div className="interrupted-tag" data-testid="interrupted">interrupted</div> : null}
        </div>
      )
    case 'turn-end': {
      const end = describeEnd(item.reason)
      const fork = async () => {
        try { onSelect((await call<SessionSummary>('sessions.fork', { id: sessionId, boundary: item.seq })).id) } catch (error) { onError(error) }
      }
      return (
        <div className="turn-end" data-testid="turn-end">
          {end.level ? <div className={`notice ${end.level}`}>{end.text}
            {item.reason?.kind === 'error' && item.prompt && isLast ? (
              <button className="link-button retry-button" onClick={() => void call('prompt', { id: sessionId, text: item.prompt, ...item.mentions ? { mentions: item.mentions } : {}, ...retryImages(item.promptImages) }).catch(onError)} data-testid="retry-button">Retry</button>
            ) : null}</div> : null}
          <div className="turn-meta">
            {item.usage.inputTokens || item.usage.outputTokens ? <span>{usageLine(item.usage)}</span> : null}
            {item.durationMs !== undefined ? <span>{formatMs(item.durationMs)}</span> : null}
            <button className="link-button" onClick={() => openTrajectory(item.turn)} title="Model time, tokens, tools and retries of each step" data-testid="turn-steps">Steps</button>
            <button className="link-button" onClick={() => void fork()} title="Fork the session after this turn">Fork from here</button>
          </div>
        </div>
      )
    }
    case 'notice':
      return <div className={`notice ${item.level}${item.output ? ' output' : ''}`} data-testid="notice">{item.text}</div>
    case 'retry':
      return <RetryLine item={item} />
    case 'approval':
      return item.toolName === 'exit_plan_mode' ? <PlanCard item={item} onError={onError} /> : <ApprovalCard item={item} onError={onError} />
    case 'goal':
      return <GoalLine item={item} />
  }
})

const PLAN_OUTCOME_TEXT: Record<string, string> = {
  'allowed-once': 'Plan approved', rejected: 'Kept planning', cancelled: 'Review cancelled', unavailable: 'No one could review the plan',
}

/** PM-2: a plan presented for review (docs/plan.md). Approve leaves plan mode; Keep planning rejects. */
function PlanCard({ item, onError }: { item: Extract<Item, { kind: 'approval' }>; onError(error: unknown): void }) {
  const [sent, setSent] = useState(false)
  const answer = async (outcome: 'allowed-once' | 'rejected') => {
    setSent(true)
    try { await call('approval.answer', { approvalId: item.id, outcome }) } catch (error) { setSent(false); onError(error) }
  }
  const pending = item.outcome === undefined
  return (
    <div className={`approval-card plan-card ${pending ? 'pending' : item.outcome}`} data-testid="plan-card" role="group" aria-label="Plan for review">
      <div className="approval-title">{pending ? 'Plan ready for review' : PLAN_OUTCOME_TEXT[item.outcome!] ?? item.outcome}</div>
      <Markdown text={item.reason} />
      {pending ? (
        <div className="approval-actions">
          <button className="primary" autoFocus disabled={sent} onClick={() => void answer('allowed-once')} data-testid="plan-approve">Approve</button>
          <button className="ghost" disabled={sent} onClick={() => void answer('rejected')} data-testid="plan-keep-planning">Keep planning</button>
        </div>
      ) : <div className="approval-outcome" data-testid="plan-outcome">{PLAN_OUTCOME_TEXT[item.outcome!] ?? item.outcome}</div>}
    </div>
  )
}

function QueueDock(props: { id: string; running: boolean; inbox: InboxSnapshot; onInbox(inbox: InboxSnapshot): void; onError(error: unknown): void }) {
  const entries = [
    ...props.inbox.nextStep.map((entry, index) => ({ ...entry, target: 'next-step' as const, index })),
    ...props.inbox.nextTurn.map((entry, index) => ({ ...entry, target: 'next-turn' as const, index })),
  ]
  const [editing, setEditing] = useState<string | null>(null)
  const [draft, setDraft] = useState('')
  if (entries.length === 0) return null
  const act = async (method: string, params: Record<string, unknown>) => {
    try { props.onInbox((await call(method, { id: props.id, ...params })).inbox) } catch (error) { props.onError(error) }
    setEditing(null)
  }
  return (
    <div className="queue" data-testid="queue">
      {/* Stop keeps queued input (cancel with keepInbox): it waits here and runs with the next message. */}
      <div className="queue-head">{props.running ? 'Queued' : 'Queued · kept after Stop, sent with your next message'}</div>
      {entries.map(entry => {
        const key = `${entry.target}:${entry.index}`
        return (
          <div className="queue-item" key={key} data-testid="queue-item">
            <span className={`badge ${entry.target === 'next-step' ? 'warn' : ''}`}>{entry.target === 'next-step' ? 'steer' : 'next'}</span>
            {editing === key ? (
              <input autoFocus data-own-escape value={draft} onChange={event => setDraft(event.target.value)}
                onKeyDown={event => { if (event.key === 'Enter') void act('inbox.edit', { target: entry.target, index: entry.index, text: draft }); if (event.key === 'Escape') setEditing(null) }} />
            ) : <span className="queue-text">{entry.text}</span>}
            <button className="link-button" onClick={() => { setEditing(key); setDraft(entry.text) }}>Edit</button>
            <button className="link-button danger" onClick={() => void act('inbox.remove', { target: entry.target, index: entry.index })} data-testid="queue-remove">Remove</button>
          </div>
        )
      })}
    </div>
  )
}

function Composer(props: { sessionId: string; running: boolean; onSend(text: string, mode: 'prompt' | 'steer', mentions: string[] | undefined, images: readonly PendingImage[]): Promise<boolean>; onStop(): void }) {
  // A session opened by going back to an earlier message starts with that message (rewind.tsx).
  const [text, setText] = useState(() => takeDraft(props.sessionId) ?? '')
  const attachments = useImageAttachments()
  const area = useRef<HTMLTextAreaElement>(null)
  // Typing opens the model's connection on the server ahead of the message (at most once a
  // second; docs/llm.md, "Connections opened ahead"). Best effort: a failure is nobody's business.
  const warmedAt = useRef(-Infinity)
  const typing = () => {
    const now = Date.now()
    if (props.running || now - warmedAt.current < 1000) return
    warmedAt.current = now
    call('typing', { id: props.sessionId }).catch(() => undefined)
  }
  // `/` commands and `@` file mentions (completion.tsx).
  const completion = useComposerCompletion({ sessionId: props.sessionId, text, setText, area })
  useLayoutEffect(() => {
    const element = area.current
    if (!element) return
    element.style.height = 'auto'
    element.style.height = `${Math.min(element.scrollHeight, 240)}px`
  }, [text])
  const submit = async (mode: 'prompt' | 'steer') => {
    const value = text.trim()
    const images = attachments.images
    if (!value && images.length === 0) return
    setText('')
    // A refused message (e.g. images on a text-only model) keeps its text and images.
    if (await props.onSend(value, mode, completion.takeMentions(value), images)) attachments.clear()
    else setText(value)
  }
  return (
    <div className={`composer ${attachments.dragging ? 'dropping' : ''}`} {...attachments.dropProps}>
      <AttachmentTray attachments={attachments} />
      {completion.menu}
      <textarea ref={area} value={text} rows={1} placeholder={props.running ? 'Queue a message (Enter) or steer the running step (Ctrl+Enter)…' : 'Message dsh… (@ adds a file, / runs a command)'}
        onChange={event => { setText(event.target.value); typing() }} onPaste={attachments.onPaste} data-testid="composer" {...completion.inputProps}
        onKeyDown={event => {
          if (completion.onKeyDown(event)) return
          if (event.key !== 'Enter' || event.shiftKey || event.nativeEvent.isComposing) return
          event.preventDefault()
          void submit(event.ctrlKey || event.metaKey ? 'steer' : 'prompt')
        }} />
      <div className="composer-actions">
        <AttachButton attachments={attachments} />
        <span className="hint">{props.running ? 'Enter queues · Ctrl+Enter steers' : 'Enter sends · Shift+Enter new line'}</span>
        {props.running ? <button className="stop" onClick={props.onStop} data-testid="stop">■ Stop</button> : null}
        <button className="primary" onClick={() => void submit('prompt')} disabled={!text.trim() && attachments.images.length === 0} data-testid="send">{props.running ? 'Queue' : 'Send'}</button>
      </div>
    </div>
  )
}
