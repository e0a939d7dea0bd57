/**
 * The terminal app's state outside React: the live agent, the fold of its log, the items already
 * printed into the scrollback, and pending approvals. Session events arrive through `observe`;
 * the component re-renders on `subscribe`.
 */
import type { Agent } from '../agent/api.js'
import type { SessionEvent } from '../session/types.js'
import type { Session } from '../session/api.js'
import type { ToolOutputChunk } from '../tools/api.js'
import type { UserMessage } from '../llm/types.js'
import { ConversationFold, foldTail, settled, type Item } from './fold.js'
import { plural } from '../host/numbers.js'
import type { QuestionPrompt } from './question.js'
import type { ApprovalScope } from '../approval/api.js'
import { rewindPoints, type RewindPoint } from '../host/rewind.js'
import { fileChangesAfter, type FileChanges } from '../tools/file-changes.js'
import type { StoredSessionSummary } from '../persistence/api.js'

export type Printed =
  | { readonly key: string; readonly kind: 'item'; readonly item: Item }
  | { readonly key: string; readonly kind: 'banner'; readonly lines: readonly string[] }

/** What the approval box may answer: once, a wider grant the request offered, or no. */
export type TuiApprovalAnswer = 'allowed-once' | 'allowed-session' | 'allowed-always' | 'rejected'

export interface ApprovalPrompt {
  readonly id: string
  readonly toolName: string
  readonly reason: string
  readonly arguments?: string
  /** Wider grants the request offers (`s` this session, `a` always); absent: once or not at all. */
  readonly scopes?: readonly ApprovalScope[]
  /** The permission rule `s` / `a` would add (shown as it would be written); absent: a network host's grant. */
  readonly grants?: string
  /** The ask rule that made it ask, as written and where it came from. */
  readonly askedBy?: string
  /**
   * A stored key's first use with an endpoint (key-use.ts), asked in the same box: `y` sends it
   * (allowed-once), `n` does not (rejected); Enter does nothing.
   */
  readonly keyUse?: { readonly keyName: string; readonly endpoint: string; readonly chosenBy: string }
  answer(outcome: TuiApprovalAnswer): void
}

/** A running subagent of this app's session, drawn as a nested live card. */
export interface ChildView {
  readonly id: string
  readonly label: string
  readonly steps: number
  readonly activity: string
}

/** How much of a running call's live output is kept. */
const LIVE_OUTPUT_CHARS = 4096

/** Resumed sessions print at most this many of their latest items. */
export const HISTORY_ITEMS = 60

export class TuiStore {
  fold = new ConversationFold()
  /** Replaced (not mutated) when items are added, so Ink's `Static` sees the change. */
  printed: readonly Printed[] = []
  approvals: ApprovalPrompt[] = []
  /** Pending `ask_user_question` calls of this session, oldest first. */
  questions: QuestionPrompt[] = []
  /** Subagents of the current session still running, by child session id. */
  readonly children = new Map<string, ChildView>()
  version = 0
  /** Set on exit: the screen keeps only the printed conversation. */
  closing = false
  private foldPrinted = 0
  private printedKeys = 0
  private readonly listeners = new Set<() => void>()

  constructor(public agent: Agent) {}

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  notify(): void {
    this.version += 1
    for (const listener of this.listeners) listener()
  }

  banner(lines: readonly string[]): void {
    this.printed = [...this.printed, { key: `p${this.printedKeys++}`, kind: 'banner', lines }]
    this.notify()
  }

  /**
   * Folds what the session already holds, from far enough back for its latest items (`foldTail`);
   * only those are printed.
   */
  loadHistory(): void {
    const { fold, hiddenTurns } = foldTail(this.agent.session.events, HISTORY_ITEMS)
    this.fold = fold
    const skip = Math.max(0, fold.items.length - HISTORY_ITEMS)
    this.foldPrinted = skip
    const hidden = [
      ...hiddenTurns > 0 ? [plural(hiddenTurns, 'earlier turn')] : [],
      ...skip > 0 ? [plural(skip, hiddenTurns > 0 ? 'more item' : 'earlier item')] : [],
    ]
    if (hidden.length > 0) this.banner([`… ${hidden.join(' and ')} of this session ${hiddenTurns + skip === 1 ? 'is' : 'are'} not shown`])
    this.settle()
  }

  observe(session: Session, event: SessionEvent): void {
    const child = this.children.get(session.id)
    if (child !== undefined) return this.observeChild(child, event)
    if (session !== this.agent.session) return
    // A call's live output is shown until its result is: the result's own tail replaces it.
    if (event.type === 'step/end' || event.type === 'turn/end') this.liveOutput.clear()
    this.fold.apply(event)
    this.settle()
    this.notify()
  }

  /** The latest live output of this session's running calls (bash), by call id; not stored. */
  readonly liveOutput = new Map<string, string>()
  private outputTimer: NodeJS.Timeout | undefined

  /** A piece of a running call's output (`tools/output`): kept to its last 4 KB, drawn at most 10 times a second. */
  toolOutput(chunk: ToolOutputChunk): void {
    if (chunk.session !== this.agent.session) return
    this.liveOutput.set(chunk.callId, ((this.liveOutput.get(chunk.callId) ?? '') + chunk.text).slice(-LIVE_OUTPUT_CHARS))
    this.outputTimer ??= setTimeout(() => {
      this.outputTimer = undefined
      this.notify()
    }, 100)
  }

  childStarted(info: { parentSessionId: string; childSessionId: string; label?: string }): void {
    if (info.parentSessionId !== this.agent.id) return
    this.children.set(info.childSessionId, { id: info.childSessionId, label: info.label ?? 'subagent', steps: 0, activity: 'starting' })
    this.notify()
  }

  childFinished(info: { childSessionId: string }): void {
    if (this.children.delete(info.childSessionId)) this.notify()
  }

  private observeChild(child: ChildView, event: SessionEvent): void {
    let next = child
    if (event.type === 'step/start') next = { ...child, steps: child.steps + 1, activity: 'waiting for the model' }
    else if (event.type === 'tool/call') next = { ...child, activity: `running ${(event.data as { name: string }).name}` }
    else if (event.type === 'assistant/chunk' && child.activity !== 'writing') next = { ...child, activity: 'writing' }
    else if (event.type === 'turn/end') next = { ...child, activity: 'done' }
    if (next === child) return
    this.children.set(child.id, next)
    this.notify()
  }

  notice(level: 'error' | 'warning' | 'info', text: string): void {
    this.fold.notice(level, text)
    this.settle()
    this.notify()
  }

  /** The `!command` running now, for the live line under the conversation (not kept in it). */
  shell: { readonly command: string; readonly since: number } | undefined

  shellStarted(command: string): void {
    this.shell = { command, since: Date.now() }
    this.notify()
  }

  shellEnded(): void {
    this.shell = undefined
    this.notify()
  }

  /** A `!command` that ran: shown now; its message reaches the log when the next step claims it. */
  shellRan(message: UserMessage): void {
    this.fold.shell(message)
    this.settle()
    this.notify()
  }

  /** Moves every settled item at the front of the live list to the printed list. */
  private settle(): void {
    const { items } = this.fold
    const added: Printed[] = []
    while (this.foldPrinted < items.length && settled(items[this.foldPrinted])) {
      added.push({ key: `p${this.printedKeys++}`, kind: 'item', item: items[this.foldPrinted] })
      this.foldPrinted += 1
    }
    if (added.length > 0) this.printed = this.printed.concat(added)
  }

  /** Items still changing (the running step, tools without results). */
  live(): readonly Item[] {
    return this.fold.items.slice(this.foldPrinted)
  }

  switchAgent(agent: Agent): void {
    this.agent = agent
    this.fold = new ConversationFold()
    this.foldPrinted = 0
    this.approvals = []
    this.questions = []
    this.rewind = undefined
    this.resume = undefined
    this.notify()
  }

  /**
   * The list of earlier prompts to go back to (Esc Esc, `/rewind`) while it is open, the row
   * chosen, and, once one is picked whose turns changed files, the question whether to put them
   * back (`files`, `choice` 0: put back, 1: leave).
   */
  rewind: {
    readonly points: readonly RewindPoint[]; index: number
    files?: { readonly point: RewindPoint; readonly changes: FileChanges; choice: number }
  } | undefined

  /** Opens the rewind list over the current session's prompts; false when it has none. */
  openRewind(): boolean {
    const points = rewindPoints(this.agent.session.events)
    if (points.length === 0) return false
    this.rewind = { points, index: 0 }
    this.notify()
    return true
  }

  moveRewind(by: number): void {
    const rewind = this.rewind
    if (rewind === undefined) return
    if (rewind.files !== undefined) rewind.files.choice = Math.max(0, Math.min(1, rewind.files.choice + by))
    else rewind.index = Math.max(0, Math.min(rewind.points.length - 1, rewind.index + by))
    this.notify()
  }

  /**
   * The chosen point; when its turns changed files with write or edit, asks first (and returns
   * undefined) whether to put them back.
   */
  pickRewind(): RewindPoint | undefined {
    const rewind = this.rewind
    if (rewind === undefined) return undefined
    const point = rewind.points[rewind.index]
    const changes = fileChangesAfter(this.agent.session.events, point.boundary ?? -1)
    if (changes.paths.length === 0) return point
    rewind.files = { point, changes, choice: 0 }
    this.notify()
    return undefined
  }

  /** Back from the files question to the list. */
  unpickRewind(): void {
    if (this.rewind?.files === undefined) return
    this.rewind.files = undefined
    this.notify()
  }

  closeRewind(): void {
    this.rewind = undefined
    this.notify()
  }

  /** `/resume`'s picker while it is open: the sessions offered and what opens the one picked. */
  resume: { readonly sessions: readonly StoredSessionSummary[]; readonly open: (id: string) => void } | undefined

  openResume(sessions: readonly StoredSessionSummary[], open: (id: string) => void): void {
    this.resume = { sessions, open }
    this.notify()
  }

  /** Closes the picker, opening `id` when one was picked (Esc picks none). */
  closeResume(id: string | undefined): void {
    const open = this.resume?.open
    this.resume = undefined
    this.notify()
    if (id !== undefined) open?.(id)
  }

  /** The first line of the pending approval's arguments on screen, and whether its end was shown (a box taller than the screen scrolls). */
  approvalScroll: { readonly id: string; readonly offset: number; readonly seenEnd: boolean } | undefined

  scrollApproval(id: string, offset: number, seenEnd: boolean): void {
    this.approvalScroll = { id, offset, seenEnd }
    this.notify()
  }

  addApproval(prompt: ApprovalPrompt): void {
    this.approvals = [...this.approvals, prompt]
    this.notify()
  }

  removeApproval(id: string): void {
    this.approvals = this.approvals.filter(prompt => prompt.id !== id)
    this.notify()
  }

  addQuestion(prompt: QuestionPrompt): void {
    this.questions = [...this.questions, prompt]
    this.notify()
  }

  removeQuestion(id: string): void {
    this.questions = this.questions.filter(prompt => prompt.id !== id)
    this.notify()
  }
}
