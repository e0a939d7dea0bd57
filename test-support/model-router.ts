import type { LlmCallOptions, TextBlock } from '../src/llm/types.js'
import type { ScriptedResponse } from './scripted-model.js'

/** Model scripts keyed by the first user text of the requesting session (children run concurrently). */
export class Router {
  private readonly scripts = new Map<string, ScriptedResponse[]>()
  script(firstUserText: string, ...responses: ScriptedResponse[]): this {
    this.scripts.set(firstUserText, [...this.scripts.get(firstUserText) ?? [], ...responses])
    return this
  }

  private readonly fallbacks = new Map<string, ScriptedResponse>()
  /** The response once the key's script is used up (input whose timing varies). */
  fallback(firstUserText: string, response: ScriptedResponse): this {
    this.fallbacks.set(firstUserText, response)
    return this
  }

  readonly respond: ScriptedResponse = (request: LlmCallOptions, signal) => {
    const first = request.messages.find(m => m.role === 'user' && m.source.kind === 'user')
    const key = (first?.content.find(b => b.type === 'text') as TextBlock | undefined)?.text ?? ''
    const queue = this.scripts.get(key)
    const next = queue?.shift() ?? this.fallbacks.get(key)
    if (next === undefined) throw new Error(`router: no response left for "${key}"`)
    return typeof next === 'function' ? next(request, signal) : next
  }
}

