/**
 * Going back to an earlier prompt (docs/web.md, "Edit a message"): the Edit button under a
 * message you typed forks the session before that message's turn, opens the copy and puts the
 * text in its composer. When the turns from there changed files with write or edit, it asks
 * first whether to put them back. The session left stays as it was.
 */
import { useState } from 'react'
import { call, type SessionSummary } from './api'

interface RewindPreview {
  readonly turn: number
  readonly text: string
  readonly files: readonly string[]
  readonly otherCalls: readonly { readonly name: string; readonly count: number }[]
}

interface RewindResult {
  readonly session: SessionSummary
  readonly text: string
  readonly files?: { readonly restored: readonly string[]; readonly removed: readonly string[]; readonly kept: readonly { readonly path: string; readonly why: string }[] }
  /** What the server put back and left, as lines for the copy's conversation. */
  readonly notices?: readonly PendingNotice[]
}

/** Composer text waiting for a session the page is about to open (taken once by its composer). */
const drafts = new Map<string, string>()

export function takeDraft(sessionId: string): string | undefined {
  const text = drafts.get(sessionId)
  drafts.delete(sessionId)
  return text
}

export interface PendingNotice { readonly level: 'info' | 'warning'; readonly text: string }

/** Lines for the conversation of a session about to open (what was put back), taken once it has loaded. */
const notices = new Map<string, PendingNotice[]>()

export function takeNotices(sessionId: string): readonly PendingNotice[] {
  const list = notices.get(sessionId) ?? []
  notices.delete(sessionId)
  return list
}

const times = (count: number) => `${count} time${count === 1 ? '' : 's'}`

export function EditMessage(props: { sessionId: string; seq: number; onSelect(id: string): void; onError(error: unknown): void }) {
  const [asking, setAsking] = useState<RewindPreview | undefined>()
  const [busy, setBusy] = useState(false)
  const go = async (restoreFiles: boolean) => {
    setBusy(true)
    try {
      const result = await call<RewindResult>('sessions.rewind', { id: props.sessionId, seq: props.seq, restoreFiles })
      drafts.set(result.session.id, result.text)
      if (result.notices !== undefined) notices.set(result.session.id, [...result.notices])
      setAsking(undefined)
      props.onSelect(result.session.id)
    } catch (error) {
      props.onError(error)
    } finally {
      setBusy(false)
    }
  }
  const start = async () => {
    try {
      const preview = await call<RewindPreview>('sessions.rewindPreview', { id: props.sessionId, seq: props.seq })
      if (preview.files.length === 0) await go(false)
      else setAsking(preview)
    } catch (error) {
      props.onError(error)
    }
  }
  if (asking === undefined) {
    return <button className="link-button edit-message" onClick={() => void start()} disabled={busy} title="Go back to before this message: edit it and send it again in a copy of the session" data-testid="edit-message">Edit</button>
  }
  const others = asking.otherCalls.map(call => `${call.name} ran ${times(call.count)}`).join(', ')
  return (
    <div className="rewind-files" role="group" aria-label="Files changed since this message" data-testid="rewind-files">
      <p>From here on, write and edit changed {asking.files.length === 1 ? '1 file' : `${asking.files.length} files`}: <span className="paths">{asking.files.join(', ')}</span>.</p>
      {others !== '' ? <p className="muted">Also {others}: what that changed, if anything, is not put back.</p> : null}
      <div className="rewind-actions">
        <button className="primary" onClick={() => void go(true)} disabled={busy} data-testid="rewind-restore">Put the files back and edit</button>
        <button onClick={() => void go(false)} disabled={busy} data-testid="rewind-keep">Edit, leave the files</button>
        <button className="ghost" onClick={() => setAsking(undefined)} disabled={busy}>Cancel</button>
      </div>
    </div>
  )
}
