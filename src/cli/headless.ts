/**
 * The headless app: `dsh --profile headless "task"` runs one task with no server, prints the
 * final assistant text (or a stream of session events with `--output stream-json`) and exits
 * 0 when the final turn ended `completed`, 1 otherwise.
 */
import { statSync } from 'node:fs'
import { text } from 'node:stream/consumers'
import { resolve } from 'node:path'
import { Service, type Context } from 'cordis'
import type { Agent } from '../agent/api.js'
import type { AssistantMessage, TextBlock, TokenUsage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { SessionEvent, TurnEndReason } from '../session/types.js'
import type { CommandOutcome } from '../commands/api.js'
import type { ApprovalService, PendingApproval, PendingQuestion, QuestionOutcome } from '../approval/api.js'
import { isSandboxMode, SANDBOX_MODES, type SandboxMode } from '../sandbox/modes.js'
import { Progress } from './progress.js'
import { UsageError } from './usage-error.js'
import { failureCode, failureLine, jsonOutputOf } from './early-failure.js'
import { unknownOption } from './suggest.js'
import { SessionNotStoredError } from '../persistence/api.js'
import { ConfigError } from '../config/rows.js'
import { pickRoute } from '../host/route.js'
import { terminalSafe } from '../host/terminal-text.js'
import { followSessionCwd } from '../sdk/agents.js'
import '../host/index.js'
import '../agent/api.js'
import { isRunning } from '../tools/jobs.js'
import '../llm/api.js'
import '../persistence/api.js'
import { notStoredMessage } from '../persistence/final-save.js'
import { byIdOrPrefix } from '../persistence/lookup.js'
import '../subagents/api.js'

export interface HeadlessArgs {
  task: string
  /** `text`: the answer; `json`: one result object; `stream-json`: every event, then the result. */
  output: 'text' | 'json' | 'stream-json'
  session?: string
  model?: string
  cwd?: string
  /** `--permission-mode`: the session's sandbox mode (danger-full-access also disables approvals). */
  permissionMode?: SandboxMode
}

/** The headless app's options and the launcher's, for a mistyped one's suggestion. */
const HEADLESS_OPTIONS = ['--output', '--session', '--model', '--cwd', '--trust-project-mcp', '--network', '--permission-mode', '--allow', '--deny', '--profile', '--patch', '--store', '--help', '--version']

/** The launcher's subcommands (main.ts): never the first word of a task. */
const SUBCOMMAND_WORDS: ReadonlySet<string> = new Set(['sessions', 'web', 'tui', 'mcp', 'trust'])

export function parseHeadlessArgs(args: readonly string[]): HeadlessArgs {
  const parsed: HeadlessArgs = { task: '', output: 'text' }
  const words: string[] = []
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]
    const value = () => {
      const next = args[index + 1]
      if (next === undefined) throw new UsageError(`${arg} needs a value`)
      index += 1
      return next
    }
    if (arg === '--output') {
      const format = value()
      if (format !== 'text' && format !== 'json' && format !== 'stream-json') throw new UsageError(`--output must be text, json or stream-json, not "${format}"`)
      parsed.output = format
    } else if (arg === '--session') parsed.session = value()
    else if (arg === '--model') parsed.model = value()
    else if (arg === '--cwd') parsed.cwd = value()
    // Read by the MCP row (it runs the project's .mcp.json servers); nothing to do here.
    else if (arg === '--trust-project-mcp') continue
    // Read by the approval row (the deployment's network mode), checked there.
    else if (arg === '--network') value()
    // Read by the permissions row (rules for this run), checked there.
    else if (arg === '--allow' || arg === '--deny') value()
    else if (arg.startsWith('--allow=') || arg.startsWith('--deny=')) continue
    else if (arg === '--permission-mode') {
      const mode = value()
      if (!isSandboxMode(mode)) throw new UsageError(`--permission-mode must be ${SANDBOX_MODES.join(', ')}, not "${mode}"`)
      parsed.permissionMode = mode
    }
    else if (arg === '--') words.push(...args.slice(index + 1)), index = args.length
    else if (arg.startsWith('--')) throw new UsageError(unknownOption(arg, HEADLESS_OPTIONS))
    // A subcommand after an app option (`dsh --model M sessions`) is a mistake, not a task: no
    // subcommand word becomes a prompt by accident (after `--` it is one, on purpose).
    else if (words.length === 0 && SUBCOMMAND_WORDS.has(arg)) {
      throw new UsageError(`"${arg}" is a subcommand: it goes before the options of a task (dsh ${arg} ...); to send the word as the task, put it after -- (dsh ... -- ${arg})`)
    } else words.push(arg)
  }
  parsed.task = words.join(' ').trim()
  return parsed
}

export interface HeadlessConfig {
  /** Default model when neither --model, DSH_MODEL nor settings name one. */
  readonly model?: string
}

/** Sums the usage of every assistant message appended since `from`. */
export function usageSince(session: Session, from: number): TokenUsage {
  const total: Record<string, number> = {}
  for (let seq = from; seq < session.length; seq += 1) {
    const event = session.events[seq]
    if (event.type !== 'assistant/message') continue
    const usage = (event.data as { usage?: TokenUsage }).usage
    for (const [key, value] of Object.entries(usage ?? {})) total[key] = (total[key] ?? 0) + (value as number)
  }
  return total as TokenUsage
}

/** The text of the last assistant message of the last turn, and how that turn ended. */
export function finalAnswer(session: Session): { text: string; reason?: TurnEndReason } {
  let reason: TurnEndReason | undefined
  for (let seq = session.length - 1; seq >= 0; seq -= 1) {
    const event = session.events[seq]
    if (event.type === 'turn/end' && reason === undefined) reason = (event.data as { reason: TurnEndReason }).reason
    if (event.type === 'turn/start' && reason !== undefined) break
    if (event.type === 'assistant/message' && reason !== undefined) {
      const message = (event.data as { message: AssistantMessage }).message
      const text = message.content.filter((block): block is TextBlock => block.type === 'text').map(block => block.text).join('')
      if (text !== '') return { text, reason }
    }
  }
  return { text: '', reason }
}

function describeFailure(reason: TurnEndReason | undefined): string {
  if (reason === undefined) return 'the task did not run'
  switch (reason.kind) {
    case 'error': return `${reason.error.code}: ${reason.error.message}`
    case 'aborted': return 'cancelled'
    case 'blocked': return `blocked${reason.message ? `: ${reason.message}` : ''}`
    case 'max-tokens': return 'MAX_TOKENS: the model hit its output limit'
    case 'interrupted': return 'interrupted'
    default: return reason.kind
  }
}

/** `--cwd` must name an existing folder: a missing one is a usage error, before anything is stored. */
function checkedFolder(path: string): string {
  let isFolder = false
  try {
    isFolder = statSync(path).isDirectory()
  } catch {
    throw new UsageError(`--cwd ${path}: no such folder`)
  }
  if (!isFolder) throw new UsageError(`--cwd ${path}: not a folder`)
  return path
}

/** What to pass to allow more, from the mode in force. */
function widerHint(mode: SandboxMode | undefined): string {
  if (mode === 'read-only') return 'To allow writes in the working folder, pass --permission-mode workspace-write (or set DSH_PERMISSION_MODE).'
  return 'To run without the sandbox and without approvals, pass --permission-mode danger-full-access (or set DSH_PERMISSION_MODE).'
}

/** `write x.txt` / `bash` when a committed tool result is a sandbox denial. */
function sandboxDenial(event: SessionEvent): string | undefined {
  if (event.type !== 'tool/result') return undefined
  const data = event.data as { error?: { code?: string }; meta?: { sandbox?: { denied?: boolean }; path?: string } }
  if (data.error?.code === 'FS_SANDBOX_DENIED') return 'a file write'
  if (data.meta?.sandbox?.denied === true) return 'a bash command\'s file write'
  return undefined
}

/** 128 + SIGPIPE: a shell tool's status when its reader went away. */
const EXIT_SIGPIPE = 141

/** Resolves once what was written to `stream` so far is out; true if its reader had gone (EPIPE). */
function delivered(stream: NodeJS.WritableStream): Promise<boolean> {
  return new Promise(resolve => {
    stream.write('', (error?: Error | null) => resolve((error as NodeJS.ErrnoException | null | undefined)?.code === 'EPIPE'))
  })
}

export class HeadlessApp extends Service {
  static readonly inject = ['host', 'sessions', 'agents', 'llm']

  constructor(ctx: Context, private readonly config: HeadlessConfig = {}) {
    super(ctx, 'app')
  }

  /** Picks the model route: --model, DSH_MODEL, settings `model.default`, the config, the first catalogued model. */
  private route(requested: string | undefined): { provider: string; model: string } {
    try {
      return pickRoute(this.ctx, requested, this.config.model)
    } catch (error) {
      if (error instanceof ConfigError) throw error
      throw new UsageError((error as Error).message)
    }
  }

  async run(): Promise<number> {
    const { host } = this.ctx
    const json = jsonOutputOf(host.args)
    // A failure before the first turn: one stderr line, and the result object under JSON output.
    const early = (message: string, exit: number, error?: unknown) => {
      host.stderr.write(`dsh: ${terminalSafe(message)}\n`)
      const code = error instanceof SessionNotStoredError ? 'SESSION_NOT_FOUND' : error instanceof ConfigError ? 'CONFIG' : failureCode(error, exit, message, 'RUN_FAILED')
      if (json !== undefined) host.stdout.write(failureLine(json, code, message))
      return exit
    }
    let args: HeadlessArgs
    let route: { provider: string; model: string }
    try {
      args = parseHeadlessArgs(host.args)
      if (args.task === '') args = { ...args, task: await pipedTask(host.stdin ?? process.stdin) }
      if (args.task === '') throw new UsageError('no task given: dsh --profile headless "what to do" (or pipe it in: echo "what to do" | dsh)')
      if (args.cwd !== undefined) args = { ...args, cwd: checkedFolder(resolve(args.cwd)) }
      route = this.route(args.model)
    } catch (error) {
      // A bad settings file is a configuration error (exit 1); everything else here is usage.
      return early((error as Error).message, error instanceof ConfigError ? 1 : 2, error)
    }
    const problem = this.ctx.llm.adapter(route.provider)?.readiness?.()
    if (problem !== undefined) return early(problem, 1)

    let agent: Agent
    try {
      agent = await this.openAgent(args, route)
    } catch (error) {
      return early((error as Error).message, 1, error)
    }
    const session = agent.session
    const approval = this.ctx.get('approval') as ApprovalService | undefined
    if (args.permissionMode !== undefined) {
      if (approval === undefined) return early('--permission-mode needs the approval row in the profile', 2)
      approval.setMode(session, args.permissionMode)
      approval.setPolicy(session, args.permissionMode === 'danger-full-access' ? 'never' : 'ask')
    }
    // A stderr line that may quote the model or a tool: made safe for a terminal (security #42.6).
    const say = (line: string) => host.stderr.write(`dsh: ${terminalSafe(line)}\n`)
    // Headless has no one to ask: every ask fails closed; say why and which flag changes it.
    const hostsSaid = new Set<string>()
    const offUnavailable = this.ctx.on('approval/settled', (request: PendingApproval, outcome: string) => {
      if (request.sessionId !== session.id || outcome !== 'unavailable') return
      if (request.toolName === 'network') {
        // One line per host: a package manager retries the same one many times.
        if (hostsSaid.has(request.reason)) return
        hostsSaid.add(request.reason)
        say(`a sandboxed command tried to ${request.reason}; headless runs cannot ask, so it was refused. Add the host to sandbox.allowedHosts in settings.yaml, or pass --network full.`)
        return
      }
      // An ask rule asks under every mode: only the rule's owner can change that, so no mode is suggested.
      const why = request.askedBy !== undefined ? `The permission rule ${request.askedBy.text} (${request.askedBy.source}) asks before it.` : widerHint(approval?.mode(session))
      const rule = request.grants !== undefined && request.askedBy === undefined ? ` Or allow just this with --allow '${request.grants}' (or permissions.allow in settings.yaml).` : ''
      say(`${request.toolName} needs approval (${request.reason}) and headless runs cannot ask; it was refused. ${why}${rule}`)
    })
    // ask_user_question fails closed here too (no one to ask): say which question went unanswered.
    const offQuestion = this.ctx.on('approval/question-settled', (question: PendingQuestion, outcome: QuestionOutcome) => {
      if (question.sessionId !== session.id || outcome.kind !== 'unavailable') return
      const asked = question.questions.map(q => JSON.stringify(q.question)).join(', ')
      say(`the model asked ${asked} and headless runs cannot ask; it was told to go on without an answer.`)
    })
    const start = session.length
    const stream = args.output === 'stream-json'
    const write = (line: unknown) => host.stdout.write(`${JSON.stringify(line)}\n`)
    const progress = host.stderr.isTTY ? new Progress(host.stderr) : undefined
    const dispose = this.ctx.on('session/event', (from: Session, event: SessionEvent) => {
      if (from !== session) return
      if (stream) write({ type: 'session_event', sessionId: session.id, event })
      progress?.observe(event)
      // Without the progress line (piped), each retry is one stderr line: which attempt, why.
      if (progress === undefined && event.type === 'llm/retry') say(describeRetry(event.data as RetryLine))
      const denial = sandboxDenial(event)
      if (denial !== undefined) host.stderr.write(`dsh: ${denial} was denied by the sandbox (${approval?.mode(session) ?? 'confined'} mode). ${widerHint(approval?.mode(session))}\n`)
    })
    const onAbort = () => agent.cancel({ reason: { kind: 'user' } })
    host.signal.addEventListener('abort', onAbort, { once: true })
    // The reader went away (`dsh "task" | head`): a shell tool would die of SIGPIPE. The run stops
    // as on SIGTERM (the turn closed, the session stored) and dsh exits 141, printing nothing more.
    let readerGone = false
    const onOutputError = (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' || readerGone) return
      readerGone = true
      onAbort()
    }
    host.stdout.on('error', onOutputError)
    host.stderr.on('error', onOutputError)
    let command: CommandOutcome | undefined
    try {
      try {
        // A task starting with `/name` runs a registered slash command first (docs/commands.md).
        command = await this.ctx.get('commands')?.execute(agent, args.task, { signal: host.signal })
        if (command === undefined) agent.followup(args.task)
        agent = this.ctx.agents.get(agent.id) ?? agent
        // Continuable children may still run and answer the parent with notices (SA-10).
        const subagents = this.ctx.get('subagents')
        if (subagents !== undefined) await subagents.whenQuiet(agent.id)
        else await agent.whenIdle()
      } finally {
        host.signal.removeEventListener('abort', onAbort)
        dispose()
        offUnavailable()
        offQuestion()
        progress?.done()
        // Background jobs end with the process: say which were still running.
        const running = this.ctx.get('jobs')?.list(session.id).filter(isRunning) ?? []
        if (running.length > 0) say(`stopping ${running.length === 1 ? 'a background job' : `${running.length} background jobs`} still running at exit: ${running.map(job => `${job.id} (${job.label})`).join(', ')}`)
        // Text mode says which session this was and how to go on (also after Ctrl-C), on stderr so
        // scripts reading stdout get only the answer; json and stream-json carry the id.
        if (args.output === 'text') host.stderr.write(`dsh: session ${session.id}; continue with: dsh --session ${session.id} "..."\n`)
      }
      if (readerGone) return EXIT_SIGPIPE
      // Nothing is reported done that the store does not hold: the last events are saved first,
      // retried while the store is away for a while (docs/persistence.md, "When the store fails").
      const saved = await this.ctx.get('sessionPersistence')?.finalSave(session)
      const code = this.report(session, start, args.output, command, saved?.stored === false ? notStoredMessage(session.id, session.length, saved) : undefined)
      // The answer has left the process before the code is final: a reader that left while it
      // was going out cut the run short too.
      const cut = await Promise.all([delivered(host.stdout), delivered(host.stderr)])
      return readerGone || cut.includes(true) ? EXIT_SIGPIPE : code
    } finally {
      host.stdout.off('error', onOutputError)
      host.stderr.off('error', onOutputError)
    }
  }

  /** Prints the run's outcome (the answer, or the slash command's text) and gives the exit code. */
  private report(session: Session, start: number, output: HeadlessArgs['output'], command: CommandOutcome | undefined, unstored: string | undefined): number {
    const { host } = this.ctx
    // A run whose session the store does not fully hold ended in error, whatever its turn said.
    const storeError = unstored === undefined ? undefined : { code: 'SESSION_NOT_STORED', message: unstored }
    // stream-json's last line is the recorded `result` shape (with `error` when not stored); json
    // (ours) adds how the run ended.
    const result = (text: string, reason: unknown) => host.stdout.write(`${JSON.stringify({
      type: 'result', sessionId: session.id, output: text, usage: usageSince(session, start),
      ...output === 'json' ? { reason: storeError === undefined ? reason : { kind: 'error', error: storeError } } : storeError === undefined ? {} : { error: storeError },
    })}\n`)
    const failed = () => {
      host.stderr.write(`dsh: ${terminalSafe(unstored!)}\n`)
      return 1
    }
    if (command !== undefined && command.kind !== 'prompt') {
      const shown = command.text ?? ''
      if (output !== 'text') result(shown, { kind: 'command', outcome: command.kind })
      else if (shown !== '') (command.kind === 'error' ? host.stderr : host.stdout).write(terminalSafe(shown.endsWith('\n') ? shown : `${shown}\n`))
      if (unstored !== undefined) return failed()
      return command.kind === 'success' ? 0 : 1
    }
    const { text, reason } = finalAnswer(session)
    // json and stream-json keep the exact text (JSON escapes it); text output goes to a terminal.
    if (output !== 'text') result(text, reason ?? null)
    else if (text !== '') host.stdout.write(terminalSafe(text.endsWith('\n') ? text : `${text}\n`))
    if (unstored !== undefined) return failed()
    if (reason?.kind === 'completed') return 0
    host.stderr.write(`dsh: ${terminalSafe(describeFailure(reason))}\n`)
    return 1
  }

  private async openAgent(args: HeadlessArgs, route: { provider: string; model: string }): Promise<Agent> {
    const { agents, host } = this.ctx
    const cwd = args.cwd ?? host.cwd
    let agent: Agent
    if (args.session === undefined) agent = agents.create({ cwd, loop: route })
    else {
      const persistence = this.ctx.get('sessionPersistence')
      if (persistence === undefined) throw new Error('--session needs a persistence row in the profile')
      const { session } = await byIdOrPrefix(persistence, args.session, id => persistence.load(id))
      agent = agents.create({ sessionId: session.id, loop: route })
    }
    // The session's folder (stored, or --cwd) is where tools run: the model is told the same.
    await followSessionCwd(this.ctx, agent)
    return agent
  }
}

interface RetryLine {
  readonly retry: number
  readonly maxRetries: number | null
  readonly delayMs: number
  readonly failure: { readonly code?: string; readonly message?: string }
}

/** `model request failed (CODE: message); retrying, attempt n of N in 0.5s`. */
export function describeRetry(data: RetryLine): string {
  const cause = [data.failure.code, data.failure.message].filter(part => part !== undefined && part !== '').join(': ') || 'unknown error'
  const of = data.maxRetries === null ? '' : ` of ${data.maxRetries}`
  return `model request failed (${cause.split('\n')[0]}); retrying, attempt ${data.retry}${of} in ${(data.delayMs / 1000).toFixed(1)}s`
}

/**
 * With no task words, the task is what stdin holds when it is not a terminal (`echo task | dsh`,
 * `dsh < task.md`), trimmed; empty when it is a terminal (a person would be left waiting at a
 * prompt nobody shows) or holds only blanks.
 */
async function pipedTask(stdin: NodeJS.ReadableStream): Promise<string> {
  if ((stdin as { isTTY?: boolean }).isTTY === true) return ''
  return (await text(stdin)).trim()
}
