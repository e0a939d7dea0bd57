/**
 * `WebSearchPlugin`: registers `web_search` on `ctx.tools` (docs/web-search.md). The session's
 * network mode applies through `ctx.sandbox` / `ctx.approval` when they are mounted.
 */
import type { Context } from 'cordis'
import { sandboxingOf } from '../tools/builtin/sandboxing.js'
import { createWebSearchTool, type WebSearchConfig } from './tool.js'

export * from './api.js'
export { checkCustomProvider, customProvider, type CustomProviderConfig } from './custom.js'
export { deepseekProvider, exaProvider, KEY_HOSTS, perplexityProvider, type ShippedProviderConfig } from './providers.js'
export { createWebSearchTool, formatResults, resolveProvider, SHIPPED_PROVIDERS, WEB_SEARCH_DEFAULTS, type WebSearchArgs, type WebSearchConfig } from './tool.js'

export class WebSearchPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context, config: WebSearchConfig = {}) {
    const tool = createWebSearchTool(config, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(tool))
  }
}
