/**
 * The streamed Anthropic Messages response -> StreamChunks (an `SseEventTranslator` for the shared
 * transport, ../openai-stream.ts). Event types: `message_start` (usage so far), `content_block_start`
 * / `_delta` / `_stop` (text, thinking with its `signature_delta`, `redacted_thinking`, `tool_use`
 * with `input_json_delta`), `message_delta` (stop reason, output usage), `message_stop` (the end),
 * `ping`, and `error` (a failure after the 200: `overloaded_error` is a retryable SERVER failure).
 *
 * As for chat completions (L-7), deltas stream out live and nothing is finalised before the end:
 * block-end for every block, usage and the finish come together at `message_stop`. Block indices
 * follow first appearance; empty deltas open no block. Usage is disjoint (L-2): `input_tokens`
 * already excludes what was read from or written to the cache.
 */
import { LlmError, failure } from '../errors.js'
import type { SseEventTranslator } from '../openai-stream.js'
import { TextParts } from '../text-parts.js'
import type { ContentBlock, FinishReason, StreamChunk, TokenUsage } from '../types.js'
import { REDACTED_PREFIX } from './wire.js'

interface WireUsage {
  input_tokens?: number | null
  output_tokens?: number | null
  cache_creation_input_tokens?: number | null
  cache_read_input_tokens?: number | null
}

interface Block { index: number; kind: 'text' | 'reasoning' | 'tool-call'; text: TextParts; id: string; name: string; signature: string; redacted?: string; opened: boolean }

/** An `error` event's (or an error body's) type -> failure code and the status it stands for. */
export function streamErrorCode(type: string | undefined): { code: string; status?: number } {
  switch (type) {
    case 'overloaded_error': return { code: 'SERVER', status: 529 }
    case 'api_error': return { code: 'SERVER', status: 500 }
    case 'rate_limit_error': return { code: 'RATE_LIMIT', status: 429 }
    case 'authentication_error': return { code: 'AUTH', status: 401 }
    case 'permission_error': return { code: 'AUTH', status: 403 }
    case 'billing_error': return { code: 'QUOTA', status: 402 }
    case 'request_too_large': return { code: 'INVALID_REQUEST', status: 413 }
    case 'not_found_error': return { code: 'HTTP_404', status: 404 }
    case 'invalid_request_error': return { code: 'INVALID_REQUEST', status: 400 }
    default: return { code: 'SERVER' }
  }
}

const count = (value: number | null | undefined) => typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0

export function mapUsage(usage: WireUsage): TokenUsage {
  const cacheRead = count(usage.cache_read_input_tokens)
  const cacheWrite = count(usage.cache_creation_input_tokens)
  return {
    inputTokens: count(usage.input_tokens),
    outputTokens: count(usage.output_tokens),
    ...cacheRead > 0 ? { cacheReadTokens: cacheRead } : {},
    ...cacheWrite > 0 ? { cacheWriteTokens: cacheWrite } : {},
  }
}

export class MessagesTranslator implements SseEventTranslator {
  readonly end = 'message_stop'
  requestId?: string
  private readonly blocks: Block[] = []
  /** Wire index -> block. */
  private readonly byWire = new Map<number, Block>()
  private usage: WireUsage = {}
  private stopReason?: string

  event(data: string, name: string | undefined, out: StreamChunk[]): boolean {
    let parsed: any
    try {
      parsed = JSON.parse(data)
    } catch {
      throw new LlmError('MALFORMED_RESPONSE', `malformed stream data (not JSON): ${data.slice(0, 200)}`, this.details())
    }
    if (parsed === null || typeof parsed !== 'object') throw new LlmError('MALFORMED_RESPONSE', `malformed stream data (not an object): ${data.slice(0, 200)}`, this.details())
    const type: unknown = parsed.type ?? name
    switch (type) {
      case 'message_start':
        this.usage = { ...parsed.message?.usage }
        return false
      case 'content_block_start':
        this.start(parsed.index, parsed.content_block ?? {}, out)
        return false
      case 'content_block_delta':
        this.delta(parsed.index, parsed.delta ?? {}, out)
        return false
      case 'message_delta':
        if (typeof parsed.delta?.stop_reason === 'string') this.stopReason = parsed.delta.stop_reason
        // Counts here are cumulative: they replace those of message_start.
        for (const [key, value] of Object.entries(parsed.usage ?? {})) if (typeof value === 'number') (this.usage as Record<string, number>)[key] = value
        return false
      case 'message_stop':
        this.done(out)
        return true
      case 'error': {
        const error = parsed.error ?? {}
        const { code, status } = streamErrorCode(error.type)
        throw new LlmError(code, `provider error in stream: ${typeof error.message === 'string' ? error.message : JSON.stringify(error)}${error.type ? ` (${error.type})` : ''}`, { ...status !== undefined ? { status } : {}, ...this.details() })
      }
      default:
        // `ping` and event types added later carry nothing we use.
        return false
    }
  }

  private start(wireIndex: number, block: { type?: string; id?: string; name?: string; text?: string; thinking?: string; data?: string }, out: StreamChunk[]): void {
    const kind = block.type === 'tool_use' ? 'tool-call' : block.type === 'thinking' || block.type === 'redacted_thinking' ? 'reasoning' : block.type === 'text' ? 'text' : undefined
    if (kind === undefined) return
    const entry: Block = { index: -1, kind, text: new TextParts(), id: block.id ?? '', name: block.name ?? '', signature: '', opened: false }
    this.byWire.set(wireIndex, entry)
    if (block.type === 'redacted_thinking') {
      entry.redacted = block.data ?? ''
      this.open(entry, out)
    } else if (kind === 'tool-call') {
      this.open(entry, out)
      out.push({ type: 'tool-call-delta', index: entry.index, id: entry.id, name: entry.name, argumentsDelta: '' })
    } else {
      const initial = kind === 'text' ? block.text : block.thinking
      if (initial !== undefined && initial !== '') this.append(entry, initial, out)
    }
  }

  private delta(wireIndex: number, delta: { type?: string; text?: string; thinking?: string; signature?: string; partial_json?: string }, out: StreamChunk[]): void {
    const entry = this.byWire.get(wireIndex)
    if (entry === undefined) return
    switch (delta.type) {
      case 'text_delta':
      case 'thinking_delta': {
        const text = delta.type === 'text_delta' ? delta.text : delta.thinking
        if (typeof text === 'string' && text !== '') this.append(entry, text, out)
        return
      }
      case 'signature_delta':
        if (typeof delta.signature === 'string') {
          entry.signature += delta.signature
          // A thinking block may end with only a signature (its text withheld): it still goes back.
          if (!entry.opened) this.open(entry, out)
        }
        return
      case 'input_json_delta':
        if (typeof delta.partial_json === 'string' && delta.partial_json !== '') {
          entry.text.append(delta.partial_json)
          // Every delta names the call, so a run of deltas packs into one chunk row (R-2).
          out.push({ type: 'tool-call-delta', index: entry.index, id: entry.id, name: entry.name, argumentsDelta: delta.partial_json })
        }
        return
    }
  }

  private append(entry: Block, text: string, out: StreamChunk[]): void {
    if (!entry.opened) this.open(entry, out)
    entry.text.append(text)
    out.push(entry.kind === 'text' ? { type: 'text-delta', index: entry.index, text } : { type: 'reasoning-delta', index: entry.index, text })
  }

  private open(entry: Block, out: StreamChunk[]): void {
    entry.opened = true
    entry.index = this.blocks.length
    this.blocks.push(entry)
    out.push({ type: 'block-start', index: entry.index, blockType: entry.kind })
  }

  private done(out: StreamChunk[]): void {
    for (const block of this.blocks) out.push({ type: 'block-end', index: block.index, block: this.build(block) })
    out.push({ type: 'usage', usage: mapUsage(this.usage) })
    out.push({ type: 'finish', reason: this.finish() })
  }

  private build(block: Block): ContentBlock {
    switch (block.kind) {
      case 'text': return { type: 'text', text: block.text.toString() }
      case 'reasoning':
        if (block.redacted !== undefined) return { type: 'reasoning', text: '', signature: `${REDACTED_PREFIX}${block.redacted}` }
        return block.signature === '' ? { type: 'reasoning', text: block.text.toString() } : { type: 'reasoning', text: block.text.toString(), signature: block.signature }
      case 'tool-call': {
        const args = block.text.toString()
        return { type: 'tool-call', id: block.id || `call-${block.index}`, name: block.name, arguments: args === '' ? '{}' : args }
      }
    }
  }

  private finish(): FinishReason {
    const reason = this.stopReason
    const tools = this.blocks.some(block => block.kind === 'tool-call')
    if (reason === 'max_tokens') return { kind: 'max-tokens' }
    if (reason === 'model_context_window_exceeded') {
      return { kind: 'error', failure: failure('CONTEXT_WINDOW_EXCEEDED', 'model stopped: the conversation reached the model\'s context window', this.details()) }
    }
    if (reason === undefined || reason === 'end_turn' || reason === 'tool_use' || reason === 'stop_sequence' || reason === 'pause_turn') {
      if (this.blocks.length === 0) return { kind: 'error', failure: failure('EMPTY_RESPONSE', 'model returned a completed response with no content', this.details()) }
      if (!tools && !this.blocks.some(block => block.kind === 'text')) {
        return { kind: 'error', failure: failure('EMPTY_RESPONSE', 'model returned only reasoning, with no answer text and no tool call', this.details()) }
      }
      return tools ? { kind: 'tool-calls' } : { kind: 'stop' }
    }
    const code = reason.toUpperCase().replace(/[^A-Z0-9]+/g, '_')
    return { kind: 'error', failure: failure(code, `model stopped with stop reason "${reason}"`, this.details()) }
  }

  private details(): { requestId?: string } {
    return this.requestId === undefined ? {} : { requestId: this.requestId }
  }
}
