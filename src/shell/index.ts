/**
 * Persistent shells (docs/shells.md): `bash` whose state persists between calls, the one-shot
 * `pwsh` tool and its persistent form. Each plugin registers one tool on `ctx.tools`; the shells
 * of a session end when it is closed or deleted, and all of them when the plugin is unloaded.
 */
import type { Context } from 'cordis'
import { serviceLookup } from '../kernel/index.js'
import type { Tool } from '../tools/api.js'
import type { JsonSchema } from '../tools/json-schema.js'
import { createBashTool, type BashToolConfig } from '../tools/builtin/bash.js'
import { escalationPolicyText, escalationProperties, sandboxingOf, type Sandboxing } from '../tools/builtin/sandboxing.js'
import type { JobsService } from '../tools/jobs.js'
import type {} from '../session/api.js'
import { bashDialect, pwshDialect } from './protocol.js'
import { createPersistentShellTool, onPath, ShellPool, type PersistentShellConfig, type ShellCallArgs } from './tool.js'

export { bashDialect, pwshDialect, type ShellDialect } from './protocol.js'
export { PersistentShell } from './persistent.js'
export { createPersistentShellTool, onPath, resetLine, ShellPool } from './tool.js'

export const PERSISTENT_BASH_DESCRIPTION = 'Run a bash command in a persistent bash shell and return its output: stdout, then a [stderr] section, then [exit code: N] when it is not 0. The shell stays up between calls: the current directory, exported and shell variables and functions persist from one call to the next (it starts in the workspace). stdin is the null device: do not run interactive commands. Default timeout 60000 ms, at most 600000 ms; on expiry or cancel the command and the shell are killed and the next call starts a fresh shell. `exit` ends the shell the same way. Output over 64 KB per stream is cut to its head and tail, and the full text is saved to a file whose path is shown.'

const PWSH_DESCRIPTION = 'Execute a PowerShell command (`pwsh -Command`) and return its stdout/stderr. Each call runs in a fresh pwsh process: no state (cwd, variables, functions) persists between calls — pass `workdir` instead of using `cd`. Read environment variables with `$env:NAME`. Non-zero exits are reported as `[exit code: N]`. Long output is cut to its head and tail; the full output is saved to a file whose path is reported.'
const PWSH_BACKGROUND = 'Set `run_in_background: true` for long-running commands: the call returns a job id immediately; read its output with `job_output` and stop it with `job_kill`.'

export const PERSISTENT_PWSH_DESCRIPTION = 'Execute a PowerShell command in a persistent pwsh session and return its stdout/stderr. The session stays up between calls: the location, variables and functions persist from one call to the next (it starts in the workspace). Non-zero exits are reported as `[exit code: N]`. On timeout or cancel the command and the session are killed and the next call starts a fresh one.'

/** The recorded `pwsh` parameters. */
export const pwshParameters = {
  type: 'object',
  properties: {
    command: { type: 'string', description: 'The PowerShell command to execute.' },
    description: { type: 'string', description: 'Clear, concise description of what this command does in active voice, 5-10 words (shown in the UI). Examples: "ls" → "List files in current directory"; "git status" → "Show working tree status"; "Get-Process" → "List running processes".' },
    timeoutMs: { type: 'number', description: 'Timeout in milliseconds. The executor applies its configured default and cap, and kills the command on expiry.' },
    workdir: { type: 'string', description: 'Working directory for this command. Defaults to the session workspace; a relative path is resolved against it.' },
  },
  required: ['command', 'description'],
} as const satisfies JsonSchema

const pwshBackground = {
  run_in_background: { type: 'boolean', description: 'Run in the background and return a job id immediately (collect with job_output, stop with job_kill). No timeout applies.' },
} as const

/** The one-shot `pwsh` tool: bash's runner with `pwsh -c` (one process per call). */
export function createPwshTool(config: PersistentShellConfig = {}, sandboxing?: Sandboxing, jobs?: () => JobsService | undefined): Tool<ShellCallArgs> {
  const binary = config.binary ?? 'pwsh'
  const inner = createBashTool({ ...config, shell: binary }, sandboxing, jobs)
  const sandboxed = () => sandboxing?.sandbox() !== undefined
  const background = () => jobs?.() !== undefined
  return {
    name: 'pwsh',
    get description() {
      const text = background() ? `${PWSH_DESCRIPTION} ${PWSH_BACKGROUND}` : PWSH_DESCRIPTION
      return sandboxed() ? `${text} ${escalationPolicyText('command')}` : text
    },
    get parameters() {
      return { ...pwshParameters, properties: { ...pwshParameters.properties, ...(background() ? pwshBackground : {}), ...(sandboxed() ? escalationProperties('command') : {}) } }
    },
    ...(inner.outputType !== undefined ? { outputType: inner.outputType } : {}),
    ...(inner.timeoutMs !== undefined ? { timeoutMs: inner.timeoutMs } : {}),
    execute: (args, context) => inner.execute({ ...args, description: args.description ?? '' }, context),
  }
}

/** Registers `tool` and ties the pool's shells to the sessions and to the plugin's life. */
function registerShellTool(ctx: Context, tool: Tool, pool: ShellPool): void {
  ctx.effect(() => ctx.tools.register(tool))
  ctx.on('session/closed', (session) => { void pool.close(session.id) })
  ctx.on('session/deleted', async (id) => { await pool.close(id) })
  ctx.effect(() => () => { void pool.dispose() })
}

/** `bash` in one persistent shell per session (row `tool-bash-persistent`, in place of builtin bash). */
export class PersistentBashPlugin {
  static readonly inject = ['tools']
  readonly pool = new ShellPool()
  constructor(ctx: Context, config: PersistentShellConfig = {}) {
    const sandboxing = sandboxingOf(ctx)
    const fallback = createBashTool(config as BashToolConfig, sandboxing, serviceLookup(ctx, 'jobs'))
    const tool = createPersistentShellTool({ dialect: bashDialect, config, sandboxing, fallback, pool: this.pool, description: PERSISTENT_BASH_DESCRIPTION })
    registerShellTool(ctx, tool, this.pool)
  }
}

export interface PwshConfig extends PersistentShellConfig {
  /** PATH to look for pwsh on (default the process's). */
  readonly path?: string
}

/** Where `pwsh` is, or undefined: the tool is then not offered. */
function findPwsh(config: PwshConfig): string | undefined {
  if (config.binary !== undefined) return config.binary
  return onPath('pwsh', config.path)
}

/** The one-shot `pwsh` tool (row `tool-pwsh`), offered only where a pwsh binary is on PATH. */
export class PwshToolPlugin {
  static readonly inject = ['tools']
  readonly offered: boolean
  constructor(ctx: Context, config: PwshConfig = {}) {
    const binary = findPwsh(config)
    this.offered = binary !== undefined
    if (binary === undefined) return
    const tool = createPwshTool({ ...config, binary }, sandboxingOf(ctx), serviceLookup(ctx, 'jobs'))
    ctx.effect(() => ctx.tools.register(tool))
  }
}

/** `pwsh` in one persistent PowerShell session per dsh session (row `tool-pwsh-persistent`). */
export class PersistentPwshPlugin {
  static readonly inject = ['tools']
  readonly pool = new ShellPool()
  readonly offered: boolean
  constructor(ctx: Context, config: PwshConfig = {}) {
    const binary = findPwsh(config)
    this.offered = binary !== undefined
    if (binary === undefined) return
    const sandboxing = sandboxingOf(ctx)
    const fallback = createPwshTool({ ...config, binary }, sandboxing, serviceLookup(ctx, 'jobs'))
    const tool = createPersistentShellTool({ dialect: pwshDialect, config: { ...config, binary }, sandboxing, fallback, pool: this.pool, description: PERSISTENT_PWSH_DESCRIPTION })
    registerShellTool(ctx, tool, this.pool)
  }
}
