/**
 * The session-log suite: every stored session log under the roots is parsed with the real
 * codec, hydrated through the real `ctx.sessions`, folded (surface, messages), checked against
 * the log invariants, given its crash-repair closers, and re-packed to compare with the file's
 * own layout. The first problem fails the file.
 */
import { readFileSync } from 'node:fs'
import { Context } from 'cordis'
import { encodeLine, parseSessionFile, SessionFileError, storedLines, type ParsedSessionFile } from '../session/codec.js'
import { lineEventCount, unpackLines, type StoredLine } from '../session/chunk-rows.js'
import {
  SURFACE_EVENT_TYPES, SessionRuleError, SessionsServicePlugin, checkLogInvariants, interruptedTurnClosers,
  type EventTypeRegistry, type Session, type SessionEvent,
} from '../session/index.js'
import { findFiles, isSessionLogName } from './discover.js'
import { findSkip, SESSION_LOG_SKIPS, type SkipEntry } from './skips.js'
import type { ConformanceResult, ConformanceSuite } from './types.js'
import { ConformanceVocabulary } from './vocabulary.js'

export interface SessionLogSuiteOptions {
  readonly skips?: readonly SkipEntry[]
}

/** Thrown by a check step; the message becomes the FAIL detail. */
class CheckFailure extends Error {}

const SURFACE_TYPES: ReadonlySet<string> = new Set(SURFACE_EVENT_TYPES)

function problem(step: string, error: unknown): CheckFailure {
  return new CheckFailure(`${step}: ${error instanceof Error ? error.message : String(error)}`)
}

/**
 * Whether a file that does not start with a session header is still meant as a log: every
 * line is a JSON object with a string `type` and a `data` key. Anything else is another format.
 */
function looksLikeHeaderlessLog(lines: readonly string[]): boolean {
  const sample = lines.filter((line) => line !== '').slice(0, 5)
  if (sample.length === 0) return false
  return sample.every((line) => {
    try {
      const value = JSON.parse(line) as unknown
      return value !== null && typeof value === 'object' && !Array.isArray(value)
        && typeof (value as { type?: unknown }).type === 'string' && 'data' in value
    } catch {
      return false
    }
  })
}

/** Why a file is not a session log at all, or null when it is one (possibly a broken one). */
export function notASessionLog(text: string): string | null {
  const lines = text.split('\n')
  let first: unknown
  try {
    first = JSON.parse(lines[0])
  } catch {
    first = undefined
  }
  if (first !== null && typeof first === 'object' && (first as { type?: unknown }).type === 'session') return null
  if (looksLikeHeaderlessLog(lines)) return null
  return text.trim() === '' ? 'not a session log: empty file' : 'not a session log: first line is not a {"type":"session"} header'
}

/** The 1-based file line holding `seq` (the header is line 1; a row holds several seqs). */
export function lineOfSeq(lines: readonly StoredLine[], seq: number): number {
  let next = 0
  for (let i = 0; i < lines.length; i++) {
    next += lineEventCount(lines[i])
    if (seq < next) return i + 2
  }
  return lines.length + 1
}

function short(text: string, max = 160): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text
}

export class SessionLogChecker {
  private constructor(private readonly ctx: Context, private readonly registry: EventTypeRegistry) {}

  static async create(): Promise<SessionLogChecker> {
    const ctx = new Context()
    await ctx.plugin(SessionsServicePlugin)
    await ctx.plugin(ConformanceVocabulary)
    const registry = (ctx.sessions as SessionsServicePlugin).registry
    return new SessionLogChecker(ctx, registry)
  }

  /** Throws CheckFailure naming the step and the first problem. */
  check(text: string): void {
    let parsed: ParsedSessionFile
    try {
      parsed = parseSessionFile(text)
    } catch (error) {
      if (error instanceof SessionFileError) throw problem('parse', error)
      throw error
    }
    const { header, events } = parsed
    let session: Session
    try {
      session = this.ctx.sessions.hydrate(header, events)
    } catch (error) {
      const seq = error instanceof SessionRuleError ? error.seq : undefined
      throw problem(seq === undefined ? 'hydrate' : `hydrate (line ${lineOfSeq(parsed.lines, seq)})`, error)
    }
    try {
      this.checkFolds(session)
      this.checkInvariants(session, events)
      this.checkRepair(parsed)
      this.checkLayout(parsed)
    } finally {
      this.ctx.sessions.close(session.id)
    }
  }

  private checkFolds(session: Session): void {
    let messages: unknown[]
    try {
      const surface = session.surface()
      for (const seq of surface) {
        const event = session.events[seq]
        if (!event || !SURFACE_TYPES.has(event.type)) throw new Error(`surface names seq ${seq}, which is ${event ? `a ${event.type}` : 'not in the log'}`)
      }
      messages = session.deriveMessages()
      if (messages.length > surface.length) throw new Error(`${messages.length} messages from ${surface.length} surface nodes`)
    } catch (error) {
      throw problem('surface', error)
    }
    const again = session.deriveMessages()
    if (again === messages || JSON.stringify(again) !== JSON.stringify(messages)) {
      throw new CheckFailure('derive: a second deriveMessages() is not a fresh, equal array (S-11)')
    }
  }

  private checkInvariants(session: Session, events: readonly SessionEvent[]): void {
    let position
    try {
      position = checkLogInvariants(events, this.registry)
    } catch (error) {
      throw problem('invariants', error)
    }
    if (JSON.stringify(position) !== JSON.stringify(session.position)) {
      throw new CheckFailure(`invariants: checkLogInvariants ends at ${JSON.stringify(position)} but the session at ${JSON.stringify(session.position)}`)
    }
  }

  /** C-1..C-4: closers exactly when a turn is open, valid to append, and idempotent. */
  private checkRepair({ header, events }: ParsedSessionFile): void {
    let closers: SessionEvent[]
    try {
      closers = interruptedTurnClosers(events)
    } catch (error) {
      throw problem('repair', error)
    }
    const open = checkLogInvariants(events, this.registry).turnOpen
    if (!open) {
      if (closers.length > 0) throw new CheckFailure(`repair: ${closers.length} closers for a log whose turns are all closed`)
      return
    }
    const last = closers.at(-1)
    if (last?.type !== 'turn/end' || (last.data as { reason?: { kind?: string } }).reason?.kind !== 'interrupted') {
      throw new CheckFailure('repair: the closers of an open turn do not end with turn/end interrupted (C-3)')
    }
    const repaired = [...events, ...closers]
    const id = `${header.id}#repaired`
    try {
      this.ctx.sessions.hydrate({ ...header, id }, repaired)
    } catch (error) {
      throw problem('repair: the repaired log does not load', error)
    } finally {
      this.ctx.sessions.close(id)
    }
    if (interruptedTurnClosers(repaired).length > 0) throw new CheckFailure('repair: not idempotent (closers of the repaired log are not empty, C-4)')
  }

  /**
   * Projected files are compared line by line with the canonical packing of their events (the
   * layout a projecting writer produces). Persisted files may be packed per write batch, so
   * for them only the round trip of a fresh packing is checked (R-5).
   */
  private checkLayout({ events, lines, projected }: ParsedSessionFile): void {
    const canonical = storedLines(events, { projected })
    if (!projected) {
      const back = unpackLines(canonical)
      for (let i = 0; i < events.length; i++) {
        if (encodeLine(back[i]) !== encodeLine(events[i])) throw new CheckFailure(`re-pack: seq ${i} does not survive pack then unpack (R-5)`)
      }
      return
    }
    const count = Math.max(canonical.length, lines.length)
    for (let i = 0; i < count; i++) {
      const expected = lines[i] === undefined ? undefined : encodeLine(lines[i])
      const actual = canonical[i] === undefined ? undefined : encodeLine(canonical[i])
      if (expected !== actual) {
        throw new CheckFailure(`re-pack: line ${i + 2} differs from the canonical packing: file has ${short(expected ?? '(end of file)')}, packing gives ${short(actual ?? '(end of file)')}`)
      }
    }
  }

  dispose(): void {
    this.ctx.registry.delete(SessionsServicePlugin)
  }
}

export function sessionLogSuite(options: SessionLogSuiteOptions = {}): ConformanceSuite {
  const skips = options.skips ?? SESSION_LOG_SKIPS
  const name = 'session-logs'
  return {
    name,
    async *run(roots) {
      const checker = await SessionLogChecker.create()
      try {
        for (const root of roots) {
          let files: string[]
          try {
            files = findFiles(root, isSessionLogName)
          } catch (error) {
            yield { suite: name, status: 'fail', path: root, detail: error instanceof Error ? error.message : String(error) }
            continue
          }
          for (const path of files) yield checkFile(checker, path, skips, name)
        }
      } finally {
        checker.dispose()
      }
    },
  }
}

function checkFile(checker: SessionLogChecker, path: string, skips: readonly SkipEntry[], suite: string): ConformanceResult {
  const skip = findSkip(path, skips)
  if (skip) return { suite, status: 'skip', path, detail: skip.reason }
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    return { suite, status: 'fail', path, detail: `read: ${error instanceof Error ? error.message : String(error)}` }
  }
  const notLog = notASessionLog(text)
  if (notLog !== null) return { suite, status: 'skip', path, detail: notLog }
  try {
    checker.check(text)
    return { suite, status: 'pass', path }
  } catch (error) {
    if (error instanceof CheckFailure) return { suite, status: 'fail', path, detail: error.message }
    return { suite, status: 'fail', path, detail: `internal error: ${error instanceof Error ? error.stack ?? error.message : String(error)}` }
  }
}
