/**
 * The network of a confined call (docs/security.md, "Network"): the session's network knob
 * (`ctx.approval.network`) turned into what the runner needs. `none` and `allowlist` give the
 * command a network namespace of its own; under `allowlist` the session's gate is opened, the call
 * is entered in it (hosts asked for meanwhile are asked on its behalf through `ctx.approval`, with
 * the wider grants offered) and the proxy variables are set. Every connection is a
 * `sandbox/connection` event of the session.
 */
import type { ApprovalOutcome } from '../../approval/api.js'
import { networkEnvironment, type GateHooks, type HostGrant, type NetworkPlan } from '../../sandbox/network.js'
import type { NetworkMode } from '../../sandbox/modes.js'
import type { SandboxRunner } from '../../sandbox/runner.js'
import { CONNECTION_EVENT, type SandboxService } from '../../sandbox/service.js'
import type { Session } from '../../session/api.js'
import type { ToolContext } from '../api.js'
import { ToolError } from '../errors.js'
import type { CallSandbox, Sandboxing } from './sandboxing.js'

export interface CallNetwork {
  /** What the runner's argv needs (absent: the host's network). */
  readonly plan?: NetworkPlan
  /** Variables the command gets besides its own. */
  readonly env?: Readonly<Record<string, string>>
  /** The call is over: hosts it was allowed once are forgotten. */
  leave(): void
}

const GRANTS: Partial<Record<ApprovalOutcome, HostGrant>> = { 'allowed-once': 'once', 'allowed-session': 'session', 'allowed-always': 'always' }

/** How a session's gate asks and records: through `ctx.approval` and the session's log. */
function gateHooks(deps: Sandboxing, session: Session): GateHooks {
  return {
    async ask(host, port, callId, signal) {
      const approval = deps.approval()
      if (approval === undefined) return 'no'
      try {
        const outcome = await approval.request({
          session, toolName: 'network', callId, reason: `connect to ${host}:${port} (not in sandbox.allowedHosts)`,
          scopes: ['session', 'always'], ...(signal !== undefined ? { signal } : {}),
        })
        return GRANTS[outcome] ?? 'no'
      } catch {
        // No open turn (a background job after its turn): nobody can be asked.
        return 'no'
      }
    },
    record(connection, callId) {
      try {
        session.append(CONNECTION_EVENT, { ...connection, ...(callId !== undefined ? { callId } : {}) })
      } catch {
        // The session was closed meanwhile: the proxy's decision stands.
      }
    },
  }
}

const FULL: CallNetwork = { leave: () => {} }

/**
 * The call's network. `enter`: the call waits for its command (a background job outlives its
 * call, so it is not entered: hosts it meets that are not listed are refused).
 */
export async function callNetwork(deps: Sandboxing, box: CallSandbox, runner: SandboxRunner, context: ToolContext, options: { enter: boolean }): Promise<CallNetwork> {
  if (box.mode === 'danger-full-access') return FULL
  const session = context.session
  const network = session !== undefined ? deps.knobs()?.network(session) ?? 'full' : 'full'
  if (network === 'full') return FULL
  if (runner.confinesNetwork !== true) {
    throw new ToolError(`the sandbox runner ${runner.name} cannot confine the network (network mode ${network}); the command was not run. Use bubblewrap, or run with --network full`, 'SANDBOX_UNAVAILABLE')
  }
  if (network === 'none') return { plan: { mode: 'none' }, leave: () => {} }
  const { socket, leave } = await openGate(deps, box.sandbox, session!, context, options.enter)
  return { plan: { mode: 'allowlist', socket, perl: box.sandbox.perl ?? 'perl' }, env: networkEnvironment(), leave }
}

async function openGate(deps: Sandboxing, sandbox: SandboxService, session: Session, context: ToolContext, enter: boolean): Promise<{ socket: string; leave: () => void }> {
  if (sandbox.gate === undefined) throw new ToolError('this sandbox has no network gate (network mode allowlist); nothing was sent. Run with --network full or none', 'SANDBOX_UNAVAILABLE')
  const gate = await sandbox.gate(session, gateHooks(deps, session))
  return { socket: gate.socketPath, leave: enter ? gate.enter(context.callId, context.signal) : () => {} }
}

/**
 * The network of a request dsh makes itself for a call (`web_fetch`): the same knob, the same
 * gate. `full` (or no sandbox, or danger-full-access): direct; `none`: nothing may be sent;
 * `allowlist`: through the gate's proxy at `socket`.
 */
export async function requestNetwork(deps: Sandboxing, context: ToolContext): Promise<{ readonly mode: NetworkMode; readonly socket?: string; leave(): void }> {
  const sandbox = deps.sandbox()
  const knobs = deps.knobs()
  const session = context.session
  if (sandbox === undefined || knobs === undefined || session === undefined || knobs.mode(session) === 'danger-full-access') return { mode: 'full', leave: () => {} }
  const mode = knobs.network(session)
  if (mode !== 'allowlist') return { mode, leave: () => {} }
  return { mode, ...await openGate(deps, sandbox, session, context, true) }
}
