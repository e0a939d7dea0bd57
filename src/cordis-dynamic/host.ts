/**
 * A host half: the model's plain-JS function body, run in its own `node:vm` global scope inside
 * the dsh process, under a Cordis fiber that is a child of the calling agent's fiber (so every
 * registration is scoped to that agent and dies with it, docs/scope.md). The body returns a
 * plugin (`{ apply(ctx) {...} }` or `(ctx) => {...}`); `apply` gets a façade, not dsh's context:
 * `on` for the events in `EVENTS`, `effect`, `get`/`inject` for the services in `SERVICES`,
 * timers owned by the fiber. `harness` (defineTool, registerTool, handle) and `console` are the
 * only extra globals; `require`, `process`, `fetch`, native timers... throw a hint.
 *
 * The synchronous part of every entry into model code (the body, `apply`, a listener, a tool's
 * `execute`, a timer) runs under the vm timeout; what it awaits afterwards does not. A throw or a
 * timeout while loading disposes the fiber, so nothing registered before it survives.
 *
 * This is containment against accidents, not a security boundary: the façade's objects come from
 * dsh's realm and model code can reach the process through them (docs/security.md). That is why
 * running a host half is an approval under an asking policy.
 */
import vm from 'node:vm'
import type { Context } from 'cordis'
import type { JsonValue } from '../session/types.js'
import type { Tool, ToolOutput } from '../tools/api.js'
import { EVENTS, SERVICES } from './api.js'

export const DEFAULT_VM_TIMEOUT_MS = 5000

/** The wrapper that turns a function body into a function expression. */
export function wrapBody(source: string): string {
  return `(function () {\n${source}\n})`
}

/** Throws the compiler's error when `source` is not a valid function body (define compiles only). */
export function compileCheck(source: string, filename: string): void {
  new vm.Script(wrapBody(source), { filename })
}

export interface HostLoadOptions {
  readonly source: string
  /** The calling agent's context (scoped): the run's fiber is its child. */
  readonly agentCtx: Context
  /** `<pluginId>/<packageId>`, for names and stack traces. */
  readonly label: string
  readonly timeoutMs: number
  readonly log: (level: 'log' | 'error', message: string) => void
}

export interface LoadedHost {
  /** Names of the tools the plugin registered (live: shrinks when one is disposed). */
  readonly tools: readonly string[]
  /** Disposes the fiber: every tool, listener, effect and timer of the run. */
  stop(): Promise<void>
}

const ABSENT: Readonly<Record<string, string>> = {
  require: 'there are no modules; use ctx.get(service), ctx and harness (cordis_inspect_query Builtin.listBuiltins)',
  module: 'there are no modules; the body returns the plugin',
  exports: 'there are no modules; the body returns the plugin',
  process: 'the dsh process is not exposed to dynamic plugins',
  Buffer: 'use strings, arrays or Uint8Array',
  fetch: 'dynamic plugins get no network API; let the model fetch with its tools',
  setTimeout: 'use ctx.setTimeout(callback, ms): it is cleared when the plugin stops',
  setInterval: 'use ctx.setInterval(callback, ms): it is cleared when the plugin stops',
  setImmediate: 'use ctx.setTimeout(callback, 0)',
  clearTimeout: 'call the disposer ctx.setTimeout returned',
  clearInterval: 'call the disposer ctx.setInterval returned',
  queueMicrotask: 'await a resolved promise instead',
}

const INVOKE = new vm.Script('(function () { const p = globalThis.__dshPending; globalThis.__dshPending = undefined; return p.fn.apply(p.self, p.args) })()')

const TOOL_DEFINITION = Symbol('dsh.cordis.tool')

interface ToolDefinitionInput {
  readonly name?: unknown
  readonly description?: unknown
  readonly parameters?: unknown
  readonly execute?: unknown
  readonly output?: { readonly render?: unknown }
}

interface CheckedTool {
  readonly [TOOL_DEFINITION]: true
  readonly name: string
  readonly description: string
  readonly parameters: Readonly<Record<string, unknown>>
  readonly execute: (...args: unknown[]) => unknown
  readonly render?: (...args: unknown[]) => unknown
}

/** `{type:"object", properties}` as it is; a compact map `{field: {type, required?}}` becomes one. */
function toSchema(parameters: unknown, name: string): Record<string, unknown> {
  if (parameters === undefined) return { type: 'object', properties: {} }
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) throw new TypeError(`tool ${name}: parameters must be an object`)
  const record = JSON.parse(JSON.stringify(parameters)) as Record<string, unknown>
  if (record.type === 'object') return record
  const properties: Record<string, unknown> = {}
  const required: string[] = []
  for (const [key, field] of Object.entries(record)) {
    if (typeof field !== 'object' || field === null) throw new TypeError(`tool ${name}: parameter ${key} must be a JSON Schema object`)
    const { required: isRequired, ...rest } = field as Record<string, unknown>
    properties[key] = rest
    if (isRequired === true) required.push(key)
  }
  return { type: 'object', properties, ...(required.length > 0 ? { required } : {}) }
}

function checkTool(input: unknown): CheckedTool {
  if (typeof input === 'object' && input !== null && (input as Partial<CheckedTool>)[TOOL_DEFINITION] === true) return input as CheckedTool
  const def = (input ?? {}) as ToolDefinitionInput
  if (typeof def.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(def.name)) throw new TypeError(`defineTool: name must match /^[A-Za-z0-9_-]{1,64}$/, got ${JSON.stringify(def.name)}`)
  if (typeof def.description !== 'string') throw new TypeError(`defineTool: tool ${def.name}: description must be a string`)
  if (typeof def.execute !== 'function') throw new TypeError(`defineTool: tool ${def.name}: execute must be a function returning the tool's JSON value`)
  const render = def.output?.render
  if (render !== undefined && typeof render !== 'function') throw new TypeError(`defineTool: tool ${def.name}: output.render must be a function`)
  return Object.freeze({
    [TOOL_DEFINITION]: true as const,
    name: def.name, description: def.description, parameters: toSchema(def.parameters, def.name),
    execute: def.execute as CheckedTool['execute'],
    ...(render !== undefined ? { render: render as CheckedTool['render'] } : {}),
  })
}

function formatValues(values: readonly unknown[]): string {
  return values.map((value) => typeof value === 'string' ? value : safeJson(value)).join(' ')
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** The value a program receives: JSON only (a live object would not survive the bridge). */
function toJsonValue(value: unknown, name: string): JsonValue {
  if (value === undefined) return null
  try {
    return JSON.parse(JSON.stringify(value)) as JsonValue
  } catch (error) {
    throw new TypeError(`tool ${name}: execute must return JSON (${String((error as { message?: unknown })?.message ?? error)})`)
  }
}

function toBlocks(rendered: unknown, name: string): ToolOutput['content'] {
  if (typeof rendered === 'string') return [{ type: 'text', text: rendered }]
  if (!Array.isArray(rendered) || rendered.some((block) => typeof block?.text !== 'string' || block.type !== 'text')) {
    throw new TypeError(`tool ${name}: output.render must return [{type: "text", text}] blocks`)
  }
  return rendered.map((block: { text: string }) => ({ type: 'text' as const, text: block.text }))
}

/** Loads a host half; throws (after unwinding everything it registered) when it fails. */
export async function loadHostHalf(options: HostLoadOptions): Promise<LoadedHost> {
  const { agentCtx, label, timeoutMs, log } = options
  const sandbox: Record<string, unknown> = {}
  const context = vm.createContext(sandbox, { name: `cordis:${label}` })
  const invoke = (fn: unknown, self: unknown, args: readonly unknown[]): unknown => {
    if (typeof fn !== 'function') throw new TypeError(`expected a function, got ${typeof fn}`)
    sandbox.__dshPending = { fn, self, args }
    return INVOKE.runInContext(context, { timeout: timeoutMs })
  }
  const fiber = agentCtx.plugin({ name: `cordis:${label}`, inject: ['tools'], apply: () => {} })
  await fiber.await()
  const fctx = fiber.ctx
  const tools: string[] = []
  let stopped: Promise<void> | undefined
  const stop = () => stopped ??= fiber.dispose()

  const registerTool = (input: unknown): (() => void) => {
    const def = checkTool(input)
    const tool: Tool = {
      name: def.name, description: def.description, parameters: def.parameters,
      execute: async (args, call): Promise<ToolOutput> => {
        const value = toJsonValue(await invoke(def.execute, undefined, [args, Object.freeze({ callId: call.callId })]), def.name)
        const content = def.render !== undefined
          ? toBlocks(await invoke(def.render, undefined, [args, value]), def.name)
          : [{ type: 'text' as const, text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) }]
        return { content, value }
      },
    }
    const dispose = fctx.tools.register(tool)
    tools.push(def.name)
    return () => {
      dispose()
      const at = tools.indexOf(def.name)
      if (at >= 0) tools.splice(at, 1)
    }
  }
  const toolsFacade = Object.freeze({
    register: registerTool,
    list: () => fctx.tools.list().map((tool) => tool.name),
    schema: (name: string) => {
      const tool = fctx.tools.get(String(name))
      return tool === undefined ? undefined : JSON.parse(JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }))
    },
  })
  const services: Readonly<Record<string, unknown>> = { tools: toolsFacade }
  const timer = (repeat: boolean) => (callback: unknown, ms: unknown): (() => void) => {
    if (typeof callback !== 'function') throw new TypeError(`ctx.${repeat ? 'setInterval' : 'setTimeout'}: callback must be a function`)
    const delay = typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms : 0
    let handle: ReturnType<typeof setTimeout> | undefined
    const dispose = fctx.effect(() => {
      const fire = () => {
        if (!repeat) dispose()
        try {
          invoke(callback, undefined, [])
        } catch (error) {
          log('error', `timer callback failed: ${typeof (error as { message?: unknown })?.message === 'string' ? (error as { message: string }).message : String(error)}`)
        }
      }
      handle = repeat ? setInterval(fire, delay) : setTimeout(fire, delay)
      return () => { clearTimeout(handle); clearInterval(handle) }
    }, repeat ? 'cordis interval' : 'cordis timeout')
    return dispose
  }
  const facadeFor = (inject: readonly string[]) => {
    const facade: Record<string, unknown> = {
      on(name: unknown, listener: unknown) {
        if (!EVENTS.some((event) => event.name === name)) throw new Error(`ctx.on: event ${JSON.stringify(name)} is not available to dynamic plugins; cordis_inspect_query Event.listEvents lists those that are`)
        if (typeof listener !== 'function') throw new TypeError('ctx.on: listener must be a function')
        return fctx.on(name as 'tools/result', ((...args: unknown[]) => invoke(listener, undefined, args)) as never)
      },
      effect(setup: unknown) {
        return fctx.effect(() => {
          const dispose = invoke(setup, undefined, [])
          if (typeof dispose !== 'function') throw new TypeError('ctx.effect: setup must return a disposer function')
          return () => { invoke(dispose, undefined, []) }
        }, 'cordis effect')
      },
      get: (key: unknown) => typeof key === 'string' && Object.hasOwn(services, key) ? services[key] : undefined,
      setTimeout: timer(false),
      setInterval: timer(true),
    }
    for (const key of Object.keys(services)) {
      Object.defineProperty(facade, key, {
        get() {
          if (!inject.includes(key)) throw new Error(`ctx.${key} is not declared: add inject: ['${key}'] to the returned plugin, or read ctx.get('${key}') and handle undefined`)
          return services[key]
        },
      })
    }
    return Object.freeze(facade)
  }
  const handlers = new Map<string, unknown>()
  sandbox.harness = Object.freeze({
    defineTool: (input: unknown) => checkTool(input),
    registerTool: (_ctx: unknown, definition: unknown) => registerTool(definition),
    handle: (method: unknown, handler: unknown) => {
      if (typeof method !== 'string' || typeof handler !== 'function') throw new TypeError('harness.handle(method: string, handler: function)')
      if (handlers.has(method)) throw new Error(`harness.handle: method ${JSON.stringify(method)} is already handled`)
      handlers.set(method, handler)
      return fctx.effect(() => () => { handlers.delete(method) }, `cordis handle ${method}`)
    },
  })
  sandbox.console = Object.freeze({
    log: (...values: unknown[]) => log('log', formatValues(values)),
    info: (...values: unknown[]) => log('log', formatValues(values)),
    warn: (...values: unknown[]) => log('error', formatValues(values)),
    error: (...values: unknown[]) => log('error', formatValues(values)),
  })
  for (const [name, hint] of Object.entries(ABSENT)) {
    Object.defineProperty(sandbox, name, { get() { throw new ReferenceError(`${name} is not available in a dynamic Cordis plugin: ${hint}`) } })
  }

  try {
    const factory = new vm.Script(wrapBody(options.source), { filename: `cordis:${label}/host.js` }).runInContext(context, { timeout: timeoutMs })
    const plugin = invoke(factory, undefined, []) as { apply?: unknown; inject?: unknown } | ((ctx: unknown) => unknown) | undefined
    const apply = typeof plugin === 'function' ? plugin : plugin?.apply
    if (typeof apply !== 'function') throw new TypeError('the host code must return a Cordis plugin: `return { apply(ctx) { ... } }` or `return (ctx) => { ... }`')
    const declared = typeof plugin === 'object' && plugin !== null && plugin.inject !== undefined ? plugin.inject : []
    if (!Array.isArray(declared) || declared.some((key) => typeof key !== 'string')) throw new TypeError('inject must be an array of service names, e.g. inject: [\'tools\']')
    const unknown = declared.find((key: string) => !SERVICES.some((service) => service.key === key))
    if (unknown !== undefined) throw new Error(`service ${JSON.stringify(unknown)} is not available to dynamic plugins; cordis_inspect_query Service.listService lists those that are`)
    await invoke(apply, plugin, [facadeFor(declared as string[])])
  } catch (error) {
    await stop()
    throw error
  }
  return { tools, stop }
}
