/**
 * `ctx.sessions` (K-2): the live-session set, the event-type registry, create / hydrate / fork.
 * Load with `ctx.plugin(SessionsServicePlugin, config?)`.
 */
import { randomUUID } from 'node:crypto'
import { Context, Service } from 'cordis'
import { emitContained, type ListenerErrorReporter } from '../kernel/index.js'
import type { CreateSessionOptions, PreparedSession, Session, SessionAttachments, SessionsService } from './api.js'
import { describeImage, MemoryAttachmentStore, type AttachmentStore, type StoredAttachment } from './attachments.js'
import type { AttachedImageBlock } from '../llm/types.js'
import { checkHeader } from './header.js'
import { LogFolder } from './invariants.js'
import { createEventTypeRegistry, type EventTypeRegistry } from './registry.js'
import { SessionLog } from './session.js'
import { PackedRun, slotsOf } from './packed-run.js'
import { SESSION_FORMAT_VERSION, type EventTypeDefinition, type SessionEvent, type SessionHeader } from './types.js'

export interface SessionsServiceConfig {
  /** Install loose defaults for the runtime's plugin-owned event types (default true). */
  readonly runtimeEventTypes?: boolean
  /** Clock for event times and header createdAt (tests). */
  readonly now?: () => number
  /** Where contained listener failures go (default: stderr). */
  readonly report?: ListenerErrorReporter
}

/**
 * How many recently closed ids are remembered so fork and attachments can say "not live" rather
 * than "not found". Only a diagnostic: bounded so a long-running process does not grow with
 * every session it ever closed.
 */
export const RECENTLY_CLOSED = 1024

/** Errors from fork/create/hydrate that are not log-rule violations. */
export class SessionsError extends Error {
  constructor(readonly code: 'NOT_FOUND' | 'NOT_LIVE' | 'ALREADY_EXISTS' | 'INVALID_BOUNDARY' | 'OPEN_TURN', message: string) {
    super(message)
    this.name = 'SessionsError'
  }
}

export class SessionsServicePlugin extends Service implements SessionsService {
  readonly registry: EventTypeRegistry
  private readonly sessions = new Map<string, SessionLog>()
  /** The last RECENTLY_CLOSED ids closed in this process, oldest first (fork: "not live" vs "not found"). */
  private readonly closed = new Set<string>()
  private readonly now: () => number
  private readonly root: Context
  private readonly memoryAttachments = new MemoryAttachmentStore()
  private attachmentStore: AttachmentStore = this.memoryAttachments
  readonly attachments: SessionAttachments

  constructor(ctx: Context, private readonly options: SessionsServiceConfig = {}) {
    super(ctx, 'sessions')
    this.root = ctx
    this.attachments = this.makeAttachments()
    ctx.on('session/deleted', async (id) => { this.memoryAttachments.drop(id) })
    this.now = options.now ?? Date.now
    this.registry = createEventTypeRegistry({ runtimeEventTypes: options.runtimeEventTypes })
    // Unloading the service ends every live session: later appends throw instead of vanishing.
    ctx.effect(() => () => {
      for (const session of this.sessions.values()) session.markClosed()
      this.sessions.clear()
    }, 'sessions: close live sessions')
  }

  registerEventType(definition: EventTypeDefinition): () => void {
    // `this.ctx` is the caller's context here (Cordis service tracking), so the registration is
    // an effect of the registering plugin and disappears when it unloads (K-6).
    return this.ctx.effect(() => this.registry.register(definition), `sessions: event type ${definition.type}`)
  }

  eventType(type: string): EventTypeDefinition | undefined {
    return this.registry.get(type)
  }

  create(options: CreateSessionOptions = {}): Session {
    const id = options.id ?? randomUUID()
    this.assertFree(id)
    const header: SessionHeader = {
      type: 'session',
      version: SESSION_FORMAT_VERSION,
      id,
      createdAt: options.createdAt ?? this.now(),
      ...options.cwd !== undefined && { cwd: options.cwd },
      ...options.parentSession !== undefined && { parentSession: options.parentSession },
      ...options.seedLength !== undefined && { seedLength: options.seedLength },
      ...options.origin !== undefined && { origin: options.origin },
      delegationDepth: options.delegationDepth ?? 0,
      ...options.agentPreset !== undefined && { agentPreset: options.agentPreset },
    }
    const session = this.instantiate(checkHeader(header))
    return this.publish(session)
  }

  hydrate(header: SessionHeader, events: readonly SessionEvent[], options: { readonly adopt?: boolean | 'parsed' } = {}): Session {
    return this.prepare(header, events, options).publish()
  }

  prepare(header: SessionHeader, events: readonly SessionEvent[], options: { readonly adopt?: boolean | 'parsed' } = {}): PreparedSession {
    const checked = checkHeader(header)
    if (!Array.isArray(events)) throw new TypeError(`hydrate: events of session ${checked.id} must be an array`)
    this.assertFree(checked.id)
    const session = this.instantiate(checked)
    const adopt = options.adopt === true || options.adopt === 'parsed' ? options.adopt : false
    // Runs loaded packed (see packed-run.ts) are admitted as runs: one slot per member.
    const slots = slotsOf(events)
    for (let i = 0; i < slots.length;) {
      const slot = slots[i]
      if (slot instanceof PackedRun) {
        session.admitRun(slot)
        i += slot.length
      } else {
        session.admit(slot, adopt)
        i++
      }
    }
    let published = false
    return {
      session,
      publish: () => {
        if (published) throw new Error(`hydrate: session ${checked.id} is already published`)
        this.assertFree(checked.id)
        published = true
        return this.publish(session)
      },
    }
  }

  get(id: string): Session | undefined {
    return this.sessions.get(id)
  }

  list(): readonly Session[] {
    return [...this.sessions.values()]
  }

  close(id: string): void {
    const session = this.sessions.get(id)
    if (!session) return
    session.markClosed()
    this.sessions.delete(id)
    this.closed.delete(id)
    this.closed.add(id)
    if (this.closed.size > RECENTLY_CLOSED) this.closed.delete(this.closed.values().next().value!)
    emitContained(this.root, 'session/closed', [session], this.options.report)
  }

  /** S-14 */
  fork(sourceId: string, boundary?: number, childId?: string): Session {
    const source = this.sessions.get(sourceId)
    if (!source) {
      if (this.closed.has(sourceId)) throw new SessionsError('NOT_LIVE', `fork: session ${sourceId} is not live (closed)`)
      throw new SessionsError('NOT_FOUND', `fork: session ${sourceId} not found`)
    }
    if (!source.live) throw new SessionsError('NOT_LIVE', `fork: session ${sourceId} is not live`)
    const id = childId ?? randomUUID()
    if (this.sessions.has(id)) throw new SessionsError('ALREADY_EXISTS', `fork: session ${id} already exists`)
    const events = source.events
    const last = events.length - 1
    const end = boundary ?? last
    if (!Number.isSafeInteger(end) || end < (boundary === undefined ? -1 : 0) || end > last) {
      throw new SessionsError('INVALID_BOUNDARY', `fork: boundary ${boundary} is not a seq of session ${sourceId} (0..${last})`)
    }
    const seed = events.slice(0, end + 1)
    const folder = new LogFolder()
    for (const event of seed) {
      if (this.registry.get(event.type)) folder.apply(event)
    }
    if (folder.position.turnOpen) {
      throw new SessionsError('OPEN_TURN', `fork: boundary ${end} of session ${sourceId} is inside open turn ${folder.position.turn}`)
    }
    const header = checkHeader({
      type: 'session',
      version: SESSION_FORMAT_VERSION,
      id,
      createdAt: this.now(),
      ...source.header.cwd !== undefined && { cwd: source.header.cwd },
      parentSession: sourceId,
      seedLength: seed.length,
      delegationDepth: source.header.delegationDepth,
      ...source.header.agentPreset !== undefined && { agentPreset: source.header.agentPreset },
    })
    const child = this.instantiate(header)
    for (const event of seed) child.admit(event)
    if (seed.at(-1)?.type !== 'session/end-seed') {
      // Seed and marker are not published: the child becomes visible through session/created.
      child.admit({ type: 'session/end-seed', seq: seed.length, time: this.now(), data: {} })
    }
    return this.publish(child)
  }

  private makeAttachments(): SessionAttachments {
    const store = () => this.attachmentStore
    const headerOf = (id: string) => {
      const session = this.sessions.get(id)
      if (session === undefined) throw new SessionsError(this.closed.has(id) ? 'NOT_LIVE' : 'NOT_FOUND', `attachments: session ${id} is not live`)
      return session.header
    }
    return {
      addImage: async (sessionId, data, options = {}): Promise<AttachedImageBlock> => {
        const header = headerOf(sessionId)
        const attachment = describeImage(data, options.mediaType, options.name)
        await store().put(header, attachment.attachmentId, { data, mediaType: attachment.mediaType })
        return { type: 'image', attachment }
      },
      read: async (sessionId, attachmentId): Promise<StoredAttachment | undefined> => {
        // A live child (fork, subagent) may reference its parent's images: look up the chain.
        for (let id: string | undefined = sessionId, hops = 0; id !== undefined && hops < 64; hops++) {
          const found = await store().get(id, attachmentId)
          if (found !== undefined) return found
          id = this.sessions.get(id)?.header.parentSession
        }
        return undefined
      },
      copy: async (fromSessionId, to, ids) => {
        for (const id of new Set(ids)) {
          const found = await this.attachments.read(fromSessionId, id)
          if (found !== undefined) await store().put(to, id, found)
        }
      },
      useStore: (replacement) => {
        this.attachmentStore = replacement
        return () => { if (this.attachmentStore === replacement) this.attachmentStore = this.memoryAttachments }
      },
    }
  }

  private assertFree(id: string): void {
    if (this.sessions.has(id)) throw new SessionsError('ALREADY_EXISTS', `session ${id} already exists`)
  }

  private instantiate(header: SessionHeader): SessionLog {
    return new SessionLog(header, { registry: this.registry, ctx: this.root, now: this.now, report: this.options.report })
  }

  private publish(session: SessionLog): Session {
    this.sessions.set(session.id, session)
    this.closed.delete(session.id)
    emitContained(this.root, 'session/created', [session], this.options.report)
    return session
  }
}
