/**
 * The catalogue row of `web_search` (docs/web-search.md): without a chosen provider
 * (settings.yaml `webSearch.provider`, or DSH_WEB_SEARCH_PROVIDER) it loads nothing and offers
 * no tool, so a run that does not search pays nothing for it; otherwise it starts
 * `WebSearchPlugin` (`./index.ts`) with the row's config.
 */
import type { Context } from 'cordis'
import type { WebSearchConfig } from './tool.js'

export interface WebSearchRowConfig extends WebSearchConfig {
  /** Forced on (a patch) even without a provider: the default provider, DeepSeek, is used. */
  readonly enabled?: boolean
}

export const WebSearchRow = {
  name: 'web-search',
  inject: ['tools'],
  async apply(ctx: Context, config: WebSearchRowConfig = {}): Promise<void> {
    const { enabled, ...rest } = config
    if (enabled === false || (enabled !== true && rest.provider === undefined)) return
    const { WebSearchPlugin } = await import('./index.js')
    await ctx.plugin(WebSearchPlugin, rest).await()
  },
}
