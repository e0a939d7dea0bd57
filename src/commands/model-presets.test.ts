/**
 * `/model` (the terminal app, the web, headless) takes a provider preset's model between turns and
 * lists how to choose one (docs/llm.md, "Provider presets").
 */
import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { ProviderPresetsPlugin } from '../llm/presets/index.js'
import { CommandsPlugin } from './index.js'

async function harness() {
  return loopHarness({
    responses: [],
    setup: async (ctx) => {
      await ctx.plugin(ProviderPresetsPlugin, { credentials: () => undefined }).await()
      await ctx.plugin(CommandsPlugin).await()
    },
  })
}

describe('/model and provider presets', () => {
  it('switches to provider/model or a bare preset name; the listing says how to choose one', async () => {
    const h = await harness()
    const shown = await h.ctx.commands.execute(h.agent, '/model')
    expect((shown as { text: string }).text).toContain('Or a provider\'s model, presets: openai/<model>, anthropic/<model>')
    expect(await h.ctx.commands.execute(h.agent, '/model anthropic/claude-sonnet-4-5')).toEqual({ kind: 'success', text: 'Model: claude-sonnet-4-5 (anthropic)' })
    expect(h.ctx.agents.get(h.agent.id)?.config).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5' })
    const again = h.ctx.agents.get(h.agent.id)!
    expect(await h.ctx.commands.execute(again, '/model o4-mini')).toEqual({ kind: 'success', text: 'Model: o4-mini (openai)' })
    const after = await h.ctx.commands.execute(h.ctx.agents.get(h.agent.id)!, '/model nothing-like-it')
    expect(after).toMatchObject({ kind: 'error', text: expect.stringContaining('Unknown model "nothing-like-it" (available: ') })
    expect((after as { text: string }).text).toContain('presets: openai/<model>')
    await h.dispose()
  })
})
