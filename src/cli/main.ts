/**
 * The `dsh` launcher: `dsh [--profile NAME] [--patch FILE]... [--dump-config|--dump-default-config] [app args]`.
 *
 * Launcher flags come first; the first token it does not know starts the app's own arguments.
 * `dsh web ...` is `dsh --profile web ...`; `dsh sessions` lists stored sessions.
 * Everything heavy is imported lazily so `--version` and `--help` cost almost nothing.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface LauncherOptions {
  profile: string
  patches: string[]
  dump?: 'config' | 'default-config'
  version?: boolean
  help?: boolean
  appArgs: string[]
}

export class UsageError extends Error {}

export function parseLauncherArgs(argv: readonly string[]): LauncherOptions {
  const options: LauncherOptions = { profile: 'headless', patches: [], appArgs: [] }
  let index = 0
  const value = (flag: string) => {
    const next = argv[index + 1]
    if (next === undefined || next.startsWith('--')) throw new UsageError(`${flag} needs a value`)
    index += 1
    return next
  }
  if (argv[0] === 'web' || argv[0] === 'sessions') {
    // Subcommands are profiles whose app reads the remaining arguments.
    options.profile = argv[0]
    index = 1
  }
  for (; index < argv.length; index += 1) {
    const arg = argv[index]
    if (arg === '--profile') options.profile = value(arg)
    else if (arg.startsWith('--profile=')) options.profile = arg.slice('--profile='.length)
    else if (arg === '--patch') options.patches.push(value(arg))
    else if (arg.startsWith('--patch=')) options.patches.push(arg.slice('--patch='.length))
    else if (arg === '--dump-config') options.dump = 'config'
    else if (arg === '--dump-default-config') options.dump = 'default-config'
    else if (arg === '--version' || arg === '-V') options.version = true
    else if (arg === '--help' || arg === '-h') options.help = true
    else break
  }
  options.appArgs = argv.slice(index)
  return options
}

const HELP = `Usage: dsh [--profile NAME] [--patch FILE]... [app arguments]

Launcher flags (before app arguments):
  --profile NAME          composition to run (default: headless; shipped: headless, sdk, acp, web)
  --patch FILE            extra patch layer, applied last (repeatable)
  --dump-config           print the composed plugin tree as YAML and exit
  --dump-default-config   print the bundle layers only and exit
  --version, --help

Headless app (dsh --profile headless ...):
  dsh "task words..."              run one task, print the final answer
  --output text|stream-json        output format (default text)
  --session ID                     continue a stored session
  --model NAME                     model route, e.g. deepseek-v4-pro
  --cwd DIR                        workspace folder (default: current folder)
  --trust-project-mcp              run the MCP servers of the project's .mcp.json

Other commands:
  dsh mcp list|add|remove          MCP servers (see docs/mcp.md)
  dsh sessions                     list stored sessions
  dsh web [--port P] [--no-open]   browser UI on 127.0.0.1:3080 (see docs/web.md)
  dsh --profile sdk                JSON-RPC SDK server on stdin/stdout (see docs/protocols.md)
  dsh --profile acp                ACP agent server on stdin/stdout, for editors

Environment: DEEPSEEK_API_KEY, DEEPSEEK_BASE_URL, DSH_HOME (default ~/.dsh), DSH_MODEL.
`

function packageVersion(): string {
  const root = new URL('../..', import.meta.url)
  return (JSON.parse(readFileSync(join(root.pathname, 'package.json'), 'utf8')) as { version: string }).version
}

export async function main(argv: readonly string[]): Promise<number> {
  let options: LauncherOptions
  try {
    options = parseLauncherArgs(argv)
  } catch (error) {
    process.stderr.write(`dsh: ${(error as Error).message}\n${HELP}`)
    return 2
  }
  if (options.version) {
    process.stdout.write(`dsh ${packageVersion()}\n`)
    return 0
  }
  if (options.help) {
    process.stdout.write(HELP)
    return 0
  }
  const [first, second] = options.appArgs
  if (first === 'mcp' && options.profile === 'headless' && (second === undefined || ['list', 'add', 'remove'].includes(second))) {
    const { mcpCommand } = await import('./mcp-command.js')
    return mcpCommand(options.appArgs.slice(1), { stdout: process.stdout, stderr: process.stderr })
  }
  const { runProfile } = await import('./run.js')
  return runProfile(options)
}
