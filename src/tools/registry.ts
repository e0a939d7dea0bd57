/**
 * `ctx.tools` (T-1, T-2, T-5, T-7): scoped registration, fail-closed classification and the
 * per-call pipeline `tools/pre-execute` -> `tools/execute` (body + timeout) -> `tools/post-execute`,
 * built once: `start` and `finish` are the two halves the scheduler interleaves across calls, and
 * `execute` is the same two for one call on its own.
 * Every failure on this path becomes an error record; nothing here throws at the caller.
 */
import { Context, Service } from 'cordis'
import { emitContainedVia, eventsOf, type EventDispatch } from '../kernel/index.js'
import type { ToolSchema } from '../llm/types.js'
import { contextScope, scopeRevision, scopeTarget, ScopedLayers, type ScopeKey } from '../scope/index.js'
import type { ApprovalService } from '../approval/api.js'
import type {
  ExecuteContext,
  PreExecuteDecision,
  StartedToolCall,
  Tool,
  ToolContext,
  ToolExecution,
  ToolExecutionMode,
  ToolOutput,
  ToolResultRecord,
  ToolsService,
} from './api.js'
import {
  abortedBeforeDispatchRecord,
  cancellationResult,
  errorRecord,
  thrownRecord,
  ToolError,
  ToolErrorCode,
} from './errors.js'
import { schemaProblems } from './json-schema.js'
import { isAttachmentId } from '../session/attachments.js'

const PARALLEL: ToolExecutionMode = Object.freeze({ kind: 'parallel' })
const EXCLUSIVE: ToolExecutionMode = Object.freeze({ kind: 'exclusive' })
const ALLOW: PreExecuteDecision = Object.freeze({ kind: 'allow' })
/** Dispatch target for unscoped calls: an agent's scoped listeners only hear their own agent's calls (P-4). */
const UNSCOPED = Object.freeze({ [Context.filter]: (ctx: Context) => contextScope(ctx) === undefined })
/** Names every major provider accepts for function tools. */
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

type CallContext = Omit<ToolContext, 'callId' | 'scope'>

/** T-7: empty (or blank) means `{}`; anything else must be JSON. */
export function decodeArguments(raw: string): unknown {
  if (raw.trim() === '') return {}
  try {
    return JSON.parse(raw)
  } catch (error) {
    throw new ToolError(`invalid JSON arguments: ${error instanceof Error ? error.message : String(error)}`, ToolErrorCode.invalidArguments)
  }
}

/** Decodes and validates raw arguments for `tool`; throws a `ToolError` naming the problem. */
export function parseArguments<A>(tool: Tool<A>, raw: string): A {
  const value = decodeArguments(raw)
  if (tool.parse) {
    try {
      return tool.parse(value)
    } catch (error) {
      throw new ToolError(`invalid arguments for ${tool.name}: ${error instanceof Error ? error.message : String(error)}`, ToolErrorCode.invalidArguments)
    }
  }
  const problems = schemaProblems(tool.parameters, value)
  if (problems.length > 0) throw new ToolError(`invalid arguments for ${tool.name}: ${problems.join('; ')}`, ToolErrorCode.invalidArguments)
  return value as A
}

function assertTool(tool: Tool): void {
  const problem =
    typeof tool !== 'object' || tool === null ? 'a tool must be an object'
    : typeof tool.name !== 'string' || !TOOL_NAME.test(tool.name) ? `tool name ${JSON.stringify(tool.name)} must match ${TOOL_NAME}`
    : typeof tool.description !== 'string' ? `tool ${tool.name}: description must be a string`
    : typeof tool.parameters !== 'object' || tool.parameters === null || Array.isArray(tool.parameters) ? `tool ${tool.name}: parameters must be a JSON Schema object`
    : typeof tool.execute !== 'function' ? `tool ${tool.name}: execute must be a function`
    : tool.timeoutMs !== undefined && !(Number.isFinite(tool.timeoutMs) && tool.timeoutMs > 0) ? `tool ${tool.name}: timeoutMs must be a positive number`
    : undefined
  if (problem !== undefined) throw new TypeError(`dsh-tools: ${problem}`)
}

function isContentBlock(block: unknown): boolean {
  if (typeof block !== 'object' || block === null) return false
  const { type, text, data, mimeType, attachment } = block as Record<string, unknown>
  if (type === 'text') return typeof text === 'string'
  if (type !== 'image') return false
  if (typeof data === 'string' && typeof mimeType === 'string') return true
  // An image the tool stored with the session (`ctx.sessions.attachments.addImage`), by its id.
  const ref = attachment as { attachmentId?: unknown; mediaType?: unknown } | undefined
  return typeof ref?.attachmentId === 'string' && isAttachmentId(ref.attachmentId) && typeof ref.mediaType === 'string'
}

/** A record (or tool output) from untrusted code: undefined when it is not one. */
function asRecord(value: unknown): ToolResultRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const output = value as ToolOutput & { error?: ToolResultRecord['error'] }
  if (!Array.isArray(output.content) || !output.content.every(isContentBlock)) return undefined
  return {
    content: output.content,
    isError: output.isError === true,
    ...(isErrorInfo(output.error) ? { error: { name: output.error.name, code: output.error.code } } : {}),
    ...(output.meta !== undefined ? { meta: output.meta } : {}),
    ...(output.concludesTurn === true ? { concludesTurn: true } : {}),
    ...(output.value !== undefined ? { value: output.value } : {}),
  }
}

function isErrorInfo(value: unknown): value is { name: string; code: string } {
  return typeof value === 'object' && value !== null && typeof (value as { name?: unknown }).name === 'string' && typeof (value as { code?: unknown }).code === 'string'
}

function invalidOutput(stage: string): ToolResultRecord {
  return errorRecord(`${stage} did not return a result with a content array of text/image blocks`, 'ToolError', ToolErrorCode.invalidOutput)
}

function byName(a: Tool, b: Tool): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

/** The schemas of one scope's view, kept while the view and every tool's schema stay the same. */
interface SchemaCache {
  readonly revision: number
  readonly scopes: number
  readonly tools: readonly Tool[]
  readonly schemas: readonly ToolSchema[]
}

/** Cache key of the unscoped view. */
const GLOBAL_VIEW = {}

export class ToolsPlugin extends Service implements ToolsService {
  private readonly layers = new ScopedLayers<Tool>('tool')
  private readonly schemaCache = new WeakMap<ScopeKey, SchemaCache>()
  /** Resolved once: the pipeline dispatches four events per call (docs/kernel.md, "Hot paths"). */
  private readonly events: EventDispatch

  constructor(ctx: Context) {
    super(ctx, 'tools')
    this.events = eventsOf(ctx)
  }

  /**
   * Registers through the caller's fiber, so unloading the registering plugin removes the tool.
   * Without an explicit scope, a context tagged with a scope (an agent's ctx) registers there.
   */
  register(tool: Tool, scope: ScopeKey | undefined = contextScope(this.ctx)): () => void {
    assertTool(tool)
    const dispose = this.ctx.effect(() => this.layers.register(tool, scope), `tool:${tool.name}`)
    return () => { void dispose() }
  }

  get(name: string, scope?: ScopeKey): Tool | undefined {
    return this.layers.get(name, scope)
  }

  list(scope?: ScopeKey): readonly Tool[] {
    return this.layers.view(scope).sort(byName)
  }

  /**
   * The schemas visible from `scope`, sorted by name: one frozen array, the same object from
   * call to call while no tool is added or removed in the view and every tool gives the same
   * description and the same `parameters` object (a tool changes its schema by giving another
   * object, as the sandbox-aware getters of write/edit/bash do). Callers compare it by identity
   * (the A-10 header check) instead of re-serialising ~60 KB of schemas every step.
   */
  schemas(scope?: ScopeKey): readonly ToolSchema[] {
    const key = scope ?? GLOBAL_VIEW
    const revision = this.layers.revision
    const scopes = scopeRevision()
    let cached = this.schemaCache.get(key)
    const tools = cached !== undefined && cached.revision === revision && cached.scopes === scopes ? cached.tools : this.list(scope)
    if (cached !== undefined && cached.tools === tools && sameSchemas(tools, cached.schemas)) return cached.schemas
    const schemas = Object.freeze(tools.map(({ name, description, parameters }) => Object.freeze({ name, description, parameters })))
    this.schemaCache.set(key, cached = { revision, scopes, tools, schemas })
    return schemas
  }

  executionMode(execution: ToolExecution): ToolExecutionMode {
    const tool = this.layers.get(execution.name, execution.scope)
    if (typeof tool?.isConcurrencySafe !== 'function') return EXCLUSIVE
    try {
      return tool.isConcurrencySafe(parseArguments(tool, execution.arguments)) === true ? PARALLEL : EXCLUSIVE
    } catch {
      return EXCLUSIVE
    }
  }

  async execute(execution: ToolExecution, context: CallContext): Promise<ToolResultRecord> {
    const started = await this.start(execution, context)
    return this.finish(execution, started.kind === 'settled' ? started.record : await started.outcome)
  }

  async start(execution: ToolExecution, context: CallContext): Promise<StartedToolCall> {
    const prepared = await this.prepare(execution, context)
    if (prepared.kind === 'settled') return prepared
    // T-6: cancelled between authorization and dispatch: the body never starts.
    if (context.signal.aborted) return settled(abortedBeforeDispatchRecord())
    const outcome = prepared.run().then(
      // T-6: the body has quiesced; only now may a cancellation replace its outcome.
      (record) => context.signal.aborted ? cancellationResult(record) : record,
      (error: unknown) => thrownRecord(error),
    )
    return { kind: 'running', outcome }
  }

  /** Validation and policy: a settled record, or the body ready to run. */
  private async prepare(execution: ToolExecution, context: CallContext): Promise<PreparedCall> {
    const tool = this.layers.get(execution.name, execution.scope)
    if (tool === undefined) {
      return settled(errorRecord(`unknown tool ${JSON.stringify(execution.name)}`, 'ToolError', ToolErrorCode.unknownTool))
    }
    let args: unknown
    try {
      args = parseArguments(tool, execution.arguments)
    } catch (error) {
      return settled(thrownRecord(error, ToolErrorCode.invalidArguments))
    }
    const refusal = await this.authorize(execution, context)
    if (refusal !== undefined) return settled(refusal)
    // T-6: cancelled while authorization was awaited: the body never starts.
    if (context.signal.aborted) return settled(abortedBeforeDispatchRecord())
    return { kind: 'ready', run: () => this.run(tool, args, execution, context) }
  }

  async finish(execution: ToolExecution, record: ToolResultRecord): Promise<ToolResultRecord> {
    try {
      const rewritten = await this.events.waterfall(target(execution), 'tools/post-execute', execution, record, async () => record)
      return asRecord(rewritten) ?? invalidOutput('tools/post-execute')
    } catch (error) {
      // Fail closed: a rewriter that crashed (a redactor, say) must not let the raw record through.
      return thrownRecord(error, ToolErrorCode.policyFailed)
    }
  }

  committed(execution: ToolExecution, record: ToolResultRecord): void {
    emitContainedVia(this.events, 'tools/result', [execution, record], undefined, target(execution))
  }

  /** `tools/pre-execute` plus approval; `undefined` means the call may run. */
  private async authorize(execution: ToolExecution, context: CallContext): Promise<ToolResultRecord | undefined> {
    const { signal } = context
    if (signal.aborted) return abortedBeforeDispatchRecord()
    let decision: PreExecuteDecision
    try {
      decision = await this.events.waterfall(target(execution), 'tools/pre-execute', execution, async () => ALLOW)
    } catch (error) {
      return thrownRecord(error, ToolErrorCode.policyFailed)
    }
    switch (decision?.kind) {
      case 'allow':
        return undefined
      case 'deny':
        return errorRecord(typeof decision.message === 'string' && decision.message !== '' ? decision.message : `tool call denied: ${decision.reason || 'no reason given'}`, 'PermissionError', ToolErrorCode.denied)
      case 'ask':
        return this.askApproval(execution, decision.reason, context)
      default:
        return errorRecord(`tools/pre-execute returned an invalid decision ${JSON.stringify(decision)}`, 'ToolError', ToolErrorCode.policyFailed)
    }
  }

  /**
   * A pre-execute `ask` through `ctx.approval` (AP-1..AP-3): only `allowed-once` runs the call.
   * Without the service or a session there is no one to ask: fail closed.
   */
  private async askApproval(execution: ToolExecution, reason: string | undefined, context: CallContext): Promise<ToolResultRecord | undefined> {
    const name = JSON.stringify(execution.name)
    const unavailable = () => errorRecord(`tool ${name} requires approval, but no approval channel is available`, 'PermissionError', ToolErrorCode.denied)
    const approval = this.ctx.get('approval') as ApprovalService | undefined
    if (approval === undefined || context.session === undefined) return unavailable()
    let outcome
    try {
      outcome = await approval.request({
        session: context.session, toolName: execution.name, callId: execution.callId,
        reason: reason ?? `tool ${name} requires approval`, arguments: execution.arguments, signal: context.signal,
      })
    } catch (error) {
      return errorRecord(`approval for tool ${name} failed: ${error instanceof Error ? error.message : String(error)}`, 'PermissionError', ToolErrorCode.denied)
    }
    switch (outcome) {
      case 'allowed-once': return undefined
      case 'rejected': return errorRecord(`the user rejected tool ${name}`, 'PermissionError', ToolErrorCode.denied)
      case 'cancelled': return context.signal.aborted ? abortedBeforeDispatchRecord() : errorRecord(`approval for tool ${name} was cancelled`, 'PermissionError', ToolErrorCode.denied)
      default: return unavailable()
    }
  }

  private async run(tool: Tool, args: unknown, execution: ToolExecution, context: CallContext): Promise<ToolResultRecord> {
    const call = fuse(context.signal)
    // A `tools/execute` listener may swap its signal (ExecuteContext); the body reads it when it starts.
    const toolContext: ExecuteContext = {
      callId: execution.callId,
      cwd: context.cwd,
      signal: call.controller.signal,
      ...(context.session !== undefined ? { session: context.session } : {}),
      ...(execution.scope !== undefined ? { scope: execution.scope } : {}),
      ...(execution.parentCallId !== undefined ? { parentCallId: execution.parentCallId } : {}),
      output: (stream, text) => {
        if (text === '') return
        emitContainedVia(this.events, 'tools/output', [{ ...(context.session !== undefined ? { session: context.session } : {}), callId: execution.callId, toolName: execution.name, stream, text }], undefined, target(execution))
      },
    }
    try {
      const record = await this.events.waterfall(target(execution), 'tools/execute', execution, toolContext, () => invokeBody(tool, args, toolContext, call.controller))
      return asRecord(record) ?? invalidOutput('tools/execute')
    } catch (error) {
      return thrownRecord(error)
    } finally {
      call.release()
    }
  }
}

/** Per-call controllers hanging off each caller signal: one abort listener per caller signal. */
const fused = new WeakMap<AbortSignal, Set<AbortController>>()

/**
 * A per-call controller that also aborts with `parent`. Not `AbortSignal.any` (~0.1 ms per call
 * on Node 20) and not one listener per call (a pool of calls would trip Node's max-listeners
 * warning on the turn signal); `release` forgets the call once it is over.
 */
function fuse(parent: AbortSignal): { controller: AbortController; release(): void } {
  const controller = new AbortController()
  if (parent.aborted) {
    controller.abort(parent.reason)
    return { controller, release: () => {} }
  }
  let children = fused.get(parent)
  if (children === undefined) {
    const set = new Set<AbortController>()
    parent.addEventListener('abort', () => {
      for (const child of set) child.abort(parent.reason)
      set.clear()
    }, { once: true })
    fused.set(parent, set)
    children = set
  }
  children.add(controller)
  const set = children
  return { controller, release: () => { set.delete(controller) } }
}

/** Each tool still gives the description and the `parameters` object of its cached schema. */
function sameSchemas(tools: readonly Tool[], schemas: readonly ToolSchema[]): boolean {
  for (let i = 0; i < tools.length; i++) {
    const tool = tools[i]!
    const schema = schemas[i]!
    if (tool.description !== schema.description || tool.parameters !== schema.parameters) return false
  }
  return true
}

type PreparedCall =
  | { readonly kind: 'settled'; readonly record: ToolResultRecord }
  | { readonly kind: 'ready'; run(): Promise<ToolResultRecord> }

function settled(record: ToolResultRecord): { readonly kind: 'settled'; readonly record: ToolResultRecord } {
  return { kind: 'settled', record }
}

function target(execution: ToolExecution): object {
  return execution.scope === undefined ? UNSCOPED : scopeTarget(execution.scope)
}

/**
 * The body with the tool's timeout (T-6). A timeout is a cancellation of this one call: the
 * tool's signal aborts and the body is awaited (a started body is never abandoned, so nothing
 * it does can overlap a later exclusive call); only then does the TIMEOUT record resolve.
 */
function invokeBody(tool: Tool, args: unknown, context: ToolContext, timeout: AbortController): Promise<ToolResultRecord> {
  const body = (async () => asRecord(await tool.execute(args, context)) ?? invalidOutput(`tool ${tool.name}`))().catch((error: unknown) => thrownRecord(error))
  const ms = tool.timeoutMs
  if (ms === undefined) return body
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    timeout.abort(new DOMException(`tool ${tool.name} timed out`, 'TimeoutError'))
  }, ms)
  return body.then((record) => {
    clearTimeout(timer)
    return timedOut ? errorRecord(`tool ${tool.name} timed out after ${ms} ms`, 'TimeoutError', ToolErrorCode.timeout) : record
  })
}
