/**
 * `ctx.pty` (the `pty` row): persistent terminals for the model, the `terminal_*` tools
 * (docs/pty-terminals.md).
 *
 * - A terminal belongs to the session whose call opened it: another session (a subagent, another
 *   agent) asking for its id is told `unknown PTY session`. At most `maxTerminals` per session.
 * - It runs in a real pseudo-terminal, confined by the sandbox exactly as `bash` is (the runner's
 *   argv before the program, the network plan, the scrubbed environment).
 * - It ends when `terminal_close` asks, when its session's agent is disposed or the session is
 *   closed, when the row is unloaded, and when dsh exits: no process outlives it.
 * - The log records `pty/opened` and `pty/closed`; a session loaded again with terminals its log
 *   shows open gets one `pty/lost` naming them and a notice for the model.
 */
import { randomUUID } from 'node:crypto'
import { statSync } from 'node:fs'
import { Context, Service } from 'cordis'
import type {} from '../agent/api.js'
import type { Agent } from '../agent/api.js'
import { scrubbedEnvironment } from '../config/credentials.js'
import { emitContained, serviceLookup } from '../kernel/index.js'
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type {} from '../session/api.js'
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import type {} from '../tools/api.js'
import { callNetwork, type CallNetwork } from '../tools/builtin/network.js'
import { resolvePath } from '../tools/builtin/paths.js'
import { callSandbox, sandboxingOf, type Sandboxing } from '../tools/builtin/sandboxing.js'
import { ToolError, ToolErrorCode } from '../tools/errors.js'
import type { JobsService } from '../tools/jobs.js'
import { resolvePtyConfig, type PtyConfig, type ResolvedPtyConfig } from './config.js'
import { CLOSED, LOST, OPENED, openInLog, VALIDATORS, type PtyCloseReason, type TerminalRecord } from './events.js'
import { label, statusText } from './format.js'
import { PTY_SCHEMAS, PTY_TOOL_NAMES } from './schemas.js'
import { Terminal } from './terminal.js'
import { createPtyTools } from './tools.js'

export { PTY_TOOL_NAMES } from './schemas.js'
export type { PtyConfig, PtyBackend } from './config.js'

/** What UIs and tests see of a terminal. */
export interface TerminalInfo extends TerminalRecord {
  readonly cwd: string
  readonly status: string
  readonly pid: number
}

export interface PtyService {
  /** The terminals `sessionId` owns. */
  list(sessionId: string): readonly TerminalInfo[]
  /** Closes every terminal of `sessionId`; resolves once their processes are gone. */
  closeAll(sessionId: string, reason?: PtyCloseReason): Promise<void>
}

declare module 'cordis' {
  interface Context {
    pty: PtyService
  }
  interface Events {
    /** @mode emit (contained). A terminal of `sessionId` was opened, exited or closed. */
    'pty/changed'(sessionId: string, terminal: TerminalInfo): void
  }
}

interface Owned {
  readonly terminals: Map<string, Terminal>
  next: number
}

export const PTY_ERROR = { unknown: 'PTY_UNKNOWN_SESSION', type: 'PTY_UNKNOWN_TYPE', limit: 'PTY_LIMIT', exited: 'PTY_EXITED', refused: 'PTY_SIGNAL_REFUSED' } as const

export class PtyPlugin extends Service implements PtyService {
  static readonly inject = ['tools']
  readonly limits: ResolvedPtyConfig
  private readonly owners = new Map<string, Owned>()
  private readonly sandboxing: Sandboxing
  readonly jobs: () => JobsService | undefined
  private onExit: (() => void) | undefined
  private stopped = false

  constructor(ctx: Context, config: PtyConfig = {}) {
    super(ctx, 'pty')
    this.limits = resolvePtyConfig(config)
    this.sandboxing = sandboxingOf(ctx)
    this.jobs = serviceLookup(ctx, 'jobs') as () => JobsService | undefined
    for (const tool of createPtyTools(this)) ctx.effect(() => ctx.tools.register(tool))
    ctx.inject(['sessions'], (inner) => {
      for (const [type, validate] of Object.entries(VALIDATORS)) inner.effect(() => inner.sessions.registerEventType({ type, validate, owner: 'pty' }))
    })
    ctx.on('agent/created', agent => this.reportLost(agent))
    ctx.on('agent/disposed', (agent) => { void this.closeAll(agent.session.id, 'agent-closed') })
    ctx.on('session/closed', (session) => { void this.closeAll(session.id, 'session-closed') })
    ctx.effect(() => () => {
      this.stopped = true
      if (this.onExit !== undefined) process.off('exit', this.onExit)
      // Unloading the row ends every terminal at once: nothing may outlive the plugin.
      for (const owned of this.owners.values()) for (const terminal of owned.terminals.values()) terminal.killNow()
      for (const id of [...this.owners.keys()]) void this.closeAll(id, 'stopped')
    }, 'terminals')
  }

  list(sessionId: string): readonly TerminalInfo[] {
    return [...this.owners.get(sessionId)?.terminals.values() ?? []].map(info)
  }

  async closeAll(sessionId: string, reason: PtyCloseReason = 'closed'): Promise<void> {
    const owned = this.owners.get(sessionId)
    if (owned === undefined) return
    await Promise.all([...owned.terminals.values()].map(terminal => this.closeOne(sessionId, terminal, reason)))
    if (owned.terminals.size === 0) this.owners.delete(sessionId)
  }

  private session(context: ToolContext): Session {
    if (context.session === undefined) throw new ToolError('terminals belong to a session; this call has none', ToolErrorCode.failed)
    return context.session
  }

  private owned(session: Session): Owned {
    let owned = this.owners.get(session.id)
    if (owned === undefined) {
      owned = { terminals: new Map(), next: openInLog(session.events).highest }
      this.owners.set(session.id, owned)
    }
    return owned
  }

  /** The terminal `id` of the call's session; any other id (another session's included) is unknown. */
  find(context: ToolContext, id: string): Terminal {
    const terminal = this.owners.get(this.session(context).id)?.terminals.get(id)
    if (terminal === undefined) throw new ToolError(`unknown PTY session ${id}`, PTY_ERROR.unknown)
    return terminal
  }

  terminals(context: ToolContext): Terminal[] {
    return [...this.owners.get(this.session(context).id)?.terminals.values() ?? []]
  }

  /** Opens a terminal for the call's session (`terminal_open`). */
  async open(args: { type: string; name?: string; cwd?: string }, context: ToolContext): Promise<Terminal> {
    const session = this.session(context)
    if (this.stopped) throw new ToolError('the terminal service was stopped', ToolErrorCode.failed)
    const backend = this.limits.backends[args.type]
    if (backend === undefined || !Object.hasOwn(this.limits.backends, args.type)) {
      throw new ToolError(`unknown terminal type "${args.type}"; registered types: ${Object.keys(this.limits.backends).sort().join(', ')}`, PTY_ERROR.type)
    }
    if (args.name !== undefined && (args.name.trim() === '' || args.name.length > 64 || /[\n\r]/.test(args.name))) {
      throw new ToolError('name must be 1 to 64 characters on one line', ToolErrorCode.invalidArguments)
    }
    const owned = this.owned(session)
    if (owned.terminals.size >= this.limits.maxTerminals) {
      throw new ToolError(`terminal limit reached: ${owned.terminals.size} terminals are open in this session (at most ${this.limits.maxTerminals}); close one with terminal_close, then try again`, PTY_ERROR.limit)
    }
    const base = session.header.cwd ?? context.cwd
    const cwd = args.cwd !== undefined ? resolvePath(base, args.cwd) : base
    let isDirectory = false
    try {
      isDirectory = statSync(cwd).isDirectory()
    } catch {
      // Reported below.
    }
    if (!isDirectory) throw new ToolError(`cwd ${cwd} is not a directory`, ToolErrorCode.invalidArguments)
    // The same confinement as bash: the runner's argv before the program, the network plan.
    let env: Record<string, string> = { ...scrubbedEnvironment(process.env, this.limits.env), TERM: 'xterm-256color', ...backend.env }
    let prefix: readonly string[] = []
    let network: CallNetwork | undefined
    const box = await callSandbox(this.sandboxing, 'terminal_open', 'command', {}, context)
    if (box !== undefined && box.mode !== 'danger-full-access') {
      const probe = await box.sandbox.runner()
      if (probe.runner === undefined) throw new ToolError(`sandbox unavailable: no OS sandbox runner works here (${probe.problems.join('; ')}); the terminal was not opened`, 'SANDBOX_UNAVAILABLE')
      network = await callNetwork(this.sandboxing, box, probe.runner, context, { enter: false })
      if (network.env !== undefined) env = { ...env, ...network.env }
      prefix = box.sandbox.prefix?.(probe.runner, box.mode, box.root, network.plan) ?? probe.runner.argv(box.mode, box.root, undefined, network.plan)
    }
    if (context.signal.aborted) throw new ToolError('cancelled before the terminal was opened', 'ABORTED')
    const id = `pty-${++owned.next}`
    const terminal = await Terminal.open({
      id, type: args.type, ...(args.name !== undefined ? { name: args.name } : {}),
      argv: [...prefix, backend.command, ...backend.args ?? []], runnerWords: prefix.length,
      cwd, env, cols: this.limits.cols, rows: this.limits.rows, scrollback: this.limits.scrollback,
      ...(backend.prompt !== undefined ? { prompt: backend.prompt } : {}),
    })
    owned.terminals.set(id, terminal)
    this.exitHook()
    session.append(OPENED, { id, type: args.type, cwd, callId: context.callId, ...(args.name !== undefined ? { name: args.name } : {}), ...(box !== undefined ? { sandbox: box.mode } : {}) })
    emitContained(this.ctx, 'pty/changed', [session.id, info(terminal)])
    await terminal.wait({ timeoutMs: this.limits.openTimeoutMs, silenceMs: Math.min(this.limits.silenceMs, this.limits.openTimeoutMs), settleMs: this.limits.settleMs, signal: context.signal, afterOutput: true })
    terminal.adoptProgramGroup()
    return terminal
  }

  async close(context: ToolContext, id: string): Promise<void> {
    const terminal = this.find(context, id)
    await this.closeOne(this.session(context).id, terminal, 'closed')
  }

  private async closeOne(sessionId: string, terminal: Terminal, reason: PtyCloseReason): Promise<void> {
    await terminal.close(this.limits.killGraceMs)
    const owned = this.owners.get(sessionId)
    if (owned?.terminals.get(terminal.id) !== terminal) return
    owned.terminals.delete(terminal.id)
    const session = this.ctx.get('sessions')?.get(sessionId)
    try {
      session?.append(CLOSED, { id: terminal.id, reason, ...(terminal.status.kind === 'exited' ? { exitCode: terminal.status.exitCode } : {}) })
    } catch {
      // The session was closed first: a later load reports the terminal lost, as it is.
    }
    emitContained(this.ctx, 'pty/changed', [sessionId, info(terminal)])
  }

  /** On exit only synchronous work runs: every terminal's processes get SIGKILL then. */
  private exitHook(): void {
    if (this.onExit !== undefined) return
    this.onExit = () => { for (const owned of this.owners.values()) for (const terminal of owned.terminals.values()) terminal.killNow() }
    process.once('exit', this.onExit)
  }

  /** A session loaded with terminals its log shows open: one `pty/lost` and a notice. */
  private reportLost(agent: Agent): void {
    const session = agent.session
    const { open } = openInLog(session.events)
    const live = this.owners.get(session.id)?.terminals
    const lost = open.filter(record => live?.has(record.id) !== true)
    if (lost.length === 0) return
    try {
      session.append(LOST, { terminals: lost })
    } catch {
      return
    }
    const names = lost.map(record => label(record.id, record.name)).join(', ')
    const text = `Terminal session${lost.length === 1 ? '' : 's'} ${names} ${lost.length === 1 ? 'was' : 'were'} lost when dsh stopped; ${lost.length === 1 ? 'its' : 'their'} processes are gone and ${lost.length === 1 ? 'its id no longer works' : 'the ids no longer work'}. Open a new terminal with terminal_open if you still need one.`
    const notice: UserMessage = {
      id: randomUUID(), role: 'user',
      content: [{ type: 'text', text }],
      source: { kind: 'plugin', plugin: 'pty', form: 'notice', terminals: lost.map(record => record.id) } as never,
    }
    agent.inject(notice)
  }
}

function info(terminal: Terminal): TerminalInfo {
  return {
    id: terminal.id, type: terminal.type, ...(terminal.name !== undefined ? { name: terminal.name } : {}),
    cwd: terminal.cwd, status: statusText(terminal.status), pid: terminal.pid,
  }
}

export type { Tool, ToolOutput }
export { PTY_SCHEMAS }
