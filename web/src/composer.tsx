/** Below the conversation: the queued-input dock and the composer. */
import { useLayoutEffect, useRef, useState } from 'react'
import { call, type InboxSnapshot } from './api'
import { useComposerCompletion } from './completion'
import { AttachButton, AttachmentTray, useImageAttachments, type PendingImage } from './attachments'
import { takeDraft } from './rewind'

export function QueueDock(props: { id: string; running: boolean; inbox: InboxSnapshot; onInbox(inbox: InboxSnapshot): void; onError(error: unknown): void }) {
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

export function Composer(props: { sessionId: string; running: boolean; onSend(text: string, mode: 'prompt' | 'steer', mentions: string[] | undefined, images: readonly PendingImage[]): Promise<boolean>; onStop(): void }) {
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
