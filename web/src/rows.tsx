/** One conversation row: a user prompt, an assistant step with its tool cards, a notice or a plan review. */
import { memo, useEffect, useMemo, useState } from 'react'
import { call, type SessionSummary } from './api'
import { describeEnd, type Item, type Usage } from './fold'
import { renderMarkdown } from './markdown'
import { ToolCallCard, formatMs } from './cards'
import { References } from './completion'
import { openTrajectory } from './trajectory'
import { GoalLine } from './goal'
import { MessageImages, retryImages } from './attachments'
import { EditMessage } from './rewind'
import { ApprovalCard } from './permissions'
import { tokens } from './util'

/** Code blocks come from rendered markdown: one delegated handler serves their Copy buttons. */
export function copyCode(event: React.MouseEvent<HTMLElement>): void {
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

export const Row = memo(function Row({ item, sessionId, isLast, onSelect, onError }: { item: Item; sessionId: string; isLast?: boolean; onSelect(id: string): void; onError(error: unknown): void }) {
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
