/**
 * Going back to an earlier prompt (the terminal app's Esc Esc and `/rewind`, the web's Edit on a
 * message): the points a
 * session can be rewound to, one per turn the user's own message started. Rewinding to one forks
 * the session right after the turn before it (S-14: the copy ends at that turn's `turn/end`, so
 * the prompt, everything the model did for it and everything later are left out) and opens the
 * copy with the prompt's text in the input box to edit and send again. The session it came from
 * stays stored as it was. A point in the first turn has nothing before it to keep: it opens a
 * new session instead.
 */
import type { UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'
import { scanEvents } from '../session/packed-run.js'
import { typedText } from './mentions.js'

export interface RewindPoint {
  /** The turn the prompt started. */
  readonly turn: number
  /** What the list shows: the typed text as the conversation shows it (`[1 image]` included). */
  readonly label: string
  /** What goes back into the input box: the typed text alone. */
  readonly text: string
  /** When the turn started (ms since the epoch). */
  readonly time: number
  /** The fork boundary: the seq of the previous turn's `turn/end`; undefined for the first turn. */
  readonly boundary: number | undefined
  /** The seqs of the prompt's `user/message` events. */
  readonly seqs: readonly number[]
}

const MARKS: ReadonlySet<string> = new Set(['turn/start', 'turn/end', 'step/start', 'user/message'])

/**
 * The rewind points of a log, newest first: every ended or open turn whose first step carried
 * messages the user typed (several when queued prompts started it together). Turns a plugin
 * started (a finished background job, a skill command's prompt) are not offered. Reads only the
 * events it needs (packed delta runs are skipped).
 */
export function rewindPoints(events: readonly SessionEvent[]): RewindPoint[] {
  const points: RewindPoint[] = []
  let previousEnd: number | undefined
  let turn: { turn: number; time: number; boundary: number | undefined; step: number; labels: string[]; texts: string[]; seqs: number[] } | undefined
  const close = () => {
    if (turn !== undefined && turn.texts.length > 0) {
      points.push({ turn: turn.turn, label: turn.labels.join(' '), text: turn.texts.join('\n'), time: turn.time, boundary: turn.boundary, seqs: turn.seqs })
    }
    turn = undefined
  }
  scanEvents(events, 0, MARKS, event => {
    switch (event.type) {
      case 'turn/start':
        close()
        turn = { turn: (event.data as { turn: number }).turn, time: event.time, boundary: previousEnd, step: 0, labels: [], texts: [], seqs: [] }
        return
      case 'step/start':
        if (turn !== undefined) turn.step += 1
        return
      case 'user/message': {
        const message = event.data as UserMessage
        if (turn === undefined || turn.step !== 1 || message.source?.kind !== 'user') return
        turn.labels.push(typedText(message))
        turn.texts.push(typedText(message, false))
        turn.seqs.push(event.seq)
        return
      }
      case 'turn/end':
        close()
        previousEnd = event.seq
    }
  })
  close()
  return points.reverse()
}
