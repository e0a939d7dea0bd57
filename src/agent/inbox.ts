/**
 * The agent inbox: two lists of pending user messages, `next-turn` and `next-step`.
 * The log is the truth: every mutation first appends `agent/inbox/spliced`, then changes the live
 * lists, so a restart rebuilds the inbox by folding the splices.
 */
import type { UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import type { InboxTarget, SessionEvent } from '../session/types.js'
import type { InboxView } from './api.js'

const INBOX_SPLICED: ReadonlySet<string> = new Set(['agent/inbox/spliced'])

export type InboxSplice = { target: InboxTarget; start: number; removedCount?: number; inserted: UserMessage[]; outcome?: 'canceled' }

/** What one claim took, by the list it came from. */
export interface InboxClaim { readonly step: readonly UserMessage[]; readonly turn: readonly UserMessage[] }

export class InboxError extends Error {
  constructor(detail: string) {
    super(`dsh-inbox: ${detail}`)
    this.name = 'InboxError'
  }
}

export class Inbox implements InboxView {
  private readonly lists: Record<InboxTarget, UserMessage[]> = { 'next-turn': [], 'next-step': [] }

  private constructor(private readonly session: Session) {}

  /**
   * Rebuild from the log. A fork child starts empty: only splices after its seed count (S-14).
   */
  static fromLog(session: Session): Inbox {
    const inbox = new Inbox(session)
    const from = session.header.seedLength ?? 0
    scanEvents(session.events, from, INBOX_SPLICED, (event) => inbox.apply(event.data as InboxSplice, event.seq))
    return inbox
  }

  get nextTurn(): readonly UserMessage[] { return this.lists['next-turn'] }
  get nextStep(): readonly UserMessage[] { return this.lists['next-step'] }
  get hasPending(): boolean { return this.lists['next-turn'].length > 0 || this.lists['next-step'].length > 0 }

  /** Log-then-apply; returns the removed messages. */
  splice(target: InboxTarget, start: number, removedCount: number, inserted: readonly UserMessage[], outcome?: 'canceled'): UserMessage[] {
    const list = this.lists[target]
    if (!Number.isInteger(start) || start < 0 || start > list.length) {
      throw new InboxError(`splice start ${start} is outside ${target} (length ${list.length})`)
    }
    if (!Number.isInteger(removedCount) || removedCount < 0 || start + removedCount > list.length) {
      throw new InboxError(`cannot remove ${removedCount} message(s) at ${start} from ${target} (length ${list.length})`)
    }
    if (removedCount === 0 && inserted.length === 0) return []
    const data: InboxSplice = {
      target, start,
      ...(removedCount > 0 ? { removedCount } : {}),
      inserted: [...inserted],
      ...(outcome !== undefined ? { outcome } : {}),
    }
    const event = this.session.append('agent/inbox/spliced', data)
    // The live lists hold the logged (frozen) copies, so the log and the projection share objects.
    return this.apply(event.data as InboxSplice, event.seq)
  }

  /**
   * all of next-step, plus the first next-turn message at a turn boundary (`target`
   * 'next-turn'), kept apart by the list each came from so `unclaim` can put them back.
   */
  claimFrom(target: InboxTarget): InboxClaim {
    const step = this.splice('next-step', 0, this.lists['next-step'].length, [])
    const turn = target === 'next-turn' && this.lists['next-turn'].length > 0 ? this.splice('next-turn', 0, 1, []) : []
    return { step, turn }
  }

  /** Puts claimed input back at the front of the list each message came from. */
  unclaim(claim: InboxClaim): void {
    if (claim.turn.length > 0) this.splice('next-turn', 0, 0, claim.turn)
    if (claim.step.length > 0) this.splice('next-step', 0, 0, claim.step)
  }

  /** Whether a message with this id is still queued. */
  has(id: string): boolean {
    return this.lists['next-step'].some(m => m.id === id) || this.lists['next-turn'].some(m => m.id === id)
  }

  push(target: InboxTarget, message: UserMessage): UserMessage {
    this.splice(target, this.lists[target].length, 0, [message])
    return this.lists[target][this.lists[target].length - 1]
  }

  /** Cancel without keepInbox: both lists emptied through splices marked `canceled`. */
  clear(): void {
    for (const target of ['next-step', 'next-turn'] as const) {
      if (this.lists[target].length > 0) this.splice(target, 0, this.lists[target].length, [], 'canceled')
    }
  }

  private apply(splice: InboxSplice, seq: number): UserMessage[] {
    const list = this.lists[splice.target]
    if (list === undefined) throw new InboxError(`seq ${seq}: unknown inbox target ${JSON.stringify(splice.target)}`)
    const removedCount = splice.removedCount ?? 0
    if (splice.start < 0 || splice.start + removedCount > list.length) {
      throw new InboxError(`seq ${seq}: splice of ${removedCount} at ${splice.start} does not fit ${splice.target} (length ${list.length})`)
    }
    return list.splice(splice.start, removedCount, ...splice.inserted)
  }
}
