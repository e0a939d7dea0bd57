/**
 * The catalogue row of code mode: under the default presentation (`native`) it loads nothing,
 * so a run that does not use code mode pays nothing for it; otherwise it starts
 * `CodeModePlugin` (`./index.ts`) with the row's config.
 */
import type { Context } from 'cordis'
import type { CodeModeConfig } from './index.js'

export const CodeModeRow = {
  name: 'code-mode',
  inject: ['tools', 'sessions'],
  async apply(ctx: Context, config: CodeModeConfig = {}): Promise<void> {
    if ((config.mode ?? 'native') === 'native') return
    const { CodeModePlugin } = await import('./index.js')
    await ctx.plugin(CodeModePlugin, config).await()
  },
}
