/**
 * `ctx.llm`: the adapter registry, the model catalogue and the `llm/stream` waterfall (L-4, L-5).
 */
import type {} from 'cordis'
import type { KeyFirstUse, KeyUseAnswer } from './key-use.js'
import type { LlmAdapter, LlmCallOptions, ModelInfo, StreamChunk } from './types.js'

/** Retry policy that comes with a provider's registration (L-10). */
export type RetryMode = 'normal' | 'always'

export interface AdapterRegistration {
  readonly adapter: LlmAdapter
  readonly models: readonly ModelInfo[]
  readonly retry?: RetryMode
}

export interface LlmService {
  /** Registers an adapter and its models; the disposer unregisters both (an effect). */
  register(registration: AdapterRegistration): () => void
  adapter(provider: string): LlmAdapter | undefined
  model(provider: string, model: string): ModelInfo | undefined
  models(): readonly ModelInfo[]
  retryMode(provider: string): RetryMode
  /** Fills defaults (max tokens, thinking) from the catalogue; throws on an unsupported effort. */
  prepareCall(options: LlmCallOptions): LlmCallOptions
  /**
   * Has the provider's adapter open what the next call will use ahead of it (`LlmAdapter.warm`:
   * a connection, no request). An unknown provider, or an adapter without `warm`, is a no-op;
   * never throws.
   */
  warm(provider: string, model: string): void
  /**
   * One provider attempt through the `llm/stream` waterfall. Adapter throws become a terminal
   * `finish` chunk (L-4); the stream always ends with exactly one `finish`.
   */
  stream(options: LlmCallOptions): AsyncIterable<StreamChunk>
}

declare module 'cordis' {
  interface Context {
    llm: LlmService
  }
  interface Events {
    /**
     * @mode waterfall. Around every adapter call. The innermost function calls the adapter.
     * Listeners may observe, replace or veto (throw) a call; a throw here propagates.
     */
    'llm/stream'(options: LlmCallOptions, next: () => AsyncIterable<StreamChunk>): AsyncIterable<StreamChunk>
    /**
     * @mode emit (not contained). The request as it leaves for the adapter: dispatched in the
     * innermost step of `stream()`, after any request hold and after every `llm/stream` listener
     * had its turn, with the very options object the adapter is called with. Listeners check it;
     * a throw vetoes the attempt (the adapter is not called) and reaches the stream's consumer.
     */
    'llm/send'(options: LlmCallOptions): void
    /**
     * @mode serial. A stored key is about to go to an endpoint it has not been sent to
     * (./key-use.ts): the first listener that answers `send` or `refuse` decides; one that asks a
     * person gives `refuse` when `signal` aborts. No answer: the host says it in one line and sends.
     */
    'llm/key-first-use'(use: KeyFirstUse, signal?: AbortSignal): KeyUseAnswer | undefined | Promise<KeyUseAnswer | undefined>
  }
}
