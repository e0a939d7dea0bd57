/**
 * #44.8: the `web-search` row offers the tool only once a provider is chosen (settings
 * `webSearch.provider`, DSH_WEB_SEARCH_PROVIDER) or a patch sets `enabled: true`; `enabled:
 * false` keeps it off whatever is chosen.
 */
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { ToolsPlugin } from '../tools/index.js'
import { WebSearchRow } from './row.js'

async function offered(config: Record<string, unknown>): Promise<boolean> {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin).await()
  await ctx.plugin(WebSearchRow, config).await()
  const names = ctx.tools.list().map(tool => tool.name)
  return names.includes('web_search')
}

describe('the web-search row (#44.8)', () => {
  it('no provider: no tool; a provider, or enabled: true: the tool; enabled: false: none', async () => {
    expect(await offered({})).toBe(false)
    expect(await offered({ provider: 'exa' })).toBe(true)
    expect(await offered({ enabled: true })).toBe(true)
    expect(await offered({ provider: 'exa', enabled: false })).toBe(false)
  })
})
