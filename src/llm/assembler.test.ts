import { describe, expect, it } from 'vitest'
import { BlockAssembler } from './assembler.js'
import type { StreamChunk } from './types.js'

const source = { provider: 'p', model: 'm' }

describe('BlockAssembler', () => {
  it('L-3: builds blocks from block-start, deltas and block-end in index order', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'block-start', index: 1, blockType: 'text' },
      { type: 'block-start', index: 0, blockType: 'reasoning' },
      { type: 'reasoning-delta', index: 0, text: 'think' },
      { type: 'text-delta', index: 1, text: 'hel' },
      { type: 'text-delta', index: 1, text: 'lo' },
      { type: 'block-end', index: 0, block: { type: 'reasoning', text: 'think' } },
      { type: 'block-end', index: 1, block: { type: 'text', text: 'hello' } },
      { type: 'finish', reason: { kind: 'stop' } },
    ])
    expect(a.content()).toEqual([{ type: 'reasoning', text: 'think' }, { type: 'text', text: 'hello' }])
  })

  it('L-3: tolerates a delta-only stream (a delta for an unknown index opens the block)', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'text-delta', index: 0, text: 'a' },
      { type: 'tool-call-delta', index: 1, id: 'c1', name: 'read', argumentsDelta: '{"p":' },
      { type: 'tool-call-delta', index: 1, id: 'c1', argumentsDelta: '1}' },
      { type: 'text-delta', index: 0, text: 'b' },
      { type: 'finish', reason: { kind: 'tool-calls' } },
    ])
    expect(a.content()).toEqual([
      { type: 'text', text: 'ab' },
      { type: 'tool-call', id: 'c1', name: 'read', arguments: '{"p":1}' },
    ])
  })

  it('L-3: ignores deltas for a closed index', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'text-delta', index: 0, text: 'done' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'done' } },
      { type: 'text-delta', index: 0, text: ' and more' },
    ])
    expect(a.content()).toEqual([{ type: 'text', text: 'done' }])
  })

  it('L-3: the first block-end for an index wins', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'block-end', index: 0, block: { type: 'text', text: 'first' } },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'second' } },
    ])
    expect(a.content()).toEqual([{ type: 'text', text: 'first' }])
  })

  it('L-3: a missing tool id becomes call-<index> (deltas and block-end alike)', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'tool-call-delta', index: 2, id: '', name: 'ls', argumentsDelta: '{}' },
      { type: 'block-end', index: 3, block: { type: 'tool-call', id: '', name: 'cat', arguments: '{}' } },
    ])
    expect(a.content()).toEqual([
      { type: 'tool-call', id: 'call-2', name: 'ls', arguments: '{}' },
      { type: 'tool-call', id: 'call-3', name: 'cat', arguments: '{}' },
    ])
  })

  it('L-3: no finish chunk means stop', () => {
    const a = new BlockAssembler().pushAll([{ type: 'text-delta', index: 0, text: 'x' }])
    expect(a.finished).toBe(false)
    expect(a.finishReason).toEqual({ kind: 'stop' })
  })

  it('L-3 / A-7: on max-tokens the tool-call blocks are dropped', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'text-delta', index: 0, text: 'partial' },
      { type: 'tool-call-delta', index: 1, id: 'c', name: 'write', argumentsDelta: '{"path":"a' },
      { type: 'finish', reason: { kind: 'max-tokens' } },
    ])
    expect(a.content()).toEqual([{ type: 'text', text: 'partial' }])
  })

  it('L-3 / A-9: the interrupted prefix keeps non-blank text and reasoning, never tool calls', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'reasoning-delta', index: 0, text: 'plan' },
      { type: 'text-delta', index: 1, text: '  \n ' },
      { type: 'tool-call-delta', index: 2, id: 'c', name: 'bash', argumentsDelta: '{"cmd":"l' },
      { type: 'text-delta', index: 3, text: 'partial' },
    ])
    expect(a.interruptedPrefix()).toEqual([{ type: 'reasoning', text: 'plan' }, { type: 'text', text: 'partial' }])
    expect(a.message(source, { interrupted: true }).content).toEqual(a.interruptedPrefix())
  })

  it('L-3: the built message is frozen, carries the model source and the usage is kept', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'text-delta', index: 0, text: 'hi' },
      { type: 'usage', usage: { inputTokens: 3, outputTokens: 1 } },
      { type: 'finish', reason: { kind: 'stop' } },
    ])
    const message = a.message(source, { id: 'm1' })
    expect(message).toEqual({ id: 'm1', role: 'assistant', content: [{ type: 'text', text: 'hi' }], source: { kind: 'model', provider: 'p', model: 'm' } })
    expect(Object.isFrozen(message)).toBe(true)
    expect(Object.isFrozen(message.content)).toBe(true)
    expect(Object.isFrozen(message.content[0])).toBe(true)
    expect(a.usage).toEqual({ inputTokens: 3, outputTokens: 1 })
  })

  it('L-3: chunks after the finish are ignored', () => {
    const chunks: StreamChunk[] = [
      { type: 'text-delta', index: 0, text: 'a' },
      { type: 'finish', reason: { kind: 'stop' } },
      { type: 'text-delta', index: 0, text: 'b' },
      { type: 'finish', reason: { kind: 'max-tokens' } },
    ]
    const a = new BlockAssembler().pushAll(chunks)
    expect(a.content()).toEqual([{ type: 'text', text: 'a' }])
    expect(a.finishReason).toEqual({ kind: 'stop' })
  })

  it('L-3: a delta of another kind for an open index does not corrupt the block', () => {
    const a = new BlockAssembler().pushAll([
      { type: 'text-delta', index: 0, text: 'a' },
      { type: 'reasoning-delta', index: 0, text: 'zzz' },
    ])
    expect(a.content()).toEqual([{ type: 'text', text: 'a' }])
  })
})
