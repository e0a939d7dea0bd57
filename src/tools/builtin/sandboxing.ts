/**
 * What `bash`, `write` and `edit` share when a sandbox is mounted (`ctx.sandbox`): the escalation
 * parameters (SB-6), their validation (SB-5), the one-call approval through `ctx.approval`, and the
 * effective mode and root of a call (SB-1).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Context } from 'cordis'
import { serviceLookup } from '../../kernel/index.js'
import { checkWritable, fencedWriteFile, SandboxDenied, type WriteFence } from '../../sandbox/fence.js'
import type { ProtectedMatch } from '../../sandbox/protected.js'
import type { EditorFiles } from '../editor-files.js'
import type { ApprovalService } from '../../approval/api.js'
import { canWiden, deniedMarker, ESCALATION_MODES, escalationHint, isSandboxMode, isWider, SandboxErrorCode, type SandboxMode } from '../../sandbox/modes.js'
import type { SandboxService } from '../../sandbox/service.js'
import type { ToolContext } from '../api.js'
import { ToolError } from '../errors.js'
import { FsError, fsFailure } from './errors.js'

export interface EscalationArgs {
  readonly sandbox_permissions?: string
  readonly justification?: string
}

export type EscalationKind = 'command' | 'operation'

/** JSON Schema properties added to a tool while a sandbox is mounted. */
export function escalationProperties(kind: EscalationKind): Record<string, unknown> {
  const what = kind === 'command' ? 'command' : 'file operation'
  return {
    sandbox_permissions: {
      type: 'string',
      enum: [...ESCALATION_MODES],
      description: `A wider sandbox mode for this one ${what}. Only valid as a one-shot retry of ${kind === 'command' ? 'a command' : 'an operation'} the sandbox just denied; requires justification and user approval.`,
    },
    justification: {
      type: 'string',
      description: `Required with sandbox_permissions: one sentence telling the user why this exact ${what} needs the wider access.`,
    },
  }
}

/** The escalation paragraph of a sandboxed tool's description. */
export function escalationPolicyText(kind: EscalationKind): string {
  const it = kind === 'command' ? 'command' : 'operation'
  return `Writes may run under a file sandbox; a blocked write is reported as \`[sandbox: file access denied under <mode> mode]\`, a policy decision rather than a fault in the ${it}. Trying an ${it} the sandbox may deny is safe: run it and read the marker. When it is denied and a wider mode would let it succeed, escalate immediately in the same turn: retry the exact same ${it} once with \`sandbox_permissions\` (the narrowest wider mode that suffices) and a one-sentence \`justification\`; the approval prompt that retry raises is how the user consents, so do not ask in chat first. If the session states approval prompts are disabled, a denial is final: do not set \`sandbox_permissions\`. Never escalate speculatively, and treat a rejected escalation as final for that ${it}.`
}

export interface CallSandbox {
  readonly sandbox: SandboxService
  /** Effective mode of this call (an approved escalation, else the session's mode). */
  readonly mode: SandboxMode
  /** The session's standing mode (what a denial marker reports without escalation). */
  readonly standing: SandboxMode
  readonly root: string
  /** Whether a denial may suggest escalation (a wider mode exists, approvals not disabled). */
  readonly canEscalate: boolean
}

export interface Sandboxing {
  readonly sandbox: () => SandboxService | undefined
  readonly approval: () => ApprovalService | undefined
  /** The approval service for reading knobs (`mode`, `policy`: pure folds of the log), untraced. */
  readonly knobs: () => ApprovalService | undefined
}

export function sandboxingOf(ctx: Context): Sandboxing {
  // Asked by every schema read of bash/write/edit (each step): the lookup follows service
  // changes without a `ctx.get` per read (docs/kernel.md, "Hot paths"). The sandbox service's
  // methods do not use the caller's context, so the untraced object serves.
  const sandbox = serviceLookup(ctx, 'sandbox') as () => SandboxService | undefined
  return {
    sandbox,
    approval: () => ctx.get('approval') as ApprovalService | undefined,
    // Every confined call reads the mode and policy; those are folds of the session's log that
    // use no caller context, so they go through the untraced object. `request` (rare) keeps the
    // traced one.
    knobs: serviceLookup(ctx, 'approval') as () => ApprovalService | undefined,
  }
}

function escalationError(message: string, code: string = SandboxErrorCode.invalidEscalation): ToolError {
  const error = new ToolError(message, code)
  error.name = 'SandboxError'
  return error
}

/**
 * The call's sandbox, or undefined when none is mounted. Validates and asks an escalation
 * (throws a `ToolError` with the recorded texts when it is invalid or not approved).
 */
export async function callSandbox(deps: Sandboxing, toolName: string, kind: EscalationKind, args: EscalationArgs, context: ToolContext): Promise<CallSandbox | undefined> {
  const sandbox = deps.sandbox()
  if (sandbox === undefined) return undefined
  const knobs = deps.knobs()
  const session = context.session
  const standing = knobs !== undefined && session !== undefined ? knobs.mode(session) : sandbox.fallbackMode
  const policy = knobs !== undefined && session !== undefined ? knobs.policy(session) : 'never'
  const root = await sandbox.root(session?.header.cwd ?? context.cwd)
  const base = { sandbox, standing, root, canEscalate: standing !== 'danger-full-access' && policy !== 'never' }
  const requested = args.sandbox_permissions
  const justification = args.justification
  if (requested === undefined && justification === undefined) return { ...base, mode: standing }
  if (justification === undefined) throw escalationError('invalid escalation: sandbox_permissions requires a justification')
  if (requested === undefined) throw escalationError('invalid escalation: justification is only valid together with sandbox_permissions')
  if (typeof justification !== 'string' || justification.trim() === '') throw escalationError('invalid justification: expected a non-empty sentence')
  if (!isSandboxMode(requested)) throw escalationError(`invalid escalation: sandbox_permissions must be one of ${ESCALATION_MODES.join(', ')}`)
  if (!isWider(requested, standing)) throw escalationError(`sandbox escalation to "${requested}" is not strictly wider than this call's current "${standing}" mode`)
  const unavailable = `sandbox escalation to "${requested}" requires approval, but no approval channel is available`
  const approval = deps.approval()
  if (approval === undefined || session === undefined) throw escalationError(unavailable, SandboxErrorCode.escalationDenied)
  const outcome = await approval.request({
    session, toolName, callId: context.callId, reason: `escalate sandbox to ${requested}: ${justification.trim()}`,
    signal: context.signal, arguments: JSON.stringify(args),
  })
  switch (outcome) {
    case 'allowed-once': return { ...base, mode: requested }
    case 'rejected': throw escalationError(`the user rejected escalating this ${kind} to "${requested}"`, SandboxErrorCode.escalationDenied)
    case 'cancelled': throw escalationError(`approval for escalating to "${requested}" was cancelled`, SandboxErrorCode.escalationDenied)
    default: throw escalationError(unavailable, SandboxErrorCode.escalationDenied)
  }
}

/** Removes the escalation fields before a tool's own validation. */
export function withoutEscalation<T extends object>(args: T): T {
  const { sandbox_permissions: _p, justification: _j, ...rest } = args as T & EscalationArgs
  return rest as T
}

export function fenceOf(box: CallSandbox): WriteFence {
  return { mode: box.mode, root: box.root, ...(box.sandbox.protectedPaths !== undefined && box.sandbox.protectedPaths.length > 0 ? { protectedPaths: box.sandbox.protectedPaths } : {}) }
}

/** The line after the marker when the target is a protected path (docs/security.md, "Protected paths"). */
export function protectedNotice(match: ProtectedMatch): string {
  return `[sandbox: ${match.path} is protected (${match.kind}: it can run code outside the sandbox); changing it needs the user's approval]`
}

/**
 * Writes a file for `write`/`edit`: through the fence when a sandbox is mounted (denial is an
 * `FsError` `FS_SANDBOX_DENIED` carrying the marker and, when possible, the escalation hint),
 * else plainly.
 */
export async function writeFileFenced(box: CallSandbox | undefined, path: string, data: string, options: { mkdirs?: boolean; editor?: EditorFiles } = {}): Promise<void> {
  try {
    const writeText = options.editor?.writeText
    if (writeText !== undefined) {
      // The editor writes (it creates the file and shows the change); the fence decides first.
      if (box !== undefined) await checkWritable(path, fenceOf(box))
      await writeText(path, data)
      return
    }
    if (box === undefined) {
      if (options.mkdirs === true) await mkdir(dirname(path), { recursive: true })
      await writeFile(path, data)
      return
    }
    await fencedWriteFile(path, data, fenceOf(box), options)
  } catch (error) {
    if (error instanceof SandboxDenied && box !== undefined) {
      const why = error.protection === undefined ? '' : `\n${protectedNotice(error.protection)}`
      const hint = box.canEscalate && canWiden(box.mode) ? `\n${escalationHint('operation')}` : ''
      throw new FsError(`${deniedMarker(box.mode)}${why}${hint}`, SandboxErrorCode.fsDenied)
    }
    return fsFailure(error, path)
  }
}
