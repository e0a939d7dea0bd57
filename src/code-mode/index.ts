/**
 * Code mode (docs/code-mode.md): the `run_code` tool, whose program calls the session's tools
 * as async functions (`./bridge.ts`, every call through the whole pipeline and in the log),
 * run by a code runtime (`src/code-runtime`: confined in the sandbox when it has a runner that
 * confines the network, else a worker). How tools are presented to the model is a setting:
 * `native` (no `run_code`), `code` (the model sees `run_code` alone; a direct call to any other
 * tool is refused before any policy runs) or `both`. The SDK section of the system prompt
 * declares the tools a program may call.
 */
import { randomUUID } from 'node:crypto'
import type { Context } from 'cordis'
import { DEFAULT_CODE_RUN_LIMITS, type CodeRunLimits, type CodeRuntime } from '../code-runtime/api.js'
import type { ToolSchema } from '../llm/types.js'
import type { PromptAssembly } from '../prompt/api.js'
import type { SandboxService } from '../sandbox/service.js'
import type { Session } from '../session/api.js'
import type { ToolContext, ToolExecution, ToolOutput, ToolResultRecord } from '../tools/api.js'
import { ToolError } from '../tools/errors.js'
import { DISPATCH_EVENT, DISPATCH_START_EVENT, InnerCalls } from './bridge.js'
import { toolDeclarations } from './declarations.js'
import { failureMessage, formatRun } from './format.js'
import { CODE_ONLY_TEXT, codeOnlyRefusal, RUN_CODE, RUN_CODE_DESCRIPTION, RUN_CODE_PARAMETERS, SDK_HEAD } from './texts.js'

export type ToolPresentation = 'native' | 'code' | 'both'
export const TOOL_PRESENTATIONS: readonly ToolPresentation[] = ['native', 'code', 'both']

export interface CodeModeConfig {
  /** How tools are presented to the model (default `native`, as the original). */
  readonly mode?: ToolPresentation
  /** Limits of one run (docs/code-runtime.md). */
  readonly limits?: Partial<CodeRunLimits>
  /** Concurrency-safe inner calls of one run in flight at once (default 10). */
  readonly maxParallelSubCalls?: number
  /** `confined` (the sandbox), `worker`, or `auto` (confined when the sandbox can, default). */
  readonly runtime?: 'auto' | 'confined' | 'worker'
  /** A runtime of the embedder's (tests), used instead of `runtime`. */
  readonly codeRuntime?: CodeRuntime
}

/** Where images a program's calls returned come from when they join the conversation. */
export const CODE_MODE_PLUGIN = 'tools-code-mode'

interface RunCodeArgs { readonly code: string; readonly description: string }

function dispatchProblem(withResult: boolean) {
  return (data: unknown): string | null => {
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'data must be an object'
    const record = data as Record<string, unknown>
    for (const key of ['rootCallId', 'parentCallId', 'subCallId', 'name']) {
      if (typeof record[key] !== 'string' || record[key] === '') return `${key} must be a non-empty string`
    }
    if (typeof record.arguments !== 'object' || record.arguments === null) return 'arguments must be a JSON object or array'
    if (withResult && (typeof record.isError !== 'boolean' || !Array.isArray(record.content))) return 'isError must be a boolean and content an array'
    return null
  }
}

export class CodeModePlugin {
  static readonly inject = ['tools', 'sessions']

  readonly mode: ToolPresentation
  private readonly inner = new WeakSet<ToolExecution>()
  /** Images of finished runs, by outer call id, until the outer result is committed. */
  private readonly pendingImages = new Map<string, { session: Session; records: ToolResultRecord[] }>()
  private readonly declared = new WeakMap<readonly ToolSchema[], string>()
  private readonly presented = new WeakMap<readonly ToolSchema[], readonly ToolSchema[]>()
  private runtime?: Promise<CodeRuntime>

  constructor(private readonly ctx: Context, private readonly config: CodeModeConfig = {}) {
    const mode = config.mode ?? 'native'
    if (!TOOL_PRESENTATIONS.includes(mode)) throw new TypeError(`code-mode: mode must be ${TOOL_PRESENTATIONS.join(', ')}, not ${JSON.stringify(mode)}`)
    this.mode = mode
    ctx.effect(() => ctx.sessions.registerEventType({ type: DISPATCH_START_EVENT, owner: 'code-mode', validate: dispatchProblem(false) }))
    ctx.effect(() => ctx.sessions.registerEventType({ type: DISPATCH_EVENT, owner: 'code-mode', validate: dispatchProblem(true) }))
    if (mode === 'native') return
    ctx.effect(() => ctx.tools.register({
      name: RUN_CODE,
      description: RUN_CODE_DESCRIPTION,
      parameters: RUN_CODE_PARAMETERS,
      parse: parseArgs,
      // The program's own calls are scheduled one by one; the run itself is one exclusive call.
      isConcurrencySafe: () => false,
      execute: (args: RunCodeArgs, context) => this.run(args, context),
    }))
    if (mode === 'code') {
      // Before every other policy: a direct call to another tool never reaches hooks or approval.
      ctx.effect(() => ctx.on('tools/pre-execute', async (execution, next) => {
        if (execution.name === RUN_CODE || this.inner.has(execution)) return next()
        return { kind: 'deny', reason: 'code mode', message: codeOnlyRefusal(execution.name) }
      }, { prepend: true }))
    }
    ctx.on('tools/result', (execution) => this.committed(execution))
    ctx.inject(['systemPrompt'], (inner) => {
      if (mode === 'code') inner.systemPrompt.section({ name: 'tools:code-only', order: 99, text: CODE_ONLY_TEXT })
      inner.on('system-prompt/assemble', async (_assembly, next) => this.present(await next()))
    })
  }

  /** The SDK section after the rest of the prompt; under `code`, the model's tools are `run_code` alone. */
  private present(assembly: PromptAssembly): PromptAssembly {
    let declarations = this.declared.get(assembly.tools)
    if (declarations === undefined) {
      const callable = assembly.tools.filter((schema) => schema.name !== RUN_CODE)
      declarations = toolDeclarations(callable.map((schema) => ({ schema, outputType: this.ctx.tools.get(schema.name)?.outputType })))
      this.declared.set(assembly.tools, declarations)
    }
    const sdk = `${SDK_HEAD}\n\n\`\`\`ts\n${declarations}\n\`\`\``
    let tools = assembly.tools
    if (this.mode === 'code') {
      // The same array from step to step while the source is (the A-10 header check compares by identity).
      let only = this.presented.get(assembly.tools)
      if (only === undefined) this.presented.set(assembly.tools, only = Object.freeze(assembly.tools.filter((schema) => schema.name === RUN_CODE)))
      tools = only
    }
    return { ...assembly, system: assembly.system === '' ? sdk : `${assembly.system}\n\n${sdk}`, tools }
  }

  private codeRuntime(): Promise<CodeRuntime> {
    return this.runtime ??= (async () => {
      if (this.config.codeRuntime !== undefined) return this.config.codeRuntime
      const choice = this.config.runtime ?? 'auto'
      const sandbox = this.ctx.get('sandbox') as SandboxService | undefined
      if (choice !== 'worker' && sandbox?.prefix !== undefined) {
        const { runner } = await sandbox.runner()
        if (runner?.confinesNetwork === true) {
          const { confinedCodeRuntime } = await import('../code-runtime/confined.js')
          const prefix = sandbox.prefix.bind(sandbox)
          return confinedCodeRuntime({ prefix: async () => prefix(runner, 'read-only', await sandbox.root(undefined), { mode: 'none' }) })
        }
      }
      if (choice === 'confined') throw new ToolError('code-mode: runtime "confined" needs a sandbox runner that confines the network; none works here', 'SANDBOX_UNAVAILABLE')
      const { workerCodeRuntime } = await import('../code-runtime/worker.js')
      return workerCodeRuntime()
    })().catch((error: unknown) => {
      this.runtime = undefined
      throw error
    })
  }

  private async run(args: RunCodeArgs, context: ToolContext): Promise<ToolOutput> {
    const runtime = await this.codeRuntime()
    const calls = new InnerCalls({
      tools: this.ctx.tools, callId: context.callId, cwd: context.cwd, inner: this.inner,
      maxParallel: Math.max(1, this.config.maxParallelSubCalls ?? 10),
      ...(context.session !== undefined ? { session: context.session } : {}),
      ...(context.scope !== undefined ? { scope: context.scope } : {}),
    })
    const names = this.ctx.tools.list(context.scope).map((tool) => tool.name).filter((name) => name !== RUN_CODE)
    const result = await runtime.run({
      code: args.code, tools: names, signal: context.signal,
      limits: { ...DEFAULT_CODE_RUN_LIMITS, ...this.config.limits },
      call: (name, callArgs, signal) => calls.call(name, callArgs, signal),
    })
    // Images join the conversation after the outer result, even when the program failed.
    if (calls.images.length > 0 && context.session !== undefined) this.pendingImages.set(context.callId, { session: context.session, records: calls.images })
    if (!result.ok) throw new ToolError(failureMessage(result), result.kind === 'abort' ? 'ABORTED' : 'CODE_RUN_FAILED')
    return { content: [{ type: 'text', text: formatRun(result) }] }
  }

  private committed(execution: ToolExecution): void {
    const pending = this.pendingImages.get(execution.callId)
    if (pending === undefined || execution.name !== RUN_CODE) return
    this.pendingImages.delete(execution.callId)
    const agent = (this.ctx.get('agents') as { get(id: string): { inject(input: unknown): unknown } | undefined } | undefined)?.get(pending.session.id)
    for (const record of pending.records) {
      agent?.inject({ id: randomUUID(), role: 'user', content: record.content, source: { kind: 'plugin', plugin: CODE_MODE_PLUGIN } })
    }
  }
}

function parseArgs(args: unknown): RunCodeArgs {
  const record = args as Partial<Record<keyof RunCodeArgs, unknown>>
  if (typeof record?.code !== 'string') throw new TypeError('run_code: code must be a string (the body of an async function)')
  if (typeof record.description !== 'string') throw new TypeError('run_code: description must be a string')
  return { code: record.code, description: record.description }
}
