/**
 * The web API takes a provider preset's model wherever it takes a model name (`sessions.create`,
 * `sessions.setModel`): the route is registered when asked for (docs/llm.md, "Provider presets").
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ProviderPresetsPlugin } from '../llm/presets/index.js'
import { startWebApi, type WebApiHarness } from '../../test-support/web-api.js'
import { WebApiError } from './api.js'

describe('web methods and provider presets', () => {
  let harness: WebApiHarness
  let dirs: string[]
  const call = async (method: string, params: Record<string, unknown> = {}) => await harness.ctx.webApi.get(method)!(params, { signal: new AbortController().signal }) as any

  beforeEach(async () => {
    dirs = [mkdtempSync(join(tmpdir(), 'dsh-web-presets-home-')), mkdtempSync(join(tmpdir(), 'dsh-web-presets-work-'))]
    harness = await startWebApi({ home: dirs[0]!, cwd: dirs[1]!, plugins: [ctx => ctx.plugin(ProviderPresetsPlugin, { credentials: () => undefined })] })
  })
  afterEach(async () => {
    await harness.stop()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  it('sessions.create and sessions.setModel take provider/model and bare preset names', async () => {
    const session = await call('sessions.create', { model: 'anthropic/claude-sonnet-4-5' })
    expect(harness.ctx.agents.get(session.id)?.config).toMatchObject({ provider: 'anthropic', model: 'claude-sonnet-4-5' })
    expect(await call('sessions.setModel', { id: session.id, model: 'ollama/qwen3:8b' })).toEqual({ provider: 'ollama', model: 'qwen3:8b' })
    expect(await call('sessions.setModel', { id: session.id, model: 'gpt-5-mini' })).toEqual({ provider: 'openai', model: 'gpt-5-mini' })
  })

  it('settings.get lists the presets\' key variables beside DeepSeek\'s, so the Settings page can store them', async () => {
    const names = (await call('settings.get')).credentials.map((entry: { name: string }) => entry.name)
    expect(names).toEqual(expect.arrayContaining(['ANTHROPIC_API_KEY', 'DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'OPENROUTER_API_KEY']))
  })

  it('an unknown name is a 400 naming the presets', async () => {
    const error = await call('sessions.create', { model: 'no-such-model' }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(WebApiError)
    expect((error as WebApiError).status).toBe(400)
    expect((error as Error).message).toContain('presets: openai/<model>, anthropic/<model>')
  })
})
