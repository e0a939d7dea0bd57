/**
 * Many sessions in one server: keeps only active sessions in memory. A live session whose turn
 * is closed and whose agent is not running is unloaded (flushed, closed, writer lease released)
 * once it has been idle for `idleMs` (and has no background job running), and the least recently used idle ones are unloaded as soon
 * as more than `maxLive` sessions are live. Surfaces reload an unloaded session from the store
 * on demand (`sessionPersistence.load`), so eviction is invisible to clients apart from latency.
 */
import { Context, Service } from 'cordis'
import type { Session } from '../session/api.js'
import '../persistence/api.js'
import '../agent/api.js'
import { isRunning } from '../tools/jobs.js'

export interface SessionEvictionConfig {
  /** Unload a session idle this long (default 10 minutes). */
  readonly idleMs?: number
  /** At most this many live sessions; the least recently used idle ones go first (default 500). */
  readonly maxLive?: number
  /** Clock (tests). */
  readonly now?: () => number
}

declare module 'cordis' {
  interface Context {
    sessionEviction: SessionEviction
  }
}

export class SessionEviction extends Service {
  static inject = ['sessions', 'sessionPersistence']

  readonly idleMs: number
  readonly maxLive: number
  private readonly now: () => number
  private readonly lastUsed = new Map<string, number>()
  private sweeping?: Promise<string[]>
  private readonly root: Context

  constructor(ctx: Context, config: SessionEvictionConfig = {}) {
    super(ctx, 'sessionEviction')
    this.root = ctx
    this.idleMs = config.idleMs ?? 600_000
    this.maxLive = config.maxLive ?? 500
    if (!(this.maxLive >= 1) || !(this.idleMs > 0)) throw new TypeError('session-eviction: maxLive must be >= 1 and idleMs > 0')
    this.now = config.now ?? Date.now
    const touch = (session: Session) => {
      this.lastUsed.delete(session.id)
      this.lastUsed.set(session.id, this.now())
    }
    ctx.on('session/created', (session) => {
      touch(session)
      if (this.root.sessions.list().length > this.maxLive) void this.sweep().catch(() => undefined)
    })
    ctx.on('session/event', (session) => touch(session))
    ctx.effect(() => {
      const timer = setInterval(() => { void this.sweep().catch(() => undefined) }, Math.max(1_000, Math.min(this.idleMs, 60_000) / 2))
      timer.unref()
      return () => clearInterval(timer)
    }, 'sessionEviction: idle sweep')
  }

  /** Unloads what is idle too long or over the bound; resolves with the ids unloaded. */
  sweep(): Promise<string[]> {
    return this.sweeping ??= this.sweepOnce().finally(() => { this.sweeping = undefined })
  }

  private idle(session: Session): boolean {
    if (!session.live || session.position.turnOpen) return false
    // A background job lives as long as its agent: unloading would stop a server the user started.
    if (this.root.get('jobs')?.list(session.id).some(isRunning) === true) return false
    const agent = this.root.get('agents')?.get(session.id)
    return agent === undefined || agent.status !== 'running'
  }

  private async sweepOnce(): Promise<string[]> {
    const { sessions, sessionPersistence } = this.root
    const live = sessions.list()
    const liveIds = new Set(live.map((s) => s.id))
    for (const id of this.lastUsed.keys()) if (!liveIds.has(id)) this.lastUsed.delete(id)
    const now = this.now()
    // Least recently used first (the map keeps touch order).
    const byUse = [...this.lastUsed.keys()].map((id) => sessions.get(id)).filter((s): s is Session => s !== undefined)
    let over = live.length - this.maxLive
    const evicted: string[] = []
    for (const session of byUse) {
      const stale = now - (this.lastUsed.get(session.id) ?? now) >= this.idleMs
      if (!(stale || over > 0) || !this.idle(session)) continue
      try {
        const agents = this.root.get('agents')
        if (agents?.get(session.id) !== undefined) await agents.dispose(session.id)
        // The agent's disposal may have appended; unload refuses if a turn opened meanwhile.
        await sessionPersistence.unload(session.id)
      } catch {
        continue
      }
      this.lastUsed.delete(session.id)
      evicted.push(session.id)
      over--
    }
    return evicted
  }
}

export const SessionEvictionPlugin = SessionEviction
