/**
 * A persistent shell tool (`bash`, `pwsh`): one long-lived shell per session, started inside the
 * same sandbox runner as `bash` would start a command (`confineCommand`), so `cd`, exported
 * variables and functions carry over from call to call.
 *
 * Result text: the command's stdout, a `[stderr]` section, `(no output)`, `[exit code: N]`, as
 * `bash` writes them (the trailing newline of the output is dropped). When the shell ended (an
 * `exit N`, a timeout, a cancel), a line says so and the next call starts a fresh shell in the
 * workspace. A call that asks for a wider sandbox (`sandbox_permissions`), a background job, or
 * one that runs in an editor's terminal goes to the one-shot tool instead (`fallback`): its
 * approval and confinement are exactly the one-shot tool's.
 */
import { statSync, type Stats } from 'node:fs'
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import type { JsonValue } from '../session/types.js'
import { BASH_DEFAULTS, formatBashRun, type BashRun, type BashToolConfig } from '../tools/builtin/bash.js'
import { confineCommand, sandboxVerdict } from '../tools/builtin/confine.js'
import { BashError, BuiltinErrorCode, FsError, fsFailure } from '../tools/builtin/errors.js'
import { resolvePath } from '../tools/builtin/paths.js'
import { escalationPolicyText, withoutEscalation, type EscalationArgs, type Sandboxing } from '../tools/builtin/sandboxing.js'
import { spillOutput } from '../tools/builtin/spill.js'
import { editorTerminal } from '../tools/editor-terminal.js'
import { PersistentShell } from './persistent.js'
import type { ShellDialect } from './protocol.js'

export interface PersistentShellConfig extends BashToolConfig {
  /** The shell binary (default: the dialect's name, found on PATH). */
  readonly binary?: string
}

export interface ShellCallArgs extends EscalationArgs {
  readonly command: string
  /** Required by the one-shot tools, optional for the persistent ones. */
  readonly description?: string
  readonly timeoutMs?: number
  readonly workdir?: string
  readonly run_in_background?: boolean
}

/** The line after a result whose shell ended. */
export function resetLine(name: string): string {
  return `The persistent ${name} shell was reset; the next ${name} call starts from the workspace with a fresh current directory and environment.`
}

/** The session's shells of one tool, and their end. */
export class ShellPool {
  private readonly shells = new Map<string, PersistentShell>()
  private readonly starting = new Map<string, Promise<PersistentShell>>()
  private readonly queues = new Map<string, Promise<unknown>>()
  private disposed = false

  /** Runs `body` after the session's previous call of this tool has finished. */
  serial<T>(session: string, body: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(session) ?? Promise.resolve()
    const next = previous.then(body, body)
    const tail = next.catch(() => {})
    this.queues.set(session, tail)
    void tail.then(() => { if (this.queues.get(session) === tail) this.queues.delete(session) })
    return next
  }

  /** The session's shell when it is alive and was started the same way (`key`), else a new one. */
  async shell(session: string, key: string, start: () => Promise<PersistentShell>): Promise<PersistentShell> {
    if (this.disposed) throw new BashError('the shell tool is unloaded; the command was not run', BuiltinErrorCode.spawnFailed)
    const current = this.shells.get(session)
    if (current !== undefined && current.alive && current.key === key) return current
    if (current !== undefined) {
      this.shells.delete(session)
      await current.kill()
    }
    const shell = await start()
    if (this.disposed) {
      await shell.kill()
      throw new BashError('the shell tool is unloaded; the command was not run', BuiltinErrorCode.spawnFailed)
    }
    this.shells.set(session, shell)
    return shell
  }

  /** Forgets (and kills) the session's shell. */
  async close(session: string): Promise<void> {
    const shell = this.shells.get(session)
    this.shells.delete(session)
    await shell?.kill()
  }

  get(session: string): PersistentShell | undefined {
    return this.shells.get(session)
  }

  async dispose(): Promise<void> {
    this.disposed = true
    const all = [...this.shells.values()]
    this.shells.clear()
    this.starting.clear()
    await Promise.all(all.map(shell => shell.kill()))
  }
}

export interface PersistentToolOptions {
  readonly dialect: ShellDialect
  readonly config: PersistentShellConfig
  readonly sandboxing?: Sandboxing
  /** The one-shot tool of the same name: background jobs, escalations, editor terminals. */
  readonly fallback: Tool<ShellCallArgs>
  readonly pool: ShellPool
  readonly description: string
}

const relaxed = new WeakMap<object, Tool['parameters']>()

/** `parameters` with `description` no longer required (copied once per schema, not changed). */
function optionalDescription(parameters: Tool['parameters']): Tool['parameters'] {
  const known = relaxed.get(parameters)
  if (known !== undefined) return known
  const required = (parameters as { required?: unknown }).required
  const out = !Array.isArray(required) || !required.includes('description') ? parameters
    : { ...parameters, required: required.filter(name => name !== 'description') } as Tool['parameters']
  relaxed.set(parameters, out)
  return out
}

/** A command's first line, cut to 80 characters (a label where a description is needed). */
function firstLine(command: string): string {
  const line = command.trimStart().split('\n', 1)[0] ?? ''
  return line.length > 80 ? `${line.slice(0, 79)}…` : line
}

export function createPersistentShellTool(options: PersistentToolOptions): Tool<ShellCallArgs> {
  const { dialect, sandboxing, fallback, pool } = options
  const resolved = { ...BASH_DEFAULTS, ...options.config, shell: options.config.binary ?? options.config.shell ?? dialect.name }
  return {
    name: fallback.name,
    get description() {
      const sandboxed = sandboxing?.sandbox() !== undefined
      return sandboxed ? `${options.description} ${escalationPolicyText('command')}` : options.description
    },
    // `description` is optional here (the recorded persistent-tools calls have none); a call
    // handed to the one-shot tool gets its command's first line as one.
    get parameters() { return optionalDescription(fallback.parameters) },
    ...(fallback.outputType !== undefined ? { outputType: fallback.outputType } : {}),
    timeoutMs: resolved.maxTimeoutMs + resolved.killGraceMs + 30_000,
    async execute(args, context: ToolContext): Promise<ToolOutput> {
      if (args.run_in_background === true || args.sandbox_permissions !== undefined || args.justification !== undefined || editorTerminal(context.scope) !== undefined) {
        return fallback.execute({ ...args, description: args.description ?? firstLine(args.command) }, context)
      }
      if (args.command.includes('\0')) throw new BashError('the command contains a NUL character; it was not run', BuiltinErrorCode.spawnFailed)
      const workdir = args.workdir !== undefined ? resolvePath(context.cwd, args.workdir) : undefined
      if (workdir !== undefined) {
        let info: Stats
        try {
          info = statSync(workdir)
        } catch (error) {
          fsFailure(error, workdir)
        }
        if (!info.isDirectory()) throw new FsError(`workdir ${workdir} is not a directory`, BuiltinErrorCode.notDirectory)
      }
      const session = context.session?.id ?? ''
      return pool.serial(session, async () => {
        if (context.signal.aborted) throw new BashError('aborted before the command started', BuiltinErrorCode.aborted)
        const confined = await confineCommand(sandboxing, dialect.name, args, context, resolved, { terminal: false })
        try {
          const key = JSON.stringify([confined.prefix ?? [], confined.network?.env ?? {}, context.cwd])
          const shell = await pool.shell(session, key, () => PersistentShell.start({
            dialect, binary: resolved.shell, cwd: context.cwd, env: confined.env, killGraceMs: resolved.killGraceMs,
            ...(confined.prefix !== undefined ? { prefix: confined.prefix } : {}),
          }, key))
          const timeoutMs = Math.min(withoutEscalation(args).timeoutMs ?? resolved.defaultTimeoutMs, resolved.maxTimeoutMs)
          const run = await shell.run(args.command, {
            timeoutMs, signal: context.signal, limits: resolved, place: context, drainMs: resolved.drainMs,
            ...(workdir !== undefined ? { cwd: workdir } : {}),
            ...(context.output !== undefined ? { output: context.output } : {}),
          })
          if (shell.failure !== undefined) {
            await pool.close(session)
            throw new BashError(`could not start ${resolved.shell}: ${shell.failure.message}`, BuiltinErrorCode.spawnFailed)
          }
          const ended = run.exited !== undefined || run.timedOut || run.aborted
          if (ended) await pool.close(session)
          // The runner's own failure (it could not set up) shows when the shell ended at once.
          const markers = run.timedOut || run.aborted ? [] : sandboxVerdict(confined, run.status ?? run.exited?.code ?? null, run.stderr.text)
          const asBash: BashRun = {
            stdout: { ...run.stdout, text: run.stdout.text.replace(/\r?\n$/, '') },
            stderr: { ...run.stderr, text: run.stderr.text.replace(/\r?\n$/, '') },
            exitCode: run.exited === undefined ? run.status ?? null : null,
            signal: null, timedOut: run.timedOut, aborted: run.aborted, durationMs: run.durationMs,
          }
          let text = formatBashRun(asBash, timeoutMs, markers)
          if (run.exited !== undefined && !run.timedOut && !run.aborted) {
            text = text === '(no output)' ? '' : `${text}\n`
            text += `[shell exited: ${run.exited.code !== null ? `code ${run.exited.code}` : `killed by ${run.exited.signal ?? 'a signal'}`}]`
          }
          if (ended) text += `\n${resetLine(dialect.name)}`
          const spills = [run.stdout.spillPath, run.stderr.spillPath].filter((p): p is string => p !== undefined)
          const box = confined.box
          const sandboxMeta: Record<string, JsonValue> = box === undefined ? {} : {
            sandbox: { mode: box.mode, ...(confined.runner !== undefined ? { runner: confined.runner.name, enforcement: confined.runner.enforcement ?? 'full' } : {}), ...(markers.length > 0 ? { denied: true } : {}) },
          }
          const output: ToolOutput = {
            content: [{ type: 'text', text }],
            isError: run.timedOut || run.aborted,
            meta: {
              exitCode: asBash.exitCode, durationMs: run.durationMs, timedOut: run.timedOut, aborted: run.aborted, persistent: true,
              ...(run.exited !== undefined ? { shellExited: run.exited.code !== null ? run.exited.code : String(run.exited.signal) } : {}),
              ...(ended ? { shellReset: true } : {}),
              ...sandboxMeta,
              ...(spills.length > 0 ? { spilled: spills } : {}),
            },
          }
          return spillOutput(output, dialect.name, { place: context })
        } finally {
          confined.network?.leave()
        }
      })
    },
  }
}

/** Whether `name` is an executable on PATH (a few `stat` calls, on demand). */
export function onPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(':')) {
    if (dir === '') continue
    const candidate = `${dir}/${name}`
    try {
      const info = statSync(candidate)
      if (info.isFile() && (info.mode & 0o111) !== 0) return candidate
    } catch {
      // Not here.
    }
  }
  return undefined
}
