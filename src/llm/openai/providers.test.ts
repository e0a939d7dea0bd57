/**
 * Providers from settings (`llm-providers`): entries become OpenAI-compatible routes at start,
 * a bad entry is left out with its reason instead of failing the start, and routes can be
 * replaced and removed live.
 */
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { LlmServicePlugin } from '../index.js'
import { DEFAULT_CONTEXT_WINDOW, SettingsProvidersPlugin, providerKeyName, validBaseUrl } from './providers.js'

async function start(providers: Record<string, unknown>) {
  const ctx = new Context()
  await ctx.plugin(LlmServicePlugin).await()
  await ctx.plugin(SettingsProvidersPlugin, { providers: providers as never }).await()
  return ctx
}

describe('settings providers', () => {
  it('registers each entry at start and lists bad ones in problems', async () => {
    const ctx = await start({
      'gpu-box': { baseUrl: 'http://gpu-box:8000/v1/', apiKeyEnv: 'GPU_BOX_API_KEY', models: ['qwen3', { model: 'big', contextWindow: 200_000 }] },
      'Bad Name': { baseUrl: 'http://x/v1', models: ['m'] },
      'no-url': { baseUrl: 'ftp://x', models: ['m'] },
    })
    expect(ctx.llm.model('gpu-box', 'qwen3')?.contextWindow).toBe(DEFAULT_CONTEXT_WINDOW)
    expect(ctx.llm.model('gpu-box', 'big')?.contextWindow).toBe(200_000)
    expect(ctx.llmProviders.list()['gpu-box']!.baseUrl).toBe('http://gpu-box:8000/v1')
    const problems = (ctx.llmProviders as unknown as { problems: string[] }).problems
    expect(problems).toHaveLength(2)
    expect(problems[0]).toContain('Bad Name')
    expect(problems[1]).toContain('http(s)')
  })

  it('a model may declare image input; anything but true or false is a problem', async () => {
    const ctx = await start({
      vision: { baseUrl: 'http://127.0.0.1:1/v1', models: [{ model: 'pix', imageInput: true }, 'plain'] },
      wrong: { baseUrl: 'http://127.0.0.1:1/v1', models: [{ model: 'pix', imageInput: 'yes' }] },
    })
    expect(ctx.llm.model('vision', 'pix')?.imageInput).toBe(true)
    expect(ctx.llm.model('vision', 'plain')?.imageInput).toBe(false)
    expect((ctx.llmProviders as unknown as { problems: string[] }).problems).toEqual(['settings provider "wrong": model "pix": imageInput must be true or false, got "yes"'])
  })

  it('replaces and removes a route live', async () => {
    const ctx = await start({})
    ctx.llmProviders.set('local', { baseUrl: 'http://127.0.0.1:1/v1', models: ['a'] })
    ctx.llmProviders.set('local', { baseUrl: 'http://127.0.0.1:1/v1', models: ['b'] })
    expect(ctx.llm.models().map(info => info.model)).toEqual(['b'])
    expect(ctx.llmProviders.remove('local')).toBe(true)
    expect(ctx.llm.models()).toEqual([])
    expect(ctx.llmProviders.remove('local')).toBe(false)
  })

  it('names keys and checks base URLs', () => {
    expect(providerKeyName('gpu-box')).toBe('GPU_BOX_API_KEY')
    expect(validBaseUrl(' https://api.example.com/v1/ ')).toBe('https://api.example.com/v1')
    for (const bad of ['', 'file:///etc', 'http://u:p@h/v1', 'http://h/v1#x', 42]) expect(() => validBaseUrl(bad)).toThrow()
  })
})
