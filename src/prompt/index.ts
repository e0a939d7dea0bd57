/**
 * `ctx.systemPrompt` (Y-1): scoped sections, variables and runtime contexts, assembled per call
 * and passed through the `system-prompt/assemble` waterfall.
 */
import { Context, Service } from 'cordis'
import type { ToolSchema } from '../llm/types.js'
import { eventsOf, serviceLookup, type EventDispatch } from '../kernel/index.js'
import { contextScope, scopeTarget, ScopedLayers, type ScopeKey } from '../scope/index.js'
import type { PromptAssembly, PromptSection, RuntimeContext, SystemPromptService } from './api.js'
import { interpolate } from './template.js'

export type { PromptAssembly, PromptSection, RuntimeContext, SystemPromptService } from './api.js'
export { interpolate } from './template.js'

export const HARNESS_SECTION: PromptSection = {
  name: 'harness',
  order: -100,
  text: [
    'You are running inside dsh, an agent runtime. You act through the tools offered to you; every',
    'call and its result is recorded in a session log. A user message that begins with "Current',
    'runtime context." is written by dsh, not typed by the user: it describes the environment you',
    'work in (folder, date and similar facts) and replaces any earlier one.',
  ].join('\n'),
}

export const DEFAULT_PERSONA =
  'You are a careful software engineering assistant. Read before you change things, keep changes ' +
  'small and say what you did. When you are unsure about files or the result of a command, check ' +
  'with a tool rather than guessing. Be brief.'

export interface SystemPromptConfig {
  /** Text of the built-in `persona` section (order 0); an agent overrides it with its own `persona` section. */
  persona?: string
  /** Tool names listed first, in this order; the rest follow sorted by name. */
  toolOrder?: readonly string[]
}

interface Variable {
  readonly name: string
  readonly value: string | (() => string | undefined)
}

type ToolsLike = { schemas(scope?: ScopeKey): readonly ToolSchema[] }

function assertSection(section: PromptSection): void {
  const label = typeof section?.name === 'string' ? `system prompt section "${section.name}"` : 'system prompt section'
  if (typeof section?.name !== 'string' || section.name === '') throw new TypeError(`${label}: needs a non-empty string name`)
  if (typeof section.order !== 'number' || !Number.isFinite(section.order)) throw new TypeError(`${label}: order must be a finite number`)
  const hasText = section.text !== undefined
  const hasFn = section.fn !== undefined
  if (hasText === hasFn) throw new TypeError(`${label}: give exactly one of text or fn`)
  if (hasText && typeof section.text !== 'string') throw new TypeError(`${label}: text must be a string`)
  if (hasFn && typeof section.fn !== 'function') throw new TypeError(`${label}: fn must be a function`)
}

/** Strip leading blank lines and trailing whitespace so the blank-line join stays uniform. */
function tidy(text: string | undefined): string {
  return text === undefined ? '' : text.replace(/^(?:[ \t]*\r?\n)+/, '').trimEnd()
}

/** Stable sort by `order`; ties keep view order (global position first, P-3). */
function byOrder<T extends { readonly order?: number }>(entries: readonly T[]): T[] {
  return entries.map((entry, index) => ({ entry, index }))
    .sort((a, b) => (a.entry.order ?? 0) - (b.entry.order ?? 0) || a.index - b.index)
    .map(({ entry }) => entry)
}

export class SystemPromptPlugin extends Service implements SystemPromptService {
  private readonly sections = new ScopedLayers<PromptSection>('system prompt section')
  private readonly variables = new ScopedLayers<Variable>('system prompt variable')
  private readonly contexts = new ScopedLayers<RuntimeContext>('runtime context')
  private readonly toolOrder: readonly string[]
  /** Resolved once (docs/kernel.md, "Hot paths"): `assemble` runs at every step. */
  private readonly events: EventDispatch
  private readonly toolsService: () => ToolsLike | undefined
  /** The last ordered tool list, per source list (`ctx.tools` keeps one frozen list while nothing changes). */
  private readonly ordered = new WeakMap<readonly ToolSchema[], readonly ToolSchema[]>()

  constructor(ctx: Context, config: SystemPromptConfig = {}) {
    super(ctx, 'systemPrompt')
    this.toolOrder = config.toolOrder ?? []
    this.events = eventsOf(ctx)
    // Optional service: `ctx.tools` would throw without inject (K-1).
    this.toolsService = serviceLookup(ctx, 'tools') as () => ToolsLike | undefined
    // Built-ins live as long as the service; agents shadow them by name.
    this.sections.register(HARNESS_SECTION)
    this.sections.register({ name: 'persona', order: 0, text: config.persona ?? DEFAULT_PERSONA })
  }

  /**
   * Without an explicit scope, a registration made through a scope-tagged context (an agent's
   * ctx) lands in that scope. Every registration is an effect of the calling fiber (K-6).
   */
  section(section: PromptSection, scope: ScopeKey | undefined = contextScope(this.ctx)): () => void {
    assertSection(section)
    return this.ctx.effect(() => this.sections.register(section, scope), `system prompt section ${section.name}`)
  }

  variable(name: string, value: string | (() => string | undefined), scope: ScopeKey | undefined = contextScope(this.ctx)): () => void {
    if (typeof value !== 'string' && typeof value !== 'function') {
      throw new TypeError(`system prompt variable "${name}": value must be a string or a function`)
    }
    return this.ctx.effect(() => this.variables.register({ name, value }, scope), `system prompt variable ${name}`)
  }

  context(context: RuntimeContext, scope: ScopeKey | undefined = contextScope(this.ctx)): () => void {
    if (typeof context?.render !== 'function') {
      throw new TypeError(`runtime context "${String(context?.name)}": render must be a function`)
    }
    return this.ctx.effect(() => this.contexts.register(context, scope), `runtime context ${context.name}`)
  }

  async assemble(scope: ScopeKey | undefined = contextScope(this.ctx)): Promise<PromptAssembly> {
    const assembly: PromptAssembly = {
      system: await this.renderSections(scope),
      tools: this.toolSchemas(scope),
      contexts: await this.renderContexts(scope),
    }
    // Scoped dispatch reaches untagged listeners and those of the scope's chain (P-4).
    const inner = () => Promise.resolve(assembly)
    return scope === undefined
      ? this.events.waterfall('system-prompt/assemble', assembly, inner)
      : this.events.waterfall(scopeTarget(scope), 'system-prompt/assemble', assembly, inner)
  }

  private async renderSections(scope: ScopeKey | undefined): Promise<string> {
    let active = this.sections.view(scope)
    const complete = active.filter((section) => section.complete)
    if (complete.length > 1) {
      throw new Error(`system prompt: at most one complete section may be active, found ${complete.map((s) => `"${s.name}"`).join(', ')}`)
    }
    if (complete.length === 1) active = complete

    const values = new Map<string, string | undefined>()
    const evaluate = ({ name, value }: Variable) => {
      if (typeof value === 'string') return value
      let result: unknown
      try {
        result = value()
      } catch (error) {
        throw new Error(`system prompt variable "${name}" failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
      }
      if (result !== undefined && typeof result !== 'string') throw new TypeError(`system prompt variable "${name}": must give a string or undefined`)
      return result
    }
    const lookup = (name: string) => {
      const variable = this.variables.get(name, scope)
      if (variable === undefined) return { known: false } as const
      if (!values.has(name)) values.set(name, evaluate(variable))
      return { known: true, value: values.get(name) } as const
    }
    let vars: Readonly<Record<string, string>> | undefined
    const allVars = () => {
      if (vars) return vars
      const record: Record<string, string> = {}
      for (const { name } of this.variables.view(scope)) {
        const { value } = lookup(name) as { value: string | undefined }
        if (value !== undefined) record[name] = value
      }
      return (vars = Object.freeze(record))
    }

    const parts: string[] = []
    for (const section of byOrder(active)) {
      const where = `system prompt section "${section.name}"`
      let text: string | undefined
      if (section.fn) {
        try {
          text = await section.fn(allVars())
        } catch (error) {
          throw new Error(`${where} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
        }
        if (text !== undefined && typeof text !== 'string') throw new TypeError(`${where}: fn must return a string or undefined`)
      } else {
        text = interpolate(section.text!, lookup, where)
      }
      const tidied = tidy(text)
      if (tidied !== '') parts.push(tidied)
    }
    return parts.join('\n\n')
  }

  /**
   * The tool schemas in prompt order. Frozen and, while `ctx.tools` gives the same list, the same
   * array from step to step, so the loop's A-10 header check compares it by identity.
   */
  private toolSchemas(scope: ScopeKey | undefined): readonly ToolSchema[] {
    const tools = this.toolsService()
    if (!tools) return []
    const source = tools.schemas(scope)
    const known = this.ordered.get(source)
    if (known !== undefined) return known
    // Read once: `this` may be Cordis's tracing proxy, and the comparator runs O(n log n) times.
    const order = this.toolOrder
    const rank = (name: string) => {
      const index = order.indexOf(name)
      return index < 0 ? order.length : index
    }
    const sorted = Object.freeze([...source].sort((a, b) => rank(a.name) - rank(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)))
    // Only a frozen source list can be remembered: a mutable one may change under the same identity.
    if (Object.isFrozen(source)) this.ordered.set(source, sorted)
    return sorted
  }

  private async renderContexts(scope: ScopeKey | undefined): Promise<{ name: string; text: string }[]> {
    const rendered: { name: string; text: string }[] = []
    for (const context of byOrder(this.contexts.view(scope))) {
      const text = tidy(await context.render())
      if (text !== '') rendered.push({ name: context.name, text })
    }
    return rendered
  }
}

export const RUNTIME_CONTEXT_PREFIX = 'Current runtime context.'

/**
 * Text of the runtime-context user message the loop appends when the rendered contexts changed
 * (A-3). With no contexts left it says so, so the model stops relying on the earlier snapshot.
 */
export function renderRuntimeContextMessage(contexts: PromptAssembly['contexts']): string {
  if (contexts.length === 0) {
    return `${RUNTIME_CONTEXT_PREFIX}\n\nNone: the runtime context given earlier no longer applies.`
  }
  const body = contexts.map(({ name, text }) => `[${name}]\n${text}`).join('\n\n')
  return `${RUNTIME_CONTEXT_PREFIX} Written by dsh, not by the user; it replaces any earlier one.\n\n${body}`
}

export interface RuntimeContextsConfig {
  /** The session's working folder. */
  cwd: string
  /** Clock for the date context (tests pass a fixed one). */
  now?: () => Date
}

function localDate(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`
}

/**
 * Built-in runtime contexts: the working folder and today's date. The date has day precision on
 * purpose: the loop re-sends the runtime context only when its text changes.
 */
export const RuntimeContextsPlugin = {
  name: 'runtime-contexts',
  inject: ['systemPrompt'],
  apply(ctx: Context, config: RuntimeContextsConfig) {
    if (typeof config?.cwd !== 'string' || config.cwd === '') throw new TypeError('runtime-contexts: config.cwd must be a non-empty string')
    const now = config.now ?? (() => new Date())
    ctx.systemPrompt.context({ name: 'cwd', order: 0, render: () => `Working folder: ${config.cwd}` })
    ctx.systemPrompt.context({ name: 'date', order: 10, render: () => `Today's date: ${localDate(now())}` })
  },
}
