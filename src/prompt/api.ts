/**
 * `ctx.systemPrompt` (Y-1): sections, variables, tool schema providers and runtime contexts.
 */
import type {} from 'cordis'
import type { ToolSchema } from '../llm/types.js'
import type { ScopeKey } from '../scope/index.js'

export interface PromptSection {
  readonly name: string
  readonly order: number
  readonly text?: string
  readonly fn?: (vars: Readonly<Record<string, string>>) => string | undefined | Promise<string | undefined>
  /** A `complete` section replaces every other section (at most one may be active). */
  readonly complete?: boolean
}

/** A runtime context (cwd, date, policy...) rendered into the runtime-context user message. */
export interface RuntimeContext {
  readonly name: string
  readonly order?: number
  render(): string | undefined | Promise<string | undefined>
}

export interface PromptAssembly {
  readonly system: string
  readonly tools: readonly ToolSchema[]
  /** Rendered runtime contexts, in order; empty when none are registered. */
  readonly contexts: readonly { readonly name: string; readonly text: string }[]
}

export interface SystemPromptService {
  section(section: PromptSection, scope?: ScopeKey): () => void
  variable(name: string, value: string | (() => string | undefined), scope?: ScopeKey): () => void
  context(context: RuntimeContext, scope?: ScopeKey): () => void
  /** Assembled per step (sections, tool schemas from ctx.tools when present, contexts). */
  assemble(scope?: ScopeKey): Promise<PromptAssembly>
}

declare module 'cordis' {
  interface Context {
    systemPrompt: SystemPromptService
  }
  interface Events {
    /** @mode waterfall. Rewrite the assembled prompt. */
    'system-prompt/assemble'(assembly: PromptAssembly, next: () => Promise<PromptAssembly>): Promise<PromptAssembly>
  }
}
