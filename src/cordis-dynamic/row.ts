/**
 * The catalogue row of self-extension (`cordis_*`, docs/extensions.md). Off by default, as in
 * the original's shipped profiles: then it loads nothing, so a run that does not use it pays
 * nothing. `enabled: true` (settings `tools.cordis`, DSH_CORDIS_TOOLS=1) starts
 * `CordisDynamicPlugin` (`./index.ts`).
 */
import type { Context } from 'cordis'
import type { CordisDynamicConfig } from './index.js'

export interface CordisRowConfig extends CordisDynamicConfig {
  readonly enabled?: boolean
}

export const CordisDynamicRow = {
  name: 'cordis-dynamic',
  inject: ['tools'],
  async apply(ctx: Context, config: CordisRowConfig = {}): Promise<void> {
    if (config.enabled !== true) return
    const { enabled: _enabled, ...rest } = config
    const { CordisDynamicPlugin } = await import('./index.js')
    await ctx.plugin(CordisDynamicPlugin, rest).await()
  },
}
