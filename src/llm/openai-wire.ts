/**
 * The OpenAI chat-completions wire format, shared by the DeepSeek and the OpenAI-compatible
 * adapters: message serialisation (L-6), the request body, usage mapping (L-8) and the
 * translation of streamed `chat.completion.chunk` objects into StreamChunks (L-7).
 *
 * What differs between providers is a `WireDialect`; nothing here knows a provider by name.
 */
import { LlmError, failure } from './errors.js'
import { TextParts } from './text-parts.js'
import type {
  ContentBlock, FinishReason, ImageBlock, LlmCallOptions, Message, StreamChunk, TokenUsage, ToolCallBlock,
} from './types.js'

export interface WireDialect {
  /** Send `reasoning_content` on assistant messages that have reasoning (DeepSeek needs it back). */
  readonly sendReasoningContent: boolean
  /** Provider-specific request fields (thinking switches, effort), merged into the body. */
  requestFields?(options: LlmCallOptions): Record<string, unknown>
}

export type WireContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }

export interface WireToolCall { id: string; type: 'function'; function: { name: string; arguments: string } }

export type WireMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | WireContentPart[] }
  | { role: 'assistant'; content: string; reasoning_content?: string; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string }

const textOf = (blocks: readonly ContentBlock[], separator: string) =>
  blocks.filter(b => b.type === 'text').map(b => (b as { text: string }).text).join(separator)

// An attachment reference has no bytes to send; the model gets a note instead of a broken URL.
const imageUrl = (image: ImageBlock): WireContentPart => 'attachment' in image
  ? { type: 'text', text: `[image ${image.attachment.name ?? image.attachment.attachmentId} is not available to this adapter]` }
  : { type: 'image_url', image_url: { url: `data:${image.mimeType};base64,${image.data}` } }

/**
 * Text plus images as OpenAI content parts in the order written (neighbouring text blocks joined
 * by a newline); a plain string when there is no image.
 */
function userContent(blocks: readonly ContentBlock[]): string | WireContentPart[] {
  if (!blocks.some(b => b.type === 'image')) return textOf(blocks, '\n')
  const parts: WireContentPart[] = []
  for (const block of blocks) {
    if (block.type === 'image') parts.push(imageUrl(block))
    else if (block.type === 'text' && block.text !== '') {
      const last = parts.at(-1)
      if (last?.type === 'text') last.text += `\n${block.text}`
      else parts.push({ type: 'text', text: block.text })
    }
  }
  return parts
}

/**
 * The call with every attachment reference replaced by the image's bytes (inline), read through
 * `options.attachments`. A reference the store cannot produce fails the request with
 * `INVALID_REQUEST` naming it, rather than sending the model a conversation with a hole.
 * Without a reader the call is returned as it is.
 */
export async function inlineAttachments(options: LlmCallOptions): Promise<LlmCallOptions> {
  const read = options.attachments
  if (read === undefined) return options
  // One read per id, also when several blocks reference it at once.
  const cache = new Map<string, Promise<ImageBlock>>()
  const inline = (block: ImageBlock): Promise<ImageBlock> => {
    if (!('attachment' in block)) return Promise.resolve(block)
    const id = block.attachment.attachmentId
    let found = cache.get(id)
    if (found === undefined) {
      found = read(id).then(stored => {
        if (stored === undefined) throw new LlmError('INVALID_REQUEST', `image ${block.attachment.name ?? id} is not in the session's attachment store`)
        return { type: 'image', data: Buffer.from(stored.data).toString('base64'), mimeType: stored.mediaType }
      })
      cache.set(id, found)
    }
    return found
  }
  const blocks = async (content: readonly ContentBlock[]): Promise<ContentBlock[]> => Promise.all(content.map(async block => {
    if (block.type === 'image') return inline(block)
    if (block.type === 'tool-result' && block.content.some(part => part.type === 'image')) {
      return { ...block, content: await Promise.all(block.content.map(part => part.type === 'image' ? inline(part) : part)) }
    }
    return block
  }))
  if (!options.messages.some(referencesAttachment)) return options
  const messages = await Promise.all(options.messages.map(async message =>
    referencesAttachment(message) ? { ...message, content: await blocks(message.content) } as Message : message))
  return { ...options, messages }
}

const hasAttachment = (content: readonly ContentBlock[]): boolean => content.some(block =>
  (block.type === 'image' && 'attachment' in block) || (block.type === 'tool-result' && hasAttachment(block.content)))

/** Deeply frozen messages known to reference no attachment (every request resends them). */
const withoutAttachments = new WeakSet<Message>()

function referencesAttachment(message: Message): boolean {
  if (withoutAttachments.has(message)) return false
  if (hasAttachment(message.content)) return true
  if (deepFrozen(message)) withoutAttachments.add(message)
  return false
}

/**
 * L-6: system first; a user message holding tool results becomes its text (if any) followed by
 * one `role:'tool'` message per result; assistant content is always a string.
 */
export function serializeMessages(system: string | undefined, messages: readonly Message[], dialect: WireDialect): WireMessage[] {
  const wire: WireMessage[] = []
  if (system !== undefined && system !== '') wire.push({ role: 'system', content: system })
  const cache = dialect.sendReasoningContent ? wireWithReasoning : wireWithoutReasoning
  for (const message of messages) {
    // A deeply frozen message (every message derived from the log is) cannot change: its wire
    // form is built once and reused by every later request of the session, which resends it.
    let out = cache.get(message)
    if (out === undefined) {
      out = wireOf(message, dialect)
      if (deepFrozen(message)) cache.set(message, out)
    }
    for (const part of out) wire.push(part)
  }
  return wire
}

const wireWithReasoning = new WeakMap<Message, readonly WireMessage[]>()
const wireWithoutReasoning = new WeakMap<Message, readonly WireMessage[]>()

function wireOf(message: Message, dialect: WireDialect): readonly WireMessage[] {
  const wire: WireMessage[] = []
  {
    switch (message.role) {
      case 'system':
        wire.push({ role: 'system', content: textOf(message.content, '\n') })
        break
      case 'user': {
        const results = message.content.filter(b => b.type === 'tool-result')
        const rest = message.content.filter(b => b.type !== 'tool-result')
        const content = userContent(rest)
        if (results.length === 0 || content.length > 0) wire.push({ role: 'user', content })
        // Tool messages carry text only; images a tool returned follow as one user message.
        const toolImages: WireContentPart[] = []
        for (const result of results) {
          const text = textOf(result.content, '\n')
          const images = result.content.filter((b): b is ImageBlock => b.type === 'image')
          toolImages.push(...images.map(imageUrl))
          wire.push({ role: 'tool', tool_call_id: result.toolCallId, content: text !== '' ? text : images.length > 0 ? '(image output attached below)' : '(no output)' })
        }
        if (toolImages.length > 0) wire.push({ role: 'user', content: toolImages })
        break
      }
      case 'assistant': {
        const out: Extract<WireMessage, { role: 'assistant' }> = { role: 'assistant', content: textOf(message.content, '') }
        const reasoning = message.content.filter(b => b.type === 'reasoning')
        if (dialect.sendReasoningContent && reasoning.length > 0) out.reasoning_content = reasoning.map(b => b.text).join('')
        const calls = message.content.filter((b): b is ToolCallBlock => b.type === 'tool-call')
        if (calls.length > 0) out.tool_calls = calls.map(c => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }))
        wire.push(out)
        break
      }
    }
  }
  return deepFreezeWire(wire)
}

/** Shared between requests, so frozen: a caller that edits a request body cannot alter a later one. */
function deepFreezeWire(wire: WireMessage[]): readonly WireMessage[] {
  for (const message of wire) {
    if (message.role === 'assistant' && message.tool_calls !== undefined) {
      for (const call of message.tool_calls) Object.freeze(Object.freeze(call).function)
      Object.freeze(message.tool_calls)
    }
    if (message.role === 'user' && typeof message.content !== 'string') {
      for (const part of message.content) {
        Object.freeze(part)
        if (part.type === 'image_url') Object.freeze(part.image_url)
      }
      Object.freeze(message.content)
    }
    Object.freeze(message)
  }
  return Object.freeze(wire)
}

export function buildRequestBody(options: LlmCallOptions, dialect: WireDialect): Record<string, unknown> {
  const tools = options.tools !== undefined && options.tools.length > 0 ? wireTools(options.tools) : undefined
  return bodyWith(options, dialect, serializeMessages(options.system, options.messages, dialect), tools)
}

/** The body with the given (wire) messages and tools; `tools` undefined leaves the key out. */
function bodyWith(options: LlmCallOptions, dialect: WireDialect, messages: unknown, tools: unknown): Record<string, unknown> {
  return {
    model: options.model,
    messages,
    stream: true,
    stream_options: { include_usage: true },
    ...options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {},
    ...options.temperature !== undefined ? { temperature: options.temperature } : {},
    ...options.stop !== undefined && options.stop.length > 0 ? { stop: [...options.stop] } : {},
    ...tools !== undefined ? { tools } : {},
    ...dialect.requestFields?.(options),
  }
}

function wireTools(tools: NonNullable<LlmCallOptions['tools']>): unknown[] {
  return tools.map(t => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }))
}

/**
 * The request body as the bytes sent: always equal to `JSON.stringify(buildRequestBody(options,
 * dialect))` in UTF-8, built from cached parts. A request resends the whole history every step
 * (tens of KB), so each deeply frozen message keeps its wire JSON as bytes (a frozen tree cannot
 * change under its identity: a message derived from the log is one), the frozen tool list keeps
 * its own, and the system message is reused while the prompt is the same string. Only the small
 * envelope (model, limits, dialect fields) is serialised per request. Anything not deeply frozen
 * is serialised afresh every time.
 */
export function encodeRequestBody(options: LlmCallOptions, dialect: WireDialect): Buffer {
  const tools = options.tools !== undefined && options.tools.length > 0 ? options.tools : undefined
  // The envelope as buildRequestBody shapes it (key order included), with slots where the
  // messages and the tools go.
  const envelope = bodyWith(options, dialect, MESSAGES_SLOT, tools === undefined ? undefined : TOOLS_SLOT)
  // A dialect field that replaces `messages` or `tools` is sent as the dialect says.
  if (envelope.messages !== MESSAGES_SLOT || (tools !== undefined && envelope.tools !== TOOLS_SLOT)) return generic(options, dialect)
  const text = JSON.stringify(envelope)
  const at = text.indexOf(MESSAGES_SLOT_JSON)
  const toolsAt = tools === undefined ? -1 : text.indexOf(TOOLS_SLOT_JSON)
  // A slot's text can only appear elsewhere in a value the caller chose (a model name, a stop
  // string): then nothing cached is used.
  if (at < 0 || text.indexOf(MESSAGES_SLOT_JSON, at + 1) >= 0 || (tools !== undefined && (toolsAt < at || text.indexOf(TOOLS_SLOT_JSON, toolsAt + 1) >= 0))) {
    return generic(options, dialect)
  }
  const parts: Buffer[] = [Buffer.from(text.slice(0, at), 'utf8'), OPEN_BRACKET]
  let first = true
  const add = (bytes: Buffer) => {
    if (bytes.length === 0) return
    if (!first) parts.push(COMMA)
    parts.push(bytes)
    first = false
  }
  if (options.system !== undefined && options.system !== '') add(systemBytes(options.system))
  const cache = dialect.sendReasoningContent ? bytesWithReasoning : bytesWithoutReasoning
  for (const message of options.messages) {
    let bytes = cache.get(message)
    if (bytes === undefined) {
      bytes = Buffer.from(wireOf(message, dialect).map(wire => JSON.stringify(wire)).join(','), 'utf8')
      if (deepFrozen(message)) cache.set(message, bytes)
    }
    add(bytes)
  }
  parts.push(CLOSE_BRACKET)
  const afterMessages = at + MESSAGES_SLOT_JSON.length
  if (tools !== undefined) {
    parts.push(Buffer.from(text.slice(afterMessages, toolsAt), 'utf8'), toolsBytes(tools), Buffer.from(text.slice(toolsAt + TOOLS_SLOT_JSON.length), 'utf8'))
  } else {
    parts.push(Buffer.from(text.slice(afterMessages), 'utf8'))
  }
  return Buffer.concat(parts)
}

const MESSAGES_SLOT = '\u0000dsh:messages\u0000'
const TOOLS_SLOT = '\u0000dsh:tools\u0000'
const MESSAGES_SLOT_JSON = JSON.stringify(MESSAGES_SLOT)
const TOOLS_SLOT_JSON = JSON.stringify(TOOLS_SLOT)
const OPEN_BRACKET = Buffer.from('[')
const CLOSE_BRACKET = Buffer.from(']')
const COMMA = Buffer.from(',')

const bytesWithReasoning = new WeakMap<Message, Buffer>()
const bytesWithoutReasoning = new WeakMap<Message, Buffer>()
const toolListBytes = new WeakMap<object, Buffer>()
let lastSystem: { readonly text: string; readonly bytes: Buffer } | undefined

function generic(options: LlmCallOptions, dialect: WireDialect): Buffer {
  return Buffer.from(JSON.stringify(buildRequestBody(options, dialect)), 'utf8')
}

function systemBytes(system: string): Buffer {
  const last = lastSystem
  if (last !== undefined && last.text === system) return last.bytes
  const bytes = Buffer.from(JSON.stringify({ role: 'system', content: system }), 'utf8')
  lastSystem = { text: system, bytes }
  return bytes
}

function toolsBytes(tools: NonNullable<LlmCallOptions['tools']>): Buffer {
  const cached = toolListBytes.get(tools)
  if (cached !== undefined) return cached
  const bytes = Buffer.from(JSON.stringify(wireTools(tools)), 'utf8')
  if (deepFrozen(tools)) toolListBytes.set(tools, bytes)
  return bytes
}

/** Whether nothing in `value` can change any more (checked once per cached object). */
function deepFrozen(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return true
  if (!Object.isFrozen(value)) return false
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!deepFrozen(value[i])) return false
    return true
  }
  for (const key in value) if (!deepFrozen((value as Record<string, unknown>)[key])) return false
  return true
}

export interface WireUsage {
  prompt_tokens?: number
  completion_tokens?: number
  prompt_cache_hit_tokens?: number
  prompt_tokens_details?: { cached_tokens?: number } | null
  completion_tokens_details?: { reasoning_tokens?: number } | null
}

/** L-8: prompt_tokens includes cache hits; TokenUsage keeps them disjoint. */
export function mapUsage(usage: WireUsage): TokenUsage {
  const cacheRead = usage.prompt_tokens_details?.cached_tokens ?? usage.prompt_cache_hit_tokens
  const reasoning = usage.completion_tokens_details?.reasoning_tokens
  return {
    inputTokens: Math.max(0, (usage.prompt_tokens ?? 0) - (cacheRead ?? 0)),
    outputTokens: usage.completion_tokens ?? 0,
    ...cacheRead !== undefined ? { cacheReadTokens: cacheRead } : {},
    ...reasoning !== undefined ? { reasoningTokens: reasoning } : {},
  }
}

interface WireDelta {
  content?: string | null
  reasoning_content?: string | null
  /** vLLM / llama.cpp / Ollama name for the same stream. */
  reasoning?: string | null
  tool_calls?: { index?: number; id?: string | null; function?: { name?: string | null; arguments?: string | null } }[] | null
}

interface WireChunk {
  choices?: { index?: number; delta?: WireDelta | null; finish_reason?: string | null }[]
  usage?: WireUsage | null
  error?: { message?: string; code?: unknown; type?: string }
}

interface TranslatedBlock { index: number; kind: 'text' | 'reasoning' | 'tool-call'; text: TextParts; id: string; name: string }

/**
 * L-7: translates `chat.completion.chunk` payloads. Deltas stream out live; block-end, usage
 * and finish are only produced by `done()` (the `[DONE]` sentinel), because the finish reason
 * and the usage may arrive on the last chunk or on a trailing usage-only chunk.
 */
export class ChatCompletionTranslator {
  private readonly blocks: TranslatedBlock[] = []
  private text?: TranslatedBlock
  private reasoning?: TranslatedBlock
  private readonly tools = new Map<number, TranslatedBlock>()
  private finishReason?: string
  private usage?: WireUsage
  /** Set by the transport so failures after a 200 still name the request. */
  requestId?: string

  /**
   * Parses one SSE `data` payload (not `[DONE]`) and returns the chunks it yields now, appended to
   * `out` when given (the transport passes one array per read, not one per delta).
   */
  data(payload: string, out: StreamChunk[] = []): StreamChunk[] {
    let parsed: WireChunk
    try {
      parsed = JSON.parse(payload) as WireChunk
    } catch {
      throw new LlmError('MALFORMED_RESPONSE', `malformed stream data (not JSON): ${payload.slice(0, 200)}`, this.details())
    }
    if (parsed === null || typeof parsed !== 'object') {
      throw new LlmError('MALFORMED_RESPONSE', `malformed stream data (not an object): ${payload.slice(0, 200)}`, this.details())
    }
    return this.chunk(parsed, out)
  }

  chunk(wire: WireChunk, out: StreamChunk[] = []): StreamChunk[] {
    if (wire.error !== undefined && wire.error !== null) {
      throw new LlmError('SERVER', `provider error in stream: ${wire.error.message ?? JSON.stringify(wire.error)}`, this.details())
    }
    if (wire.usage !== undefined && wire.usage !== null) this.usage = wire.usage
    for (const choice of wire.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue
      const delta = choice.delta
      if (delta !== undefined && delta !== null) {
        const reasoning = delta.reasoning_content ?? delta.reasoning
        if (typeof reasoning === 'string' && reasoning !== '') {
          this.reasoning ??= this.open('reasoning', out)
          this.reasoning.text.append(reasoning)
          out.push({ type: 'reasoning-delta', index: this.reasoning.index, text: reasoning })
        }
        if (typeof delta.content === 'string' && delta.content !== '') {
          this.text ??= this.open('text', out)
          this.text.text.append(delta.content)
          out.push({ type: 'text-delta', index: this.text.index, text: delta.content })
        }
        const calls = delta.tool_calls
        if (Array.isArray(calls)) for (let position = 0; position < calls.length; position++) this.toolCall(calls[position], position, out)
      }
      if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') this.finishReason = choice.finish_reason
    }
    return out
  }

  /** `[DONE]`: closes every block, then usage, then the finish (one burst). */
  done(): StreamChunk[] {
    const out: StreamChunk[] = []
    for (const block of this.blocks) out.push({ type: 'block-end', index: block.index, block: this.build(block) })
    if (this.usage !== undefined) out.push({ type: 'usage', usage: mapUsage(this.usage) })
    out.push({ type: 'finish', reason: this.finish() })
    return out
  }

  private finish(): FinishReason {
    const reason = this.finishReason
    if (reason === 'length') return { kind: 'max-tokens' }
    if (reason === undefined || reason === 'stop' || reason === 'tool_calls' || reason === 'function_call') {
      if (this.blocks.length === 0) {
        return { kind: 'error', failure: failure('EMPTY_RESPONSE', 'model returned a completed response with no content', this.details()) }
      }
      // Reasoning alone answers nothing: without text or a tool call it is an empty reply.
      if (this.text === undefined && this.tools.size === 0) {
        return { kind: 'error', failure: failure('EMPTY_RESPONSE', 'model returned only reasoning, with no answer text and no tool call', this.details()) }
      }
      // Some servers say `stop` after tool calls; the calls decide.
      return this.tools.size > 0 ? { kind: 'tool-calls' } : { kind: 'stop' }
    }
    // DeepSeek ends a reply this way when its inference capacity runs out: a server-side
    // condition, retried like any SERVER failure (the message keeps the wire reason).
    if (reason === 'insufficient_system_resource') {
      return { kind: 'error', failure: failure('SERVER', `model stopped with finish reason "${reason}" (the provider ran out of capacity)`, this.details()) }
    }
    const code = reason.toUpperCase().replace(/[^A-Z0-9]+/g, '_')
    return { kind: 'error', failure: failure(code, `model stopped with finish reason "${reason}"`, this.details()) }
  }

  private toolCall(call: NonNullable<WireDelta['tool_calls']>[number], position: number, out: StreamChunk[]): void {
    const key = call.index ?? position
    const id = call.id ?? ''
    const name = call.function?.name ?? ''
    const args = call.function?.arguments ?? ''
    let block = this.tools.get(key)
    if (block === undefined) {
      // No empty fragment opens a block.
      if (id === '' && name === '' && args === '') return
      block = this.open('tool-call', out)
      this.tools.set(key, block)
    } else if (args === '' && (name === '' || block.name !== '') && (id === '' || block.id !== '')) {
      return
    }
    if (block.id === '' && id !== '') block.id = id
    if (block.name === '' && name !== '') block.name = name
    block.text.append(args)
    // Every delta repeats the name once known, so a run of deltas packs into one chunk row.
    // Literal objects (no spread): this runs once per streamed delta. Key order as logged.
    out.push(block.name !== ''
      ? { type: 'tool-call-delta', index: block.index, id: block.id, name: block.name, argumentsDelta: args }
      : { type: 'tool-call-delta', index: block.index, id: block.id, argumentsDelta: args })
  }

  private open(kind: TranslatedBlock['kind'], out: StreamChunk[]): TranslatedBlock {
    const block: TranslatedBlock = { index: this.blocks.length, kind, text: new TextParts(), id: '', name: '' }
    this.blocks.push(block)
    out.push({ type: 'block-start', index: block.index, blockType: kind })
    return block
  }

  private build(block: TranslatedBlock): ContentBlock {
    switch (block.kind) {
      case 'text': return { type: 'text', text: block.text.toString() }
      case 'reasoning': return { type: 'reasoning', text: block.text.toString() }
      case 'tool-call': return { type: 'tool-call', id: block.id || `call-${block.index}`, name: block.name, arguments: block.text.toString() }
    }
  }

  private details(): { requestId?: string } {
    return this.requestId === undefined ? {} : { requestId: this.requestId }
  }
}
