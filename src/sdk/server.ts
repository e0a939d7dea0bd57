/**
 * The JSON-RPC SDK server (`dsh --profile sdk`): newline-delimited JSON-RPC 2.0 on stdin/stdout,
 * stdout carrying frames only (diagnostics go to stderr). See docs/protocols.md.
 *
 * Requests: `initialize`, `session/create` (optional `mcpServers`, MC-10), `session/prompt` (an enqueue receipt), `session/cancel`, `session/list`,
 * `session/load`, `shutdown`. Notifications to the client: `session.event {sessionId, event}` for
 * every appended event of every live session, `session.status {sessionId, status}`, and with
 * `initialize {output: true}` `session.output {sessionId, callId, toolName, stream, text}` (a
 * running call's output, not in the log). Requests to
 * the client: `approval/request {sessionId, id, toolName, callId, reason, arguments?, scopes?}`,
 * answered `{outcome: "allowed-once" | "rejected" | "cancelled"}` or, for a scope in `scopes`,
 * `"allowed-session"` / `"allowed-always"`, and `question/request {sessionId, id,
 * callId, questions}` (`ask_user_question`), answered `{answers}` or `{outcome: "cancelled"}`; an
 * error answer fails closed.
 *
 * Every request but `initialize` is answered -32002 until an `initialize` succeeded; values a
 * client sent are quoted back in errors cut to 200 characters (`clip`, jsonrpc.ts).
 *
 * The server ends on stdin EOF (running turns finish first) or on `shutdown` (running turns are
 * cancelled); either way every session is flushed and the exit code is 0.
 */
import { readFileSync } from 'node:fs'
import { isAbsolute, resolve } from 'node:path'
import { Service, type Context } from 'cordis'
import type { ApprovalService, QuestionAnswer } from '../approval/api.js'
import type { CommandsService } from '../commands/api.js'
import { z } from 'zod'
import '../subagents/api.js'
import type { Agent } from '../agent/api.js'
import type { ContentBlock } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { SessionEvent } from '../session/types.js'
import type { ToolOutputChunk } from '../tools/api.js'
import { checkFolder, checkReadiness, followSessionCwd, openAgent, resolveRoute, type RouteRequest } from './agents.js'
import { imageRefusal, storeInlineImages } from './images.js'
import { AttachmentError } from '../session/attachments.js'
import { clip, ErrorCodes, JsonRpcPeer, method, RpcError } from './jsonrpc.js'
import { McpRefusedError } from '../mcp/api.js'
import { McpConfigError, parseSessionServers, type McpServerConfig } from '../mcp/config.js'
import '../host/index.js'

/** `session.output` gathers a call's output this long (ms), so a chatty command is a few a second. */
const OUTPUT_GATHER_MS = 100
/** At most this much of a call's output (characters) per gathering; older text is dropped and counted. */
const OUTPUT_GATHER_CHARS = 64 * 1024

export const SDK_PROTOCOL_VERSION = 1

export interface SdkServerConfig {
  /** Frames in (default: process.stdin). */
  readonly input?: NodeJS.ReadableStream
  /** Frames out (default: the host's stdout). */
  readonly output?: NodeJS.WritableStream
}

const textBlock = z.object({ type: z.literal('text'), text: z.string() })
const imageBlock = z.object({ type: z.literal('image'), data: z.string().min(1), mimeType: z.string().regex(/^image\//, 'must be an image/* type') })
export const contentBlocksSchema = z.array(z.discriminatedUnion('type', [textBlock, imageBlock])).min(1, 'needs at least one content block')

const initializeParams = z.object({
  cwd: z.string().min(1).optional(),
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  maxTokens: z.number().int().positive().optional(),
  output: z.boolean().optional(),
})
const promptParams = z.object({
  sessionId: z.string().min(1).optional(),
  contentBlocks: contentBlocksSchema,
})
const sessionParams = z.object({ sessionId: z.string().min(1) })
const commandParams = z.object({
  sessionId: z.string().min(1).optional(),
  /** `/name args`, as a user types it. */
  text: z.string().min(1),
})
const commandsParams = z.object({ sessionId: z.string().min(1).optional() })
const cancelParams = sessionParams.extend({ keepInbox: z.boolean().optional() })
const loadParams = sessionParams.extend({ events: z.boolean().optional() })
const createParams = z.object({
  sessionId: z.string().min(1).optional(),
  /** MC-10: per-session MCP servers, in the ACP `session/new` shape. */
  mcpServers: z.array(z.unknown()).optional(),
})

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return '0.0.0'
  }
}

export class SdkServerApp extends Service {
  static readonly inject = ['host', 'sessions', 'agents', 'llm']

  private cwd: string
  private route: RouteRequest = {}
  private stopping = false
  /** `initialize {output: true}`: running calls' output goes out as `session.output`. */
  private sendOutput = false
  /** Per-session MCP servers by session id, stopped with their agent or the server. */
  private readonly stopServers = new Map<string, () => Promise<void>>()

  constructor(ctx: Context, private readonly config: SdkServerConfig = {}) {
    super(ctx, 'app')
    this.cwd = ctx.host.cwd
  }

  async run(): Promise<number> {
    const { host } = this.ctx
    const log = (message: string) => { host.stderr.write(`dsh sdk: ${message}\n`) }
    let stop!: (how: 'eof' | 'shutdown') => void
    const stopped = new Promise<'eof' | 'shutdown'>(resolve => { stop = resolve })
    const peer: JsonRpcPeer = new JsonRpcPeer({
      input: this.config.input ?? process.stdin,
      output: this.config.output ?? host.stdout,
      log,
      // Nothing runs before the client said who it is and where (cwd, route): -32002 until then.
      initializeFirst: 'initialize',
      methods: {
        initialize: method(initializeParams, params => this.initialize(params)),
        'session/prompt': method(promptParams, params => this.prompt(params)),
        'session/command': method(commandParams, params => this.command(params)),
        'session/commands': method(commandsParams, params => this.commandList(params)),
        'session/cancel': method(cancelParams, params => this.cancel(params)),
        'session/list': method(z.object({}), () => this.list()),
        'session/load': method(loadParams, params => this.load(params)),
        'session/create': method(createParams, params => this.create(params)),
        shutdown: method(z.object({}), async () => {
          await this.stop(true)
          // After the answer is written (it goes out once this handler returns).
          setImmediate(() => stop('shutdown'))
          return {}
        }),
      },
    })
    const output = this.gatherOutput(peer)
    const offEvent = this.ctx.on('session/event', (session: Session, event: SessionEvent) => {
      output.flush()
      peer.notify('session.event', { sessionId: session.id, event })
    })
    const offStatus = this.ctx.on('agent/status', (agent: Agent, status) => {
      peer.notify('session.status', { sessionId: agent.id, status })
    })
    const offDisposed = this.ctx.on('agent/disposed', (agent: Agent) => {
      const stopServers = this.stopServers.get(agent.id)
      this.stopServers.delete(agent.id)
      void stopServers?.()
    })
    const offClient = this.answerFromClient(peer, log)
    // SA-17: delegation runs, interleaved with the children's own session.event/status.
    const offStarted = this.ctx.on('subagent/started', (info) => {
      peer.notify('subagent.started', { parentSessionId: info.parentSessionId, childSessionId: info.childSessionId })
    })
    const offFinished = this.ctx.on('subagent/finished', (info) => {
      peer.notify('subagent.finished', info)
    })
    const onSignal = () => { void this.stop(true).then(() => stop('shutdown')) }
    host.signal.addEventListener('abort', onSignal, { once: true })
    void peer.closed.then(async () => {
      // EOF right after `shutdown` (or a signal) must not stop twice: by then the app may be unloading.
      if (this.stopping) return
      await peer.settled()
      await this.stop(false)
      stop('eof')
    }).catch(error => {
      log(`stopping after end of input failed: ${error instanceof Error ? error.message : String(error)}`)
      stop('eof')
    })
    try {
      await stopped
    } finally {
      host.signal.removeEventListener('abort', onSignal)
      offEvent()
      output.dispose()
      offStatus()
      offDisposed()
      offClient()
      offStarted()
      offFinished()
      await peer.drain()
    }
    return 0
  }

  /**
   * Live output (opt-in, `initialize {output: true}`), gathered for a tenth of a second per call;
   * `flush` sends what is gathered, before any later event, so a call's output always precedes
   * its tool/result.
   */
  private gatherOutput(peer: JsonRpcPeer): { flush(): void; dispose(): void } {
    const gathered = new Map<string, { sessionId: string; toolName: string; segments: { stream: 'stdout' | 'stderr'; text: string; dropped: number }[]; size: number }>()
    let outputTimer: NodeJS.Timeout | undefined
    const sendGathered = () => {
      clearTimeout(outputTimer)
      outputTimer = undefined
      for (const [callId, call] of gathered) {
        for (const segment of call.segments) {
          peer.notify('session.output', { sessionId: call.sessionId, callId, toolName: call.toolName, stream: segment.stream, text: segment.text, ...segment.dropped > 0 ? { dropped: segment.dropped } : {} })
        }
      }
      gathered.clear()
    }
    const offOutput = this.ctx.on('tools/output', (chunk: ToolOutputChunk) => {
      if (!this.sendOutput || chunk.session === undefined) return
      let call = gathered.get(chunk.callId)
      if (call === undefined) gathered.set(chunk.callId, call = { sessionId: chunk.session.id, toolName: chunk.toolName, segments: [], size: 0 })
      const last = call.segments.at(-1)
      if (last?.stream === chunk.stream) last.text += chunk.text
      else call.segments.push({ stream: chunk.stream, text: chunk.text, dropped: 0 })
      // A flood keeps its latest text: the oldest gathered is dropped, and counted on its segment.
      call.size += chunk.text.length
      while (call.size > OUTPUT_GATHER_CHARS) {
        const first = call.segments[0]
        const cut = Math.min(first.text.length, call.size - OUTPUT_GATHER_CHARS)
        first.text = first.text.slice(cut)
        first.dropped += cut
        call.size -= cut
        if (first.text === '' && call.segments.length > 1) call.segments[1].dropped += call.segments.shift()!.dropped
      }
      outputTimer ??= setTimeout(sendGathered, OUTPUT_GATHER_MS)
    })
    return {
      flush: () => { if (gathered.size > 0) sendGathered() },
      dispose: () => { offOutput(); clearTimeout(outputTimer) },
    }
  }

  /** The client answers approvals and questions; returns the disposer of both answerers. */
  private answerFromClient(peer: JsonRpcPeer, log: (message: string) => void): () => void {
    // Approval requests go to the client as `approval/request` JSON-RPC requests; a client that
    // does not answer them (no `onApproval`) fails closed: the request ends `unavailable`.
    const approval = this.ctx.get('approval') as ApprovalService | undefined
    const offAnswerer = approval?.answerer(async (request, signal) => {
      const answer = await peer.request('approval/request', {
        sessionId: request.sessionId, id: request.id, toolName: request.toolName, callId: request.callId, reason: request.reason,
        ...(request.arguments !== undefined ? { arguments: request.arguments } : {}),
        ...(request.scopes !== undefined ? { scopes: request.scopes } : {}),
        ...(request.grants !== undefined ? { grants: request.grants } : {}),
        ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
        ...(request.askedBy !== undefined ? { askedBy: request.askedBy } : {}),
      })
      if (signal.aborted) return 'cancelled'
      const outcome = (answer as { outcome?: unknown } | null)?.outcome
      if (outcome === 'allowed-once' || outcome === 'rejected' || outcome === 'cancelled') return outcome
      const scope = outcome === 'allowed-session' ? 'session' : outcome === 'allowed-always' ? 'always' : undefined
      if (scope !== undefined && request.scopes?.includes(scope) === true) return outcome as 'allowed-session' | 'allowed-always'
      if (scope !== undefined) log(`the client answered approval/request ${request.id} with ${outcome}, which it does not offer (scopes: ${JSON.stringify(request.scopes ?? [])}); it fails closed`)
      throw new Error(`the client answered approval/request with ${JSON.stringify(answer)}`)
    })
    // ask_user_question goes to the client as `question/request`; a client without `onQuestion`
    // answers with an error and the question fails closed (`unavailable`).
    const offQuestioner = approval?.questioner(async (question, signal): Promise<'cancelled' | readonly QuestionAnswer[]> => {
      const answer = await peer.request('question/request', { sessionId: question.sessionId, id: question.id, callId: question.callId, questions: question.questions })
      if (signal.aborted) return 'cancelled'
      const reply = answer as { outcome?: unknown; answers?: unknown } | null
      if (reply?.outcome === 'cancelled') return 'cancelled'
      if (Array.isArray(reply?.answers)) return reply.answers as QuestionAnswer[]
      throw new Error(`the client answered question/request with ${JSON.stringify(answer)}`)
    })
    return () => {
      offAnswerer?.()
      offQuestioner?.()
    }
  }

  private initialize(params: z.output<typeof initializeParams>) {
    const cwd = params.cwd === undefined ? this.cwd : isAbsolute(params.cwd) ? params.cwd : resolve(this.ctx.host.cwd, params.cwd)
    checkFolder(cwd)
    const route: RouteRequest = { provider: params.provider, model: params.model, maxTokens: params.maxTokens }
    const loop = resolveRoute(this.ctx, route)
    this.cwd = cwd
    this.route = route
    if (params.output !== undefined) this.sendOutput = params.output
    return {
      protocolVersion: SDK_PROTOCOL_VERSION,
      serverInfo: { name: 'dsh', version: packageVersion() },
      cwd: this.cwd,
      ...(loop.provider !== undefined ? { provider: loop.provider, model: loop.model } : {}),
      methods: ['initialize', 'session/create', 'session/prompt', 'session/command', 'session/commands', 'session/cancel', 'session/list', 'session/load', 'shutdown'],
      notifications: ['session.event', 'session.status', 'subagent.started', 'subagent.finished', ...this.sendOutput ? ['session.output'] : []],
    }
  }

  private async prompt(params: z.output<typeof promptParams>) {
    if (this.stopping) throw new RpcError(ErrorCodes.serverError, 'the server is shutting down')
    const loop = resolveRoute(this.ctx, this.route)
    const { agent, created } = await openAgent(this.ctx, { sessionId: params.sessionId, cwd: this.cwd, loop })
    try {
      checkReadiness(this.ctx, agent)
    } catch (error) {
      if (created) await this.discardCreated(agent)
      throw error
    }
    // Images are stored with the session and referenced by hash; a text-only route refuses them.
    const content = params.contentBlocks as ContentBlock[]
    const refusal = imageRefusal(this.ctx, agent.config, content)
    let stored: ContentBlock[]
    try {
      if (refusal !== undefined) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${refusal}`)
      stored = await storeInlineImages(this.ctx, agent.id, content)
    } catch (error) {
      if (created) await this.discardCreated(agent)
      if (error instanceof AttachmentError) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${error.message}`)
      throw error
    }
    const message = agent.followup(stored)
    return { messageId: message.id, sessionId: agent.id }
  }

  /**
   * A session this request created and then refused leaves nothing behind: not live, not
   * stored (listed), no writer lock (docs/persistence.md, "Session lifecycle").
   */
  private async discardCreated(agent: Agent): Promise<void> {
    await agent.dispose()
    const persistence = this.ctx.get('sessionPersistence')
    if (persistence !== undefined) await persistence.delete(agent.id)
    else this.ctx.sessions.close(agent.id)
  }

  private registry(): CommandsService {
    const commands = this.ctx.get('commands') as CommandsService | undefined
    if (commands === undefined) throw new RpcError(ErrorCodes.methodNotFound, 'no slash commands in this profile (no commands row)')
    return commands
  }

  /**
   * `session/command {sessionId?, text}`: runs a slash command (`/status`, `/compact`, `/model
   * NAME`...) in the session, between turns, as every surface does (docs/commands.md). Text that
   * names no registered command is refused: prompts go through `session/prompt`. A command whose
   * outcome is a prompt (`/init`, a skill) queues it: `messageId` is that message's.
   */
  private async command(params: z.output<typeof commandParams>) {
    if (this.stopping) throw new RpcError(ErrorCodes.serverError, 'the server is shutting down')
    const commands = this.registry()
    const parsed = commands.parse(params.text)
    if (parsed === undefined) throw new RpcError(ErrorCodes.invalidParams, `invalid params: "${clip(params.text)}" is not a slash command (send prompts with session/prompt)`)
    const loop = resolveRoute(this.ctx, this.route)
    const { agent, created } = await openAgent(this.ctx, { sessionId: params.sessionId, cwd: this.cwd, loop })
    if (commands.get(parsed.name, agent.scope) === undefined) {
      if (created) await this.discardCreated(agent)
      throw new RpcError(ErrorCodes.invalidParams, `invalid params: no command /${clip(parsed.name)} (session/commands lists them)`)
    }
    const outcome = (await commands.execute(agent, params.text, { queue: false }))!
    const live = this.ctx.agents.get(agent.id) ?? agent
    const messageId = outcome.kind === 'prompt' ? live.followup(outcome.input).id : undefined
    return { sessionId: agent.id, kind: outcome.kind, ...outcome.text !== undefined ? { text: outcome.text } : {}, ...messageId !== undefined ? { messageId } : {} }
  }

  /** `session/commands {sessionId?}`: the commands a session (or any new one) can run, sorted by name. */
  private commandList(params: z.output<typeof commandsParams>) {
    const commands = this.registry()
    const agent = params.sessionId !== undefined ? this.ctx.agents.get(params.sessionId) : undefined
    return { commands: commands.list(agent?.scope).map(command => ({ name: command.name, description: command.description, ...command.argumentHint !== undefined ? { argumentHint: command.argumentHint } : {} })) }
  }

  /** Opens (or creates) a session without prompting it; `mcpServers` start for it alone (MC-10). */
  private async create(params: z.output<typeof createParams>) {
    if (this.stopping) throw new RpcError(ErrorCodes.serverError, 'the server is shutting down')
    let servers: McpServerConfig[] = []
    if ((params.mcpServers ?? []).length > 0) {
      if (this.ctx.get('mcp') === undefined) throw new RpcError(ErrorCodes.invalidParams, 'mcpServers is not supported (no mcp row in the profile)')
      try {
        servers = parseSessionServers(params.mcpServers!, 'session/create mcpServers')
      } catch (error) {
        if (error instanceof McpConfigError) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${error.message}`)
        throw error
      }
    }
    const loop = resolveRoute(this.ctx, this.route)
    const { agent } = await openAgent(this.ctx, { sessionId: params.sessionId, cwd: this.cwd, loop })
    if (servers.length > 0) {
      try {
        const stop = await this.ctx.get('mcp')!.startSessionServers(agent.scope, agent.id, servers)
        const previous = this.stopServers.get(agent.id)
        this.stopServers.set(agent.id, async () => { await previous?.(); await stop() })
      } catch (error) {
        if (error instanceof McpRefusedError) throw new RpcError(ErrorCodes.invalidParams, error.message)
        throw error
      }
    }
    return { sessionId: agent.id }
  }

  private cancel(params: z.output<typeof cancelParams>) {
    const agent = this.ctx.agents.get(params.sessionId)
    if (agent === undefined) throw new RpcError(ErrorCodes.invalidParams, `invalid params: no live session "${clip(params.sessionId)}"`)
    const wasRunning = agent.status === 'running'
    agent.cancel({ keepInbox: params.keepInbox ?? false })
    return { cancelled: wasRunning }
  }

  private async list() {
    const live = new Map(this.ctx.sessions.list().map(session => [session.id, session]))
    const stored = await this.ctx.get('sessionPersistence')?.list() ?? []
    const out = stored.map(summary => ({
      ...summary,
      live: live.has(summary.id),
      status: this.ctx.agents.get(summary.id)?.status ?? 'idle',
    }))
    for (const session of live.values()) {
      if (stored.some(summary => summary.id === session.id)) continue
      out.push({
        id: session.id, title: null, cwd: session.header.cwd, createdAt: session.header.createdAt, updatedAt: Date.now(),
        turns: session.position.turn, length: session.length, live: true, status: this.ctx.agents.get(session.id)?.status ?? 'idle',
      } as (typeof out)[number])
    }
    return { sessions: out }
  }

  private async load(params: z.output<typeof loadParams>) {
    const live = this.ctx.sessions.get(params.sessionId)
    let repaired = 0
    let session: Session
    if (live !== undefined) session = live
    else {
      const persistence = this.ctx.get('sessionPersistence')
      if (persistence === undefined) throw new RpcError(ErrorCodes.serverError, 'session/load needs a persistence row in the profile')
      let result
      try {
        result = await persistence.load(params.sessionId)
      } catch (error) {
        if (error instanceof Error && error.name === 'SessionNotStoredError') throw new RpcError(ErrorCodes.invalidParams, `invalid params: no stored session "${clip(params.sessionId)}"`)
        throw error
      }
      session = result.session
      repaired = result.repaired.length
    }
    let agent = this.ctx.agents.get(session.id)
    if (agent === undefined) {
      agent = this.ctx.agents.create({ sessionId: session.id, loop: resolveRoute(this.ctx, this.route) })
      await followSessionCwd(this.ctx, agent)
    }
    return {
      sessionId: session.id,
      cwd: session.header.cwd,
      length: session.length,
      turns: session.position.turn,
      repaired,
      status: agent.status,
      ...(params.events ? { events: session.events } : {}),
    }
  }

  /** Refuses new prompts; cancels (`cancel`) or drains running turns; flushes every session. */
  private async stop(cancel: boolean): Promise<void> {
    this.stopping = true
    const agents = this.ctx.agents.list()
    if (cancel) for (const agent of agents) agent.cancel({ reason: { kind: 'disposed' } })
    await Promise.all(agents.map(agent => agent.whenIdle()))
    await this.ctx.get('sessionPersistence')?.flushAll()
    const stops = [...this.stopServers.values()]
    this.stopServers.clear()
    await Promise.all(stops.map(stop => stop()))
  }
}
