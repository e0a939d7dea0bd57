/**
 * The model layer: `ctx.llm` (LlmServicePlugin), the BlockAssembler and the error type.
 * Also re-exports the adapters (./deepseek, ./openai). The retry policy joins the model and the
 * agent loop, so it lives above both, in src/retry.
 */
export { LlmServicePlugin } from './service.js'
export { BlockAssembler } from './assembler.js'
export { LlmError, failure, toFailure } from './errors.js'
export type { AdapterRegistration, LlmService, RetryMode } from './api.js'
export type * from './types.js'
export { DeepSeekPlugin, DeepSeekAdapter, DEEPSEEK_PROVIDER, DEEPSEEK_DEFAULT_MODEL, DEEPSEEK_MODELS, type DeepSeekConfig, type CredentialLookup } from './deepseek/index.js'
export { OpenAiCompatiblePlugin, OpenAiCompatibleAdapter, type OpenAiCompatibleConfig, type OpenAiModelConfig } from './openai/index.js'
