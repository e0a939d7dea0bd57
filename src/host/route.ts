/**
 * The model route an app starts with: the requested name, DSH_MODEL, settings `model.default`,
 * the app's configured default, else the first catalogued model.
 */
import { join } from 'node:path'
import type { Context } from 'cordis'
import { ConfigError } from '../config/rows.js'
import './index.js'
import '../llm/api.js'

export function pickRoute(ctx: Context, requested: string | undefined, fallback?: string): { provider: string; model: string } {
  const { host, llm } = ctx
  const settingsModel = host.settings.model?.default
  const fromEnv = host.env.value('DSH_MODEL')
  const fromSettings = typeof settingsModel === 'string' ? settingsModel : undefined
  const name = requested ?? fromEnv ?? fromSettings ?? fallback
  const models = llm.models()
  const found = name === undefined ? models[0] : models.find(info => info.model === name || `${info.provider}/${info.model}` === name)
  if (found === undefined) {
    if (name === undefined) throw new Error('no model adapter is configured')
    const available = `available: ${models.map(info => info.model).join(', ') || 'none'}`
    // A settings file that names a model dsh does not have is a configuration error naming the file.
    if (requested === undefined && fromEnv === undefined && fromSettings !== undefined) {
      throw new ConfigError(join(host.home, 'settings.yaml'), undefined, 'model.default', `unknown model "${name}" (${available})`)
    }
    throw new Error(`unknown model "${name}"${requested === undefined && fromEnv !== undefined ? ' (from DSH_MODEL)' : ''} (${available})`)
  }
  return { provider: found.provider, model: found.model }
}
