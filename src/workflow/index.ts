/**
 * The workflow plugin (docs/workflows.md): the `workflow` tool and, unless turned off, the
 * `ralph` tool (`./ralph.ts`). A run's script runs on a code runtime (a worker thread by
 * default, loaded on the first run), each `agent()` a one-shot child through `ctx.subagents`
 * (`./children.ts`), so children get the parent's sandbox and approval knobs as every child does.
 */
import { randomUUID } from 'node:crypto'
import { availableParallelism } from 'node:os'
import type { Context } from 'cordis'
import type { CodeRuntime } from '../code-runtime/api.js'
import type { Agent } from '../agent/api.js'
import type { Session } from '../session/api.js'
import type { JsonValue } from '../session/types.js'
import type { ToolContext, ToolOutput } from '../tools/api.js'
import { ToolError } from '../tools/errors.js'
import { AGENT_END_EVENT, AGENT_START_EVENT, capText, RUN_END_EVENT, RUN_OUTPUT_TYPE, RUN_START_EVENT, WORKFLOW_DEFAULTS, WORKFLOW_RUN_LIMITS, type AgentEndData, type WorkflowConfig } from './api.js'
import { runChild } from './children.js'
import { runWorkflow, scriptProblem } from './engine.js'
import { ralphTool } from './ralph.js'
import { RALPH_SECTION, WORKFLOW, WORKFLOW_DESCRIPTION, WORKFLOW_PARAMETERS, WORKFLOW_SECTION } from './texts.js'

export * from './api.js'

interface WorkflowArgs {
  readonly script: string
  readonly meta: { readonly name: string; readonly description: string }
  readonly args?: Record<string, JsonValue>
}

function metaProblem(meta: unknown): string | undefined {
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return 'meta must be an object'
  const m = meta as Record<string, unknown>
  if (typeof m.name !== 'string' || m.name.trim() === '') return 'meta.name must be a non-empty string'
  if (typeof m.description !== 'string') return 'meta.description must be a string'
  if (m.whenToUse !== undefined && typeof m.whenToUse !== 'string') return 'meta.whenToUse must be a string'
  if (m.phases !== undefined) {
    if (!Array.isArray(m.phases)) return 'meta.phases must be an array'
    for (const [i, phase] of m.phases.entries()) {
      if (typeof phase !== 'object' || phase === null || typeof (phase as { title?: unknown }).title !== 'string') return `meta.phases[${i}].title must be a string`
    }
  }
  return undefined
}

function parseArgs(value: unknown): WorkflowArgs {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('arguments must be an object')
  const { script, meta, args } = value as Record<string, unknown>
  if (typeof script !== 'string' || script.trim() === '') throw new Error('script must be a non-empty string')
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) throw new Error('args must be an object (wrap a bare list as a field)')
  return value as WorkflowArgs
}

const dataProblem = (keys: readonly string[]) => (data: unknown): string | null => {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'data must be an object'
  for (const key of keys) if (!Object.hasOwn(data, key)) return `${key} is required`
  return typeof (data as { runId?: unknown }).runId === 'string' ? null : 'runId must be a string'
}

export class WorkflowPlugin {
  static readonly inject = ['tools', 'sessions', 'subagents', 'agents']

  private runtime?: Promise<CodeRuntime>

  constructor(private readonly ctx: Context, private readonly config: WorkflowConfig = {}) {
    const types: [string, readonly string[]][] = [[RUN_START_EVENT, ['name']], [AGENT_START_EVENT, ['seq', 'label', 'childId']], [AGENT_END_EVENT, ['seq', 'outcome']], [RUN_END_EVENT, ['stopReason']]]
    for (const [type, keys] of types) ctx.effect(() => ctx.sessions.registerEventType({ type, owner: 'workflow', validate: dataProblem(keys) }))
    ctx.effect(() => ctx.tools.register({
      name: WORKFLOW,
      description: WORKFLOW_DESCRIPTION,
      parameters: WORKFLOW_PARAMETERS,
      parse: parseArgs,
      outputType: RUN_OUTPUT_TYPE,
      // Its children overlap with nothing else the step runs: one exclusive call.
      isConcurrencySafe: () => false,
      execute: (args: WorkflowArgs, context) => this.run(args, context),
    }))
    const ralph = config.ralph !== false
    if (ralph) ctx.effect(() => ctx.tools.register(ralphTool(ctx, config, (context) => this.parent(context))))
    ctx.inject(['systemPrompt'], (inner) => {
      inner.systemPrompt.section({ name: 'tool:workflow', order: 115, text: WORKFLOW_SECTION })
      if (ralph) inner.systemPrompt.section({ name: 'tool:ralph', order: 116, text: RALPH_SECTION })
    })
  }

  private parent(context: ToolContext): Agent {
    const agent = context.session === undefined ? undefined : this.ctx.agents.get(context.session.id)
    if (agent === undefined) throw new ToolError('a workflow needs a live calling agent', 'NO_AGENT')
    return agent
  }

  private codeRuntime(): Promise<CodeRuntime> {
    if (this.config.codeRuntime !== undefined) return Promise.resolve(this.config.codeRuntime)
    return this.runtime ??= import('../code-runtime/worker.js').then(({ workerCodeRuntime }) => workerCodeRuntime())
  }

  private async run(args: WorkflowArgs, context: ToolContext): Promise<ToolOutput> {
    const problem = scriptProblem(args.script)
    if (problem !== undefined) throw new ToolError(`workflow script does not parse: ${problem}`, 'INVALID_SCRIPT')
    const meta = metaProblem(args.meta)
    if (meta !== undefined) throw new ToolError(`invalid meta: ${meta}`, 'INVALID_META')
    const parent = this.parent(context)
    const config = { ...WORKFLOW_DEFAULTS, ...this.config }
    // A program's call (code mode) records nothing: only the model's own calls are in the log.
    const session: Session | undefined = context.parentCallId === undefined ? context.session : undefined
    const runId = randomUUID()
    const name = args.meta.name
    session?.append(RUN_START_EVENT, { runId, name })
    let seq = 0
    const outcome = await runWorkflow({
      script: args.script,
      ...args.args !== undefined && { args: args.args },
      runtime: await this.codeRuntime(),
      limits: config,
      runLimits: { ...WORKFLOW_RUN_LIMITS, ...this.config.limits },
      signal: context.signal,
      agent: async (request, signal) => {
        const own = ++seq
        let started = false
        const child = await runChild(this.ctx, {
          parent, prompt: request.prompt, provider: config.provider, maxDepth: config.maxDepth, callId: context.callId,
          ...request.schema !== undefined && { schema: request.schema },
          ...(request.provider !== undefined || request.model !== undefined) && { route: { ...request.provider !== undefined && { provider: request.provider }, ...request.model !== undefined && { model: request.model } } },
          onPublished: (childId) => {
            started = true
            session?.append(AGENT_START_EVENT, { runId, seq: own, label: request.label, ...request.phase !== undefined && { phase: request.phase }, childId })
          },
        }, signal).catch((error: unknown) => ({ kind: 'failed' as const, message: error instanceof Error ? error.message : String(error), childId: '' }))
        if (started) session?.append(AGENT_END_EVENT, { runId, seq: own, outcome: child.kind } satisfies AgentEndData)
        if (child.kind !== 'completed') return null
        return child.structured ?? child.text
      },
    }, availableParallelism())
    const stopReason = outcome.kind
    session?.append(RUN_END_EVENT, { runId, stopReason })
    if (outcome.kind === 'cancelled') {
      return { content: [{ type: 'text', text: `Error: workflow run was cancelled${outcome.message !== '' ? ` (${outcome.message})` : ''}` }], isError: true }
    }
    if (outcome.kind === 'error') return { content: [{ type: 'text', text: `Error: workflow run failed: ${outcome.message}` }], isError: true }
    const value = outcome.value ?? null
    const text = `workflow "${name}" completed (${outcome.agents} agent${outcome.agents === 1 ? '' : 's'}).\nReturn value:\n${JSON.stringify(value, null, 2)}`
    return { content: [{ type: 'text', text: capText(text, config.maxResultChars) }], value: { runId, agentsStarted: outcome.agents, result: value } }
  }
}
