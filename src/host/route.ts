/**
 * The model route an app starts with: the requested name, DSH_MODEL, settings `model.default`,
 * the app's configured default, else the first catalogued model. A name the catalogue does not
 * hold may be a provider preset's (`openai/gpt-5`, or a bare `gpt-5` one preset lists): the
 * presets service registers that route (docs/llm.md, "Provider presets").
 */
import { join } from 'node:path'
import type { Context } from 'cordis'
import { ConfigError } from '../config/rows.js'
import './index.js'
import '../llm/api.js'
import type { PresetsService } from '../llm/presets/index.js'

/** The catalogue's route for `name`, else a preset's (registered now); throws a preset's ambiguity. */
export function findRoute(ctx: Context, name: string): { provider: string; model: string } | undefined {
  const found = ctx.get('llm')?.models().find(info => info.model === name || `${info.provider}/${info.model}` === name)
  if (found !== undefined) return { provider: found.provider, model: found.model }
  return (ctx.get('llmPresets') as PresetsService | undefined)?.resolve(name)
}

/** `available: a, b; presets: openai/<model>, ...`: what an unknown-model message lists. */
export function availableModels(ctx: Context): string {
  const hint = (ctx.get('llmPresets') as PresetsService | undefined)?.hint()
  return `available: ${(ctx.get('llm')?.models() ?? []).map(info => info.model).join(', ') || 'none'}${hint === undefined ? '' : `; ${hint}`}`
}

export function pickRoute(ctx: Context, requested: string | undefined, fallback?: string): { provider: string; model: string } {
  const { host, llm } = ctx
  const settingsModel = host.settings.model?.default
  const fromEnv = host.env.value('DSH_MODEL')
  const fromSettings = typeof settingsModel === 'string' ? settingsModel : undefined
  const name = requested ?? fromEnv ?? fromSettings ?? fallback
  const first = llm.models()[0]
  const found = name === undefined ? first && { provider: first.provider, model: first.model } : findRoute(ctx, name)
  if (found === undefined) {
    if (name === undefined) throw new Error('no model adapter is configured')
    const available = availableModels(ctx)
    // A settings file that names a model dsh does not have is a configuration error naming the file.
    if (requested === undefined && fromEnv === undefined && fromSettings !== undefined) {
      throw new ConfigError(join(host.home, 'settings.yaml'), undefined, 'model.default', `unknown model "${name}" (${available})`)
    }
    throw new Error(`unknown model "${name}"${requested === undefined && fromEnv !== undefined ? ' (from DSH_MODEL)' : ''} (${available})`)
  }
  return { provider: found.provider, model: found.model }
}
