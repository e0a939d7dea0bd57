/**
 * Archive as well as Delete: an archived session keeps its log but leaves the session list; the
 * sidebar's "Archived" view lists archived sessions, and Restore brings one back. The state is
 * the session's own `session/archived` event (`sessions.archive`), so every store keeps it.
 */
import { call, type SessionSummary } from './api'
import './folders.css'

/** Archive (or Restore) in the chat header. */
export function ArchiveButton(props: { id: string; archived: boolean; onDone(summary: SessionSummary): void; onError(error: unknown): void }) {
  const toggle = async () => {
    try {
      props.onDone(await call<SessionSummary>('sessions.archive', { id: props.id, archived: !props.archived }))
    } catch (error) { props.onError(error) }
  }
  return (
    <button className="ghost" onClick={() => void toggle()} data-testid={props.archived ? 'restore' : 'archive'}
      title={props.archived ? 'Put the session back in the session list' : 'Hide the session from the list (it stays stored; see Archived)'}>
      {props.archived ? 'Restore' : 'Archive'}
    </button>
  )
}

/** The sidebar's switch between the session list and the archived sessions. */
export function ArchivedToggle(props: { count: number; active: boolean; onToggle(): void }) {
  if (props.count === 0 && !props.active) return null
  return (
    <button className={`archived-toggle ${props.active ? 'active' : ''}`} onClick={props.onToggle} aria-pressed={props.active} data-testid="archived-toggle">
      {props.active ? '← Back to sessions' : `Archived (${props.count})`}
    </button>
  )
}

/** Whether the sidebar shows a session in the current view (archived view or the normal list). */
export function inArchiveView(session: SessionSummary, archivedView: boolean): boolean {
  return (session.archived === true) === archivedView
}
