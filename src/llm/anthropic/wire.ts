/**
 * The Anthropic Messages request (`POST /v1/messages`, streamed): the provider-neutral call as the
 * API's body. What it keeps:
 *
 * - roles alternate as the API wants: neighbouring user messages (a tool result is one message
 *   each, S-12) become one user turn, tool results first; an assistant message with nothing to
 *   send is left out;
 * - reasoning goes back only as the API produced it: a signed `thinking` block with its
 *   signature, a `redacted_thinking` block with its data (kept as a reasoning block whose
 *   signature is `redacted_thinking:<data>`); reasoning without a signature (another provider's)
 *   is not sent;
 * - tool calls go back as `tool_use` with the arguments parsed (the raw string stays in the log);
 * - thinking is turned off for a request whose tool-use loop began without it (the API refuses
 *   thinking then);
 * - prompt caching: `cache_control` breakpoints on the system prompt, the last tool and the last
 *   block of the last two user turns (four, the API's limit), so each request reads what the
 *   previous one wrote.
 */
import type { ContentBlock, ImageBlock, LlmCallOptions, Message, ReasoningEffort } from '../types.js'

export const REDACTED_PREFIX = 'redacted_thinking:'

/** Thinking budgets by effort (tokens); `medium` when the call turns thinking on without one. */
export const THINKING_BUDGETS: Readonly<Record<ReasoningEffort, number>> = { low: 4_000, medium: 10_000, high: 32_000, max: 63_000 }
/** The API's smallest thinking budget. */
const MIN_BUDGET = 1024

type CacheControl = { type: 'ephemeral' }
export type WireBlock =
  | { type: 'text'; text: string; cache_control?: CacheControl }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string }; cache_control?: CacheControl }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: (Extract<WireBlock, { type: 'text' | 'image' }>)[] | string; is_error?: boolean; cache_control?: CacheControl }

export interface WireMessage { role: 'user' | 'assistant'; content: WireBlock[] }

export interface MessagesBodyOptions {
  /** `cache_control` breakpoints (default true). */
  readonly promptCaching?: boolean
}

/** Tool ids the API accepts (`^[a-zA-Z0-9_-]+$`); another provider's ids are mapped the same way in calls and results. */
const toolId = (id: string) => id.replace(/[^a-zA-Z0-9_-]/g, '_') || 'call'

function image(block: ImageBlock): Extract<WireBlock, { type: 'text' | 'image' }> {
  if ('attachment' in block) return { type: 'text', text: `[image ${block.attachment.name ?? block.attachment.attachmentId} is not available to this adapter]` }
  return { type: 'image', source: { type: 'base64', media_type: block.mimeType, data: block.data } }
}

function toolInput(raw: string): unknown {
  try {
    const parsed: unknown = JSON.parse(raw === '' ? '{}' : raw)
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed : {}
  } catch {
    // The call failed as a tool call already (its result says so); the API needs an object.
    return {}
  }
}

function userBlocks(content: readonly ContentBlock[]): { results: WireBlock[]; rest: WireBlock[] } {
  const results: WireBlock[] = []
  const rest: WireBlock[] = []
  for (const block of content) {
    if (block.type === 'text' && block.text !== '') rest.push({ type: 'text', text: block.text })
    else if (block.type === 'image') rest.push(image(block))
    else if (block.type === 'tool-result') {
      const parts = block.content.flatMap(part => part.type === 'image' ? [image(part)] : part.text === '' ? [] : [{ type: 'text' as const, text: part.text }])
      results.push({ type: 'tool_result', tool_use_id: toolId(block.toolCallId), content: parts.length === 0 ? '(no output)' : parts, ...block.isError ? { is_error: true } : {} })
    }
  }
  return { results, rest }
}

function assistantBlocks(content: readonly ContentBlock[]): WireBlock[] {
  const out: WireBlock[] = []
  for (const block of content) {
    if (block.type === 'reasoning') {
      if (block.signature === undefined || block.signature === '') continue
      if (block.signature.startsWith(REDACTED_PREFIX)) out.push({ type: 'redacted_thinking', data: block.signature.slice(REDACTED_PREFIX.length) })
      else out.push({ type: 'thinking', thinking: block.text, signature: block.signature })
    } else if (block.type === 'text' && block.text !== '') out.push({ type: 'text', text: block.text })
    else if (block.type === 'tool-call') out.push({ type: 'tool_use', id: toolId(block.id), name: block.name, input: toolInput(block.arguments) })
  }
  return out
}

/** The conversation as alternating turns (the system prompt goes in `system`). */
export function serializeMessages(messages: readonly Message[]): WireMessage[] {
  const wire: WireMessage[] = []
  // Tool results of a turn lead it, whatever user text was written around them.
  let pending: { results: WireBlock[]; rest: WireBlock[] } | undefined
  const flush = () => {
    if (pending === undefined) return
    const content = [...pending.results, ...pending.rest]
    wire.push({ role: 'user', content: content.length > 0 ? content : [{ type: 'text', text: '(empty message)' }] })
    pending = undefined
  }
  for (const message of messages) {
    if (message.role === 'assistant') {
      const content = assistantBlocks(message.content)
      if (content.length === 0) continue
      flush()
      wire.push({ role: 'assistant', content })
      continue
    }
    // System messages inside the conversation are user text: the API has one system prompt.
    const { results, rest } = userBlocks(message.content)
    pending ??= { results: [], rest: [] }
    pending.results.push(...results)
    pending.rest.push(...rest)
  }
  flush()
  return wire
}

/** The thinking budget for a call, or undefined when thinking is off (or there is no room for it). */
export function thinkingBudget(options: LlmCallOptions, maxTokens: number): number | undefined {
  if (options.thinking !== true) return undefined
  const budget = Math.min(THINKING_BUDGETS[options.reasoningEffort ?? 'medium'], maxTokens - 1)
  return budget >= MIN_BUDGET ? budget : undefined
}

/**
 * With thinking on, the API wants the last assistant message of a tool-use loop to start with its
 * thinking block. One that has none (written by another model, or while thinking was off) can
 * only be continued with thinking off, for this request.
 */
function thinkingAllowed(messages: readonly WireMessage[]): boolean {
  const last = messages.findLast(message => message.role === 'assistant')
  if (last === undefined || !last.content.some(block => block.type === 'tool_use')) return true
  const first = last.content[0]!.type
  return first === 'thinking' || first === 'redacted_thinking'
}

const EPHEMERAL: CacheControl = { type: 'ephemeral' }

function markLast(message: WireMessage | undefined): void {
  const last = message?.content.at(-1)
  if (last !== undefined && (last.type === 'text' || last.type === 'image' || last.type === 'tool_result')) last.cache_control = EPHEMERAL
}

export function buildMessagesBody(options: LlmCallOptions, maxTokens: number, settings: MessagesBodyOptions = {}): Record<string, unknown> {
  const caching = settings.promptCaching !== false
  const messages = serializeMessages(options.messages)
  if (caching) {
    const users = messages.filter(message => message.role === 'user')
    markLast(users.at(-1))
    markLast(users.at(-2))
  }
  const tools = (options.tools ?? []).map((tool, index, all) => ({
    name: tool.name, description: tool.description, input_schema: tool.parameters,
    ...caching && index === all.length - 1 ? { cache_control: EPHEMERAL } : {},
  }))
  const budget = thinkingAllowed(messages) ? thinkingBudget(options, maxTokens) : undefined
  return {
    model: options.model,
    max_tokens: maxTokens,
    ...options.system !== undefined && options.system !== '' ? { system: [{ type: 'text', text: options.system, ...caching ? { cache_control: EPHEMERAL } : {} }] } : {},
    messages,
    ...tools.length > 0 ? { tools } : {},
    ...budget !== undefined ? { thinking: { type: 'enabled', budget_tokens: budget } } : {},
    // With thinking on the API takes no temperature but its own.
    ...options.temperature !== undefined && budget === undefined ? { temperature: options.temperature } : {},
    ...options.stop !== undefined && options.stop.length > 0 ? { stop_sequences: [...options.stop] } : {},
    stream: true,
  }
}
