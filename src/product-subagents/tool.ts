/**
 * The model's tool of one configured product (`subagent_codex`, `subagent_claude_code`, or a
 * name from the config): the task runs as the product's CLI in the parent's cwd, confined like
 * `bash` (the sandbox runner's argv in front, the mode mapped to the CLI's own flags too), with
 * dsh's secrets removed from its environment. `run_in_background: true` makes it a job.
 *
 * Under a confining mode the CLI's own state (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`) is a fresh
 * private folder dsh makes for the run, the one path outside the workspace the sandbox lets it
 * write, removed when the run ends: the user's product config (`~/.codex`, `~/.claude`) stays
 * read-only to it, since a config written there would run code outside the sandbox later.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import type { Context } from 'cordis'
import { scrubbedEnvironment } from '../config/credentials.js'
import { emitContained } from '../kernel/index.js'
import type { SandboxMode } from '../sandbox/modes.js'
import type { Tool, ToolContext, ToolOutput } from '../tools/api.js'
import { ToolError } from '../tools/errors.js'
import type { JobsService } from '../tools/jobs.js'
import { callNetwork } from '../tools/builtin/network.js'
import { callSandbox, sandboxingOf } from '../tools/builtin/sandboxing.js'
import type { ProductDriver, ProductOutcome, ProductRunFinished, ProductToolConfig } from './api.js'
import { failureLine, failureText } from './diagnostic.js'
import { runChild } from './process.js'

const INTRO = 'Delegate a self-contained task to a subagent (a separate agent that works in its own context) to offload focused, independent work — research, a scoped implementation, an analysis — so it does not consume this conversation\'s context. The subagent returns its result, not its intermediate steps. Give it a complete, standalone prompt: it does not see this conversation.'
export const PRODUCT_TOOL_DESCRIPTION = `${INTRO} This call waits for the result by default. Set \`run_in_background: true\` to return a job id; collect with \`job_output\` and stop with \`job_kill\`.`
const DESCRIPTION_PARAM = 'A short (3-5 word) description of the delegated task, for display.'
const PROMPT_PARAM = 'The complete, self-contained task for the subagent. It does not share this conversation\'s context, so include everything it needs.'
const BACKGROUND_PARAM = 'Whether to run as a background job and return its id. Defaults to false; collect with job_output or stop with job_kill.'

interface ProductArgs { readonly description: string; readonly prompt: string; readonly run_in_background?: boolean }

const DEFAULT_KILL_GRACE_MS = 2000

function invalid(message: string): never {
  throw new ToolError(message, 'INVALID_ARGUMENTS')
}

function checkArgs(args: unknown): ProductArgs {
  const value = args as Partial<Record<keyof ProductArgs, unknown>> | null
  if (typeof value !== 'object' || value === null) invalid('arguments must be an object with description and prompt')
  if (typeof value.description !== 'string' || value.description.trim() === '') invalid('description: expected a non-empty string')
  if (typeof value.prompt !== 'string' || value.prompt.trim() === '') invalid('prompt: expected a non-empty string (the complete task)')
  if (value.run_in_background !== undefined && typeof value.run_in_background !== 'boolean') invalid('run_in_background: expected true or false')
  return value as ProductArgs
}

interface ChildPlan {
  readonly argv: string[]
  readonly mode: SandboxMode
  /** The run's private state folder (confined runs whose tool config does not name one). */
  readonly state?: string
  /** The session's network policy for the child (`allowlist`: the proxy's variables), and its end. */
  readonly network?: { readonly env?: Readonly<Record<string, string>>; readonly leave: () => void }
}

/** Whether the tool's config names the CLI's state folder itself (then it is used as given). */
function namesState(tool: ProductToolConfig, variable: string): boolean {
  return tool.env?.[variable] !== undefined || (tool.passEnv?.includes(variable) === true && process.env[variable] !== undefined)
}

/** The private state folder of one confined run: 0700, in the system temp folder, with the CLI's temp folder in it. */
async function stateFolder(driver: ProductDriver): Promise<string> {
  let state: string | undefined
  try {
    state = await mkdtemp(join(tmpdir(), `dsh-${driver.defaultCommand.replace(/[^A-Za-z0-9_-]/g, '')}-state-`))
    if (driver.tempEnv !== undefined) await mkdir(join(state, 'tmp'), { mode: 0o700 })
    return state
  } catch (error) {
    if (state !== undefined) await rm(state, { recursive: true, force: true }).catch(() => undefined)
    throw new ToolError(`could not make the subagent's private state folder in ${tmpdir()} (${(error as Error).message}); the subagent was not started`, 'STATE_FOLDER')
  }
}

/**
 * The child's argv: the sandbox runner's prefix (when the call is confined, with the run's state
 * folder writable), the CLI, its arguments.
 */
async function childArgv(ctx: Context, driver: ProductDriver, tool: ProductToolConfig, name: string, prompt: string, context: ToolContext, background: boolean): Promise<ChildPlan> {
  const box = await callSandbox(sandboxingOf(ctx), name, 'command', {}, context)
  const mode: SandboxMode = box?.mode ?? 'danger-full-access'
  const command = tool.command === undefined ? [driver.defaultCommand] : typeof tool.command === 'string' ? [tool.command] : [...tool.command]
  const argv = [...command, ...driver.args(tool, { prompt, cwd: context.cwd, mode })]
  if (box === undefined || box.mode === 'danger-full-access') return { argv, mode }
  const probe = await box.sandbox.runner()
  // No working runner: refuse, never run unconfined.
  if (probe.runner === undefined) throw new ToolError(`sandbox unavailable: no OS sandbox runner works here (${probe.problems.join('; ')}); the subagent was not started`, 'SANDBOX_UNAVAILABLE')
  // The session's network policy holds for the child as for bash: `none` gives it no network,
  // `allowlist` only the proxy (the product's API host must be allowed, or is asked for).
  const network = await callNetwork(sandboxingOf(ctx)!, box, probe.runner, context, { enter: !background })
  const state = namesState(tool, driver.stateEnv) ? undefined : await stateFolder(driver)
  const writable = state === undefined ? [] : [state]
  try {
    const prefix = box.sandbox.prefix?.(probe.runner, box.mode, box.root, network.plan, writable) ?? probe.runner.argv(box.mode, box.root, { readOnly: [], pinned: [], writable }, network.plan)
    return { argv: [...prefix, ...argv], mode: box.mode, ...state !== undefined && { state }, network: { ...network.env !== undefined && { env: network.env }, leave: network.leave } }
  } catch (error) {
    network.leave()
    if (state !== undefined) await rm(state, { recursive: true, force: true })
    throw error
  }
}

/**
 * The child's environment: dsh's own, secrets removed, then the product's key and settings, and
 * the run's state and temp folders (over ones inherited from dsh's environment: those would be
 * the user's).
 */
function childEnv(tool: ProductToolConfig, driver: ProductDriver, state: string | undefined, network?: Readonly<Record<string, string>>): Record<string, string> {
  const passed: Record<string, string> = {}
  for (const name of tool.passEnv ?? []) {
    const value = process.env[name]
    if (value !== undefined) passed[name] = value
  }
  const own: Record<string, string> = {}
  if (state !== undefined) {
    own[driver.stateEnv] = state
    if (driver.tempEnv !== undefined && !namesState(tool, driver.tempEnv)) own[driver.tempEnv] = join(state, 'tmp')
  }
  return scrubbedEnvironment(process.env, { ...passed, ...tool.env, ...own, ...network })
}

export function productTool(ctx: Context, driver: ProductDriver, tool: ProductToolConfig, jobs: () => JobsService | undefined, unloaded?: AbortSignal): Tool<ProductArgs> {
  const name = tool.name ?? driver.defaultTool
  const finished = (info: Omit<ProductRunFinished, 'tool' | 'product'>) => emitContained(ctx, 'product-subagent/finished', [{ ...info, tool: name, product: driver.product }])

  async function run(args: ProductArgs, context: ToolContext, signal: AbortSignal, onText?: (text: string) => void, background = false): Promise<{ outcome: ProductOutcome; cancelled: boolean }> {
    let plan: ChildPlan
    try {
      plan = await childArgv(ctx, driver, tool, name, args.prompt, context, background)
    } catch (error) {
      if (error instanceof ToolError) throw error
      return { outcome: { ok: false, facts: { product: driver.product, stage: 'spawn', category: 'invalid-config' }, partial: '' }, cancelled: false }
    }
    try {
      return await runPlanned(plan, args, context, signal, onText)
    } finally {
      plan.network?.leave()
      // The child has ended with its whole sandbox; a folder that cannot be removed fails no run.
      if (plan.state !== undefined) await rm(plan.state, { recursive: true, force: true }).catch(() => undefined)
    }
  }

  async function runPlanned({ argv, mode, state, network }: ChildPlan, args: ProductArgs, context: ToolContext, signal: AbortSignal, onText?: (text: string) => void): Promise<{ outcome: ProductOutcome; cancelled: boolean }> {
    const reader = driver.reader()
    let seen = ''
    const result = await runChild({
      argv, cwd: context.cwd, env: childEnv(tool, driver, state, network?.env), stdin: driver.stdin({ prompt: args.prompt, cwd: context.cwd, mode }), reader, product: driver.product,
      signal: unloaded === undefined ? signal : AbortSignal.any([signal, unloaded]),
      killGraceMs: tool.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
      onSpawn: pid => emitContained(ctx, 'product-subagent/started', [{ sessionId: context.session?.id ?? '', callId: context.callId, tool: name, product: driver.product, pid }]),
      onLine: () => {
        const now = reader.partial()
        if (now === seen || onText === undefined) return
        onText(now.startsWith(seen) ? now.slice(seen.length) : now)
        seen = now
      },
    })
    return result
  }

  async function foreground(args: ProductArgs, context: ToolContext): Promise<ToolOutput> {
    const { outcome, cancelled } = await run(args, context, context.signal, context.output === undefined ? undefined : text => context.output!('stdout', text))
    const sessionId = context.session?.id ?? ''
    if (cancelled) {
      finished({ sessionId, callId: context.callId, background: false, status: 'cancelled' })
      return { content: [{ type: 'text', text: 'Error: subagent run was cancelled' }], isError: true }
    }
    if (outcome.ok) {
      finished({ sessionId, callId: context.callId, background: false, status: 'completed' })
      return { content: [{ type: 'text', text: outcome.text }] }
    }
    const diagnostic = failureLine(outcome.facts)
    finished({ sessionId, callId: context.callId, background: false, status: 'failed', diagnostic })
    return { content: [{ type: 'text', text: failureText(diagnostic, outcome.partial) }], isError: true, meta: { diagnostic } }
  }

  function background(args: ProductArgs, context: ToolContext, service: JobsService): ToolOutput {
    const session = context.session
    if (session === undefined) throw new ToolError('run_in_background needs a session to own the job; the subagent was not started', 'NO_SESSION')
    const label = `subagent: ${args.description}`
    const job = service.start(session, {
      kind: 'subagent',
      label,
      notice: (info) => {
        const status = `[status: ${info.status}${info.detail !== undefined ? `, ${info.detail}` : ''}]`
        const summary = `subagent ${args.description} ${status}`
        return { text: `background job ${info.id} (${label}) finished ${status}. Read its output with job_output.`, summary: summary.length > 120 ? `${summary.slice(0, 119)}…` : summary }
      },
      run: async (running) => {
        const out = new PassThrough()
        running.attach(out)
        try {
          const { outcome, cancelled } = await run(args, context, running.signal, undefined, true)
          if (cancelled) {
            finished({ sessionId: session.id, callId: context.callId, background: true, status: 'cancelled' })
            return { status: 'failed', detail: 'cancelled' }
          }
          if (outcome.ok) {
            out.write(outcome.text)
            finished({ sessionId: session.id, callId: context.callId, background: true, status: 'completed' })
            return { status: 'completed' }
          }
          if (outcome.partial.trim() !== '') out.write(outcome.partial)
          const diagnostic = failureLine(outcome.facts)
          finished({ sessionId: session.id, callId: context.callId, background: true, status: 'failed', diagnostic })
          return { status: 'failed', detail: `error; diagnostic: ${diagnostic}` }
        } finally {
          out.end()
        }
      },
    })
    return { content: [{ type: 'text', text: `started background subagent job ${job.id}` }], meta: { job: { id: job.id } } }
  }

  return {
    name,
    description: PRODUCT_TOOL_DESCRIPTION,
    parameters: {
      type: 'object',
      properties: {
        description: { type: 'string', description: DESCRIPTION_PARAM },
        prompt: { type: 'string', description: PROMPT_PARAM },
        run_in_background: { type: 'boolean', description: BACKGROUND_PARAM },
      },
      required: ['description', 'prompt'],
    },
    parse: checkArgs,
    // Children overlap; the loop commits results in model order.
    isConcurrencySafe: () => true,
    // The run ends when the child does; cancelling the call stops it.
    timeoutMs: 24 * 60 * 60 * 1000,
    async execute(raw, context) {
      const args = checkArgs(raw)
      if (args.run_in_background === true) {
        const service = jobs()
        if (service === undefined) throw new ToolError('run_in_background needs the jobs row (background jobs are not loaded); call again without it to wait for the result', 'NO_JOBS')
        return background(args, context, service)
      }
      return foreground(args, context)
    },
  }
}
