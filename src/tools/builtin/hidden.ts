/**
 * The deny-read list as the file tools apply it (docs/security.md, "Secret reads"): `read`,
 * `grep` and `glob` ask `ctx.sandbox.readCheck` once per call and refuse (or, in a search, skip)
 * what it hides; `write` and `edit` refuse it too, as bubblewrap does. Nothing is hidden without
 * a sandbox plugin, or under danger-full-access.
 */
import { readlinkSync } from 'node:fs'
import { isUnder } from '../../sandbox/fence.js'
import { SandboxErrorCode } from '../../sandbox/modes.js'
import { realOf, type ReadCheck } from '../../sandbox/secrets.js'
import type { ToolContext } from '../api.js'
import { FsError } from './errors.js'
import type { CallSandbox, Sandboxing } from './sandboxing.js'

/** The call's deny-read check, or undefined when nothing is hidden from it. */
export async function readGuard(deps: Sandboxing | undefined, context: ToolContext): Promise<ReadCheck | undefined> {
  const sandbox = deps?.sandbox()
  if (sandbox?.readCheck === undefined) return undefined
  const knobs = deps!.knobs()
  const session = context.session
  const mode = knobs !== undefined && session !== undefined ? knobs.mode(session) : sandbox.fallbackMode
  if (mode === 'danger-full-access') return undefined
  return sandbox.readCheck(await sandbox.root(session?.header.cwd ?? context.cwd))
}

/** The one-line refusal: what was asked, the rule that hides it, and how to lift it. */
export function hiddenError(tool: string, shown: string, rule: string): FsError {
  return new FsError(`${tool}: ${shown} is hidden from tools by the sandbox's deny-read list (rule ${rule}; sandbox.denyRead / sandbox.allowRead in settings.yaml; danger-full-access lifts it)`, SandboxErrorCode.readDenied)
}

/** Throws `hiddenError` when `path` (shown as `shown`) is hidden from `check`. */
export function refuseHidden(check: ReadCheck | undefined, tool: string, shown: string, path: string, real?: string): void {
  const rule = check?.denied(path, real)
  if (rule !== undefined) throw hiddenError(tool, shown, rule)
}

/**
 * For write/edit under workspace-write: a hidden path inside the workspace (the workspace is the
 * home folder, say) is refused as bubblewrap refuses it. Outside the workspace the fence refuses
 * every write already, with its escalation hint; an approved danger-full-access lifts both.
 */
export function refuseHiddenWrite(box: CallSandbox | undefined, tool: string, shown: string, path: string): void {
  if (box === undefined || box.mode !== 'workspace-write' || box.sandbox.readCheck === undefined) return
  if (!isUnder(realOf(path), [box.root])) return
  refuseHidden(box.sandbox.readCheck(box.root), tool, shown, path)
}

/**
 * The real path of an open descriptor (Linux `/proc`), or undefined where that is not available:
 * what was actually opened, checked again after the open so a link swapped in since the first
 * check cannot reach a secret.
 */
export function openedPath(fd: number): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return undefined
  }
}
