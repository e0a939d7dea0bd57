/**
 * The permission part of the terminal app's status bar: the preset in force (or the sandbox mode
 * and approval policy when they match none), then the network mode of sandboxed commands when it
 * is not `full` (what commands had before there was a network knob). Under `danger-full-access`
 * commands run unconfined and no network mode applies, so none is shown.
 */
import type { ApprovalService, ApprovalSession } from '../approval/api.js'

export function permissionLabel(approval: Pick<ApprovalService, 'preset' | 'mode' | 'policy' | 'network'>, session: ApprovalSession): string {
  const preset = approval.preset(session)
  const mode = approval.mode(session)
  const knobs = preset === 'custom' ? `${mode}, ${approval.policy(session)}` : preset
  const network = approval.network(session)
  return network === 'full' || mode === 'danger-full-access' ? knobs : `${knobs} · net ${network}`
}
