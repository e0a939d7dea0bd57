/**
 * How a command call is confined: what `bash`, the persistent shells (`src/shell/`) and the
 * terminals share, so each confines a command the same way (docs/security.md).
 */
import type { ToolContext } from '../api.js'
import { canWiden, deniedMarker, escalationHint, SandboxErrorCode } from '../../sandbox/modes.js'
import type { SandboxRunner } from '../../sandbox/runner.js'
import { BashError } from './errors.js'
import { callSandbox, type CallSandbox, type EscalationArgs, type Sandboxing } from './sandboxing.js'
import { callNetwork, type CallNetwork } from './network.js'
import { scrubbedEnvironment } from '../../config/credentials.js'
import { editorTerminal, type EditorTerminal } from '../editor-terminal.js'

/** A command's confinement (`confineCommand`): what `bash` and the persistent shells start it under. */
export interface ConfinedCommand {
  readonly box?: CallSandbox
  readonly runner?: SandboxRunner
  /** The runner's argv, placed before the shell (undefined: unconfined). */
  readonly prefix?: readonly string[]
  /** The scrubbed environment plus what the call's network needs. */
  readonly env: Readonly<Record<string, string>>
  readonly terminal?: EditorTerminal
  /** The call's network; `leave()` when the command is done. */
  readonly network?: CallNetwork
}

/** SB-3: no OS sandbox runner works here; the command was not run (its problems name why). */
export class RunnerUnavailableError extends BashError {
  constructor(readonly problems: readonly string[], readonly mode: string) {
    super(`sandbox unavailable: no OS sandbox runner works here (${problems.join('; ')}); the command was not run`, SandboxErrorCode.unavailable)
  }
}

/**
 * The sandbox of one command call: the escalation asked and approved (`callSandbox`), the runner
 * probed (refused when none works: SB-3), the network gate entered, and the runner's argv. Shared
 * by `bash` and the persistent shells (`src/shell/`), so both confine a command the same way.
 */
export async function confineCommand(sandboxing: Sandboxing | undefined, toolName: string, args: EscalationArgs, context: ToolContext, resolved: { shell: string; env?: Readonly<Record<string, string>> }, options: { background?: boolean; terminal?: boolean } = {}): Promise<ConfinedCommand> {
  const box = sandboxing === undefined ? undefined : await callSandbox(sandboxing, toolName, 'command', args, context)
  let prefix: readonly string[] | undefined
  let runner: SandboxRunner | undefined
  // Secrets (API keys, tokens) never reach the command: what it prints lands in the log.
  let env: Readonly<Record<string, string>> = scrubbedEnvironment(process.env, resolved.env)
  // An editor's terminal (ACP) runs the very argv the local runner would: same confinement.
  const terminal = options.terminal === false ? undefined : editorTerminal(context.scope)
  let network: CallNetwork | undefined
  if (box !== undefined && box.mode !== 'danger-full-access') {
    const background = options.background === true
    const knob = context.session !== undefined ? sandboxing!.knobs()?.network(context.session) ?? 'full' : 'full'
    // The first confined command of a process: a shell host that comes up stands for the probe
    // (under allowlist the probe runs: the gate is opened once a runner is known).
    if (terminal === undefined && !background && knob !== 'allowlist') {
      await box.sandbox.prepare?.(box.mode, box.root, { shell: resolved.shell, env, ...(knob === 'none' ? { network: { mode: 'none' as const } } : {}) })
    }
    const probe = await box.sandbox.runner()
    // SB-3: no working runner: refuse, never run unconfined.
    if (probe.runner === undefined) throw new RunnerUnavailableError(probe.problems, box.mode)
    runner = probe.runner
    network = await callNetwork(sandboxing!, box, runner, context, { enter: !background })
    if (network.env !== undefined) env = { ...env, ...network.env }
    prefix = box.sandbox.prefix?.(runner, box.mode, box.root, network.plan) ?? runner.argv(box.mode, box.root, undefined, network.plan)
  }
  return { env, ...(box !== undefined ? { box } : {}), ...(runner !== undefined ? { runner } : {}), ...(prefix !== undefined ? { prefix } : {}), ...(terminal !== undefined ? { terminal } : {}), ...(network !== undefined ? { network } : {}) }
}

/**
 * A confined run's verdict from the runner's stderr: throws when the runner itself failed (the
 * command did not run confined), else the denial markers (none when the sandbox did not deny).
 */
export function sandboxVerdict(confined: ConfinedCommand, exitCode: number | null, stderr: string): string[] {
  const { runner, box } = confined
  if (runner === undefined || box === undefined) return []
  if (runner.failed(exitCode, stderr)) {
    throw new BashError(`sandbox runner ${runner.name} failed; the command did not run confined: ${stderr.trim().split('\n').slice(0, 3).join(' | ')}`, SandboxErrorCode.unavailable)
  }
  if (!runner.denied(exitCode, stderr)) return []
  return [deniedMarker(box.mode), ...(box.canEscalate && canWiden(box.mode) ? [escalationHint('command')] : [])]
}
