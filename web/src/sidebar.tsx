/** The sidebar: the session list (children nested under their parents) and the new-session form. */
import { useEffect, useMemo, useState } from 'react'
import { call, type SessionSummary } from './api'
import { ImportSession } from './import'
import { ContentSearch } from './search'
import { FolderPicker } from './folders'
import { ArchivedToggle, inArchiveView } from './archive'
import { ago, basename, type Theme } from './util'

export function Sidebar(props: {
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

export function NewSession(props: { sessions: SessionSummary[]; onCreated(summary: SessionSummary): void }) {
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
