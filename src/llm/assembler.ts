/**
 * BlockAssembler (L-3): folds a StreamChunk sequence into the assistant's content blocks.
 *
 * It is deliberately forgiving towards adapters: a delta for an unknown index opens the block
 * (delta-only protocols), deltas for a closed index are dropped (a misbehaving adapter can
 * neither grow memory nor corrupt a finished block), and the first block-end for an index wins.
 */
import { randomUUID } from 'node:crypto'
import type {
  AssistantMessage, ContentBlock, ContentBlockType, FinishReason, StreamChunk, TokenUsage,
} from './types.js'
import { TextParts } from './text-parts.js'

interface OpenBlock {
  readonly type: ContentBlockType
  readonly text: TextParts
  id: string
  name: string
  readonly args: TextParts
  /** The complete block once closed (from block-end, or built at finish). */
  final?: ContentBlock
}

const STOP: FinishReason = Object.freeze({ kind: 'stop' })

export class BlockAssembler {
  private readonly blocks = new Map<number, OpenBlock>()
  private finish?: FinishReason
  private lastUsage?: TokenUsage

  push(chunk: StreamChunk): void {
    if (this.finish !== undefined) return
    switch (chunk.type) {
      case 'block-start':
        this.ensure(chunk.index, chunk.blockType)
        return
      case 'text-delta': {
        const block = this.ensure(chunk.index, 'text')
        if (block !== undefined && block.type === 'text') block.text.append(chunk.text)
        return
      }
      case 'reasoning-delta': {
        const block = this.ensure(chunk.index, 'reasoning')
        if (block !== undefined && block.type === 'reasoning') block.text.append(chunk.text)
        return
      }
      case 'tool-call-delta': {
        const block = this.ensure(chunk.index, 'tool-call')
        if (block === undefined || block.type !== 'tool-call') return
        if (block.id === '' && chunk.id !== '') block.id = chunk.id
        if (block.name === '' && chunk.name !== undefined) block.name = chunk.name
        block.args.append(chunk.argumentsDelta)
        return
      }
      case 'block-end': {
        const block = this.blocks.get(chunk.index)
        if (block?.final !== undefined) return
        const open = block ?? this.open(chunk.index, chunk.block.type)
        open.final = withCallId(chunk.block, chunk.index)
        return
      }
      case 'usage':
        this.lastUsage = chunk.usage
        return
      case 'finish':
        this.finish = chunk.reason
        return
    }
  }

  pushAll(chunks: Iterable<StreamChunk>): this {
    for (const chunk of chunks) this.push(chunk)
    return this
  }

  /** The finish reason; a stream that ended without a finish chunk counts as `stop`. */
  get finishReason(): FinishReason {
    return this.finish ?? STOP
  }

  get finished(): boolean {
    return this.finish !== undefined
  }

  get usage(): TokenUsage | undefined {
    return this.lastUsage
  }

  /** The assembled blocks in index order; tool calls are dropped after a max-tokens finish. */
  content(): ContentBlock[] {
    const truncated = this.finishReason.kind === 'max-tokens'
    const content: ContentBlock[] = []
    for (const [index, block] of this.ordered()) {
      const built = this.build(index, block)
      if (built !== undefined && !(truncated && built.type === 'tool-call')) content.push(built)
    }
    return content
  }

  /**
   * What a cancelled stream leaves behind: text and reasoning only, never a (possibly
   * half-built) tool call, and no whitespace-only blocks.
   */
  interruptedPrefix(): ContentBlock[] {
    const prefix: ContentBlock[] = []
    for (const [index, block] of this.ordered()) {
      const built = this.build(index, block)
      if (built !== undefined && (built.type === 'text' || built.type === 'reasoning') && built.text.trim() !== '') prefix.push(built)
    }
    return prefix
  }

  /** A frozen assistant message from the assembled content (or the interrupted prefix). */
  message(source: { provider: string; model: string }, options: { id?: string; interrupted?: boolean } = {}): AssistantMessage {
    const content = options.interrupted === true ? this.interruptedPrefix() : this.content()
    return deepFreeze({
      id: options.id ?? randomUUID(),
      role: 'assistant',
      content,
      source: { kind: 'model', provider: source.provider, model: source.model },
    }) as AssistantMessage
  }

  private ordered(): [number, OpenBlock][] {
    return [...this.blocks.entries()].sort((a, b) => a[0] - b[0])
  }

  /** Opens a block for an unknown index; returns undefined when the index is already closed. */
  private ensure(index: number, type: ContentBlockType): OpenBlock | undefined {
    const block = this.blocks.get(index)
    if (block === undefined) return this.open(index, type)
    return block.final === undefined ? block : undefined
  }

  private open(index: number, type: ContentBlockType): OpenBlock {
    const block: OpenBlock = { type, text: new TextParts(), id: '', name: '', args: new TextParts() }
    this.blocks.set(index, block)
    return block
  }

  private build(index: number, block: OpenBlock): ContentBlock | undefined {
    if (block.final !== undefined) return block.final
    switch (block.type) {
      case 'text': return { type: 'text', text: block.text.toString() }
      case 'reasoning': return { type: 'reasoning', text: block.text.toString() }
      case 'tool-call': return { type: 'tool-call', id: block.id || `call-${index}`, name: block.name, arguments: block.args.toString() }
      // Image and tool-result blocks carry no deltas: without a block-end there is nothing to keep.
      default: return undefined
    }
  }
}

function withCallId(block: ContentBlock, index: number): ContentBlock {
  if (block.type !== 'tool-call' || block.id !== '') return block
  return { ...block, id: `call-${index}` }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}
