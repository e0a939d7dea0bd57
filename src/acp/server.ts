/**
 * The ACP agent server (`dsh --profile acp`): the Agent Client Protocol over stdio, as the
 * original speaks it (see docs/protocols.md and the recorded transcripts).
 *
 * Client -> agent: `initialize`, `authenticate`, `session/new` (absolute cwd), `session/prompt`
 * (answered when the turn ends: stopReason `end_turn` or `cancelled`; a failed turn is a -32603
 * error), `session/cancel` (notification). Agent -> client: `session/update` with
 * `agent_message_chunk` once per committed assistant message with text, and
 * `session/request_permission` when a tool call needs approval (`ctx.approval`, provided here).
 */
import { readFileSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { Service, type Context } from 'cordis'
import { z } from 'zod'
import type { Agent } from '../agent/api.js'
import type { AssistantMessage, ContentBlock } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { SessionEvent, TurnEndReason } from '../session/types.js'
import type { ApprovalService, ToolExecution } from '../tools/api.js'
import { checkFolder, checkReadiness, messageText, openAgent, resolveRoute } from '../sdk/agents.js'
import { ErrorCodes, JsonRpcPeer, method, RpcError } from '../sdk/jsonrpc.js'
import type { CommandsService } from '../commands/api.js'
import '../host/index.js'
import '../tools/api.js'

export const ACP_PROTOCOL_VERSION = 1

export interface AcpServerConfig {
  readonly input?: NodeJS.ReadableStream
  readonly output?: NodeJS.WritableStream
  /** Optional model route for every session (else the agents row default, DSH_MODEL, settings). */
  readonly model?: string
  readonly provider?: string
  /** Overrides `promptCapabilities.image` (default: from the model catalogue). */
  readonly imageInput?: boolean
}

export type StopReason = 'end_turn' | 'cancelled'

/** The options offered with every permission request (as the original offers them). */
export const PERMISSION_OPTIONS = [
  { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
] as const

const textBlock = z.object({ type: z.literal('text'), text: z.string() }).loose()
const imageBlock = z.object({ type: z.literal('image'), data: z.string().min(1), mimeType: z.string() }).loose()
const resourceLink = z.object({ type: z.literal('resource_link'), uri: z.string(), name: z.string().optional() }).loose()
const resource = z.object({ type: z.literal('resource'), resource: z.object({ uri: z.string(), text: z.string().optional() }).loose() }).loose()
const promptBlock = z.discriminatedUnion('type', [textBlock, imageBlock, resourceLink, resource])

const initializeParams = z.object({ protocolVersion: z.number().int().nonnegative() }).loose()
const newSessionParams = z.object({ cwd: z.string(), mcpServers: z.array(z.unknown()).optional() }).loose()
const promptParams = z.object({ sessionId: z.string().min(1), prompt: z.array(promptBlock).min(1, 'needs at least one content block') }).loose()
const cancelParams = z.object({ sessionId: z.string().min(1) }).loose()
const permissionOutcome = z.object({
  outcome: z.discriminatedUnion('outcome', [
    z.object({ outcome: z.literal('cancelled') }).loose(),
    z.object({ outcome: z.literal('selected'), optionId: z.string() }).loose(),
  ]),
}).loose()

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return '0.0.0'
  }
}

/** ACP content blocks -> dsh content: text and images as such, resources as text. */
export function toContentBlocks(prompt: readonly z.output<typeof promptBlock>[]): ContentBlock[] {
  return prompt.map((block): ContentBlock => {
    switch (block.type) {
      case 'text': return { type: 'text', text: block.text }
      case 'image': return { type: 'image', data: block.data, mimeType: block.mimeType }
      case 'resource_link': return { type: 'text', text: `[resource ${block.name ?? block.uri}](${block.uri})` }
      case 'resource': return { type: 'text', text: block.resource.text ?? `[resource ${block.resource.uri}]` }
    }
  })
}

interface PendingPrompt {
  readonly resolve: (reason: TurnEndReason) => void
}

/** `ctx.approval` while the ACP server runs: each `ask` becomes a `session/request_permission`. */
class AcpApproval extends Service implements ApprovalService {
  constructor(ctx: Context, private readonly server: { requestPermission: ApprovalService['request'] }) {
    super(ctx, 'approval')
  }

  request(execution: ToolExecution, reason: string | undefined, signal: AbortSignal): Promise<boolean> {
    return this.server.requestPermission(execution, reason, signal)
  }
}

export class AcpServerApp extends Service {
  static readonly inject = ['host', 'sessions', 'agents', 'llm']

  private peer: JsonRpcPeer | undefined
  /** Sessions opened through this connection. */
  private readonly opened = new Set<string>()
  private readonly prompts = new Map<string, PendingPrompt>()

  constructor(ctx: Context, private readonly config: AcpServerConfig = {}) {
    super(ctx, 'app')
    ctx.plugin(AcpApproval, { requestPermission: (execution: ToolExecution, reason: string | undefined, signal: AbortSignal) => this.requestPermission(execution, reason, signal) })
  }

  async run(): Promise<number> {
    const { host } = this.ctx
    const log = (message: string) => { host.stderr.write(`dsh acp: ${message}\n`) }
    const peer = this.peer = new JsonRpcPeer({
      input: this.config.input ?? process.stdin,
      output: this.config.output ?? host.stdout,
      log,
      methods: {
        initialize: method(initializeParams, () => ({
          protocolVersion: ACP_PROTOCOL_VERSION,
          agentInfo: { name: 'dsh', version: packageVersion() },
          agentCapabilities: { promptCapabilities: { image: this.imageInput(), audio: false, embeddedContext: false } },
          authMethods: [],
        })),
        // Credentials come from the environment and $DSH_HOME; there is nothing to negotiate.
        authenticate: method(z.object({}).loose(), () => ({})),
        'session/new': method(newSessionParams, params => this.newSession(params.cwd)),
        'session/prompt': method(promptParams, params => this.prompt(params.sessionId, toContentBlocks(params.prompt))),
      },
      notifications: {
        'session/cancel': method(cancelParams, params => this.cancel(params.sessionId)),
      },
    })
    const offCommands = this.ctx.on('commands/changed', () => { for (const id of this.opened) this.advertiseCommands(id) })
    const offEvent = this.ctx.on('session/event', (session: Session, event: SessionEvent) => this.onEvent(session, event))
    const offTurnEnd = this.ctx.on('agent/turn-end', (agent: Agent, _turn: number, reason: TurnEndReason) => {
      const pending = this.prompts.get(agent.id)
      if (pending === undefined) return
      this.prompts.delete(agent.id)
      pending.resolve(reason)
    })
    const onSignal = () => { for (const id of this.opened) this.ctx.agents.get(id)?.cancel({ reason: { kind: 'disposed' } }) }
    host.signal.addEventListener('abort', onSignal, { once: true })
    const aborted = new Promise<void>(resolve => host.signal.addEventListener('abort', () => resolve(), { once: true }))
    try {
      await Promise.race([peer.closed, aborted])
      // EOF: the client is gone; no one can see the rest of a running turn.
      for (const id of this.opened) this.ctx.agents.get(id)?.cancel({ reason: { kind: 'disposed' } })
      await Promise.race([peer.settled(), aborted])
      await Promise.all([...this.opened].map(id => this.ctx.agents.get(id)?.whenIdle()))
      await this.ctx.get('sessionPersistence')?.flushAll()
    } finally {
      host.signal.removeEventListener('abort', onSignal)
      offEvent()
      offCommands()
      offTurnEnd()
      await peer.drain()
    }
    return 0
  }

  /**
   * Whether prompts may carry images: the configured route's model accepts them, or (no route
   * configured: the agents row decides) every catalogued model does.
   */
  private imageInput(): boolean {
    if (this.config.imageInput !== undefined) return this.config.imageInput
    const models = this.ctx.llm.models()
    const route = resolveRoute(this.ctx, { provider: this.config.provider, model: this.config.model })
    if (route.model !== undefined) return models.some(info => info.provider === route.provider && info.model === route.model && info.imageInput)
    return models.length > 0 && models.every(info => info.imageInput)
  }

  private async newSession(cwd: string) {
    if (!isAbsolute(cwd)) throw new RpcError(ErrorCodes.invalidParams, `invalid params: cwd must be an absolute path, got ${JSON.stringify(cwd)}`)
    checkFolder(cwd)
    const loop = resolveRoute(this.ctx, { provider: this.config.provider, model: this.config.model })
    const { agent } = await openAgent(this.ctx, { cwd, loop })
    this.opened.add(agent.id)
    // After the answer: the client knows the session id before its first update arrives.
    setImmediate(() => this.advertiseCommands(agent.id))
    return { sessionId: agent.id }
  }

  private async prompt(sessionId: string, content: ContentBlock[]): Promise<{ stopReason: StopReason }> {
    const agent = this.opened.has(sessionId) ? this.ctx.agents.get(sessionId) : undefined
    if (agent === undefined) throw new RpcError(ErrorCodes.invalidParams, `invalid params: unknown session "${sessionId}" (create it with session/new)`)
    if (this.prompts.has(sessionId)) throw new RpcError(ErrorCodes.serverError, `session "${sessionId}" is already running a prompt`)
    checkReadiness(this.ctx, agent)
    // A prompt that is only `/name args` runs a registered slash command (docs/commands.md).
    const commands = this.ctx.get('commands') as CommandsService | undefined
    const only = content.length === 1 && content[0]!.type === 'text' ? content[0]!.text : undefined
    if (commands !== undefined && only !== undefined && commands.parse(only) !== undefined) {
      const outcome = await commands.execute(agent, only, { queue: false })
      if (outcome !== undefined) {
        if (outcome.text !== undefined && outcome.text !== '') {
          this.peer?.notify('session/update', { sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: outcome.text } } })
        }
        if (outcome.kind !== 'prompt') return { stopReason: 'end_turn' }
        const live = this.ctx.agents.get(sessionId) ?? agent
        const ended = new Promise<TurnEndReason>(resolve => this.prompts.set(sessionId, { resolve }))
        live.followup(outcome.input)
        return this.stopReason(await ended)
      }
    }
    const ended = new Promise<TurnEndReason>(resolve => this.prompts.set(sessionId, { resolve }))
    agent.followup(content)
    return this.stopReason(await ended)
  }

  private stopReason(reason: TurnEndReason): { stopReason: StopReason } {
    if (reason.kind === 'aborted') return { stopReason: 'cancelled' }
    if (reason.kind === 'error') throw new RpcError(ErrorCodes.internalError, `Internal error: turn failed: ${reason.error.message}`)
    return { stopReason: 'end_turn' }
  }

  /** ACP `available_commands_update`: the registry's commands visible to this session. */
  private advertiseCommands(sessionId: string): void {
    const commands = this.ctx.get('commands') as CommandsService | undefined
    const agent = this.ctx.agents.get(sessionId)
    if (commands === undefined || agent === undefined) return
    const availableCommands = commands.list(agent.scope).map(command => ({
      name: command.name,
      description: command.description,
      ...(command.argumentHint !== undefined ? { input: { hint: command.argumentHint } } : {}),
    }))
    this.peer?.notify('session/update', { sessionId, update: { sessionUpdate: 'available_commands_update', availableCommands } })
  }

  private cancel(sessionId: string): void {
    if (!this.opened.has(sessionId)) return
    this.ctx.agents.get(sessionId)?.cancel()
  }

  /** Committed assistant text (interrupted prefixes included) becomes one `agent_message_chunk`. */
  private onEvent(session: Session, event: SessionEvent): void {
    if (event.type !== 'assistant/message' || !this.opened.has(session.id)) return
    const text = messageText((event.data as { message: AssistantMessage }).message.content)
    if (text === '') return
    this.peer?.notify('session/update', { sessionId: session.id, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } })
  }

  private async requestPermission(execution: ToolExecution, reason: string | undefined, signal: AbortSignal): Promise<boolean> {
    const peer = this.peer
    const agent = this.ctx.agents.list().find(candidate => candidate.scope === execution.scope)
    if (peer === undefined || agent === undefined || !this.opened.has(agent.id)) return false
    let rawInput: unknown
    try {
      rawInput = execution.arguments.trim() === '' ? {} : JSON.parse(execution.arguments)
    } catch {
      rawInput = execution.arguments
    }
    const answer = await peer.request('session/request_permission', {
      sessionId: agent.id,
      toolCall: { toolCallId: execution.callId, title: reason === undefined ? execution.name : `${execution.name}: ${reason}`, rawInput },
      options: PERMISSION_OPTIONS,
    })
    if (signal.aborted) return false
    const parsed = permissionOutcome.safeParse(answer)
    if (!parsed.success) throw new Error(`the client answered session/request_permission with ${JSON.stringify(answer)}`)
    return parsed.data.outcome.outcome === 'selected' && parsed.data.outcome.optionId === 'allow-once'
  }
}
