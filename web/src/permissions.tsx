/**
 * The session's permission knobs in the chat header and the approval cards of the conversation
 * (docs/web.md, docs/security.md):
 *
 * - `PermissionPickers`: the permission preset (sandbox mode + approval policy, AP-5) and the
 *   network mode of sandboxed commands (`full`, `allowlist`, `none`), read with `permission.get`
 *   and changed with `permission.set` / `permission.setNetwork`.
 * - `ApprovalCard`: a request in the conversation: the whole command (wrapped, never cut), the
 *   folder it runs in, why, and the permission rule that asked or decided it. Allow once /
 *   Reject, and when the request offers wider grants (the stream's `approvals` event carries its
 *   `scopes`, the rule they add and the folder; the log does not) Allow for this session / Always
 *   allow (add to settings).
 */
import { createContext, useContext, useEffect, useRef, useState } from 'react'
import { call } from './api'
import type { Item } from './fold'

export type ApprovalScope = 'session' | 'always'

/** A pending request as the stream's `approvals` event sends it (the approval seam's PendingApproval). */
export interface PendingApproval {
  readonly id: string
  readonly sessionId: string
  readonly toolName: string
  readonly reason: string
  readonly scopes?: readonly ApprovalScope[]
  /** The permission rule the wider grants add, as it will be written. */
  readonly grants?: string
  /** The session's working folder. */
  readonly cwd?: string
}

/** The session's pending requests, by approval id (from the stream): their wider grants and folder. */
export const ApprovalDetails = createContext<ReadonlyMap<string, PendingApproval>>(new Map())

export function detailsOf(pending: readonly PendingApproval[]): ReadonlyMap<string, PendingApproval> {
  return new Map(pending.map(request => [request.id, request]))
}

const ruleText = (rule: { text: string; source: string }) => `${rule.text} (${rule.source})`

/** Log event types that change a knob: the pickers read the knobs again after one. */
export const KNOB_EVENTS: ReadonlySet<string> = new Set(['permission/preset', 'sandbox/mode', 'approval/policy', 'sandbox/network'])

const NETWORK_TITLE: Readonly<Record<string, string>> = {
  full: "Sandboxed commands share this machine's network",
  allowlist: 'Sandboxed commands reach only the hosts in sandbox.allowedHosts, through dsh\'s proxy (others are asked about)',
  none: 'Sandboxed commands have no network at all',
}

interface PermissionView {
  preset: string
  mode: string
  presets: string[]
  network?: string
  networks?: string[]
}

/**
 * The preset picker and the network switch. Reads and changes can answer out of order (each its
 * own request): only the answer to the latest one is shown, so a read answered before a change
 * never puts the old value back. A stored session has no knobs in force until it is opened (null);
 * a status change may have opened it, and `knobs` counts the knob events the stream brought.
 */
export function PermissionPickers(props: { id: string; status: string; knobs: number; onError(error: unknown): void }) {
  const [view, setView] = useState<PermissionView | undefined>()
  // Every read and change takes a ticket when it is sent; an answer is shown only when no answer
  // to a later-sent one has been shown: a read sent before a change cannot put the old preset
  // back, and a change's answer still shows when a read the change's own events started is slow.
  const sent = useRef(0)
  const shown = useRef(0)
  const session = useRef(props.id)
  session.current = props.id
  const show = (ticket: number, id: string, next: PermissionView | undefined) => {
    if (ticket <= shown.current || id !== session.current) return
    shown.current = ticket
    setView(next)
  }
  useEffect(() => setView(undefined), [props.id])
  useEffect(() => {
    const ticket = ++sent.current
    const id = props.id
    call('permission.get', { id }).then(result => show(ticket, id, result ?? undefined), () => show(ticket, id, undefined))
  }, [props.id, props.status, props.knobs])
  if (view === undefined) return null
  const change = async (method: 'permission.set' | 'permission.setNetwork', params: Record<string, string>) => {
    const ticket = ++sent.current
    const id = props.id
    try {
      show(ticket, id, await call(method, { id, ...params }))
    } catch (error) { props.onError(error) }
  }
  const unconfined = view.mode === 'danger-full-access'
  return (
    <>
      <select className="preset-picker" aria-label="Permission preset" title="Permission preset: what the agent may change without asking" data-testid="preset-picker"
        data-mode={view.mode} value={view.preset} onChange={event => void change('permission.set', { preset: event.target.value })}>
        {view.preset === 'custom' ? <option value="custom" disabled>custom</option> : null}
        {view.presets.map(name => <option key={name} value={name}>{name}</option>)}
      </select>
      {view.network !== undefined && view.networks !== undefined ? (
        <select className="preset-picker network-picker" aria-label="Network of sandboxed commands" data-testid="network-picker" data-network={view.network}
          title={unconfined ? 'danger-full-access runs commands unconfined: the network mode applies once the sandbox confines them again' : NETWORK_TITLE[view.network] ?? 'Network of sandboxed commands'}
          value={view.network} onChange={event => void change('permission.setNetwork', { network: event.target.value })}>
          {view.networks.map(name => <option key={name} value={name} title={NETWORK_TITLE[name]}>net {name}</option>)}
        </select>
      ) : null}
    </>
  )
}

/** What a pending approval would run: the command, or the file a write/edit touches. */
function approvalSubject(toolName: string, raw: string): string {
  try {
    const args = JSON.parse(raw)
    if (typeof args?.command === 'string') return args.command
    if (typeof args?.file_path === 'string') return `${toolName} ${args.file_path}`
  } catch { /* shown raw */ }
  return raw === '' ? toolName : `${toolName} ${raw}`
}

const OUTCOME_TEXT: Record<string, string> = {
  'allowed-once': 'Allowed once', 'allowed-session': 'Allowed for this session', 'allowed-always': 'Always allowed (added to settings)',
  rejected: 'Rejected', cancelled: 'Cancelled', unavailable: 'No one could answer: refused',
}

type Answer = 'allowed-once' | 'allowed-session' | 'allowed-always' | 'rejected'

/** AP-3: an approval request in the conversation; its choices while it is pending (a plan's card is App's PlanCard). */
export function ApprovalCard({ item, onError }: { item: Extract<Item, { kind: 'approval' }>; onError(error: unknown): void }) {
  const [sent, setSent] = useState(false)
  const details = useContext(ApprovalDetails).get(item.id)
  const scopes = details?.scopes ?? []
  const answer = async (outcome: Answer) => {
    setSent(true)
    try { await call('approval.answer', { approvalId: item.id, outcome }) } catch (error) { setSent(false); onError(error) }
  }
  const pending = item.outcome === undefined
  return (
    <div className={`approval-card ${pending ? 'pending' : item.outcome}`} data-testid="approval-card" role="group" aria-label={`Approval for ${item.toolName}`}>
      <div className="approval-title">{pending ? 'Approval needed' : OUTCOME_TEXT[item.outcome!] ?? item.outcome}<span className="muted"> · {item.toolName}</span></div>
      <pre className="approval-subject" data-testid="approval-subject">{approvalSubject(item.toolName, item.arguments)}</pre>
      {details?.cwd !== undefined ? <div className="muted" data-testid="approval-folder">in {details.cwd}</div> : null}
      <div className="approval-reason" data-testid="approval-reason">{item.reason}</div>
      {item.rule !== undefined ? <div className="muted" data-testid="approval-rule">asked by the permission rule <code>{ruleText(item.rule)}</code></div> : null}
      {pending && details?.grants !== undefined && scopes.length > 0
        ? <div className="muted" data-testid="approval-grants">{scopes.includes('always') ? 'For this session or always' : 'For this session'} adds the rule <code>{details.grants}</code></div> : null}
      {!pending && item.decidedBy !== undefined ? <div className="muted" data-testid="approval-decided-by">by the permission rule <code>{ruleText(item.decidedBy)}</code></div> : null}
      {pending ? (
        <div className="approval-actions">
          <button className="primary" autoFocus disabled={sent} onClick={() => void answer('allowed-once')} data-testid="approval-allow">Allow once</button>
          {scopes.includes('session') ? <button className="ghost" disabled={sent} onClick={() => void answer('allowed-session')} data-testid="approval-allow-session"
            title="Allow this for the rest of the session">Allow for this session</button> : null}
          {scopes.includes('always') ? <button className="ghost" disabled={sent} onClick={() => void answer('allowed-always')} data-testid="approval-allow-always"
            title="Allow this from now on: added to your settings">Always allow (add to settings)</button> : null}
          <button className="ghost danger" disabled={sent} onClick={() => void answer('rejected')} data-testid="approval-reject">Reject</button>
        </div>
      ) : <div className="approval-outcome" data-testid="approval-outcome">{OUTCOME_TEXT[item.outcome!] ?? item.outcome}</div>}
    </div>
  )
}
