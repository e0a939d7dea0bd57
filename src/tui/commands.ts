/**
 * Slash commands in the terminal app. When the profile has the shared command registry
 * (`ctx.commands`), its commands are offered and run; the app adds only what no registry can do
 * for it (leave, start a new session, help). Without a registry those are all there is.
 */
export interface TuiCommandContext {
  /** Prints one notice line in the conversation. */
  print(text: string, level?: 'info' | 'warning' | 'error'): void
  exit(): void
  newSession(): Promise<void>
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
  {
    name: 'help', description: 'Show the keys and commands',
    run: (_args, ui) => {
      const commands = ui.list().map(command => `/${command.name} — ${command.description}`).join('\n')
      ui.print([
        'Enter send (queues while a turn runs) · Ctrl-S steer into the running step · \\ or Alt-Enter new line',
        'Esc cancel the turn · Ctrl-C twice exit · Up/Down history · @ complete a file · Tab accept · Ctrl-O show reasoning',
        commands,
      ].join('\n'))
    },
  },
]

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
