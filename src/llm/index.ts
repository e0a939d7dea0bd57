/**
 * The model layer: `ctx.llm` (LlmServicePlugin), the BlockAssembler and the error type.
 * Adapters live in ./deepseek and ./openai, the retry policy in ./retry.
 */
export { LlmServicePlugin } from './service.js'
export { BlockAssembler } from './assembler.js'
export { LlmError, failure, toFailure } from './errors.js'
export type { AdapterRegistration, LlmService, RetryMode } from './api.js'
export type * from './types.js'
