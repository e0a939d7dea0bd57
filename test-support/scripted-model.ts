/**
 * An in-process model for tests and benchmarks: provider `scripted`, a queue of responses, each
 * a chunk list or a function of the request. It registers through `ctx.llm` like any adapter, so
 * requests still pass the `llm/stream` waterfall (and the A-11 invariant).
 */
import type { Context } from 'cordis'
import type { LlmAdapter, LlmCallOptions, ModelInfo, StreamChunk, TokenUsage } from '../src/llm/types.js'

export type ScriptedResponse =
  | readonly StreamChunk[]
  | ((request: LlmCallOptions, signal: AbortSignal | undefined) => AsyncIterable<StreamChunk> | Iterable<StreamChunk> | Promise<readonly StreamChunk[]>)

export const SCRIPTED_PROVIDER = 'scripted'
export const SCRIPTED_MODEL = 'scripted-1'

export const SCRIPTED_MODEL_INFO: ModelInfo = {
  provider: SCRIPTED_PROVIDER,
  model: SCRIPTED_MODEL,
  contextWindow: 128_000,
  defaultMaxTokens: 4096,
  reasoningEfforts: [],
  imageInput: false,
}

export class ScriptedModel implements LlmAdapter {
  readonly provider = SCRIPTED_PROVIDER
  /** Every request the model received, in order. */
  readonly requests: LlmCallOptions[] = []
  /** Each `warm(model)` call: the model asked for and how many requests had come before it. */
  readonly warms: { model: string; requestsBefore: number }[] = []
  private readonly queue: ScriptedResponse[]

  constructor(responses: readonly ScriptedResponse[] = []) {
    this.queue = [...responses]
  }

  push(...responses: ScriptedResponse[]): this {
    this.queue.push(...responses)
    return this
  }

  get remaining(): number {
    return this.queue.length
  }

  warm(model: string): void {
    this.warms.push({ model, requestsBefore: this.requests.length })
  }

  async *stream(options: LlmCallOptions): AsyncIterable<StreamChunk> {
    this.requests.push(options)
    const response = this.queue.shift()
    if (response === undefined) throw new Error(`scripted model: no response left for request #${this.requests.length}`)
    const chunks = typeof response === 'function' ? await response(options, options.signal) : response
    for await (const chunk of chunks as AsyncIterable<StreamChunk>) yield chunk
  }

  /** Registers on `ctx.llm`; the registration is an effect of `ctx`. */
  register(ctx: Context, models: readonly ModelInfo[] = [SCRIPTED_MODEL_INFO]): () => void {
    const llm = ctx.get('llm')
    if (llm === undefined) throw new Error('scripted model: ctx.llm is not loaded')
    return ctx.effect(() => llm.register({ adapter: this, models }), 'scripted model')
  }
}

// ---- chunk builders ----

export function text(value: string, options: { usage?: TokenUsage; index?: number } = {}): StreamChunk[] {
  const index = options.index ?? 0
  return [
    { type: 'block-start', index, blockType: 'text' },
    { type: 'text-delta', index, text: value },
    { type: 'block-end', index, block: { type: 'text', text: value } },
    ...(options.usage !== undefined ? [{ type: 'usage', usage: options.usage } as const] : []),
    { type: 'finish', reason: { kind: 'stop' } },
  ]
}

export interface ScriptedCall { readonly id: string; readonly name: string; readonly arguments?: string | Record<string, unknown> }

/** One assistant message holding these tool calls (finish `tool-calls`). */
export function toolCalls(calls: readonly ScriptedCall[], options: { text?: string } = {}): StreamChunk[] {
  const chunks: StreamChunk[] = []
  let index = 0
  if (options.text !== undefined) {
    chunks.push({ type: 'block-start', index, blockType: 'text' }, { type: 'text-delta', index, text: options.text },
      { type: 'block-end', index, block: { type: 'text', text: options.text } })
    index++
  }
  for (const call of calls) {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {})
    chunks.push({ type: 'block-start', index, blockType: 'tool-call' },
      { type: 'tool-call-delta', index, id: call.id, name: call.name, argumentsDelta: args },
      { type: 'block-end', index, block: { type: 'tool-call', id: call.id, name: call.name, arguments: args } })
    index++
  }
  chunks.push({ type: 'finish', reason: { kind: 'tool-calls' } })
  return chunks
}

export function errorFinish(code: string, message = `scripted ${code}`): StreamChunk[] {
  return [{ type: 'finish', reason: { kind: 'error', failure: { code, message } } }]
}

/** Emits `chunks`, calls `onReady`, then waits until the request is aborted (and throws then). */
export function hang(chunks: readonly StreamChunk[] = [], onReady?: () => void): ScriptedResponse {
  return async function* (_request, signal) {
    for (const chunk of chunks) yield chunk
    onReady?.()
    await new Promise<void>((resolve) => {
      if (signal === undefined) return
      if (signal.aborted) resolve()
      else signal.addEventListener('abort', () => resolve(), { once: true })
    })
    throw Object.assign(new Error('scripted model: aborted'), { code: 'ABORTED' })
  }
}
