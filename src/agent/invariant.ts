/**
 * The loop invariant as a plugin: every model request the loop marks (`meta.agentLoop`)
 * is checked as it leaves for the adapter (`llm/send`, after every `llm/stream` listener had its
 * turn), not where the loop built it: its messages must be frozen and equal `deriveMessages()` of
 * the log, its system prompt and tools must equal the folded `request/header`, and so must every
 * request setting the header's config records (provider, model, maxTokens, temperature, stop,
 * thinking, reasoningEffort). A mismatch is a loop bug (or a plugin rewriting what the log says
 * was sent): the request is vetoed with a loud error instead of letting the model see a history
 * or settings the log cannot reproduce.
 *
 * Cost per request is O(messages) pointer comparisons: elements identical to the derived ones
 * are only checked for being frozen; JSON comparison runs only for elements that differ, and the
 * header is folded incrementally from the events appended since the last request.
 */
import type { Context } from 'cordis'
import type { LlmCallOptions, Message } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { scanEvents } from '../session/packed-run.js'
import type { EpochHeader } from '../session/types.js'
import { frozenJson } from './frozen-json.js'
import { serviceLookup } from '../kernel/index.js'

const REQUEST_HEADER: ReadonlySet<string> = new Set(['request/header'])

export class LoopInvariantError extends Error {
  constructor(sessionId: string, detail: string) {
    super(`dsh loop invariant (A-11) violated in session ${sessionId}: ${detail}`)
    this.name = 'LoopInvariantError'
  }
}

type HeaderConfig = EpochHeader['config']
/** The request settings the header records besides the route; the map makes a new one a compile error until it is listed. */
const SETTINGS: { readonly [K in Exclude<keyof HeaderConfig, 'provider' | 'model'>]: true } = {
  maxTokens: true, temperature: true, stop: true, thinking: true, reasoningEffort: true,
}
const CONFIG_SETTINGS = Object.keys(SETTINGS) as (keyof typeof SETTINGS)[]
/** Every request option is either checked above or carries no content the model sees. */
type Unchecked = Exclude<keyof LlmCallOptions, keyof HeaderConfig | 'system' | 'messages' | 'tools' | 'signal' | 'meta' | 'attachments'>
const allChecked: [Unchecked] extends [never] ? true : Unchecked = true
void allChecked

interface Fold { scanned: number; header: EpochHeader | undefined; verifiedTools: unknown; verifiedFor: EpochHeader | undefined }

export const LoopInvariantPlugin = {
  name: 'agent-loop-invariant',
  apply(ctx: Context) {
    const folds = new WeakMap<Session, Fold>()
    const lookup = serviceLookup(ctx, 'sessions')
    ctx.on('llm/send', (options) => {
      const meta = options.meta
      if (meta?.agentLoop === true) {
        const sessions = lookup()
        const session = typeof meta.sessionId === 'string' ? sessions?.get(meta.sessionId) : undefined
        if (session === undefined) {
          throw new LoopInvariantError(String(meta.sessionId), 'the request names no live session (meta.sessionId)')
        }
        let fold = folds.get(session)
        if (fold === undefined) folds.set(session, fold = { scanned: 0, header: undefined, verifiedTools: undefined, verifiedFor: undefined })
        check(session, options, fold)
      }
    }, { prepend: true, global: true })
  },
}

function check(session: Session, options: LlmCallOptions, fold: Fold): void {
  const fail = (detail: string): never => { throw new LoopInvariantError(session.id, detail) }
  const derived = session.deriveMessages()
  const sent = options.messages
  if (sent.length !== derived.length) fail(`${sent.length} messages sent but the log derives ${derived.length}`)
  for (let i = 0; i < sent.length; i++) {
    const message = sent[i]!
    if (message === derived[i]) {
      if (!Object.isFrozen(message)) fail(`message ${i} (${message.id}) is not frozen`)
      continue
    }
    if (!deepFrozen(message)) fail(`message ${i} (${message.id}) is not frozen`)
    if (JSON.stringify(message) !== JSON.stringify(derived[i])) {
      fail(`message ${i} differs from the log: sent ${preview(message)}, derived ${preview(derived[i]!)}`)
    }
  }
  fold.scanned = scanEvents(session.events, fold.scanned, REQUEST_HEADER, (event) => {
    fold.header = (event.data as { header: EpochHeader }).header
  })
  const header = fold.header ?? fail('no request/header precedes the request')
  const config = header.config
  if (options.provider !== config.provider || options.model !== config.model) {
    fail(`route ${options.provider}/${options.model} differs from the header's ${config.provider}/${config.model}`)
  }
  for (const key of CONFIG_SETTINGS) {
    const same = key === 'stop' ? sameStops(options.stop, config.stop) : options[key] === config[key]
    if (!same) fail(`${key} ${JSON.stringify(options[key]) ?? 'unset'} differs from the header's ${JSON.stringify(config[key]) ?? 'unset'}`)
  }
  if ((options.system ?? '') !== header.system) fail('the system prompt differs from the folded request/header')
  // Tools are compared once per (tool list, header) pair: the loop reuses one array per assembly.
  if (fold.verifiedTools !== options.tools || fold.verifiedFor !== header) {
    if (JSON.stringify(options.tools ?? []) !== frozenJson(header.tools ?? [])) fail('the tool schemas differ from the folded request/header')
    fold.verifiedTools = options.tools
    fold.verifiedFor = header
  }
}

/** No stop list and an empty one mean the same. */
function sameStops(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  const x = a ?? []
  const y = b ?? []
  return x.length === y.length && x.every((value, i) => value === y[i])
}

function deepFrozen(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true
  if (!Object.isFrozen(value)) return false
  for (const key of Object.keys(value)) if (!deepFrozen((value as Record<string, unknown>)[key])) return false
  return true
}

function preview(message: Message): string {
  const text = JSON.stringify(message)
  return text.length > 200 ? `${text.slice(0, 200)}...` : text
}
