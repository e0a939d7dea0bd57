/**
 * Hand-written data validators for the core event types (S-1). They run on every append, so
 * they are plain functions rather than a schema library: no allocation on the happy path.
 * A check returns a problem naming the offending path, or null.
 */
import type { EventDataValidator } from './types.js'

/**
 * Where a value sits, as a linked list built while descending; rendered to a string
 * (`data.message.content[0].text`) only when there is a problem to report.
 */
export interface Path { readonly parent: Path | null; readonly key: string | number }

type Check = (value: unknown, path: Path) => string | null

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

export function rootPath(name: string): Path {
  return { parent: null, key: name }
}

/**
 * Stands for every path during a validator's first pass, which allocates none: only when that
 * pass finds a problem is the value walked again with real paths, for the message.
 */
const ANY_PATH: Path = Object.freeze({ parent: null, key: 'data' })

export function at(parent: Path, key: string | number): Path {
  return parent === ANY_PATH ? ANY_PATH : { parent, key }
}

export function formatPath(path: Path): string {
  const keys: (string | number)[] = []
  for (let cursor: Path | null = path; cursor; cursor = cursor.parent) keys.push(cursor.key)
  let out = String(keys.pop())
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i]
    out += typeof key === 'number' ? `[${key}]` : IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
  }
  return out
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`
  if (typeof value === 'object') return 'an object'
  return `${typeof value} ${String(value)}`
}

export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

export const str: Check = (v, p) => typeof v === 'string' ? null : `${formatPath(p)} must be a string, got ${describe(v)}`
export const bool: Check = (v, p) => typeof v === 'boolean' ? null : `${formatPath(p)} must be a boolean, got ${describe(v)}`
export const num: Check = (v, p) => typeof v === 'number' && Number.isFinite(v) ? null : `${formatPath(p)} must be a finite number, got ${describe(v)}`
export const nonNegInt: Check = (v, p) =>
  Number.isSafeInteger(v) && (v as number) >= 0 ? null : `${formatPath(p)} must be a non-negative integer, got ${describe(v)}`
export const posInt: Check = (v, p) =>
  Number.isSafeInteger(v) && (v as number) >= 1 ? null : `${formatPath(p)} must be a positive integer, got ${describe(v)}`
export const any: Check = () => null

export function literal(...values: readonly (string | boolean | number)[]): Check {
  return (v, p) => values.includes(v as never) ? null : `${formatPath(p)} must be ${values.map((x) => JSON.stringify(x)).join(' or ')}, got ${describe(v)}`
}

export function arrayOf(item: Check): Check {
  return (v, p) => {
    if (!Array.isArray(v)) return `${formatPath(p)} must be an array, got ${describe(v)}`
    for (let i = 0; i < v.length; i++) {
      const problem = item(v[i], at(p, i))
      if (problem) return problem
    }
    return null
  }
}

/** An object with required and optional keys; extra keys are tolerated (forward compatible data). */
export function object(required: Record<string, Check>, optional: Record<string, Check> = {}): Check {
  // Indexed loops over plain arrays: these run for every event a load checks, mostly before the
  // optimiser has looked at them, where iterating entries with destructuring costs several times more.
  const requiredKeys = Object.keys(required)
  const requiredChecks = requiredKeys.map((key) => required[key])
  const optionalKeys = Object.keys(optional)
  const optionalChecks = optionalKeys.map((key) => optional[key])
  return (v, p) => {
    if (!isPlainObject(v)) return `${formatPath(p)} must be an object, got ${describe(v)}`
    for (let i = 0; i < requiredKeys.length; i++) {
      const key = requiredKeys[i]
      if (!Object.hasOwn(v, key)) return `${formatPath(at(p, key))} is missing`
      const problem = requiredChecks[i](v[key], at(p, key))
      if (problem) return problem
    }
    for (let i = 0; i < optionalKeys.length; i++) {
      const key = optionalKeys[i]
      if (v[key] === undefined) continue
      const problem = optionalChecks[i](v[key], at(p, key))
      if (problem) return problem
    }
    return null
  }
}

/** A discriminated union on `key`. */
export function tagged(key: string, variants: Record<string, Check>): Check {
  const tags = Object.keys(variants)
  return (v, p) => {
    if (!isPlainObject(v)) return `${formatPath(p)} must be an object, got ${describe(v)}`
    const tag = v[key]
    const check = typeof tag === 'string' && Object.hasOwn(variants, tag) ? variants[tag] : undefined
    if (!check) return `${formatPath(at(p, key))} must be one of ${tags.map((t) => JSON.stringify(t)).join(', ')}, got ${describe(tag)}`
    return check(v, p)
  }
}

export function both(...checks: Check[]): Check {
  return (v, p) => {
    for (let i = 0; i < checks.length; i++) {
      const problem = checks[i](v, p)
      if (problem) return problem
    }
    return null
  }
}

const textBlock = object({ text: str })
/** Inline base64 (`data` + `mimeType`) or, as recorded logs store it, an `attachment` reference. */
const attachment = object({ attachmentId: str, mediaType: str }, { width: nonNegInt, height: nonNegInt, bytes: nonNegInt, name: str })
const attachedImage = object({ attachment }, { id: str })
const inlineImage = object({ data: str, mimeType: str }, { id: str })
const imageBlock: Check = (v, p) => isPlainObject(v) && Object.hasOwn(v, 'attachment') ? attachedImage(v, p) : inlineImage(v, p)
const toolResultBlock = object({ toolCallId: str, content: arrayOf(tagged('type', { text: textBlock, image: imageBlock })), isError: bool })
export const contentBlock: Check = tagged('type', {
  text: textBlock,
  reasoning: object({ text: str }, { signature: str }),
  image: imageBlock,
  'tool-call': object({ id: str, name: str, arguments: str }),
  'tool-result': toolResultBlock,
})

/**
 * The source axis is open: recorded logs carry plugin-specific kinds (`goal`, `skill-catalog`,
 * `subagent-settled`, ...). The kinds the core relies on are checked strictly.
 */
const knownSources: Record<string, Check> = {
  plugin: object({}, { plugin: str }),
  model: object({ provider: str, model: str }),
  tool: object({ callId: str }),
}
const sourceKind = object({ kind: str })
const messageSource: Check = (v, p) => {
  const problem = sourceKind(v, p)
  if (problem) return problem
  const kind = (v as { kind: string }).kind
  return Object.hasOwn(knownSources, kind) ? knownSources[kind](v, p) : null
}

function message(role: Check, source: Check = messageSource): Check {
  return object({ id: str, role, content: arrayOf(contentBlock), source })
}

export const userMessage = message(literal('user'))
const assistantMessage = message(literal('assistant'), both(messageSource, object({ kind: literal('model') })))

/** S-12: one tool-result block, a tool source naming the same call. */
const toolResultMessage: Check = both(
  message(literal('user'), both(messageSource, object({ kind: literal('tool') }))),
  (v, p) => {
    const m = v as { content: { type: string; toolCallId?: string }[]; source: { callId: string } }
    if (m.content.length !== 1 || m.content[0].type !== 'tool-result') {
      return `${formatPath(at(p, 'content'))} must hold exactly one tool-result block (S-12)`
    }
    if (m.content[0].toolCallId !== m.source.callId) {
      return `${formatPath(at(p, 'source'))}.callId ${JSON.stringify(m.source.callId)} differs from the block's toolCallId ${JSON.stringify(m.content[0].toolCallId)}`
    }
    return null
  },
)

const tokenUsage = object({}, { inputTokens: nonNegInt, outputTokens: nonNegInt, cacheReadTokens: nonNegInt, cacheWriteTokens: nonNegInt, reasoningTokens: nonNegInt })
const llmFailure = object({ message: str, code: str }, { status: nonNegInt, providerRetryAfterMs: num, requestId: str })

const finishReason: Check = tagged('kind', {
  stop: any, 'tool-calls': any, 'max-tokens': any,
  aborted: object({ failure: llmFailure }),
  error: object({ failure: llmFailure }),
})

const blockType = literal('text', 'reasoning', 'image', 'tool-call', 'tool-result')
const streamChunk: Check = tagged('type', {
  'block-start': object({ index: nonNegInt, blockType }),
  'text-delta': object({ index: nonNegInt, text: str }),
  'reasoning-delta': object({ index: nonNegInt, text: str }),
  'tool-call-delta': object({ index: nonNegInt, id: str, argumentsDelta: str }, { name: str }),
  'block-end': object({ index: nonNegInt, block: contentBlock }),
  usage: object({ usage: tokenUsage }),
  finish: object({ reason: finishReason }),
})

/** S-4 */
const abortReason: Check = tagged('kind', {
  user: any, parent: any, disposed: any, legacy: any,
  hook: object({ reason: str }),
})
const turnEndReason: Check = tagged('kind', {
  completed: any,
  aborted: object({ reason: abortReason }),
  blocked: object({}, { message: str }),
  error: object({ error: llmFailure }),
  'max-tokens': any,
  interrupted: any,
})

const turnStep = { turn: posInt, step: posInt }

/** `tools` may be absent: recorded logs of tool-less sessions omit it. */
const epochHeader = object({
  config: object({ provider: str, model: str }, {
    maxTokens: posInt, temperature: num, stop: arrayOf(str), thinking: bool, reasoningEffort: str,
  }),
  system: str,
}, { tools: any })

const todoItem = object({ content: str, status: literal('pending', 'in_progress', 'completed') })

const emptyObject: Check = (v, p) => {
  if (!isPlainObject(v)) return `${formatPath(p)} must be an object, got ${describe(v)}`
  const keys = Object.keys(v)
  return keys.length === 0 ? null : `${formatPath(p)} must be empty, has ${keys.map((k) => JSON.stringify(k)).join(', ')}`
}

/** Data checks for the core vocabulary (S-1), keyed by event type. */
export const CORE_CHECKS: Record<string, Check> = {
  'turn/start': object({ turn: posInt }),
  'turn/end': object({ turn: posInt, reason: turnEndReason }),
  'step/start': object(turnStep),
  'step/end': object(turnStep),
  'user/message': userMessage,
  'assistant/chunk': object({ ...turnStep, chunk: streamChunk }),
  'assistant/message': object({ ...turnStep, message: assistantMessage }, { usage: tokenUsage, interrupted: literal(true) }),
  'tool/call': object({ ...turnStep, callId: str, name: str, arguments: str }),
  'tool/result': object({ ...turnStep, message: toolResultMessage }, { error: object({ name: str, code: str }), meta: any }),
  'todo/write': object({ todos: arrayOf(todoItem) }),
  'request/header': object({ header: epochHeader, reason: literal('initial', 'resume', 'change') }),
  'request/context': object({ provider: str, model: str }, { contextWindow: posInt }),
  'session/end-seed': emptyObject,
  'agent/inbox/spliced': object(
    { target: literal('next-turn', 'next-step'), start: nonNegInt, inserted: arrayOf(userMessage) },
    { removedCount: nonNegInt, outcome: literal('canceled') },
  ),
}

/** The core validators, one per type for the process, so a registry's entry can be recognised. */
export const CORE_VALIDATORS: Readonly<Record<string, EventDataValidator>> = Object.fromEntries(
  Object.entries(CORE_CHECKS).map(([type, check]) => [type, toValidator(check)]))

/** Adapts a path-aware check to the registry's `EventDataValidator` (paths start at `data`). */
export function toValidator(check: Check): EventDataValidator {
  const root = rootPath('data')
  return (data) => check(data, ANY_PATH) === null ? null : check(data, root)
}

/** Loose validator for plugin-owned types whose owner has not registered a stricter one. */
export const looseObject: EventDataValidator = (data) =>
  isPlainObject(data) ? null : `data must be an object, got ${describe(data)}`
