/**
 * Sandbox modes (SB-1, SB-2) and the fixed texts the model sees when the sandbox denies or may be
 * widened. Pure values: every other sandbox module and every tool that sandboxes uses these.
 */

/** Ordered from narrowest to widest (SB-5). */
export const SANDBOX_MODES = ['read-only', 'workspace-write', 'danger-full-access'] as const
export type SandboxMode = typeof SANDBOX_MODES[number]

/** Modes an escalation may ask for (never the narrowest). */
export const ESCALATION_MODES = ['workspace-write', 'danger-full-access'] as const

export function isSandboxMode(value: unknown): value is SandboxMode {
  return typeof value === 'string' && (SANDBOX_MODES as readonly string[]).includes(value)
}

/** True when `a` grants strictly more than `b`. */
export function isWider(a: SandboxMode, b: SandboxMode): boolean {
  return SANDBOX_MODES.indexOf(a) > SANDBOX_MODES.indexOf(b)
}

/** A wider mode exists above `mode`. */
export function canWiden(mode: SandboxMode): boolean {
  return mode !== 'danger-full-access'
}

export function deniedMarker(mode: SandboxMode): string {
  return `[sandbox: file access denied under ${mode} mode]`
}

/** SB-4: shown after a denial when a wider mode exists and approvals are not disabled. */
export function escalationHint(kind: 'command' | 'operation'): string {
  return `[sandbox: escalation available — retry this exact ${kind} once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]`
}

/** Error codes of the sandbox. */
export const SandboxErrorCode = {
  /** write/edit outside the writable roots of the effective mode. */
  fsDenied: 'FS_SANDBOX_DENIED',
  /** read/grep/glob (and write/edit) of a path on the deny-read list (docs/security.md, "Secret reads"). */
  readDenied: 'FS_READ_DENIED',
  /** No OS runner works on this machine: a confined command is refused, never run unconfined (SB-3). */
  unavailable: 'SANDBOX_UNAVAILABLE',
  /** `sandbox_permissions` / `justification` used against SB-5. */
  invalidEscalation: 'INVALID_ESCALATION',
  /** The escalation was not approved. */
  escalationDenied: 'ESCALATION_DENIED',
} as const

/**
 * Network modes of confined commands (docs/security.md, "Network"): `full` shares the host's
 * network (the recorded behaviour), `allowlist` gives a network namespace of its own whose only
 * way out is dsh's filtering proxy, `none` a network namespace with loopback only.
 */
export const NETWORK_MODES = ['full', 'allowlist', 'none'] as const
export type NetworkMode = typeof NETWORK_MODES[number]

export function isNetworkMode(value: unknown): value is NetworkMode {
  return typeof value === 'string' && (NETWORK_MODES as readonly string[]).includes(value)
}
