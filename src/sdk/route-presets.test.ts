/**
 * The SDK and ACP servers pick a route with `resolveRoute`: a provider preset's model is one too
 * (docs/llm.md, "Provider presets"), registered when a client asks for it.
 */
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { ProviderPresetsPlugin } from '../llm/presets/index.js'
import { LlmServicePlugin } from '../llm/service.js'
import { resolveRoute } from './agents.js'

async function context() {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin)
  await ctx.plugin(ProviderPresetsPlugin, { credentials: () => undefined })
  return ctx
}

describe('resolveRoute and provider presets', () => {
  it('takes provider/model, a provider with a model, or a bare name one preset lists', async () => {
    const ctx = await context()
    expect(resolveRoute(ctx, { model: 'anthropic/claude-opus-4-5' })).toEqual({ provider: 'anthropic', model: 'claude-opus-4-5' })
    expect(resolveRoute(ctx, { provider: 'ollama', model: 'llama3.2' })).toEqual({ provider: 'ollama', model: 'llama3.2' })
    expect(resolveRoute(ctx, { model: 'o3' })).toEqual({ provider: 'openai', model: 'o3' })
    expect(ctx.llm.model('ollama', 'llama3.2')).toBeDefined()
  })

  it('a name no preset owns is still an invalid-params error listing the routes', async () => {
    const ctx = await context()
    expect(() => resolveRoute(ctx, { model: 'nothing-like-it' })).toThrow(/unknown model route "nothing-like-it"/)
  })
})
