/**
 * The runtime-context message of A-3: when the rendered runtime contexts differ from the last
 * snapshot still on the surface, the step enters one plugin-sourced `user/message` carrying the
 * new snapshot (a "none" snapshot when every context disappeared).
 */
import { randomUUID } from 'node:crypto'
import type { UserMessage } from '../llm/types.js'
import type { PromptAssembly } from '../prompt/api.js'
import { renderRuntimeContextMessage, RUNTIME_CONTEXT_PREFIX } from '../prompt/index.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import type { SessionEvent } from '../session/types.js'

const USER_MESSAGE: ReadonlySet<string> = new Set(['user/message'])

export const RUNTIME_CONTEXT_PLUGIN = 'dsh-runtime-context'

export function isRuntimeContextMessage(message: UserMessage): boolean {
  const source = message.source as { kind: string; plugin?: unknown; form?: unknown }
  const first = message.content[0]
  return source.kind === 'plugin' && source.plugin === RUNTIME_CONTEXT_PLUGIN && source.form === 'snapshot'
    && first?.type === 'text' && first.text.startsWith(RUNTIME_CONTEXT_PREFIX)
}

/**
 * Tracks the text of the last snapshot on the surface without rescanning the log per step: new
 * events are folded incrementally; only a surface replace (compaction) forces a backward scan.
 */
export class RuntimeContextTracker {
  private scanned = 0
  private generation = -1
  private last: string | undefined

  constructor(private readonly session: Session) {}

  /** The message to enter for `contexts`, or undefined when the surface already says it. */
  message(contexts: PromptAssembly['contexts']): UserMessage | undefined {
    const last = this.lastSnapshot()
    if (contexts.length === 0 && last === undefined) return undefined
    const text = renderRuntimeContextMessage(contexts)
    if (text === last) return undefined
    return {
      id: randomUUID(),
      role: 'user',
      content: [{ type: 'text', text }],
      // The rendered sections ride along, by name, so UIs and checks need not parse the text.
      source: { kind: 'plugin', plugin: RUNTIME_CONTEXT_PLUGIN, form: 'snapshot', sections: contexts.map(({ name, text }) => ({ name, text })) },
    }
  }

  private lastSnapshot(): string | undefined {
    const { session } = this
    if (session.replaceGeneration !== this.generation) {
      this.generation = session.replaceGeneration
      this.scanned = session.length
      this.last = undefined
      const surface = session.surface()
      for (let i = surface.length - 1; i >= 0; i--) {
        const text = snapshotText(session.events[surface[i]!]!)
        if (text !== undefined) { this.last = text; break }
      }
      return this.last
    }
    this.scanned = scanEvents(session.events, this.scanned, USER_MESSAGE, (event) => {
      const text = snapshotText(event)
      if (text !== undefined) this.last = text
    })
    return this.last
  }
}

function snapshotText(event: SessionEvent): string | undefined {
  if (event.type !== 'user/message') return undefined
  const message = event.data as UserMessage
  if (!isRuntimeContextMessage(message)) return undefined
  const first = message.content[0]
  return first?.type === 'text' ? first.text : undefined
}
