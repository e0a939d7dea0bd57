/**
 * The model route an app starts with: the requested name, DSH_MODEL, settings `model.default`,
 * the app's configured default, else the first catalogued model.
 */
import type { Context } from 'cordis'
import './index.js'
import '../llm/api.js'

export function pickRoute(ctx: Context, requested: string | undefined, fallback?: string): { provider: string; model: string } {
  const { host, llm } = ctx
  const settingsModel = host.settings.model?.default
  const name = requested ?? host.env.value('DSH_MODEL') ?? (typeof settingsModel === 'string' ? settingsModel : undefined) ?? fallback
  const models = llm.models()
  const found = name === undefined ? models[0] : models.find(info => info.model === name || `${info.provider}/${info.model}` === name)
  if (found === undefined) {
    throw new Error(name === undefined ? 'no model adapter is configured' : `unknown model "${name}" (available: ${models.map(info => info.model).join(', ') || 'none'})`)
  }
  return { provider: found.provider, model: found.model }
}
