/**
 * `dsh trust [on|off] [--cwd DIR]` and `dsh trust list`: whether a project folder may run the code
 * it brings (hook files, `.mcp.json` servers); the same grammar as the `/trust` command
 * (docs/security.md, "Project trust").
 */
import { resolveHome } from '../config/home.js'
import { readTrustedProjects } from '../trust/index.js'
import { formatRevoked, formatTrusted, formatTrustStatus, parseTrustAction, projectTrustStatus, revokeFolder, trustFolder } from '../trust/plugin.js'
import { commandFailure, UsageError } from './usage-error.js'
import { terminalSafe } from '../host/terminal-text.js'

export const TRUST_USAGE = `Usage:
  dsh trust [--cwd DIR]        is the folder trusted, and what would it run (hooks, .mcp.json servers)
  dsh trust on [--cwd DIR]     trust it: its hooks and .mcp.json servers run from the next start
  dsh trust off [--cwd DIR]    revoke that trust
  dsh trust list               the trusted folders
`

export interface TrustCommandIo {
  readonly stdout: NodeJS.WritableStream
  readonly stderr: NodeJS.WritableStream
  readonly env?: NodeJS.ProcessEnv
  readonly cwd?: string
}

export async function trustCommand(args: readonly string[], io: TrustCommandIo): Promise<number> {
  const home = resolveHome(io.env ?? process.env)
  try {
    let folder = io.cwd ?? process.cwd()
    const words: string[] = []
    for (let index = 0; index < args.length; index += 1) {
      const arg = args[index]!
      if (arg === '--cwd') {
        const value = args[++index]
        if (value === undefined) throw new UsageError('--cwd needs a folder')
        folder = value
      } else if (arg.startsWith('-')) throw new UsageError(`unknown option ${arg}`)
      else words.push(arg)
    }
    if (words.length > 1) throw new UsageError(`one action at a time, not "${words.join(' ')}"`)
    if (words[0] === 'list') {
      const projects = readTrustedProjects(home)
      io.stdout.write(projects.length === 0 ? 'No trusted folders.\n' : `${terminalSafe(projects.join('\n'))}\n`)
      return 0
    }
    const action = parseTrustAction(words[0] ?? '')
    if (action instanceof Error) throw new UsageError(`unknown action "${words[0]}"`)
    // What the project files run is the project's text: made safe for a terminal (security #42.6).
    if (action === 'status') io.stdout.write(`${terminalSafe(formatTrustStatus(projectTrustStatus(folder, home), { on: '`dsh trust on`', off: '`dsh trust off`' }))}\n`)
    else if (action === 'on') io.stdout.write(`${terminalSafe(formatTrusted(await trustFolder(folder, home)))}\n`)
    else io.stdout.write(`${terminalSafe(formatRevoked(folder, revokeFolder(folder, home), projectTrustStatus(folder, home)))}\n`)
    return 0
  } catch (error) {
    return commandFailure(error, 'dsh trust', TRUST_USAGE, io.stderr)
  }
}
