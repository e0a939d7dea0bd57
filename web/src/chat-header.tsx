/** The chat header: the title, the model picker, background jobs and the session's knobs. */
import { useEffect, useState } from 'react'
import { call, type JobSummary, type SessionSummary } from './api'
import { SessionTotals } from './trajectory'
import { ArchiveButton } from './archive'
import { PermissionPickers } from './permissions'

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

export function ChatHeader(props: { id: string; title: string; summary?: SessionSummary; status: string; knobs: number; jobs: readonly JobSummary[]; model: string | null; onModel(model: string): void; onSelect(id: string | null): void; onSummary(summary: SessionSummary): void; onError(error: unknown): void }) {
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
