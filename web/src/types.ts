/** Shapes the server sends (see docs/web.md); kept free of DOM types so tests run in Node. */
export interface SessionEvent {
  readonly type: string
  readonly seq: number
  readonly time: number
  readonly data: any
}

export interface SessionSummary {
  readonly id: string
  readonly title: string | null
  readonly cwd?: string
  readonly parentSession?: string
  readonly createdAt: number
  readonly updatedAt: number
  readonly turns: number
  readonly length: number
  readonly status: 'idle' | 'running'
  /** Archived sessions are hidden from the list (the sidebar's Archived view shows them). */
  readonly archived?: boolean
  /** Child sessions (delegation): the parent's call that started it, its label and latest output line. */
  readonly parentCallId?: string
  readonly label?: string
  readonly lastLine?: string
}

export interface InboxSnapshot {
  readonly nextTurn: readonly { text: string }[]
  readonly nextStep: readonly { text: string }[]
  /** The session's log length when it was read: a later snapshot has a larger or equal one. */
  readonly version?: number
}
