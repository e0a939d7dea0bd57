/** Model-visible runtime-context sections of the two knobs (AP-6), byte-exact with the recordings. */
import type { NetworkMode, SandboxMode } from '../sandbox/modes.js'
import type { ApprovalPolicy } from './api.js'

export const SANDBOX_POLICY_CONTEXT = 'sandbox:policy'
export const APPROVAL_POLICY_CONTEXT = 'approval:policy'
export const NETWORK_POLICY_CONTEXT = 'sandbox:network'

export function sandboxPolicyText(mode: SandboxMode, root: string): string {
  switch (mode) {
    case 'danger-full-access':
      return 'Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict file modifications by available operations.'
    case 'read-only':
      return 'Current DSH file policy: read-only. Any available operation enforced by the DSH file sandbox cannot modify files in the standing mode. Do not refuse a required modification from this policy alone: try an available tool normally and follow any denial and escalation guidance it returns.'
    case 'workspace-write':
      return `Current DSH file policy: workspace-write. Any available operation enforced by the DSH file sandbox may modify files under the session workspace: "${root}". Some platform temporary areas may also be writable.`
  }
}

export function approvalPolicyText(policy: ApprovalPolicy): string {
  return policy === 'never'
    ? 'Approval prompts are disabled in this session: actions that require approval are rejected automatically — do not request sandbox escalation (do not set `sandbox_permissions`).'
    : 'Approval policy: ask. Operations that require approval may ask through the configured answerers; without an available answerer, the request fails closed.'
}

/** The network runtime context: nothing under `full` (recorded sessions ran with it). */
export function networkPolicyText(network: NetworkMode): string | undefined {
  switch (network) {
    case 'full':
      return undefined
    case 'allowlist':
      return 'Current DSH network policy: allowlist. Sandboxed commands reach the network only through an HTTP(S) proxy that allows the hosts listed in the user\'s settings (common package registries and code hosts by default); the proxy variables are set for them. Other hosts, and loopback or link-local addresses, are refused, or asked for when someone can answer. Do not try to get around the proxy; if a needed host is refused, say which one so the user can allow it.'
    case 'none':
      return 'Current DSH network policy: none. Sandboxed commands have no network access (only their own loopback). Do not retry network operations; say what needs the network so the user can allow it.'
  }
}
