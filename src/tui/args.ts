/**
 * Arguments of the interactive terminal app (`dsh`, `dsh -c`, `dsh --resume`, `dsh --session ID`).
 * The launcher uses `taskWords` to decide between the terminal app (no task, in a terminal) and
 * the headless app (a task was given).
 */
/** A usage mistake in the app's arguments (the launcher prints it with the usage text, exit 2). */
export class ArgsError extends Error {}

export interface InteractiveArgs {
  /** `-c` / `--continue`: the latest session of this folder. */
  readonly continueLatest: boolean
  /** `--resume`: pick a stored session from a list. */
  readonly resume: boolean
  readonly session?: string
  readonly model?: string
  readonly cwd?: string
  /** `--permission-mode`: the session's sandbox mode (danger-full-access also turns approvals off). */
  readonly permissionMode?: string
  /** Words that are not options: a task (the headless app runs it). */
  readonly taskWords: readonly string[]
  /** Options only the interactive app knows (`-c`, `--continue`, `--resume`). */
  readonly interactiveOnly: boolean
}

// `--network` is read by the approval row (the deployment's network mode), `--allow` and `--deny` by the permissions row.
const VALUE_FLAGS = new Set(['--session', '--model', '--cwd', '--output', '--permission-mode', '--network', '--allow', '--deny'])

export function parseInteractiveArgs(args: readonly string[]): InteractiveArgs {
  let continueLatest = false
  let resume = false
  const values: Record<string, string> = {}
  const words: string[] = []
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]
    if (arg === '-c' || arg === '--continue') continueLatest = true
    else if (arg === '--resume' || arg === '-r') resume = true
    else if (VALUE_FLAGS.has(arg)) {
      const next = args[index + 1]
      if (next === undefined) throw new ArgsError(`${arg} needs a value`)
      values[arg] = next
      index += 1
    } else if (arg.startsWith('--allow=') || arg.startsWith('--deny=')) {
      continue
    } else if (arg === '--') {
      words.push(...args.slice(index + 1))
      break
    } else words.push(arg)
  }
  if ([continueLatest, resume, values['--session'] !== undefined].filter(Boolean).length > 1) {
    throw new ArgsError('use only one of -c/--continue, --resume and --session ID')
  }
  return {
    continueLatest,
    resume,
    ...values['--session'] === undefined ? {} : { session: values['--session'] },
    ...values['--model'] === undefined ? {} : { model: values['--model'] },
    ...values['--cwd'] === undefined ? {} : { cwd: values['--cwd'] },
    ...values['--permission-mode'] === undefined ? {} : { permissionMode: values['--permission-mode'] },
    taskWords: words,
    interactiveOnly: continueLatest || resume,
  }
}
