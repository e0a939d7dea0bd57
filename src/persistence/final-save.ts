/**
 * The final save of a session (docs/persistence.md, "When the store fails"): a flush retried
 * while the store fails, for a bounded time, so a store that is back a few seconds later (a
 * restarted server, a lock another process let go) still gets every event, and a caller that
 * gives up knows how much it could not store. Headless saves its one session so; the terminal
 * app and `dsh web` save every live session so at exit (`finalSaveAll`), and all three say the
 * same line for a session they could not store and exit 1.
 */
import { SeqMismatchError, SessionExistsError, SessionInUseError, WriterLeaseLostError } from './api.js'

export type FinalSave =
  | { readonly stored: true; readonly attempts: number }
  | {
    readonly stored: false
    readonly attempts: number
    /** Events appended but not stored when it gave up (the header too when `whole`). */
    readonly pending: number
    /** Nothing of the session is stored, not even its header. */
    readonly whole: boolean
    /** The last failure. */
    readonly error: unknown
  }

/** The first and the longest pause between two attempts. */
const FIRST_PAUSE_MS = 100
const MAX_PAUSE_MS = 1_000

/**
 * Failures no retry cures: another process is the session's writer, ours was taken over, or the
 * id holds a different session.
 */
export function permanentStoreError(error: unknown): boolean {
  return error instanceof SessionInUseError || error instanceof WriterLeaseLostError
    || error instanceof SessionExistsError || error instanceof SeqMismatchError
}

export interface RetriedFlush {
  readonly flush: () => Promise<void>
  /** What is still unstored: events, and whether the header is. */
  readonly pending: () => { readonly events: number; readonly whole: boolean }
  /** Retry for this long after the first failure (ms). */
  readonly retryMs: number
}

export async function retryFlush({ flush, pending, retryMs }: RetriedFlush): Promise<FinalSave> {
  let deadline: number | undefined
  for (let attempts = 1, pause = FIRST_PAUSE_MS; ; attempts++, pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    try {
      await flush()
      return { stored: true, attempts }
    } catch (error) {
      deadline ??= Date.now() + retryMs
      const left = deadline - Date.now()
      if (permanentStoreError(error) || left <= 0) {
        const { events, whole } = pending()
        return { stored: false, attempts, pending: events, whole, error }
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)))
    }
  }
}

/** The final save of one of the live sessions at an app's exit. */
export interface SessionFinalSave {
  readonly id: string
  /** Events the session holds (stored or not). */
  readonly length: number
  readonly saved: FinalSave
}

/** The one line of a session whose final save gave up: what the store lacks, and why. */
export function notStoredMessage(id: string, length: number, saved: Extract<FinalSave, { stored: false }>): string {
  const cause = saved.error instanceof Error ? saved.error.message : String(saved.error)
  const what = saved.whole
    ? `session ${id} is not stored: none of its ${saved.pending} events could be written`
    : `session ${id} is not fully stored: its last ${saved.pending} of ${length} events could not be written, so a later --session ${id} finds its last turn interrupted`
  return `${what} (gave up after ${saved.attempts} attempts: ${cause.split('\n')[0]})`
}

/** The lines of the sessions an app's final saves could not store (none when all are stored). */
export function notStoredLines(saves: readonly SessionFinalSave[]): string[] {
  return saves.flatMap(({ id, length, saved }) => saved.stored ? [] : [notStoredMessage(id, length, saved)])
}
