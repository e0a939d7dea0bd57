/**
 * The session's trajectory (`sessions.trajectory`, derived from the log on the server): a totals
 * chip in the chat header (tokens in / out / cached, and the cost when the model's price is
 * known) that opens a panel with every turn and step: model time, time to first chunk, tokens,
 * tool time per tool, retries. A turn's "Steps" link opens the panel at that turn.
 */
import { useCallback, useEffect, useRef, useState } from 'react'
import { call } from './api'
import { formatMs } from './cards'
import './workspace.css'

interface Usage { inputTokens: number; outputTokens: number; cachedTokens: number; reasoningTokens: number }
interface Step {
  step: number; model: string | null; provider: string | null; modelMs: number; firstChunkMs: number | null; usage: Usage
  toolMs: number; tools: { callId: string; name: string; ms: number | null; isError: boolean }[]; retries: number; retryWaitMs: number; cost: number | null
}
interface Turn { turn: number; startedAt: number; durationMs: number | null; reason: string | null; steps: Step[]; usage: Usage; modelMs: number; toolMs: number; retries: number; cost: number | null }
export interface Trajectory {
  turns: Turn[]
  totals: { usage: Usage; modelMs: number; toolMs: number; retries: number; steps: number; cost: number | null; unpricedSteps: number }
}

const OPEN_EVENT = 'dsh:open-trajectory'

/** Opens the trajectory panel of the open session at `turn` (from a turn's footer). */
export function openTrajectory(turn: number): void {
  window.dispatchEvent(new CustomEvent(OPEN_EVENT, { detail: { turn } }))
}

export function tokenCount(n: number): string {
  return n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n)
}

export function money(usd: number): string {
  return usd === 0 ? '$0' : usd < 0.01 ? `$${usd.toPrecision(2)}` : `$${usd.toFixed(2)}`
}

function usageText(usage: Usage): string {
  const parts = [`${tokenCount(usage.inputTokens)} in`, `${tokenCount(usage.outputTokens)} out`]
  if (usage.cachedTokens) parts.push(`${tokenCount(usage.cachedTokens)} cached`)
  return parts.join(' · ')
}

/** The header chip and its panel. `status` and `length` refresh it as turns end. */
export function SessionTotals(props: { id: string; status: string; length?: number }) {
  const [data, setData] = useState<Trajectory | null>(null)
  const [open, setOpen] = useState<{ turn?: number } | null>(null)
  const load = useCallback(() => { call<Trajectory>('sessions.trajectory', { id: props.id }).then(setData, () => {}) }, [props.id])
  useEffect(load, [load, props.status, props.length])
  useEffect(() => {
    const listener = (event: Event) => { setOpen({ turn: (event as CustomEvent).detail?.turn }); load() }
    window.addEventListener(OPEN_EVENT, listener)
    return () => window.removeEventListener(OPEN_EVENT, listener)
  }, [load])
  if (data === null || data.totals.steps === 0) return null
  const { totals } = data
  return (
    <>
      <button className="totals-chip" onClick={() => { setOpen(open ? null : {}); load() }} data-testid="session-totals"
        title="Tokens and cost of this session; click for every turn's steps" aria-expanded={open !== null}>
        <span data-testid="totals-tokens">{usageText(totals.usage)}</span>
        {totals.cost !== null && totals.usage.inputTokens + totals.usage.outputTokens + totals.usage.cachedTokens > 0 ? <span className="totals-cost" data-testid="totals-cost">{money(totals.cost)}{totals.unpricedSteps > 0 ? '+' : ''}</span> : null}
      </button>
      {open !== null ? <TrajectoryPanel data={data} turn={open.turn} onClose={() => setOpen(null)} /> : null}
    </>
  )
}

function TrajectoryPanel(props: { data: Trajectory; turn?: number; onClose(): void }) {
  const { data } = props
  const body = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const listener = (event: KeyboardEvent) => { if (event.key === 'Escape' && !event.defaultPrevented) { event.preventDefault(); props.onClose() } }
    window.addEventListener('keydown', listener, true)
    return () => window.removeEventListener('keydown', listener, true)
  }, [props.onClose])
  useEffect(() => {
    if (props.turn === undefined) return
    body.current?.querySelector(`[data-turn="${props.turn}"]`)?.scrollIntoView({ block: 'start' })
  }, [props.turn])
  const { totals } = data
  return (
    <div className="trajectory-backdrop" onClick={props.onClose}>
      <aside className="trajectory-panel" role="dialog" aria-label="Session trajectory" data-testid="trajectory" onClick={event => event.stopPropagation()}>
        <div className="trajectory-head">
          <h2>Trajectory</h2>
          <button className="ghost" onClick={props.onClose} autoFocus>Close</button>
        </div>
        <dl className="trajectory-totals" data-testid="trajectory-totals">
          <div><dt>Tokens</dt><dd>{usageText(totals.usage)}{totals.usage.reasoningTokens ? ` · ${tokenCount(totals.usage.reasoningTokens)} reasoning` : ''}</dd></div>
          <div><dt>Model time</dt><dd>{formatMs(totals.modelMs)}</dd></div>
          <div><dt>Tool time</dt><dd>{formatMs(totals.toolMs)}</dd></div>
          <div><dt>Steps</dt><dd>{totals.steps}{totals.retries ? ` · ${totals.retries} ${totals.retries === 1 ? 'retry' : 'retries'}` : ''}</dd></div>
          <div><dt>Cost</dt><dd>{totals.cost === null ? 'no price for this model' : `${money(totals.cost)}${totals.unpricedSteps ? ` (${totals.unpricedSteps} steps without a price)` : ''}`}</dd></div>
        </dl>
        <div className="trajectory-body" ref={body}>
          {data.turns.map(turn => (
            <section key={turn.turn} className={`trajectory-turn ${props.turn === turn.turn ? 'focused' : ''}`} data-turn={turn.turn} data-testid="trajectory-turn">
              <h3>Turn {turn.turn}<span className="muted"> · {[...new Set(turn.steps.map(step => step.model).filter(Boolean))].join(', ') || 'no model call'} · {turn.durationMs === null ? 'running' : formatMs(turn.durationMs)}{turn.reason && turn.reason !== 'completed' ? ` · ${turn.reason}` : ''}{turn.cost !== null ? ` · ${money(turn.cost)}` : ''}</span></h3>
              <table className="trajectory-steps">
                <thead><tr><th>Step</th><th>Model time</th><th>First chunk</th><th>In</th><th>Out</th><th>Cached</th><th>Tools</th><th>Retries</th></tr></thead>
                <tbody>
                  {turn.steps.map(step => (
                    <tr key={step.step} data-testid="trajectory-step">
                      <td>{step.step}</td>
                      <td title={step.model ?? ''} data-testid="step-model-ms">{formatMs(step.modelMs)}</td>
                      <td>{step.firstChunkMs === null ? '—' : formatMs(step.firstChunkMs)}</td>
                      <td data-testid="step-in">{step.usage.inputTokens}</td>
                      <td data-testid="step-out">{step.usage.outputTokens}</td>
                      <td data-testid="step-cached">{step.usage.cachedTokens}</td>
                      <td data-testid="step-tools">{step.tools.length === 0 ? '—' : step.tools.map(tool => (
                        <span key={tool.callId} className={`trajectory-tool ${tool.isError ? 'error' : ''}`}>{tool.name} {tool.ms === null ? '…' : formatMs(tool.ms)}</span>
                      ))}</td>
                      <td data-testid="step-retries">{step.retries ? `${step.retries} (${formatMs(step.retryWaitMs)} waiting)` : '0'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          ))}
        </div>
      </aside>
    </div>
  )
}
