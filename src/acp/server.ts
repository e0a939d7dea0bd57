/**
 * The ACP agent server (`dsh --profile acp`): the Agent Client Protocol over stdio, as the
 * original speaks it (see docs/protocols.md and the recorded transcripts).
 *
 * Client -> agent: `initialize`, `authenticate`, `session/new` (absolute cwd), `session/load`
 * (replays the stored conversation as updates), `session/resume`, `session/list`,
 * `session/close`, `session/delete`, `session/prompt` (answered when the turn ends: stopReason
 * `end_turn` or `cancelled`; a failed turn is a -32603 error), `session/cancel` (notification).
 * Agent -> client: `session/update` (what the agent does, see ./updates.ts; `updates: recorded`
 * sends only what the original sends: one `agent_message_chunk` per committed assistant message
 * with text, and no session methods beyond new/prompt/cancel), and `session/request_permission`
 * when a tool call of one of its sessions needs approval (an answerer on `ctx.approval`); in
 * `recorded` mode its params are exactly `{sessionId, toolCall:{toolCallId}, options}` (AP-4),
 * in `full` mode the tool call also carries `title` and `rawInput`. In `full` mode, for a client
 * that advertised `clientCapabilities.elicitation.form`, `ask_user_question` becomes
 * `elicitation/create` (./elicitation.ts), withdrawn with `$/cancel_request` on `session/cancel`.
 */
import { readFileSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { Service, type Context } from 'cordis'
import { z } from 'zod'
import { cancelParams, initializeParams, listParams, loadParams, newSessionParams, promptParams, sessionParams, setModeParams, toContentBlocks } from './params.js'
import type { Agent } from '../agent/api.js'
import type { AssistantMessage, ContentBlock } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { SessionEvent, TurnEndReason } from '../session/types.js'
import type { ApprovalAnswer, ApprovalService, PendingApproval, PendingQuestion, QuestionAnswer } from '../approval/api.js'
import { askPermission } from './permissions.js'
import type { ToolContext, ToolExecution, ToolOutputChunk, ToolResultRecord } from '../tools/api.js'
import type { ScopeKey } from '../scope/index.js'
import { editorFiles, provideEditorFiles, type EditorFiles } from '../tools/editor-files.js'
import { provideEditorTerminal } from '../tools/editor-terminal.js'
import { acpTerminal } from './terminal.js'
import { askForm } from './elicitation.js'
import { liveUpdates, parseArguments, readSmallText, replayUpdates, replayedAttachments, toolPath, type FileChange, type SessionUpdate, type UpdateMode } from './updates.js'
import { imageRefusal, storeInlineImages } from '../sdk/images.js'
import { AttachmentError } from '../session/attachments.js'
import { checkFolder, checkReadiness, messageText, openAgent, resolveRoute } from '../sdk/agents.js'
import { clip, ErrorCodes, JsonRpcPeer, method, RpcError, type MethodSpec } from '../sdk/jsonrpc.js'
import type { CommandsService } from '../commands/api.js'
import { AcpSessionServers } from './session-servers.js'
import '../mcp/api.js'
import '../host/index.js'
import '../tools/api.js'

export const ACP_PROTOCOL_VERSION = 1

/** Live output of a running call: the latest this many characters are its content. */
const LIVE_OUTPUT_CHARS = 8192
/** Live output is gathered this long (ms) per update, so a chatty command is a few a second. */
const LIVE_OUTPUT_MS = 100

export interface AcpServerConfig {
  readonly input?: NodeJS.ReadableStream
  readonly output?: NodeJS.WritableStream
  /** Optional model route for every session (else the agents row default, DSH_MODEL, settings). */
  readonly model?: string
  readonly provider?: string
  /** Overrides `promptCapabilities.image` (default: from the model catalogue). */
  readonly imageInput?: boolean
  /**
   * `mcpServers` of session/new, /load and /resume (MC-10): `accept` starts them for that session only (needs the `mcp`
   * row); `refuse` answers -32602 `mcpServers is not supported`, as the original does.
   */
  readonly mcpServers?: 'accept' | 'refuse'
  /**
   * `full` (default): stream reasoning, text, tool calls with status and diffs, and the plan, and
   * offer the session methods. `recorded`: exactly the frames the original system sends.
   */
  readonly updates?: UpdateMode
}

/** Knob events that may change the preset in force. */
const KNOB_EVENTS = new Set(['permission/preset', 'sandbox/mode', 'approval/policy'])

const MODE_TEXT: Readonly<Record<string, { name: string; description: string }>> = {
  'read-only': { name: 'Read only', description: 'Reads anything; writes and commands that change files need your approval.' },
  'workspace-write': { name: 'Workspace write', description: 'Writes inside the session folder; anything beyond it needs your approval.' },
  'danger-full-access': { name: 'Full access', description: 'No sandbox and no approvals: the agent acts with your rights.' },
}

/** Sessions per `session/list` page. */
const LIST_PAGE = 100
/** Files larger than this get no `diff` block (the editor reads them itself). */
export type StopReason = 'end_turn' | 'cancelled'

export { PERMISSION_OPTIONS } from './permissions.js'
export { toContentBlocks } from './params.js'

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return '0.0.0'
  }
}

interface PendingPrompt {
  readonly resolve: (reason: TurnEndReason) => void
}

export class AcpServerApp extends Service {
  static readonly inject = ['host', 'sessions', 'agents', 'llm']

  private peer: JsonRpcPeer | undefined
  /** Sessions opened through this connection. */
  private readonly opened = new Set<string>()
  private readonly prompts = new Map<string, PendingPrompt>()
  /** Per-session MCP servers (MC-10), stopped when their agent goes away or the server ends. */
  private readonly servers: AcpSessionServers
  /** File changes captured around write/edit bodies, until their result is sent (by call id). */
  private readonly changes = new Map<string, FileChange>()
  private readonly mode: UpdateMode
  /** What the client offers of its own file system (`initialize.clientCapabilities.fs`). */
  private clientFs = { read: false, write: false }
  /** The client offers its terminals (`initialize.clientCapabilities.terminal`). */
  private clientTerminal = false
  /** The client renders forms (`initialize.clientCapabilities.elicitation.form`): questions go there. */
  private clientForms = false
  /** Disposers of the editor-file and editor-terminal routing of each session opened here. */
  private readonly editorRouting = new Map<string, () => void>()
  /** Editor terminals embedded in tool calls, until their result is sent (by call id). */
  private readonly terminals = new Map<string, string>()
  /** The mode (permission preset) each session's client was last told. */
  private readonly sentModes = new Map<string, string>()
  /** Output of running local calls (by call id): the latest tail, and whether the client has it. */
  private readonly liveOutput = new Map<string, { sessionId: string; text: string; sent: boolean }>()
  private liveTimer: NodeJS.Timeout | undefined

  constructor(ctx: Context, private readonly config: AcpServerConfig = {}) {
    super(ctx, 'app')
    const mode = config.updates ?? 'full'
    if (mode !== 'full' && mode !== 'recorded') throw new Error(`acp-server: config.updates must be "full" or "recorded", got ${JSON.stringify(mode)}`)
    this.mode = mode
    this.servers = new AcpSessionServers(ctx, config.mcpServers)
    // Answers approval requests of the sessions opened here; without `ctx.approval` asks fail closed.
    ctx.inject(['approval'], (ctx) => { ctx.approval.answerer((request, signal) => this.requestPermission(request, signal)) })
    // ask_user_question of the sessions opened here, for a client that renders forms (`full` only).
    if (mode === 'full') ctx.inject(['approval'], (ctx) => { ctx.approval.questioner((question, signal) => this.elicit(question, signal)) })
  }

  async run(): Promise<number> {
    const { host } = this.ctx
    const log = (message: string) => { host.stderr.write(`dsh acp: ${message}\n`) }
    const full = this.mode === 'full'
    const sessionMethods: Readonly<Record<string, MethodSpec<z.ZodType>>> = full
      ? {
          'session/load': method(loadParams, params => this.loadSession(params.sessionId, true, params.mcpServers ?? [])),
          'session/resume': method(loadParams, params => this.loadSession(params.sessionId, false, params.mcpServers ?? [])),
          'session/list': method(listParams, params => this.listSessions(params.cwd ?? undefined, params.cursor ?? undefined)),
          'session/close': method(sessionParams, params => this.closeSession(params.sessionId)),
          'session/delete': method(sessionParams, params => this.deleteSession(params.sessionId)),
          'session/set_mode': method(setModeParams, params => this.setMode(params.sessionId, params.modeId)),
        }
      : {}
    const peer = this.peer = new JsonRpcPeer({
      input: this.config.input ?? process.stdin,
      output: this.config.output ?? host.stdout,
      log, initializeFirst: 'initialize', // ACP: the connection starts with initialize; -32002 before
      methods: {
        initialize: method(initializeParams, params => {
          this.clientFs = { read: params.clientCapabilities?.fs?.readTextFile === true, write: params.clientCapabilities?.fs?.writeTextFile === true }
          this.clientTerminal = params.clientCapabilities?.terminal === true
          this.clientForms = params.clientCapabilities?.elicitation?.form != null
          return this.initialize()
        }),
        authenticate: method(z.object({ methodId: z.string().optional() }).loose(), () => this.authenticate()),
        'session/new': method(newSessionParams, params => this.newSession(params.cwd, params.mcpServers ?? [])),
        'session/prompt': method(promptParams, params => this.prompt(params.sessionId, toContentBlocks(params.prompt))),
        ...sessionMethods,
      },
      notifications: {
        'session/cancel': method(cancelParams, params => this.cancel(params.sessionId)),
      },
    })
    const offCommands = this.ctx.on('commands/changed', () => { for (const id of this.opened) this.advertiseCommands(id) })
    const offEvent = this.ctx.on('session/event', (session: Session, event: SessionEvent) => this.onEvent(session, event))
    const offExecute = full
      ? this.ctx.on('tools/execute', (execution: ToolExecution, _context: ToolContext, next: () => Promise<ToolResultRecord>) => this.aroundBody(execution, next))
      : () => {}
    const offOutput = full ? this.ctx.on('tools/output', (chunk: ToolOutputChunk) => this.onOutput(chunk)) : () => {}
    const offTurnEnd = this.ctx.on('agent/turn-end', (agent: Agent, _turn: number, reason: TurnEndReason) => {
      const pending = this.prompts.get(agent.id)
      if (pending === undefined) return
      this.prompts.delete(agent.id)
      pending.resolve(reason)
    })
    const offDisposed = this.ctx.on('agent/disposed', (agent: Agent) => {
      this.editorRouting.get(agent.id)?.()
      this.editorRouting.delete(agent.id)
      void this.servers.stop(agent.id)
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
      offExecute()
      offOutput()
      clearTimeout(this.liveTimer)
      this.liveOutput.clear()
      offTurnEnd()
      offDisposed()
      await this.servers.stopAll()
      await peer.drain()
    }
    return 0
  }

  private initialize() {
    const promptCapabilities = { image: this.imageInput(), audio: false, embeddedContext: this.mode === 'full' }
    const agentInfo = { name: 'dsh', version: packageVersion() }
    if (this.mode === 'recorded') return { protocolVersion: ACP_PROTOCOL_VERSION, agentInfo, agentCapabilities: { promptCapabilities }, authMethods: [] }
    return {
      protocolVersion: ACP_PROTOCOL_VERSION,
      agentInfo,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities,
        sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {} },
      },
      authMethods: [{
        id: 'api-key',
        name: 'Model API key',
        description: 'dsh reads the key from the environment (DEEPSEEK_API_KEY, or the key variable of the configured provider) or from $DSH_HOME/.credentials.yaml. Set it in the agent environment of your editor, or store it once with the web settings, then restart the agent.',
      }],
    }
  }

  /**
   * Credentials come from the environment and $DSH_HOME: there is nothing to exchange, but an
   * editor asking learns whether a key is there and, when not, how to give one.
   */
  private authenticate(): Record<string, never> {
    const loop = resolveRoute(this.ctx, { provider: this.config.provider, model: this.config.model })
    const provider = loop.provider ?? this.ctx.llm.models()[0]?.provider
    const problem = provider === undefined ? undefined : this.ctx.llm.adapter(provider)?.readiness?.()
    if (problem !== undefined) throw new RpcError(ErrorCodes.serverError, `Authentication required: ${problem}`)
    return {}
  }

  /**
   * Whether prompts may carry images: the model of the route new sessions get (the configured
   * route, else the agents row's) accepts them; with neither, every catalogued model must.
   */
  private imageInput(): boolean {
    if (this.config.imageInput !== undefined) return this.config.imageInput
    const models = this.ctx.llm.models()
    const route = resolveRoute(this.ctx, { provider: this.config.provider, model: this.config.model })
    // No route asked for: new sessions get the agents row's route.
    const effective = route.model !== undefined ? route : this.ctx.agents.defaultLoop
    if (effective?.model !== undefined) return models.some(info => info.provider === effective.provider && info.model === effective.model && info.imageInput)
    return models.length > 0 && models.every(info => info.imageInput)
  }

  private async newSession(cwd: string, mcpServers: readonly unknown[]) {
    if (!isAbsolute(cwd)) throw new RpcError(ErrorCodes.invalidParams, `invalid params: cwd must be an absolute path, got ${clip(JSON.stringify(cwd))}`)
    checkFolder(cwd)
    const servers = this.servers.check(mcpServers)
    const loop = resolveRoute(this.ctx, { provider: this.config.provider, model: this.config.model })
    const { agent } = await openAgent(this.ctx, { cwd, loop })
    this.open(agent)
    // After the answer: the client knows the session id before its first update arrives.
    setImmediate(() => {
      this.advertiseCommands(agent.id)
      void this.trustNotice(agent.id)
    })
    await this.servers.start(agent, servers)
    return { sessionId: agent.id, ...this.modes(agent.id) }
  }

  /** `session/load` (replay: the stored conversation is streamed first) and `session/resume`. */
  private async loadSession(sessionId: string, replay: boolean, mcpServers: readonly unknown[]): Promise<Record<string, unknown>> {
    const servers = this.servers.check(mcpServers)
    const loop = resolveRoute(this.ctx, { provider: this.config.provider, model: this.config.model })
    const { agent } = await openAgent(this.ctx, { sessionId, cwd: this.ctx.host.cwd, loop, create: false })
    this.open(agent)
    await this.servers.start(agent, servers)
    if (replay) {
      // Stored images go back as images: their bytes are read from the session's attachments.
      const images = new Map<string, { data: string; mimeType: string }>()
      for (const id of replayedAttachments(agent.session.events)) {
        const stored = await this.ctx.sessions.attachments.read(agent.session.id, id).catch(() => undefined)
        if (stored !== undefined) images.set(id, { data: Buffer.from(stored.data).toString('base64'), mimeType: stored.mediaType })
      }
      for (const update of replayUpdates(agent.session.events, agent.session.header.cwd, images)) this.notify(agent.id, update)
    }
    setImmediate(() => this.advertiseCommands(agent.id))
    return { ...this.modes(agent.id) }
  }

  /**
   * The permission presets as ACP session modes (`full` mode with `ctx.approval`): the shipped
   * presets, plus `custom` while the knobs match none of them.
   */
  private modes(sessionId: string): { modes?: { currentModeId: string; availableModes: { id: string; name: string; description: string }[] } } {
    const approval = this.ctx.get('approval') as ApprovalService | undefined
    const agent = this.ctx.agents.get(sessionId)
    if (this.mode !== 'full' || approval === undefined || agent === undefined) return {}
    const current = approval.preset(agent.session)
    const availableModes: { id: string; name: string; description: string }[] = approval.presets().map(preset => ({ id: preset.name, ...(MODE_TEXT[preset.name] ?? { name: preset.name, description: '' }) }))
    if (current === 'custom') availableModes.push({ id: 'custom', name: 'Custom', description: 'The sandbox mode and approval policy match no preset.' })
    this.sentModes.set(sessionId, current)
    return { modes: { currentModeId: current, availableModes } }
  }

  /** `session/set_mode`: selects a permission preset (AP-5: logged only when something changes). */
  private setMode(sessionId: string, modeId: string): Record<string, never> {
    const approval = this.ctx.get('approval') as ApprovalService | undefined
    const agent = this.opened.has(sessionId) ? this.ctx.agents.get(sessionId) : undefined
    if (agent === undefined) throw new RpcError(ErrorCodes.invalidParams, `invalid params: unknown session "${clip(sessionId)}"`)
    const preset = approval?.presets().find(candidate => candidate.name === modeId)
    if (approval === undefined || preset === undefined) {
      throw new RpcError(ErrorCodes.invalidParams, `invalid params: unknown mode "${clip(modeId)}" (available: ${approval?.presets().map(candidate => candidate.name).join(', ') ?? 'none'})`)
    }
    approval.selectPreset(agent.session, preset.name)
    return {}
  }

  /** `current_mode_update` when a knob event changes the preset in force. */
  private modeChanged(session: Session): void {
    const approval = this.ctx.get('approval') as ApprovalService | undefined
    if (approval === undefined) return
    const current = approval.preset(session)
    if (this.sentModes.get(session.id) === current) return
    this.sentModes.set(session.id, current)
    this.notify(session.id, { sessionUpdate: 'current_mode_update', currentModeId: current })
  }

  private async listSessions(cwd: string | undefined, cursor: string | undefined) {
    const persistence = this.ctx.get('sessionPersistence')
    if (persistence === undefined) return { sessions: [] }
    const offset = cursor === undefined ? 0 : Number(cursor)
    if (!Number.isSafeInteger(offset) || offset < 0) throw new RpcError(ErrorCodes.invalidParams, `invalid params: cursor ${clip(JSON.stringify(cursor))} was not issued by this agent`)
    const stored = (await persistence.list())
      .filter(summary => summary.parentSession === undefined && (cwd === undefined || summary.cwd === cwd))
      .sort((a, b) => b.updatedAt - a.updatedAt)
    const page = stored.slice(offset, offset + LIST_PAGE)
    return {
      sessions: page.map(summary => ({
        sessionId: summary.id,
        cwd: summary.cwd ?? '',
        title: summary.title,
        updatedAt: new Date(summary.updatedAt).toISOString(),
      })),
      ...(offset + LIST_PAGE < stored.length ? { nextCursor: String(offset + LIST_PAGE) } : {}),
    }
  }

  /** Ends the session's running turn, stores it and lets it go (it can be loaded again). */
  /**
   * A session this connection acts on. In `full` mode, when the editor offers its file system, the
   * file tools of the session's agent read and write through it (unsaved buffers are seen, edits
   * land in the editor), still behind the sandbox fence and approvals; when it offers terminals,
   * `bash` runs there (the same argv, sandbox runner included, as a local run).
   */
  private open(agent: Agent): void {
    this.opened.add(agent.id)
    if (this.mode !== 'full' || this.editorRouting.has(agent.id)) return
    const sessionId = agent.id
    const disposers: (() => void)[] = []
    if (this.clientFs.read || this.clientFs.write) {
      const files: EditorFiles = {
        ...(this.clientFs.read ? { readText: (path: string) => this.editorRead(sessionId, path) } : {}),
        ...(this.clientFs.write ? { writeText: async (path: string, content: string) => { await this.peer?.request('fs/write_text_file', { sessionId, path, content }) } } : {}),
      }
      disposers.push(provideEditorFiles(agent.scope, files))
    }
    if (this.clientTerminal) {
      disposers.push(provideEditorTerminal(agent.scope, acpTerminal({
        peer: () => this.peer,
        sessionId,
        onCreated: (callId, terminalId) => {
          // Embedded before it can be released: the editor shows the command's output live.
          this.terminals.set(callId, terminalId)
          this.notify(sessionId, { sessionUpdate: 'tool_call_update', toolCallId: callId, status: 'in_progress', content: [{ type: 'terminal', terminalId }] })
        },
      })))
    }
    if (disposers.length > 0) this.editorRouting.set(agent.id, () => { for (const dispose of disposers) dispose() })
  }

  /** `fs/read_text_file`; an editor that cannot find the file answers an error: ENOENT for the tools. */
  private async editorRead(sessionId: string, path: string): Promise<string> {
    const peer = this.peer
    if (peer === undefined) throw Object.assign(new Error(`${path}: the editor is gone`), { code: 'EIO' })
    try {
      const answer = await peer.request<{ content?: unknown }>('fs/read_text_file', { sessionId, path })
      if (typeof answer?.content !== 'string') throw new Error(`the editor answered fs/read_text_file with ${JSON.stringify(answer)}`)
      return answer.content
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      const notFound = (error as { code?: unknown }).code === -32002 || /not found|no such file|does not exist|ENOENT/i.test(message)
      throw Object.assign(new Error(`${path}: ${message}`), { code: notFound ? 'ENOENT' : 'EIO' })
    }
  }

  private async closeSession(sessionId: string): Promise<Record<string, never>> {
    if (!this.opened.has(sessionId)) throw new RpcError(ErrorCodes.invalidParams, `invalid params: unknown session "${clip(sessionId)}"`)
    this.opened.delete(sessionId)
    for (const [callId, live] of this.liveOutput) if (live.sessionId === sessionId) this.liveOutput.delete(callId)
    this.editorRouting.get(sessionId)?.()
    this.editorRouting.delete(sessionId)
    const agent = this.ctx.agents.get(sessionId)
    if (agent !== undefined) {
      agent.cancel()
      await agent.whenIdle()
      await this.ctx.agents.dispose(sessionId)
    }
    await (this.ctx.get('sessionPersistence')?.unload(sessionId) ?? this.ctx.sessions.close(sessionId))
    return {}
  }

  private async deleteSession(sessionId: string): Promise<Record<string, never>> {
    if (this.opened.has(sessionId)) await this.closeSession(sessionId)
    const persistence = this.ctx.get('sessionPersistence')
    if (persistence === undefined || !await persistence.delete(sessionId)) {
      throw new RpcError(ErrorCodes.invalidParams, `invalid params: no stored session "${clip(sessionId)}"`)
    }
    return {}
  }

  private async prompt(sessionId: string, content: ContentBlock[]): Promise<{ stopReason: StopReason }> {
    const agent = this.opened.has(sessionId) ? this.ctx.agents.get(sessionId) : undefined
    if (agent === undefined) throw new RpcError(ErrorCodes.invalidParams, `invalid params: unknown session "${clip(sessionId)}" (create it with session/new${this.mode === 'full' ? ' or open it with session/load' : ''})`)
    if (this.prompts.has(sessionId)) throw new RpcError(ErrorCodes.serverError, `session "${clip(sessionId)}" is already running a prompt`)
    checkReadiness(this.ctx, agent)
    content = await this.withStoredImages(agent, content)
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

  /** Inline images become session attachments; a text-only route or a bad image refuses the prompt (nothing stored). */
  private async withStoredImages(agent: Agent, content: ContentBlock[]): Promise<ContentBlock[]> {
    const refusal = imageRefusal(this.ctx, agent.config, content)
    if (refusal !== undefined) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${refusal}`)
    try {
      return await storeInlineImages(this.ctx, agent.session.id, content)
    } catch (error) {
      if (error instanceof AttachmentError) throw new RpcError(ErrorCodes.invalidParams, `invalid params: ${error.message}`)
      throw error
    }
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
    if (this.mode === 'recorded' || commands === undefined || agent === undefined) return
    const availableCommands = commands.list(agent.scope).map(command => ({
      name: command.name,
      description: command.description,
      ...(command.argumentHint !== undefined ? { input: { hint: command.argumentHint } } : {}),
    }))
    this.peer?.notify('session/update', { sessionId, update: { sessionUpdate: 'available_commands_update', availableCommands } })
  }

  /**
   * Full mode: the launch folder's hooks and `.mcp.json` servers wait for trust, and the editor's
   * user would see that only in the editor's log (the terminal app asks at start). One message in
   * the new session says what would run and that `/trust on` starts it.
   */
  private async trustNotice(sessionId: string): Promise<void> {
    const commands = this.ctx.get('commands') as CommandsService | undefined
    const agent = this.ctx.agents.get(sessionId)
    if (this.mode !== 'full' || agent === undefined || commands?.get('trust', agent.scope) === undefined) return
    const { projectTrustStatus, trustNotice } = await import('../trust/plugin.js')
    let text: string | undefined
    try {
      text = trustNotice(projectTrustStatus(this.ctx.host.cwd, this.ctx.host.home))
    } catch {
      // Unreadable settings: /trust reports it when asked.
      return
    }
    if (text !== undefined && this.opened.has(sessionId)) this.notify(sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } })
  }

  private cancel(sessionId: string): void {
    if (!this.opened.has(sessionId)) return
    this.ctx.agents.get(sessionId)?.cancel()
  }

  private notify(sessionId: string, update: SessionUpdate): void {
    this.peer?.notify('session/update', { sessionId, update })
  }

  private onEvent(session: Session, event: SessionEvent): void {
    if (!this.opened.has(session.id)) return
    if (this.mode === 'full' && KNOB_EVENTS.has(event.type)) this.modeChanged(session)
    for (const update of liveUpdates(event, this.mode, session.header.cwd, this.changes, this.terminals)) this.notify(session.id, update)
    if (event.type === 'tool/result') {
      const callId = (event.data as { message: { content: [{ toolCallId: string }] } }).message.content[0].toolCallId
      this.changes.delete(callId)
      this.terminals.delete(callId)
      // The finishing update (sent above) is the call's last: output still gathered is dropped.
      this.liveOutput.delete(callId)
    }
  }

  /**
   * Output of a running call that runs here (bash; not one in the editor's terminal, which shows
   * its own): the latest tail becomes the call's content, one `tool_call_update` without a status
   * per call every 100 ms at most. The finishing update replaces it with the result.
   */
  private onOutput(chunk: ToolOutputChunk): void {
    const sessionId = chunk.session?.id
    if (sessionId === undefined || !this.opened.has(sessionId) || this.terminals.has(chunk.callId)) return
    const text = ((this.liveOutput.get(chunk.callId)?.text ?? '') + chunk.text).slice(-LIVE_OUTPUT_CHARS)
    this.liveOutput.set(chunk.callId, { sessionId, text, sent: false })
    this.liveTimer ??= setTimeout(() => this.sendOutput(), LIVE_OUTPUT_MS)
  }

  private sendOutput(): void {
    this.liveTimer = undefined
    for (const [callId, live] of this.liveOutput) {
      if (live.sent || !this.opened.has(live.sessionId)) continue
      live.sent = true
      this.notify(live.sessionId, { sessionUpdate: 'tool_call_update', toolCallId: callId, content: [{ type: 'content', content: { type: 'text', text: live.text } }] })
    }
  }

  private agentOf(scope: ScopeKey | undefined): Agent | undefined {
    if (scope === undefined) return undefined
    const agent = this.ctx.agents.list().find(candidate => candidate.scope === scope)
    return agent !== undefined && this.opened.has(agent.id) ? agent : undefined
  }

  /** `in_progress` when a body starts; for file edits, the text before and after (the diff). */
  private async aroundBody(execution: ToolExecution, next: () => Promise<ToolResultRecord>): Promise<ToolResultRecord> {
    const agent = this.agentOf(execution.scope)
    if (agent === undefined) return next()
    this.notify(agent.id, { sessionUpdate: 'tool_call_update', toolCallId: execution.callId, status: 'in_progress' })
    if (execution.name !== 'write' && execution.name !== 'edit') return next()
    const path = toolPath(execution.name, parseArguments(execution.arguments), agent.session.header.cwd)
    if (path === undefined) return next()
    // The editor's buffer when the file tools go through the editor (the disk is not what changed).
    const files = editorFiles(agent.scope)
    const oldText = await readSmallText(path, files)
    const record = await next()
    if (!record.isError) {
      const newText = await readSmallText(path, files)
      if (newText !== null) this.changes.set(execution.callId, { path, oldText, newText })
    }
    return record
  }

  private async requestPermission(request: PendingApproval, signal: AbortSignal): Promise<ApprovalAnswer | undefined> {
    const peer = this.peer
    if (peer === undefined || !this.opened.has(request.sessionId)) return undefined
    const cwd = this.mode === 'full' ? this.ctx.agents.get(request.sessionId)?.session.header.cwd : undefined
    return askPermission(peer, request, this.mode === 'full', cwd, signal)
  }

  /**
   * `ask_user_question` as an `elicitation/create` form (./elicitation.ts), only for a client
   * that advertised form elicitation.
   */
  private async elicit(question: PendingQuestion, signal: AbortSignal): Promise<readonly QuestionAnswer[] | 'cancelled' | undefined> {
    const peer = this.peer
    if (peer === undefined || !this.clientForms || !this.opened.has(question.sessionId)) return undefined
    return askForm(peer, question, signal, this.ctx.host.stderr)
  }
}
