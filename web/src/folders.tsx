/**
 * The workspace folder picker of the New session page: recent folders (from stored sessions) as
 * chips, and a browser over the server's folders (`folders.list`): open a folder, go up, show
 * hidden folders on request, and use the folder shown.
 */
import { useCallback, useEffect, useState } from 'react'
import { call } from './api'
import './folders.css'

interface Listing {
  path: string
  parent: string | null
  home: string
  folders: { name: string; path: string; hidden: boolean }[]
  truncated: boolean
}

function basename(path: string): string {
  return path.split(/[\\/]/).filter(Boolean).at(-1) ?? path
}

/** Recent folders as chips; choosing one sets the folder. */
function RecentFolders(props: { onPick(path: string): void; current: string }) {
  const [recent, setRecent] = useState<{ path: string }[]>([])
  useEffect(() => { call<{ folders: { path: string }[] }>('folders.recent').then(result => setRecent(result.folders), () => {}) }, [])
  if (recent.length === 0) return null
  return (
    <div className="recent-folders" data-testid="recent-folders">
      <span className="muted">Recent</span>
      {recent.map(({ path }) => (
        <button key={path} type="button" className={`chip ${props.current === path ? 'active' : ''}`} title={path} onClick={() => props.onPick(path)} data-testid="recent-folder">
          {basename(path) || path}
        </button>
      ))}
    </div>
  )
}

/** The folder browser: a listing of one folder with its subfolders. */
function FolderBrowser(props: { start: string; onUse(path: string): void; onClose(): void }) {
  const [listing, setListing] = useState<Listing | null>(null)
  const [hidden, setHidden] = useState(false)
  const [error, setError] = useState('')
  const [loading, setLoading] = useState(false)
  const open = useCallback(async (path: string, showHidden: boolean) => {
    setLoading(true)
    try {
      setListing(await call<Listing>('folders.list', { path, hidden: showHidden }))
      setError('')
    } catch (caught) {
      setError((caught as Error).message)
      // A bad start (a typed path that does not exist) falls back to the default folder.
      if (listing === null && path !== '') void open('', showHidden)
    } finally {
      setLoading(false)
    }
  }, [listing])
  useEffect(() => { void open(props.start, hidden) }, []) // eslint-disable-line react-hooks/exhaustive-deps
  return (
    <div className="folder-browser" role="dialog" aria-label="Choose a workspace folder" data-testid="folder-browser">
      <div className="folder-bar">
        <button type="button" className="ghost" disabled={!listing?.parent || loading} onClick={() => listing?.parent && void open(listing.parent, hidden)} aria-label="Parent folder" data-testid="folder-up">↑ Up</button>
        <button type="button" className="ghost" disabled={!listing || loading} onClick={() => listing && void open(listing.home, hidden)} title="Home folder">~</button>
        <code className="folder-path" title={listing?.path} data-testid="folder-path">{listing?.path ?? '…'}</code>
      </div>
      {error ? <div className="inline-error" role="alert" data-testid="folder-error">{error}</div> : null}
      <ul className="folder-list" aria-busy={loading}>
        {listing?.folders.map(folder => (
          <li key={folder.path}>
            <button type="button" className={`folder-entry ${folder.hidden ? 'hidden-folder' : ''}`} onClick={() => void open(folder.path, hidden)} data-testid="folder-entry">
              <span className="folder-icon" aria-hidden="true">▸</span>{folder.name}
            </button>
          </li>
        ))}
        {listing && listing.folders.length === 0 ? <li className="muted folder-empty">No subfolders.</li> : null}
        {listing?.truncated ? <li className="muted folder-empty">Only the first {listing.folders.length} folders are shown.</li> : null}
      </ul>
      <div className="folder-actions">
        <label className="folder-hidden">
          <input type="checkbox" checked={hidden} onChange={event => { setHidden(event.target.checked); if (listing) void open(listing.path, event.target.checked) }} data-testid="folder-hidden" />
          Show hidden folders
        </label>
        <button type="button" className="ghost" onClick={props.onClose}>Cancel</button>
        <button type="button" className="primary" disabled={!listing} onClick={() => listing && props.onUse(listing.path)} data-testid="folder-use">Use this folder</button>
      </div>
    </div>
  )
}

/** Recent folders and the Browse… button with its browser; `onChange` receives the chosen path. */
export function FolderPicker(props: { value: string; onChange(path: string): void }) {
  const [browsing, setBrowsing] = useState(false)
  return (
    <div className="folder-picker">
      <div className="folder-picker-row">
        <RecentFolders current={props.value} onPick={props.onChange} />
        <button type="button" className="ghost browse-button" onClick={() => setBrowsing(!browsing)} aria-expanded={browsing} data-testid="browse-folders">Browse…</button>
      </div>
      {browsing ? <FolderBrowser start={props.value.trim()} onClose={() => setBrowsing(false)} onUse={path => { props.onChange(path); setBrowsing(false) }} /> : null}
    </div>
  )
}
