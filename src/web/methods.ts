/**
 * The `web-api` plugin: `ctx.webApi` and the core methods of `dsh web` over the existing
 * services (sessions, agents, persistence, llm, home folder). Every method takes and returns JSON;
 * secrets are written, never read back.
 */
import { statSync } from 'node:fs'
import { homedir } from 'node:os'
import { resolve } from 'node:path'
import { Service, type Context } from 'cordis'
import type { Agent, AgentStatus } from '../agent/api.js'
import type { ContentBlock, UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { InboxTarget, SessionEvent, SessionHeader } from '../session/types.js'
import { historyWindow } from './history-page.js'
import { scanEvents } from '../session/packed-run.js'
import type { StoredSessionSummary } from '../persistence/api.js'
import { readSettings } from '../config/home.js'
import { forkTitled, titleOf } from '../title/index.js'
import { rewindPoints, type RewindPoint } from '../host/rewind.js'
import { availableModels, findRoute } from '../host/route.js'
import { fileChangesAfter, restoreFiles, restoreLines } from '../tools/file-changes.js'
import { displayPath } from '../tools/builtin/paths.js'
import { emitContained } from '../kernel/index.js'
import type { ApprovalService } from '../approval/api.js'
import { registerApprovalMethods } from './approval-methods.js'
import { registerQuestionMethods } from './question-methods.js'
import { registerExchangeMethods } from './exchange-methods.js'
import { registerSettingsMethods } from './settings-methods.js'
import { int, str } from './params.js'
import { WebApiError, type WebApiService, type WebAsset, type WebMethod } from './api.js'
import { promptInput, registerWorkspaceMethods, sessionWorkspace } from './workspace-methods.js'
import type { PriceTable } from '../session/trajectory.js'
import { isMentionBlock, mentionBlocks } from './files.js'
import { imageParams, promptWithImages, routeTakesImages, textOnlyRefusal } from './attachments.js'
import { archivedOf, registerWorkspaceMethods as registerFolderMethods } from './folders.js'
import '../agent/api.js'
import '../commands/api.js'
import '../llm/api.js'
import '../persistence/api.js'
import { hasConversation, listedByDefault } from '../persistence/api.js'
import '../session/api.js'
import '../subagents/api.js'

export interface WebApiConfig {
  /** The dsh home folder for settings and credentials (filled from the host by the catalogue). */
  readonly home?: string
  /** Default workspace for new sessions (filled from the host). */
  readonly cwd?: string
  /** Credential names the settings page offers even when unset. */
  readonly credentialNames?: readonly string[]
  /** USD per million tokens by model or provider/model (settings `model.prices` override). */
  readonly prices?: PriceTable
}

/** A stored session as the sidebar lists it: the persistence summary plus the live status. */
export interface SessionSummary extends StoredSessionSummary {
  /** Delegation (child sessions): the parent's tool call that started it, while this server saw it start. */
  readonly parentCallId?: string
  /** Delegation: the child's label (the call's description) and its latest line of output. */
  readonly label?: string
  readonly lastLine?: string
  readonly status: AgentStatus
}

export interface InboxSnapshot {
  readonly nextTurn: readonly { text: string }[]
  readonly nextStep: readonly { text: string }[]
  /**
   * The session's log length when the lists were read. Every change to them is logged
   * (`agent/inbox/spliced`), so of two snapshots the one with the larger version is the newer:
   * the page drops an answer's snapshot that the live stream has already overtaken.
   */
  readonly version: number
}


function text(message: UserMessage): string {
  // A mention's reference block is not shown: the typed text names the file (`@path`).
  return message.content.filter(block => block.type !== 'text' || !isMentionBlock(block.text)).map(block => block.type === 'text' ? block.text : `[${block.type}]`).join('\n')
}

export function inboxSnapshot(agent: Agent | undefined): InboxSnapshot {
  if (agent === undefined) return { nextTurn: [], nextStep: [], version: 0 }
  return {
    nextTurn: agent.inbox.nextTurn.map(message => ({ text: text(message) })),
    nextStep: agent.inbox.nextStep.map(message => ({ text: text(message) })),
    version: agent.session.length,
  }
}

/**
 * Drops the `assistant/chunk` events of steps whose `assistant/message` is already in `events`:
 * a finished step is drawn from its message, so history pages carry no streaming deltas.
 */
export function withoutFinishedChunks(events: readonly SessionEvent[]): SessionEvent[] {
  const finished = new Set<string>()
  const kept: SessionEvent[] = []
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]
    if (event.type === 'assistant/message' || event.type === 'assistant/chunk') {
      const { turn, step } = event.data as { turn: number; step: number }
      const key = `${turn}:${step}`
      if (event.type === 'assistant/message') finished.add(key)
      else if (finished.has(key)) continue
    }
    kept.push(event)
  }
  return kept.reverse()
}

/** The events a stored session's summary is folded from (`view`). */
const SUMMARY_TYPES: ReadonlySet<string> = new Set(['turn/start', 'session/title', 'session/archived'])

/** How many stored logs `view` keeps read (a few: each may hold a long session). */
const STORED_VIEWS = 3

export class WebApiPlugin extends Service implements WebApiService {
  static readonly inject = ['sessions', 'agents', 'llm', 'sessionPersistence']

  private readonly methods = new Map<string, WebMethod>()
  /** Live delegation facts per child session id (O(1) per event). */
  private readonly children = new Map<string, { parentCallId?: string; label?: string; lastLine?: string }>()
  private readonly assets = new Map<string, WebAsset>()
  private readonly root: Context

  constructor(ctx: Context, private readonly config: WebApiConfig = {}) {
    super(ctx, 'webApi')
    this.root = ctx
    const changed = (id: string) => emitContained(ctx, 'web/session-changed', [id])
    ctx.on('agent/status', agent => changed(agent.id))
    ctx.on('session/created', session => changed(session.id))
    ctx.on('session/event', (session, event) => {
      if (event.type === 'session/title' || event.type === 'turn/start' || event.type === 'session/archived') changed(session.id)
      else if (session.header.parentSession !== undefined && this.childLine(session.id, event)) changed(session.id)
    })
    // Which parent call started a child, and the child's label (subagent/started, SA-17).
    ctx.on('subagent/started', info => {
      this.children.set(info.childSessionId, { ...info.callId !== undefined && { parentCallId: info.callId }, ...info.label !== undefined && { label: info.label } })
      changed(info.childSessionId)
    })
    this.registerCore()
    registerApprovalMethods(ctx, (name, method) => this.register(name, method))
    registerQuestionMethods(ctx, (name, method) => this.register(name, method))
    registerWorkspaceMethods(this.workspaceHost)
    registerFolderMethods(ctx, this, () => this.config.cwd)
  }

  /** A prompt's content: the typed text, its images (attachments.ts) and its `@` mentions' reference blocks (files.ts). */
  private async promptContent(agent: Agent, typed: string, images: ReturnType<typeof imageParams>, mentions: unknown): Promise<string | ContentBlock[]> {
    const withImages = images.length > 0 ? await promptWithImages(this.ctx.root, agent, typed, images) : undefined
    if (mentions === undefined) return withImages ?? typed
    const workspace = await sessionWorkspace(this.workspaceHost, agent.id)
    if (withImages === undefined) return promptInput(workspace, typed, mentions)
    return [...withImages, ...mentionBlocks(workspace, mentions)]
  }

  private get workspaceHost() {
    return {
      root: this.root, home: this.config.home, cwd: this.config.cwd, ...this.config.prices === undefined ? {} : { prices: this.config.prices },
      register: (name: string, method: WebMethod) => this.register(name, method),
      view: (id: string) => this.view(id),
    }
  }

  /** Updates a child's latest output line from one event; true when it changed. */
  private childLine(id: string, event: SessionEvent): boolean {
    let line: string | undefined
    if (event.type === 'assistant/message') {
      const text = (event.data as { message: { content: { type: string; text?: string }[] } }).message.content
        .filter(block => block.type === 'text').map(block => block.text ?? '').join('')
      line = text.split('\n').map(part => part.trim()).filter(part => part !== '').at(-1)
    } else if (event.type === 'tool/call') line = `→ ${(event.data as { name: string }).name}`
    if (line === undefined) return event.type === 'turn/end'
    const entry = this.children.get(id) ?? {}
    this.children.set(id, { ...entry, lastLine: line.length > 200 ? `${line.slice(0, 200)}…` : line })
    return true
  }

  register(name: string, method: WebMethod): () => void {
    if (this.methods.has(name)) throw new Error(`web api: method "${name}" is already registered`)
    return this.ctx.effect(() => {
      this.methods.set(name, method)
      return () => { if (this.methods.get(name) === method) this.methods.delete(name) }
    }, `webApi: ${name}`)
  }

  get(name: string): WebMethod | undefined {
    return this.methods.get(name)
  }

  names(): readonly string[] {
    return [...this.methods.keys()].sort()
  }

  registerAsset(path: string, asset: WebAsset): () => void {
    if (!/^[\w.-]+(\/[\w.-]+)*$/.test(path) || path.split('/').includes('..')) throw new Error(`web api: bad asset path "${path}" (letters, digits, . _ - and /)`)
    if (this.assets.has(path)) throw new Error(`web api: asset "${path}" is already registered`)
    return this.ctx.effect(() => {
      this.assets.set(path, asset)
      return () => { if (this.assets.get(path) === asset) this.assets.delete(path) }
    }, `webApi: /ext/${path}`)
  }

  asset(path: string): WebAsset | undefined {
    return this.assets.get(path)
  }

  private get home(): string {
    if (this.config.home === undefined) throw new WebApiError(500, 'NO_HOME', 'the web api has no home folder configured')
    return this.config.home
  }

  summary(session: Session): SessionSummary {
    const last = session.events[session.length - 1]
    return {
      id: session.id,
      title: titleOf(session) ?? null,
      ...session.header.cwd === undefined ? {} : { cwd: session.header.cwd },
      ...session.header.parentSession === undefined ? {} : { parentSession: session.header.parentSession },
      createdAt: session.header.createdAt,
      updatedAt: last?.time ?? session.header.createdAt,
      turns: session.position.turn,
      length: session.length,
      status: this.root.agents.get(session.id)?.status ?? 'idle',
      ...archivedOf(session) ? { archived: true } : {},
      ...this.children.get(session.id),
    }
  }

  /** The live session, loading (and repairing) a stored one on first use. */
  async session(id: string): Promise<Session> {
    const live = this.root.sessions.get(id)
    if (live !== undefined) return live
    try {
      return (await this.root.sessionPersistence.load(id)).session
    } catch (error) {
      const name = (error as Error).name
      if (name === 'SessionNotStoredError') throw new WebApiError(404, 'NO_SESSION', `no session "${id}"`)
      if (name === 'SessionInUseError') throw new WebApiError(409, 'SESSION_IN_USE', (error as Error).message)
      throw error
    }
  }

  /**
   * The log of a session for reading. A stored session that is not live is read as it is on
   * disk, without loading it: loading repairs an open turn, which must not happen just because
   * a page looks at a session another dsh process may still be writing.
   */
  async view(id: string): Promise<{ header: SessionHeader; events: readonly SessionEvent[]; summary: SessionSummary; live: boolean }> {
    const live = this.root.sessions.get(id)
    if (live !== undefined) return { header: live.header, events: live.events, summary: this.summary(live), live: true }
    // A stored log read at a revision is kept (the last few): opening it again, or exporting it,
    // only checks that the file has not changed since (a stat for JSONL) instead of reading it all.
    const backend = this.root.sessionPersistence.backend
    const revision = await backend.readStoredRevision(id)
    if (revision === undefined) this.storedViews.delete(id)
    const cached = revision === undefined ? undefined : this.storedViews.get(id)
    let header: SessionHeader
    let events: readonly SessionEvent[]
    if (cached !== undefined && cached.revision === revision) ({ header, events } = cached)
    else {
      const stored = await backend.loadStored(id)
      if (stored === undefined) throw new WebApiError(404, 'NO_SESSION', `no session "${id}"`)
      ;({ header, events } = stored)
      this.storedViews.delete(id)
      if (stored.revision === revision && stored.torn === undefined) {
        this.storedViews.set(id, { revision: stored.revision, header, events })
        for (const old of this.storedViews.keys()) if (this.storedViews.size > STORED_VIEWS) this.storedViews.delete(old)
      }
    }
    let title: string | null = null
    let turns = 0
    let archived = false
    // A stored log's packed chunk runs are skipped, not unpacked: a page of a long log costs little.
    scanEvents(events, 0, SUMMARY_TYPES, event => {
      if (event.type === 'turn/start') turns += 1
      else if (event.type === 'session/title') title = (event.data as { title: string }).title
      else archived = (event.data as { archived?: unknown }).archived === true
    })
    return {
      header,
      events,
      live: false,
      summary: {
        id, title, turns, length: events.length, status: 'idle', createdAt: header.createdAt,
        updatedAt: events.at(-1)?.time ?? header.createdAt,
        ...archived ? { archived: true } : {},
        ...header.cwd === undefined ? {} : { cwd: header.cwd },
        ...header.parentSession === undefined ? {} : { parentSession: header.parentSession },
      },
    }
  }

  /** A new session's folder: absolute or relative to the server's folder, and it must exist. */
  private workspace(given: string): string | undefined {
    const base = this.config.cwd ?? process.cwd()
    const path = given.trim() === '' ? this.config.cwd : resolve(base, given.trim().replace(/^~(?=$|\/)/, homedir()))
    if (path === undefined) return undefined
    let folder = false
    try { folder = statSync(path).isDirectory() } catch { folder = false }
    if (!folder) throw new WebApiError(400, 'BAD_CWD', `"${path}" is not an existing folder`)
    return path
  }

  /** Model route: the requested name, settings `model.default`, the agents' default, the first model. */
  route(requested?: string): { provider: string; model: string } | undefined {
    const settings = this.config.home === undefined ? {} : readSettings(this.config.home)
    const fromSettings = settings.model?.default
    const name = requested || (typeof fromSettings === 'string' ? fromSettings : undefined)
    if (name === undefined) return undefined
    // The catalogue's route, else a provider preset's (openai/gpt-5, ollama/llama3.2), registered now.
    let found: { provider: string; model: string } | undefined
    try {
      found = findRoute(this.root, name)
    } catch (error) {
      throw new WebApiError(400, 'AMBIGUOUS_MODEL', (error as Error).message)
    }
    if (found === undefined) throw new WebApiError(400, 'UNKNOWN_MODEL', `unknown model "${name}" (${availableModels(this.root)})`)
    return found
  }

  /** Stored logs read lately, by id, with the revision they were read at (`view`). */
  private readonly storedViews = new Map<string, { revision: string; header: SessionHeader; events: readonly SessionEvent[] }>()

  /** Agents being opened by id: concurrent first prompts for a session share one. */
  private readonly opening = new Map<string, Promise<Agent>>()

  private async agent(id: string): Promise<Agent> {
    const existing = this.root.agents.get(id)
    if (existing !== undefined) return existing
    let opening = this.opening.get(id)
    if (opening === undefined) {
      opening = (async () => {
        const session = await this.session(id)
        const route = this.route()
        return this.root.agents.get(id) ?? this.root.agents.create({ sessionId: session.id, ...route === undefined ? {} : { loop: route } })
      })()
      this.opening.set(id, opening)
      void opening.catch(() => undefined).finally(() => this.opening.delete(id))
    }
    return opening
  }

  /** A missing key or an unready adapter is reported before any input is queued. */
  private ready(agent: Agent): void {
    const problem = this.root.llm.adapter(agent.config.provider)?.readiness?.()
    if (problem !== undefined) throw new WebApiError(409, 'NOT_READY', problem)
  }

  private registerCore(): void {
    const add = (name: string, method: WebMethod) => this.register(name, method)
    this.registerSessions(add)
    this.registerRewind(add)
    this.registerTurns(add)
    add('server.info', () => ({ cwd: this.config.cwd ?? null, methods: this.names() }))

    add('extensions.list', () => ({
      scripts: [...this.assets].filter(([, asset]) => asset.script).map(([path]) => `/ext/${path}`),
    }))

    registerSettingsMethods({ root: this.root, config: this.config, route: name => this.route(name), home: () => this.home }, add)
  }

  /** Sessions: list, create, history pages, rename, fork, delete, export/import, the model. */
  private registerSessions(add: (name: string, method: WebMethod) => void): void {
    const { root } = this

    add('sessions.list', async params => {
      // Archived sessions are left out unless asked for: `archived: 'include' | 'only'`.
      const archived = params.archived ?? 'exclude'
      if (archived !== 'exclude' && archived !== 'include' && archived !== 'only') throw new WebApiError(400, 'BAD_PARAMS', '"archived" must be exclude, include or only')
      // A stored session with no completed turn is left out as by `dsh sessions`; `all: true` (its
      // --all) lists every one. A session live here stays listed (a failed first run stays in view).
      const all = params.all ?? false
      if (typeof all !== 'boolean') throw new WebApiError(400, 'BAD_PARAMS', '"all" must be a boolean')
      const byId = new Map<string, SessionSummary>()
      for (const stored of await root.sessionPersistence.list() as StoredSessionSummary[]) if (all || listedByDefault(stored)) byId.set(stored.id, { ...stored, status: 'idle' })
      for (const session of root.sessions.list()) byId.set(session.id, this.summary(session))
      // A session that never got a prompt (Start session, a prompt refused for a missing key, a
      // rejected run) is not listed: it stays reachable by id until its first turn.
      return [...byId.values()].filter(summary => all || listable(summary))
        .filter(summary => archived === 'include' || (summary.archived === true) === (archived === 'only'))
        .sort((a, b) => b.updatedAt - a.updatedAt)
    })

    add('sessions.create', params => {
      const cwd = this.workspace(str(params, 'cwd', true))
      const model = typeof params.model === 'string' ? params.model : undefined
      const route = this.route(model)
      const agent = root.agents.create({ ...cwd ? { cwd } : {}, ...route === undefined ? {} : { loop: route } })
      return this.summary(agent.session)
    })

    add('sessions.history', async params => {
      const id = str(params, 'id')
      const from = int(params, 'from', 0)
      // Paging (docs/web.md, "History pages"): `limit` events ending before `before`, whole turns.
      const before = params.before === undefined ? undefined : int(params, 'before')
      const limit = params.limit === undefined ? undefined : int(params, 'limit')
      if (limit === 0) throw new WebApiError(400, 'BAD_PARAMS', '"limit" must be a positive integer')
      const view = await this.view(id)
      if (before !== undefined && before > view.events.length) throw new WebApiError(400, 'BAD_PARAMS', `"before" must be at most the log's length (${view.events.length})`)
      const page = historyWindow(view.events, { from, ...before === undefined ? {} : { before }, ...limit === undefined ? {} : { limit } })
      const agent = root.agents.get(id)
      return {
        header: view.header,
        summary: view.summary,
        events: withoutFinishedChunks(view.events.slice(page.start, page.end)),
        length: view.events.length,
        from: page.start,
        more: page.start > from,
        ...page.seed.length > 0 ? { seed: page.seed } : {},
        live: view.live,
        inbox: inboxSnapshot(agent),
        model: agent?.config.model ?? null,
      }
    })

    add('sessions.rename', async params => {
      const session = await this.session(str(params, 'id'))
      const title = str(params, 'title').trim().slice(0, 200)
      if (title === '') throw new WebApiError(400, 'BAD_PARAMS', '"title" must not be blank')
      session.append('session/title', { title, messageSeqs: [], source: { kind: 'user' } })
      return this.summary(session)
    })

    add('sessions.fork', async params => {
      const source = await this.session(str(params, 'id'))
      const boundary = params.boundary === undefined ? undefined : int(params, 'boundary')
      return this.summary(await forkTitled(root.sessionPersistence, source, boundary))
    })

    add('sessions.delete', async params => {
      const id = str(params, 'id')
      const agent = root.agents.get(id)
      if (agent?.status === 'running') throw new WebApiError(409, 'RUNNING', 'stop the running turn before deleting the session')
      if (agent !== undefined) await root.agents.dispose(id)
      // Flushes and closes a live session first, then trashes it.
      const deleted = await root.sessionPersistence.delete(id)
      emitContained(root, 'web/session-changed', [id])
      return { deleted }
    })

    registerExchangeMethods({ root, cwd: () => this.config.cwd ?? process.cwd(), view: id => this.view(id) }, add)

    add('sessions.setModel', async params => {
      const session = await this.session(str(params, 'id'))
      const route = this.route(str(params, 'model'))!
      const existing = root.agents.get(session.id)
      if (existing?.status === 'running') throw new WebApiError(409, 'RUNNING', 'the model can change between turns: stop the running turn first')
      // The loop route is fixed per agent; the inbox lives in the log, so a new agent keeps it.
      if (existing !== undefined) await root.agents.dispose(session.id)
      const agent = root.agents.create({ sessionId: session.id, loop: route })
      return { model: agent.config.model, provider: agent.config.provider }
    })
  }

  /** Going back to an earlier prompt (host/rewind.ts): what it would undo, and doing it. */
  private registerRewind(add: (name: string, method: WebMethod) => void): void {
    const { root } = this
    /** The prompt at `seq` to go back to (host/rewind.ts); 400 when it started no turn. */
    const rewindPoint = (session: Session, seq: number): RewindPoint => {
      const point = rewindPoints(session.events).find(candidate => candidate.seqs.includes(seq))
      if (point === undefined) throw new WebApiError(400, 'NOT_A_PROMPT', `seq ${seq} is not a message you typed that started a turn (a message steered into a turn goes back with its turn's prompt)`)
      return point
    }
    const folderOf = (session: Session) => session.header.cwd ?? root.host.cwd

    add('sessions.rewindPreview', async params => {
      const source = await this.session(str(params, 'id'))
      const point = rewindPoint(source, int(params, 'seq'))
      const changes = fileChangesAfter(source.events, point.boundary ?? -1)
      return {
        turn: point.turn, text: point.text,
        files: changes.paths.map(path => displayPath(folderOf(source), path)),
        otherCalls: [...changes.otherCalls].map(([name, count]) => ({ name, count })),
      }
    })

    add('sessions.rewind', async params => {
      const source = await this.session(str(params, 'id'))
      if (root.agents.get(source.id)?.status === 'running') throw new WebApiError(409, 'RUNNING', 'stop the running turn before going back')
      const point = rewindPoint(source, int(params, 'seq'))
      const folder = folderOf(source)
      const name = (path: string) => displayPath(folder, path)
      let child: Session
      if (point.boundary === undefined) {
        // Nothing before the first prompt to keep: a new session in the same folder and model.
        const live = root.agents.get(source.id)
        const route = live !== undefined ? { provider: live.config.provider, model: live.config.model } : this.route()
        child = root.agents.create({ ...source.header.cwd === undefined ? {} : { cwd: source.header.cwd }, ...route === undefined ? {} : { loop: route } }).session
      } else child = await forkTitled(root.sessionPersistence, source, point.boundary)
      // The sandbox mode and approval policy in force now hold in the copy too (a change made
      // after the turn the copy ends with would otherwise be lost, and a stricter one with it).
      ;(root.get('approval') as ApprovalService | undefined)?.adoptKnobs(source, child)
      // The files once the copy exists: a failed fork leaves them as they are.
      const restored = params.restoreFiles === true ? await restoreFiles(fileChangesAfter(source.events, point.boundary ?? -1).changes, folder) : undefined
      return {
        session: this.summary(child), text: point.text,
        ...restored === undefined ? {} : {
          files: { restored: restored.restored.map(name), removed: restored.removed.map(name), kept: restored.kept.map(({ path, why }) => ({ path: name(path), why })) },
          // The lines the copy's conversation shows (the terminal app shows the same).
          notices: restoreLines(point.turn, restored, name),
        },
      }
    })
  }

  /** A turn's input: typing ahead, prompts and slash commands, steering, cancel, the queued inbox. */
  private registerTurns(add: (name: string, method: WebMethod) => void): void {
    const { root } = this
    // The page says a message is being typed: the model's connection opens ahead of it (docs/llm.md,
    // "Connections opened ahead"). Never loads a session; a running turn's connection is in use.
    add('typing', params => {
      const agent = root.agents.get(str(params, 'id'))
      if (agent?.status === 'running') return { ok: true }
      let route: { provider?: string; model?: string } | undefined
      try {
        route = agent?.config ?? this.route() ?? root.agents.defaultLoop
      } catch {
        route = undefined
      }
      if (route?.provider !== undefined && route.model !== undefined) root.llm.warm(route.provider, route.model)
      return { ok: true }
    })

    add('prompt', async params => {
      let agent = await this.agent(str(params, 'id'))
      const images = imageParams(params)
      if (images.length > 0) {
        // Images (docs/web.md): refused on a text-only route or an unready adapter before anything is stored.
        if (!routeTakesImages(root, agent)) throw textOnlyRefusal(agent)
        this.ready(agent)
        agent.followup(await this.promptContent(agent, str(params, 'text', true), images, params.mentions))
        return { status: agent.status, inbox: inboxSnapshot(agent) }
      }
      const input = str(params, 'text')
      // `/name args` runs a registered slash command (docs/commands.md); its outcome is returned.
      const outcome = await root.get('commands')?.execute(agent, input)
      if (outcome !== undefined) {
        agent = root.agents.get(agent.id) ?? agent
        return { status: agent.status, inbox: inboxSnapshot(agent), command: outcome.kind === 'prompt' ? { kind: 'prompt', text: outcome.text ?? null } : outcome }
      }
      this.ready(agent)
      // `@` mentions: the files' text rides along as reference blocks (files.ts, docs/web.md).
      agent.followup(await this.promptContent(agent, input, [], params.mentions))
      return { status: agent.status, inbox: inboxSnapshot(agent) }
    })

    add('commands.list', async params => {
      const id = typeof params.id === 'string' ? params.id : undefined
      const scope = id !== undefined ? root.agents.get(id)?.scope : undefined
      const commands = root.get('commands')?.list(scope) ?? []
      return { commands: commands.map(command => ({ name: command.name, description: command.description, argumentHint: command.argumentHint ?? null })) }
    })

    add('steer', async params => {
      const agent = await this.agent(str(params, 'id'))
      const images = imageParams(params)
      if (images.length > 0 && !routeTakesImages(root, agent)) throw textOnlyRefusal(agent)
      this.ready(agent)
      const input = await this.promptContent(agent, str(params, 'text', images.length > 0), images, params.mentions)
      // Steering an idle session starts a turn with the input, like a prompt.
      if (agent.status === 'running') agent.steer(input)
      else agent.followup(input)
      return { status: agent.status, inbox: inboxSnapshot(agent) }
    })

    add('cancel', async params => {
      const agent = root.agents.get(str(params, 'id'))
      if (agent !== undefined) agent.cancel({ keepInbox: params.keepInbox === true, reason: { kind: 'user' } })
      return { status: agent?.status ?? 'idle' }
    })

    add('inbox.edit', async params => this.spliceInbox(params, true))
    add('inbox.remove', async params => this.spliceInbox(params, false))
  }

  private async spliceInbox(params: Record<string, unknown>, edit: boolean) {
    const agent = this.root.agents.get(str(params, 'id'))
    if (agent === undefined) throw new WebApiError(404, 'NO_AGENT', 'the session has no queued input')
    const target = str(params, 'target') as InboxTarget
    if (target !== 'next-turn' && target !== 'next-step') throw new WebApiError(400, 'BAD_PARAMS', '"target" must be next-turn or next-step')
    const index = int(params, 'index')
    const inbox = agent.inbox as unknown as { splice?: (target: InboxTarget, start: number, removed: number, inserted: readonly UserMessage[]) => unknown }
    if (typeof inbox.splice !== 'function') throw new WebApiError(501, 'UNSUPPORTED', 'this loop does not support editing queued input')
    const list = target === 'next-turn' ? agent.inbox.nextTurn : agent.inbox.nextStep
    const current = list[index]
    if (current === undefined) throw new WebApiError(409, 'GONE', `queued item ${index} of ${target} is gone (it may have been sent)`)
    const inserted: UserMessage[] = edit ? [{ ...current, content: [{ type: 'text', text: str(params, 'text') }] }] : []
    inbox.splice.call(agent.inbox, target, index, 1, inserted)
    return { inbox: inboxSnapshot(agent) }
  }
}

/** Whether the session list shows a session: it had a turn, was named, or is running. */
export function listable(summary: Pick<SessionSummary, 'turns' | 'title' | 'status'>): boolean {
  return hasConversation(summary) || summary.status === 'running'
}
