/**
 * Slash commands in the terminal app. When the profile has the shared command registry
 * (`ctx.commands`), its commands are offered and run; the app adds only what no registry can do
 * for it (leave, start a new session, help). Without a registry those are all there is.
 */
import { hasConversation } from '../persistence/api.js'

export interface TuiCommandContext {
  /** Prints one notice line in the conversation. */
  print(text: string, level?: 'info' | 'warning' | 'error'): void
  exit(): void
  newSession(): Promise<void>
  /** `/resume [id]`: list this folder's stored sessions, or open one in place of the current. */
  resume(wanted: string): Promise<void>
  /** `/fork`: continue in a copy of this session; the session stays stored as it is. */
  fork(): Promise<void>
  /** `/rewind`: the list of earlier prompts to go back to (as Esc Esc opens it). */
  rewind(): void
  /** The commands on offer (for /help). */
  list(): readonly TuiCommand[]
}

export interface TuiCommand {
  readonly name: string
  readonly description: string
  run(args: string, ui: TuiCommandContext): void | Promise<void>
}

export const BUILTIN_COMMANDS: readonly TuiCommand[] = [
  { name: 'exit', description: 'Leave dsh (the session stays stored)', run: (_args, ui) => ui.exit() },
  { name: 'new', description: 'Start a new session in this folder', run: async (_args, ui) => ui.newSession() },
  { name: 'clear', description: 'Start a new session in this folder (as /new)', run: async (_args, ui) => ui.newSession() },
  { name: 'resume', description: 'Continue a stored session of this folder: alone, a picker; with an id (or its start), that one', run: async (args, ui) => ui.resume(args) },
  { name: 'fork', description: 'Continue in a copy of this session (this one stays stored as it is)', run: async (_args, ui) => ui.fork() },
  { name: 'rewind', description: 'Go back to an earlier prompt, to edit it and send it again (Esc Esc)', run: (_args, ui) => ui.rewind() },
  {
    name: 'help', description: 'Show the keys and commands',
    run: (_args, ui) => {
      const commands = ui.list().map(command => `/${command.name} — ${command.description}`).join('\n')
      ui.print([
        'Enter send (queues while a turn runs) · Ctrl-S steer into the running step · \\ or Alt-Enter new line',
        'Esc cancel the turn · Esc Esc go back to an earlier prompt · Ctrl-C twice exit · Up/Down history · @ complete a file · Tab accept · Ctrl-O show reasoning',
        '!command run it in your shell here; its output goes to the model with your next message (Esc stops it)',
        commands,
      ].join('\n'))
    },
  },
]

/** What a stored session shows in `/resume`'s list. */
export interface ResumeCandidate {
  readonly id: string
  readonly title: string | null
  readonly cwd?: string
  readonly updatedAt: number
  readonly turns: number
}

export type ResumeChoice<T extends ResumeCandidate = ResumeCandidate> =
  /** `sessions`: this folder's others, newest first, for the picker (`text` lists them as text). */
  | { readonly kind: 'list'; readonly text: string; readonly sessions?: readonly T[] }
  | { readonly kind: 'open'; readonly id: string }
  | { readonly kind: 'error'; readonly text: string }

/** How many sessions `/resume` lists. */
const RESUME_LIST = 10

/**
 * `/resume [wanted]` over the stored sessions: without an id, the newest of this folder (`cwd`)
 * with their ids; with an id or the start of one, that session of this folder.
 */
export function resumeChoice<T extends ResumeCandidate>(stored: readonly T[], cwd: string, current: string, wanted: string, age: (ms: number) => string): ResumeChoice<T> {
  const here = stored.filter(session => session.cwd === cwd && session.id !== current && hasConversation(session)).sort((a, b) => b.updatedAt - a.updatedAt)
  if (wanted === '') {
    if (here.length === 0) return { kind: 'list', text: 'No other stored session in this folder.' }
    const rows = here.slice(0, RESUME_LIST).map(session => `  ${session.id.slice(0, 8)}  ${age(session.updatedAt).padEnd(8)} ${String(session.turns).padStart(3)} turn${session.turns === 1 ? ' ' : 's'}  ${(session.title ?? '(untitled)').replace(/\s+/g, ' ')}`)
    const more = here.length > RESUME_LIST ? [`  … ${here.length - RESUME_LIST} older (dsh --resume lists them all)`] : []
    return { kind: 'list', text: ['Stored sessions of this folder, newest first; /resume ID opens one:', ...rows, ...more].join('\n'), sessions: here }
  }
  const matches = here.filter(session => session.id.startsWith(wanted))
  if (matches.length === 1) return { kind: 'open', id: matches[0].id }
  if (matches.length > 1) return { kind: 'error', text: `"${wanted}" starts ${matches.length} sessions' ids: type more of it.` }
  if (current.startsWith(wanted)) return { kind: 'error', text: 'That is the session open now.' }
  const elsewhere = stored.find(session => session.id === wanted || session.id.startsWith(wanted))
  return elsewhere?.cwd !== undefined && elsewhere.cwd !== cwd
    ? { kind: 'error', text: `That session belongs to ${elsewhere.cwd}: run dsh --session ${elsewhere.id} there.` }
    : { kind: 'error', text: `No stored session of this folder starts with "${wanted}" (/resume lists them).` }
}

/** Commands whose names start with `prefix`, built-ins first, sorted by name. */
export function matchCommands(commands: readonly TuiCommand[], prefix: string): TuiCommand[] {
  return commands.filter(command => command.name.startsWith(prefix)).sort((a, b) => a.name.localeCompare(b.name))
}

/** Splits `/name args...`; undefined for text that is not a command. */
export function parseCommandLine(text: string): { name: string; args: string } | undefined {
  const match = /^\/([\w:-]+)(?:\s+([\s\S]*))?$/.exec(text.trim())
  if (match === null) return undefined
  return { name: match[1], args: (match[2] ?? '').trim() }
}
