/**
 * The `dsh` launcher: `dsh [--profile NAME] [--patch FILE]... [--dump-config|--dump-default-config] [app args]`.
 *
 * Launcher flags come first; the first token it does not know starts the app's own arguments.
 * `dsh web ...` is `dsh --profile web ...`; `dsh sessions` lists stored sessions.
 * Everything heavy is imported lazily so `--version` and `--help` cost almost nothing.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseInteractiveArgs } from '../tui/args.js'
import { UsageError } from './usage-error.js'

export interface LauncherOptions {
  profile: string
  /** True when --profile or a subcommand named the profile (no terminal-app routing then). */
  profileGiven?: boolean
  patches: string[]
  dump?: 'config' | 'default-config'
  /** Session store URL (`postgres://...`); else DSH_STORE_URL, else settings `store:`. */
  store?: string
  version?: boolean
  help?: boolean
  appArgs: string[]
}

export { UsageError }

/** First words that name a profile (`dsh web` is `dsh --profile web`). */
const SUBCOMMANDS: ReadonlySet<string> = new Set(['web', 'sessions', 'tui'])

export function parseLauncherArgs(argv: readonly string[]): LauncherOptions {
  const options: LauncherOptions = { profile: 'headless', patches: [], appArgs: [] }
  let index = 0
  const value = (flag: string) => {
    const next = argv[index + 1]
    if (next === undefined || next.startsWith('--')) throw new UsageError(`${flag} needs a value`)
    index += 1
    return next
  }
  let subcommand = false
  for (; index < argv.length; index += 1) {
    const arg = argv[index]
    if (!subcommand && !options.profileGiven && SUBCOMMANDS.has(arg)) {
      // Subcommands are profiles whose app reads the remaining arguments; launcher flags may come
      // before them (`dsh --store URL sessions`) or after them.
      options.profile = arg
      options.profileGiven = true
      subcommand = true
      // An import is checked against the whole vocabulary (hooks, goals, plan... event types),
      // which the lean listing profile does not load.
      if (arg === 'sessions' && argv[index + 1] === 'import') options.profile = 'sessions-import'
    } else if (arg === '--profile') options.profile = value(arg), options.profileGiven = true
    else if (arg.startsWith('--profile=')) options.profile = arg.slice('--profile='.length), options.profileGiven = true
    else if (arg === '--patch') options.patches.push(value(arg))
    else if (arg.startsWith('--patch=')) options.patches.push(arg.slice('--patch='.length))
    else if (arg === '--store') options.store = value(arg)
    else if (arg.startsWith('--store=')) options.store = arg.slice('--store='.length)
    else if (arg === '--dump-config') options.dump = 'config'
    else if (arg === '--dump-default-config') options.dump = 'default-config'
    else if (arg === '--version' || arg === '-V') options.version = true
    else if (arg === '--help' || arg === '-h') options.help = true
    else break
  }
  options.appArgs = argv.slice(index)
  return options
}

const helpText = (profiles: readonly string[]) => `Usage: dsh [--profile NAME] [--patch FILE]... [app arguments]

In a terminal, with no task (docs/terminal.md):
  dsh                              open an interactive conversation in this folder
  dsh -c, --continue               continue the latest session of this folder
  dsh --resume                     pick a stored session to continue
  dsh --session ID                 continue that session
  (also --model, --cwd, --permission-mode, --allow, --deny and --network, as below)

Launcher flags (before app arguments):
  --profile NAME          composition to run (default: tui in a terminal without a task, else
                          headless)
                          shipped: ${profiles.join(', ')}
  --patch FILE            extra patch layer, applied last (repeatable)
  --store URL             keep sessions in PostgreSQL (postgres://user@host/db[?schema=NAME]);
                          also DSH_STORE_URL or \`store:\` in settings (default: local files)
  --dump-config           print the composed plugin tree as YAML and exit
  --dump-default-config   print the bundle layers only and exit
  --version, --help

Headless app (dsh --profile headless ...):
  dsh "task words..."              run one task, print the final answer
  echo "task" | dsh                the task from stdin (when no task words are given)
  --output text|json|stream-json   output format (default text): the answer; one JSON result
                                   object; or one line per session event, then the result
  --session ID                     continue a stored session
  --model NAME                     model route, e.g. deepseek-v4-pro, or a provider preset's
                                   PROVIDER/MODEL: openai/gpt-5, anthropic/claude-sonnet-4-5,
                                   openrouter/..., ollama/llama3.2, vllm/..., llamacpp/...
  --cwd DIR                        workspace folder (default: current folder)
  --permission-mode MODE           read-only, workspace-write (default: writes in the folder,
                                   bash in a sandbox) or danger-full-access (no sandbox, no
                                   approvals); see docs/security.md
  --allow RULE, --deny RULE        a permission rule for this run (repeatable), in Claude
                                   Code's syntax: 'Bash(npm run test:*)', 'Edit(src/**)',
                                   'WebFetch(domain:example.com)'; see docs/security.md
  --trust-project-mcp              run the MCP servers of the project's .mcp.json
  --network MODE                   network of sandboxed commands and web_fetch: allowlist
                                   (default: only sandbox.allowedHosts, through dsh's proxy),
                                   none, or full; see docs/security.md

Other commands:
  dsh mcp list|add|remove          MCP servers (see docs/mcp.md)
  dsh trust [on|off|list]          may this folder run its hooks and .mcp.json servers
  dsh sessions [--json] [--all]    list stored sessions (--all: also those with no completed turn)
  dsh sessions repair ID           salvage a damaged session into a copy
  dsh sessions delete ID           move a session to the store's trash
  dsh sessions restore ID          bring a deleted session back from the trash
  dsh sessions export ID [-o FILE] write a session as one file (stdout by default)
  dsh sessions import FILE|-       store an exported session here [--new-id] [--cwd DIR]
  dsh web [--port P] [--no-open]   browser UI on 127.0.0.1:3080 (see docs/web.md)
  dsh --profile sdk                JSON-RPC SDK server on stdin/stdout (see docs/protocols.md)
  dsh --profile acp                ACP agent server on stdin/stdout, for editors

Environment: DEEPSEEK_API_KEY, DEEPSEEK_BASE_URL, DSH_HOME (default ~/.dsh), DSH_MODEL,
DSH_PERMISSION_MODE (the default --permission-mode), DSH_NETWORK (the default --network),
DSH_STORE_URL.
`

/** The help text, listing the shipped profiles from the same index the profile loader reads. */
async function help(): Promise<string> {
  const { listShippedProfiles } = await import('../config/profile.js')
  return helpText(listShippedProfiles())
}

function packageVersion(): string {
  const root = new URL('../..', import.meta.url)
  return (JSON.parse(readFileSync(join(root.pathname, 'package.json'), 'utf8')) as { version: string }).version
}

/** What a run tells its launcher: the profile it ran (bin/dsh.js keys its code cache by it). */
export interface RunReport {
  profile?: string
}

export async function main(argv: readonly string[], report: RunReport = {}): Promise<number> {
  let options: LauncherOptions
  try {
    options = parseLauncherArgs(argv)
  } catch (error) {
    process.stderr.write(`dsh: ${(error as Error).message}\n${await help()}`)
    return 2
  }
  if (options.version) {
    process.stdout.write(`dsh ${packageVersion()}\n`)
    return 0
  }
  if (options.help) {
    process.stdout.write(await help())
    return 0
  }
  const [first, second] = options.appArgs
  if (first === 'mcp' && options.profile === 'headless' && (second === undefined || ['list', 'add', 'remove'].includes(second))) {
    const { mcpCommand } = await import('./mcp-command.js')
    return mcpCommand(options.appArgs.slice(1), { stdout: process.stdout, stderr: process.stderr })
  }
  if (first === 'trust' && options.profile === 'headless' && (second === undefined || ['on', 'off', 'list', 'status', '--cwd'].includes(second))) {
    const { trustCommand } = await import('./trust-command.js')
    return trustCommand(options.appArgs.slice(1), { stdout: process.stdout, stderr: process.stderr })
  }
  if (!options.profileGiven && options.dump === undefined) {
    const routed = routeDefault(options, Boolean(process.stdin.isTTY && process.stdout.isTTY))
    if (routed instanceof UsageError) {
      process.stderr.write(`dsh: ${routed.message}\n${await help()}`)
      return 2
    }
    options.profile = routed
  }
  report.profile = options.profile
  const { runProfile } = await import('./run.js')
  return runProfile(options)
}

/**
 * The default profile: the terminal app when dsh runs in a terminal with no task, the headless
 * app otherwise. Options only the terminal app knows (-c, --resume) without a terminal are a
 * usage error rather than a task called "-c".
 */
export function routeDefault(options: LauncherOptions, terminal: boolean): string | UsageError {
  let parsed
  try {
    parsed = parseInteractiveArgs(options.appArgs)
  } catch (error) {
    return new UsageError((error as Error).message)
  }
  if (parsed.taskWords.length > 0) {
    if (parsed.interactiveOnly) return new UsageError('-c/--continue and --resume open the terminal app and take no task; use --session ID "task" to continue a session headless')
    return options.profile
  }
  if (terminal) return 'tui'
  if (parsed.interactiveOnly) return new UsageError('-c/--continue and --resume need a terminal; without one, give a task: dsh --session ID "what to do"')
  return options.profile
}
