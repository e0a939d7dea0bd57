/**
 * `ctx.llm` (L-4, L-5): the adapter registry, the model catalogue and the `llm/stream`
 * waterfall around every provider attempt.
 */
import { Context, Service } from 'cordis'
import { eventsOf, type EventDispatch } from '../kernel/index.js'
import type { AdapterRegistration, LlmService, RetryMode } from './api.js'
import { LlmError, failure, toFailure } from './errors.js'
import { honourRequestHolds, requestHold } from './request-hold.js'
import type { LlmAdapter, LlmCallOptions, LlmFailure, ModelInfo, StreamChunk } from './types.js'

const key = (provider: string, model: string) => `${provider}\u0000${model}`

export class LlmServicePlugin extends Service implements LlmService {
  private readonly registrations = new Map<string, AdapterRegistration>()
  private readonly catalogue = new Map<string, ModelInfo>()
  /** Resolved once: `llm/stream` is dispatched for every model request (docs/kernel.md, "Hot paths"). */
  private readonly events: EventDispatch

  constructor(ctx: Context) {
    super(ctx, 'llm')
    this.events = eventsOf(ctx)
  }

  register(registration: AdapterRegistration): () => void {
    const provider = registration.adapter.provider
    if (this.registrations.has(provider)) {
      throw new LlmError('DUPLICATE_ADAPTER', `llm: an adapter for provider "${provider}" is already registered`)
    }
    const seen = new Set<string>()
    for (const model of registration.models) {
      if (model.provider !== provider) {
        throw new LlmError('INVALID_MODEL', `llm: model "${model.model}" names provider "${model.provider}" but is registered with adapter "${provider}"`)
      }
      if (seen.has(model.model)) throw new LlmError('INVALID_MODEL', `llm: model "${model.model}" is listed twice for provider "${provider}"`)
      seen.add(model.model)
    }
    this.registrations.set(provider, registration)
    for (const model of registration.models) this.catalogue.set(key(provider, model.model), Object.freeze({ ...model }))
    let disposed = false
    return () => {
      if (disposed || this.registrations.get(provider) !== registration) return
      disposed = true
      this.registrations.delete(provider)
      for (const model of registration.models) this.catalogue.delete(key(provider, model.model))
    }
  }

  adapter(provider: string): LlmAdapter | undefined {
    return this.registrations.get(provider)?.adapter
  }

  model(provider: string, model: string): ModelInfo | undefined {
    return this.catalogue.get(key(provider, model))
  }

  models(): readonly ModelInfo[] {
    return [...this.catalogue.values()]
  }

  retryMode(provider: string): RetryMode {
    return this.registrations.get(provider)?.retry ?? 'normal'
  }

  prepareCall(options: LlmCallOptions): LlmCallOptions {
    const registration = this.registrations.get(options.provider)
    // An unknown provider is reported by stream() as an error finish (UNKNOWN_PROVIDER).
    if (registration === undefined) return options
    const info = this.model(options.provider, options.model)
    if (info === undefined) {
      const known = registration.models.map(m => m.model).join(', ') || '(none)'
      throw new LlmError('UNKNOWN_MODEL', `llm: provider "${options.provider}" has no model "${options.model}"; known models: ${known}`)
    }
    if (options.maxTokens !== undefined && !(Number.isSafeInteger(options.maxTokens) && options.maxTokens > 0)) {
      throw new LlmError('INVALID_REQUEST', `llm: maxTokens must be a positive integer, got ${String(options.maxTokens)}`)
    }
    if (options.reasoningEffort !== undefined && !info.reasoningEfforts.includes(options.reasoningEffort)) {
      const supported = info.reasoningEfforts.length === 0 ? 'it supports no reasoning effort setting' : `supported: ${info.reasoningEfforts.join(', ')}`
      throw new LlmError('UNSUPPORTED_REASONING_EFFORT', `llm: model ${options.provider}/${options.model} does not support reasoning effort "${options.reasoningEffort}"; ${supported}`)
    }
    const thinking = options.thinking ?? info.thinking
    return {
      ...options,
      maxTokens: options.maxTokens ?? info.defaultMaxTokens,
      ...thinking !== undefined ? { thinking } : {},
    }
  }

  warm(provider: string, model: string): void {
    try {
      this.adapter(provider)?.warm?.(model)
    } catch {
      // Best effort: the call itself will open what it needs and report what fails.
    }
  }

  stream(options: LlmCallOptions): AsyncIterable<StreamChunk> {
    // attempt() never lets the request leave before a hold set on these options (request-hold.ts).
    honourRequestHolds(options)
    const inner = () => this.attempt(options)
    // A throw from a listener (sync or inside its iterable) reaches the consumer unchanged.
    return {
      [Symbol.asyncIterator]: () => {
        const iterable = this.events.waterfall('llm/stream', options, inner) as AsyncIterable<StreamChunk>
        return iterable[Symbol.asyncIterator]()
      },
    }
  }

  /** The innermost step: one adapter attempt that never throws and ends with exactly one finish. */
  private async *attempt(options: LlmCallOptions): AsyncGenerator<StreamChunk> {
    const adapter = this.adapter(options.provider)
    if (adapter === undefined) {
      const known = [...this.registrations.keys()].join(', ') || '(none)'
      yield errorFinish(failure('UNKNOWN_PROVIDER', `llm: no adapter registered for provider "${options.provider}"; registered: ${known}`))
      return
    }
    const hold = adapter.awaitsRequestHold === true ? undefined : requestHold(options)
    if (hold !== undefined) {
      try {
        await hold
      } catch (error) {
        yield* this.failed(error, options)
        return
      }
    }
    // What is sent is checked here, not where the caller built it: a veto throws to the consumer.
    this.events.emit('llm/send', options)
    try {
      for await (const chunk of adapter.stream(options)) {
        yield chunk
        // Anything an adapter emits after its finish is ignored; leaving the loop closes it.
        if (chunk.type === 'finish') return
      }
    } catch (error) {
      yield* this.failed(error, options)
      return
    }
    yield options.signal?.aborted === true
      ? { type: 'finish', reason: { kind: 'aborted', failure: failure('ABORTED', 'llm: the request was cancelled') } }
      : { type: 'finish', reason: { kind: 'stop' } }
  }

  /** L-4: an adapter throw (or a rejected hold) as the terminal finish chunk. */
  private *failed(error: unknown, options: LlmCallOptions): Generator<StreamChunk> {
    const failed = toFailure(error, 'ADAPTER_ERROR')
    if (options.signal?.aborted === true || failed.code === 'ABORTED') {
      yield { type: 'finish', reason: { kind: 'aborted', failure: failed.code === 'ABORTED' ? failed : failure('ABORTED', failed.message) } }
    } else {
      yield errorFinish(failed)
    }
  }
}

function errorFinish(failed: LlmFailure): StreamChunk {
  return { type: 'finish', reason: { kind: 'error', failure: failed } }
}
