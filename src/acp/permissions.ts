/**
 * The options of ACP `session/request_permission` (docs/protocols.md, "Approval") and what the
 * selected one answers the approval seam.
 */
import type { ApprovalAnswer, PendingApproval } from '../approval/api.js'

/** The options offered with every permission request (as the original offers them). */
export const PERMISSION_OPTIONS = [
  { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
] as const

/** The wider grants a request may offer (its `scopes`), as `allow_always` options and what each answers. */
const SCOPE_OPTIONS = {
  session: { option: { optionId: 'allow-session', name: 'Allow for this session', kind: 'allow_always' }, answer: 'allowed-session' },
  always: { option: { optionId: 'allow-settings', name: 'Always allow (add to settings)', kind: 'allow_always' }, answer: 'allowed-always' },
} as const

/**
 * A request's options: allow once, then the scopes it offers (session before settings), then
 * reject. Without scopes exactly `PERMISSION_OPTIONS` (recorded transcripts stay byte-equal).
 */
export function permissionOptions(scopes: PendingApproval['scopes']): readonly { optionId: string; name: string; kind: string }[] {
  const offered = (['session', 'always'] as const).filter(scope => scopes?.includes(scope) === true)
  if (offered.length === 0) return PERMISSION_OPTIONS
  return [PERMISSION_OPTIONS[0], ...offered.map(scope => SCOPE_OPTIONS[scope].option), PERMISSION_OPTIONS[1]]
}

/** The answer a selected option gives: only options this request offered grant; anything else rejects. */
export function permissionAnswer(optionId: string, scopes: PendingApproval['scopes']): ApprovalAnswer {
  if (optionId === 'allow-once') return 'allowed-once'
  for (const scope of ['session', 'always'] as const) {
    if (SCOPE_OPTIONS[scope].option.optionId === optionId && scopes?.includes(scope) === true) return SCOPE_OPTIONS[scope].answer
  }
  return 'rejected'
}
