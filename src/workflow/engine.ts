/**
 * The workflow engine: runs one orchestration script (plain JavaScript, the body of an async
 * function) on a code runtime (`src/code-runtime`), with the hooks `agent`, `parallel`,
 * `pipeline`, `phase`, `log` and `args` (docs/workflows.md). The script only coordinates: its
 * one way out is `agent()`, which the host answers by running a child agent. A misused hook
 * (bad arguments, unknown options, an unsupported schema, a tripped cap) kills the script,
 * whatever it catches: the host aborts the run.
 */
import { Script } from 'node:vm'
import type { CodeRunLimits, CodeRuntime } from '../code-runtime/api.js'
import type { JsonValue } from '../session/types.js'

/** What `agent(prompt, opts)` asks the host for, checked. */
export interface AgentRequest {
  readonly prompt: string
  readonly label: string
  readonly phase?: string
  readonly schema?: Readonly<Record<string, unknown>>
  readonly provider?: string
  readonly model?: string
}

export interface WorkflowLimits {
  /** Children of one run at once (0: the machine's CPUs). */
  readonly maxConcurrentAgents: number
  /** Children of one run in all; one more kills the script. */
  readonly maxTotalAgents: number
  /** Items of one `parallel` or `pipeline` call. */
  readonly maxItemsPerCall: number
}

export interface WorkflowRun {
  readonly script: string
  readonly args?: JsonValue
  readonly runtime: CodeRuntime
  readonly limits: WorkflowLimits
  readonly runLimits?: Partial<CodeRunLimits>
  readonly signal: AbortSignal
  /** Runs one child to its end: its final text, its validated object (`schema`), or `null` when it failed. */
  agent(request: AgentRequest, signal: AbortSignal): Promise<JsonValue>
}

export type WorkflowOutcome =
  | { readonly kind: 'completed'; readonly value: JsonValue | undefined; readonly agents: number; readonly logs: readonly string[] }
  | { readonly kind: 'cancelled'; readonly message: string; readonly agents: number }
  | { readonly kind: 'error'; readonly message: string; readonly agents: number }

/** A script that does not parse: refused before anything runs or is recorded. */
export function scriptProblem(script: string): string | undefined {
  try {
    new Script(`(async () => {\n${script}\n})`, { filename: 'workflow.js' })
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

const AGENT_OPTIONS = new Set(['label', 'phase', 'schema', 'provider', 'model'])
/** Keywords a child's output schema may use (annotations aside). */
const SCHEMA_KEYWORDS = new Set(['type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'oneOf', 'description', 'title'])
const LABEL_MAX = 48

/** The default label of a child: the prompt's first line, cut to 48 characters. */
export function defaultLabel(prompt: string): string {
  const line = prompt.split('\n', 1)[0]!.trim()
  const chars = [...line]
  return chars.length > LABEL_MAX ? `${chars.slice(0, LABEL_MAX - 1).join('')}…` : line
}

function schemaMisuse(schema: unknown, path: string): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return `${path} must be a JSON Schema object`
  for (const [key, value] of Object.entries(schema)) {
    if (!SCHEMA_KEYWORDS.has(key)) return `${path}.${key} is not supported (use only type/properties/required/additionalProperties/items/enum/const/oneOf)`
    if (key === 'properties') {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${path}.properties must be an object`
      for (const [name, sub] of Object.entries(value)) {
        const problem = schemaMisuse(sub, `${path}.properties.${name}`)
        if (problem !== undefined) return problem
      }
    } else if (key === 'items' || (key === 'additionalProperties' && typeof value === 'object')) {
      const problem = schemaMisuse(value, `${path}.${key}`)
      if (problem !== undefined) return problem
    } else if (key === 'oneOf') {
      if (!Array.isArray(value) || value.length === 0) return `${path}.oneOf must be a non-empty array`
      for (const [i, sub] of value.entries()) {
        const problem = schemaMisuse(sub, `${path}.oneOf[${i}]`)
        if (problem !== undefined) return problem
      }
    }
  }
  return undefined
}

/** The checked request of one `agent()` call, or why it is a misuse. */
export function agentRequest(prompt: unknown, options: unknown): AgentRequest | string {
  if (typeof prompt !== 'string' || prompt.trim() === '') return 'agent(prompt, opts): prompt must be a non-empty string'
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) return 'agent(prompt, opts): opts must be an object'
  const opts = (options ?? {}) as Record<string, unknown>
  for (const key of Object.keys(opts)) {
    if (!AGENT_OPTIONS.has(key)) return `agent(prompt, opts): unknown option "${key}" (supported: ${[...AGENT_OPTIONS].join(', ')})`
  }
  for (const key of ['label', 'phase', 'provider', 'model'] as const) {
    if (opts[key] !== undefined && (typeof opts[key] !== 'string' || opts[key] === '')) return `agent(prompt, opts): opts.${key} must be a non-empty string`
  }
  if (opts.schema !== undefined) {
    const problem = schemaMisuse(opts.schema, 'opts.schema')
    if (problem !== undefined) return `agent(prompt, opts): ${problem}`
    if ((opts.schema as { type?: unknown }).type !== 'object') return 'agent(prompt, opts): opts.schema must be object-rooted (type "object")'
  }
  return {
    prompt,
    label: (opts.label as string | undefined) ?? defaultLabel(prompt),
    ...opts.phase !== undefined && { phase: opts.phase as string },
    ...opts.schema !== undefined && { schema: opts.schema as Record<string, unknown> },
    ...opts.provider !== undefined && { provider: opts.provider as string },
    ...opts.model !== undefined && { model: opts.model as string },
  }
}

/**
 * The hooks, built inside the program's context around the runtime's `tools` (which the script
 * then cannot see): `agent` asks the host; `misuse` tells the host to kill the run, so a caught
 * error cannot keep a misused script alive. `parallel` and `pipeline` are plain promise code.
 */
function prelude(args: JsonValue | undefined, maxItems: number): string {
  return `const { agent, parallel, pipeline, phase, log, args } = ((hooks) => {
  let current
  const misuse = (message) => { hooks.misuse({ message }); throw new Error(message) }
  const items = (name, list) => {
    if (!Array.isArray(list)) misuse(name + ': expected an array')
    if (list.length > ${maxItems}) misuse(name + ': ' + list.length + ' items, at most ${maxItems} per call')
  }
  const agent = async (prompt, opts) => {
    let request
    try { request = JSON.parse(JSON.stringify({ prompt, opts: opts === undefined ? {} : opts })) } catch (error) { misuse('agent(prompt, opts): arguments must be plain JSON') }
    if (request.opts !== null && typeof request.opts === 'object' && !Array.isArray(request.opts) && request.opts.phase === undefined && current !== undefined) request.opts.phase = current
    return await hooks.agent(request)
  }
  const parallel = async (thunks) => {
    items('parallel(thunks)', thunks)
    for (const thunk of thunks) if (typeof thunk !== 'function') misuse('parallel(thunks): every item must be a zero-argument function')
    return Promise.all(thunks.map(async (thunk) => { try { return await thunk() } catch { return null } }))
  }
  const pipeline = async (list, ...stages) => {
    items('pipeline(items, ...stages)', list)
    if (stages.length === 0) misuse('pipeline(items, ...stages): at least one stage')
    for (const stage of stages) if (typeof stage !== 'function') misuse('pipeline(items, ...stages): every stage must be a function')
    return Promise.all(list.map(async (item, index) => {
      let prev = item
      for (const stage of stages) {
        try { prev = await stage(prev, item, index) } catch { return null }
      }
      return prev
    }))
  }
  const phase = (title) => { if (typeof title !== 'string' || title === '') misuse('phase(title): title must be a non-empty string'); current = title }
  const log = (message) => { console.log(typeof message === 'string' ? message : JSON.stringify(message)) }
  return { agent, parallel, pipeline, phase, log, args: ${JSON.stringify(args ?? {})} }
})(tools);
{ const tools = undefined;
{
`
}

/** A counting semaphore for the run's children. */
function gate(size: number): <T>(work: () => Promise<T>) => Promise<T> {
  let active = 0
  const waiting: (() => void)[] = []
  return async (work) => {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve))
    active++
    try {
      return await work()
    } finally {
      active--
      waiting.shift()?.()
    }
  }
}

export async function runWorkflow(run: WorkflowRun, cpus: number): Promise<WorkflowOutcome> {
  const controller = new AbortController()
  const onAbort = () => controller.abort(run.signal.reason)
  if (run.signal.aborted) onAbort()
  else run.signal.addEventListener('abort', onAbort, { once: true })
  let fatal: string | undefined
  let agents = 0
  const limit = gate(run.limits.maxConcurrentAgents > 0 ? run.limits.maxConcurrentAgents : Math.max(1, cpus))
  const kill = (message: string) => {
    fatal ??= message
    controller.abort(new Error(message))
  }
  try {
    const result = await run.runtime.run({
      code: `${prelude(run.args, run.limits.maxItemsPerCall)}${run.script}\n}\n}`,
      tools: ['agent', 'misuse'],
      signal: controller.signal,
      ...run.runLimits !== undefined && { limits: run.runLimits },
      call: async (name, input, signal) => {
        if (name === 'misuse') {
          kill(String((input as { message?: unknown }).message ?? 'a workflow hook was misused'))
          return { ok: true }
        }
        const { prompt, opts } = input as { prompt?: unknown; opts?: unknown }
        const request = agentRequest(prompt, opts)
        if (typeof request === 'string') {
          kill(request)
          return { ok: false, message: request }
        }
        if (agents >= run.limits.maxTotalAgents) {
          const message = `agent(): the run's cap of ${run.limits.maxTotalAgents} agents is reached`
          kill(message)
          return { ok: false, message }
        }
        agents++
        const value = await limit(() => signal.aborted ? Promise.resolve(null) : run.agent(request, signal))
        return { ok: true, value }
      },
    })
    if (fatal !== undefined) return { kind: 'error', message: fatal, agents }
    if (run.signal.aborted) return { kind: 'cancelled', message: reasonText(run.signal.reason), agents }
    if (!result.ok) return { kind: 'error', message: result.message, agents }
    return { kind: 'completed', value: result.value, agents, logs: result.logs }
  } finally {
    run.signal.removeEventListener('abort', onAbort)
  }
}

function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message
  if (typeof reason === 'string') return reason
  if (typeof reason === 'object' && reason !== null && typeof (reason as { kind?: unknown }).kind === 'string') return (reason as { kind: string }).kind
  return ''
}
