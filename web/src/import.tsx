/**
 * Import a session exported from another home (`dsh sessions export`, or the Export button): the
 * file is read in the page and sent to `sessions.import`; a session already here is imported as
 * a copy only when the user says so.
 */
import { useRef, useState } from 'react'
import { ApiError, call } from './api'
import type { SessionSummary } from './types'

interface ImportResult {
  id: string
  events: number
  closers: number
  attachments: number
  missing: string[]
  session: SessionSummary
}

export function ImportSession(props: { onImported(summary: SessionSummary): void }) {
  const input = useRef<HTMLInputElement>(null)
  const [note, setNote] = useState<{ text: string; error: boolean } | null>(null)
  const [busy, setBusy] = useState(false)
  const importFile = async (file: File) => {
    setBusy(true)
    setNote(null)
    try {
      const text = await file.text()
      let result: ImportResult
      try {
        result = await call<ImportResult>('sessions.import', { text })
      } catch (error) {
        if (!(error instanceof ApiError) || error.code !== 'EXISTS') throw error
        if (!confirm('This session is already here. Import the file as a copy beside it?')) return
        result = await call<ImportResult>('sessions.import', { text, newId: true })
      }
      const parts = [`Imported “${result.session.title ?? result.id}” (${result.events} events${result.attachments > 0 ? `, ${result.attachments} images` : ''}).`]
      if (result.closers > 0) parts.push('Its open turn was closed as interrupted.')
      if (result.missing.length > 0) parts.push(`${result.missing.length} image${result.missing.length === 1 ? ' was' : 's were'} not in the file.`)
      setNote({ text: parts.join(' '), error: false })
      props.onImported(result.session)
    } catch (error) {
      setNote({ text: `${file.name}: ${(error as Error).message}`, error: true })
    } finally {
      setBusy(false)
      if (input.current) input.current.value = ''
    }
  }
  return (
    <>
      <button className="icon-button import-button" title="Import a session (.jsonl or .dsh-export.json)" aria-label="Import a session"
        onClick={() => input.current?.click()} disabled={busy} data-testid="import-session">⤓</button>
      <input ref={input} type="file" accept=".jsonl,.json,application/json,application/x-ndjson" hidden data-testid="import-file"
        onChange={event => { const file = event.target.files?.[0]; if (file) void importFile(file) }} />
      {note ? (
        <div className={`import-note ${note.error ? 'error' : ''}`} role="status" data-testid="import-note">
          <span>{note.text}</span>
          <button className="icon-button" aria-label="Dismiss" onClick={() => setNote(null)}>×</button>
        </div>
      ) : null}
    </>
  )
}
