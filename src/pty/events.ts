/**
 * What the log keeps of terminals: `pty/opened` and `pty/closed` around each one, and `pty/lost`
 * once, when a session is loaded again with terminals its log shows open (dsh stopped without
 * closing them: their processes died with it).
 */
import type { EventDataValidator, SessionEvent } from '../session/types.js'

export interface TerminalRecord {
  readonly id: string
  readonly name?: string
  readonly type: string
}

export interface PtyOpened extends TerminalRecord {
  readonly cwd: string
  readonly callId?: string
  readonly sandbox?: string
}

export type PtyCloseReason = 'closed' | 'agent-closed' | 'session-closed' | 'stopped'

export interface PtyClosed {
  readonly id: string
  readonly reason: PtyCloseReason
  readonly exitCode?: number
}

export interface PtyLost {
  readonly terminals: readonly TerminalRecord[]
}

export const OPENED = 'pty/opened'
export const CLOSED = 'pty/closed'
export const LOST = 'pty/lost'

declare module '../session/types.js' {
  interface SessionEventMap {
    'pty/opened': PtyOpened
    'pty/closed': PtyClosed
    'pty/lost': PtyLost
  }
}

const isObject = (data: unknown): data is Record<string, unknown> => typeof data === 'object' && data !== null && !Array.isArray(data)
const ID = /^pty-\d+$/

function recordProblem(data: Record<string, unknown>): string | null {
  if (typeof data.id !== 'string' || !ID.test(data.id)) return 'id must be pty-<n>'
  if (typeof data.type !== 'string' || data.type === '') return 'type must be a non-empty string'
  if (data.name !== undefined && typeof data.name !== 'string') return 'name must be a string when present'
  return null
}

export const VALIDATORS: Readonly<Record<string, EventDataValidator>> = {
  [OPENED]: (data) => {
    if (!isObject(data)) return 'data must be an object'
    const problem = recordProblem(data)
    if (problem !== null) return problem
    if (typeof data.cwd !== 'string') return 'cwd must be a string'
    return null
  },
  [CLOSED]: (data) => {
    if (!isObject(data)) return 'data must be an object'
    if (typeof data.id !== 'string' || !ID.test(data.id)) return 'id must be pty-<n>'
    if (!['closed', 'agent-closed', 'session-closed', 'stopped'].includes(data.reason as string)) return 'reason must be closed, agent-closed, session-closed or stopped'
    return null
  },
  [LOST]: (data) => {
    if (!isObject(data) || !Array.isArray(data.terminals) || data.terminals.length === 0) return 'terminals must be a non-empty list'
    for (const terminal of data.terminals) {
      if (!isObject(terminal)) return 'each terminal must be an object'
      const problem = recordProblem(terminal)
      if (problem !== null) return problem
    }
    return null
  },
}

/** The terminals a log shows open (opened, neither closed nor already recorded lost), and the highest number used. */
export function openInLog(events: readonly SessionEvent[]): { open: TerminalRecord[]; highest: number } {
  const open = new Map<string, TerminalRecord>()
  let highest = 0
  for (const event of events) {
    if (event.type === OPENED) {
      const data = event.data as PtyOpened
      open.set(data.id, { id: data.id, type: data.type, ...(data.name !== undefined ? { name: data.name } : {}) })
      highest = Math.max(highest, Number(data.id.slice(4)))
    } else if (event.type === CLOSED) open.delete((event.data as PtyClosed).id)
    else if (event.type === LOST) for (const terminal of (event.data as PtyLost).terminals) open.delete(terminal.id)
  }
  return { open: [...open.values()], highest }
}
