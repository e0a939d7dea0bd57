/**
 * Web methods for a day of real use, beside the core set of methods.ts: `@` mention search over
 * a session's workspace (`files.search`), search across session content (`sessions.search`),
 * the trajectory of a session (`sessions.trajectory`) and OpenAI-compatible providers added from
 * Settings (`providers.*`). docs/web.md lists their parameters and results.
 */
import type { Context } from 'cordis'
import { readCredentials, readSettings, writeCredential, writeSettings, type Settings } from '../config/home.js'
import { isCredentialName } from '../config/credentials.js'
import type { ContentBlock } from '../llm/types.js'
import type { StoredSessionSummary } from '../persistence/api.js'
import type { SessionEvent } from '../session/types.js'
import { discoverModels, providerKeyName, PROVIDER_ID, type ProviderEntry, type ProviderModel, type ProvidersService } from '../llm/openai/providers.js'
import { WebApiError, type WebMethod } from './api.js'
import { MAX_HITS_PER_SESSION, MAX_SESSIONS, searchEvents, searchNeedle, type SearchHit } from './content-search.js'
import { mentionBlocks } from './files.js'
import { searchFiles, workspaceFiles } from '../host/workspace-files.js'
import { readPriceTable, trajectoryOf, withShippedPrices, type PriceTable } from '../session/trajectory.js'
import { shippedPrices } from '../llm/presets/catalog.js'
import '../persistence/api.js'
import '../session/api.js'

/** What these methods need from the web-api plugin. */
export interface WorkspaceHost {
  readonly root: Context
  readonly home: string | undefined
  readonly cwd: string | undefined
  /** Prices from the row config (`prices`), under settings `model.prices`. */
  readonly prices?: PriceTable
  register(name: string, method: WebMethod): () => void
  view(id: string): Promise<{ header: { cwd?: string }; events: readonly SessionEvent[]; summary: { title: string | null; cwd?: string } }>
}

function text(params: Record<string, unknown>, key: string, max: number, optional = false): string | undefined {
  const value = params[key]
  if (value === undefined && optional) return undefined
  if (typeof value !== 'string') throw new WebApiError(400, 'BAD_PARAMS', `"${key}" must be a string`)
  if (value.length > max) throw new WebApiError(400, 'BAD_PARAMS', `"${key}" is limited to ${max} characters`)
  return value
}

function limit(params: Record<string, unknown>, fallback: number, max: number): number {
  const value = params.limit ?? fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw new WebApiError(400, 'BAD_PARAMS', '"limit" must be a positive integer')
  return Math.min(value, max)
}

/** The folder a session works in: its header's cwd, else the server's folder. */
export async function sessionWorkspace(host: WorkspaceHost, id: string | undefined): Promise<string> {
  if (id !== undefined) {
    const view = await host.view(id)
    if (view.header.cwd !== undefined) return view.header.cwd
  }
  return host.cwd ?? process.cwd()
}

/**
 * The input of a prompt with `@` mentions: the typed text, then one reference block per
 * mentioned file (files.ts). Without mentions the text goes as it is.
 */
export function promptInput(workspace: string, typed: string, mentions: unknown): string | ContentBlock[] {
  const blocks = mentionBlocks(workspace, mentions)
  if (blocks.length === 0) return typed
  return [{ type: 'text', text: typed }, ...blocks]
}

export function registerWorkspaceMethods(host: WorkspaceHost): void {
  const { root } = host
  const add = (name: string, method: WebMethod) => host.register(name, method)

  add('files.search', async params => {
    const id = text(params, 'id', 200, true)
    const query = text(params, 'query', 200) ?? ''
    const workspace = await sessionWorkspace(host, id)
    const files = await workspaceFiles(workspace)
    return { root: workspace, files: searchFiles(files, query, limit(params, 20, 50)), total: files.length }
  })

  add('sessions.search', async params => {
    const needle = searchNeedle(params.query)
    if (Array.isArray(needle)) throw new WebApiError(400, 'BAD_PARAMS', needle[0]!)
    const max = limit(params, 30, 100)
    const byId = new Map<string, { id: string; title: string | null; cwd?: string; updatedAt: number }>()
    for (const stored of await root.sessionPersistence.list() as StoredSessionSummary[]) byId.set(stored.id, stored)
    for (const session of root.sessions.list()) {
      const known = byId.get(session.id)
      byId.set(session.id, { id: session.id, title: known?.title ?? null, ...session.header.cwd === undefined ? {} : { cwd: session.header.cwd }, updatedAt: session.events.at(-1)?.time ?? session.header.createdAt })
    }
    const sessions = [...byId.values()].sort((a, b) => b.updatedAt - a.updatedAt)
    const hits: SearchHit[] = []
    let scanned = 0
    for (const session of sessions.slice(0, MAX_SESSIONS)) {
      if (hits.length >= max) break
      let events: readonly SessionEvent[]
      let title = session.title
      try {
        const view = await host.view(session.id)
        events = view.events
        title = view.summary.title
      } catch {
        continue // a damaged or vanished session is not a search failure
      }
      scanned += 1
      hits.push(...searchEvents({ ...session, title }, events, needle, Math.min(MAX_HITS_PER_SESSION, max - hits.length)))
    }
    return { hits, scanned, truncated: hits.length >= max || sessions.length > MAX_SESSIONS }
  })

  add('sessions.trajectory', async params => {
    const id = text(params, 'id', 200)!
    const view = await host.view(id)
    const settings = host.home === undefined ? {} : readSettings(host.home)
    const prices = withShippedPrices(shippedPrices(), { ...host.prices, ...readPriceTable(settings.model?.prices) })
    return trajectoryOf(view.events, prices)
  })

  const providers = () => root.get('llmProviders') as ProvidersService | undefined
  const home = () => {
    if (host.home === undefined) throw new WebApiError(500, 'NO_HOME', 'the web api has no home folder configured')
    return host.home
  }
  const keySet = (name: string) => Boolean(process.env[name]) || Boolean(readCredentials(home())[name])
  const listProviders = () => {
    const service = providers()
    const entries = service?.list() ?? {}
    return {
      available: service !== undefined,
      providers: Object.entries(entries).map(([id, entry]) => ({
        id, baseUrl: entry.baseUrl, keyName: entry.apiKeyEnv ?? null, keySet: entry.apiKeyEnv === undefined ? false : keySet(entry.apiKeyEnv),
        models: entry.models.map(model => typeof model === 'string' ? model : model.model),
      })),
      problems: (service as { problems?: string[] } | undefined)?.problems ?? [],
    }
  }
  const service = () => {
    const found = providers()
    if (found === undefined) throw new WebApiError(501, 'UNSUPPORTED', 'this profile has no providers row (llm-providers)')
    return found
  }
  const providerId = (params: Record<string, unknown>) => {
    const id = text(params, 'id', 40)!
    if (!PROVIDER_ID.test(id)) throw new WebApiError(400, 'BAD_PARAMS', `provider name "${id}" must be lower case letters, digits and dashes`)
    return id
  }
  const storedKey = (id: string | undefined) => {
    if (id === undefined) return undefined
    const name = providerKeyName(id)
    return process.env[name] || readCredentials(home())[name] || undefined
  }

  add('providers.list', () => listProviders())

  add('providers.discover', async (params, request) => {
    const baseUrl = text(params, 'baseUrl', 2000)!
    const key = text(params, 'key', 4000, true)
    const id = params.id === undefined ? undefined : providerId(params)
    try {
      return { models: await discoverModels(baseUrl, key || storedKey(id), { signal: request.signal }) }
    } catch (error) {
      throw new WebApiError(400, 'DISCOVERY_FAILED', (error as Error).message)
    }
  })

  add('providers.add', params => {
    const id = providerId(params)
    const baseUrl = text(params, 'baseUrl', 2000)!
    const key = text(params, 'key', 4000, true)
    if (!Array.isArray(params.models) || params.models.length === 0 || params.models.length > 500) throw new WebApiError(400, 'BAD_PARAMS', '"models" must list 1 to 500 models')
    const models: ProviderModel[] = params.models.map(model => {
      const entry = typeof model === 'string' ? { model } : model as Record<string, unknown>
      if (typeof entry?.model !== 'string' || entry.model === '' || entry.model.length > 200) throw new WebApiError(400, 'BAD_PARAMS', 'each model needs a "model" name')
      const window = entry.contextWindow
      if (window !== undefined && (!Number.isSafeInteger(window) || (window as number) <= 0)) throw new WebApiError(400, 'BAD_PARAMS', `"contextWindow" of ${entry.model} must be a positive integer`)
      const images = entry.imageInput
      if (images !== undefined && typeof images !== 'boolean') throw new WebApiError(400, 'BAD_PARAMS', `"imageInput" of ${entry.model} must be true or false`)
      return { model: entry.model, ...window === undefined ? {} : { contextWindow: window as number }, ...images === true ? { imageInput: true } : {} }
    })
    const keyName = providerKeyName(id)
    if (!isCredentialName(keyName)) throw new WebApiError(400, 'BAD_PARAMS', `provider name "${id}" does not make a key name`)
    const hasKey = Boolean(key) || storedKey(id) !== undefined
    const entry: ProviderEntry = { baseUrl, ...hasKey ? { apiKeyEnv: keyName } : {}, models }
    try {
      service().set(id, entry)
    } catch (error) {
      if (error instanceof WebApiError) throw error
      throw new WebApiError(400, 'BAD_PROVIDER', (error as Error).message)
    }
    if (key) {
      writeCredential(home(), keyName, key)
      process.env[keyName] = key
    }
    const settings: Settings = readSettings(home())
    const saved = service().list()[id]!
    settings.providers = { ...settings.providers, [id]: { ...saved, models: saved.models.map(model => typeof model === 'string' ? model : { ...model }) } }
    writeSettings(home(), settings)
    return listProviders()
  })

  add('providers.remove', params => {
    const id = providerId(params)
    const removed = service().remove(id)
    const settings: Settings = readSettings(home())
    if (settings.providers !== undefined && id in settings.providers) {
      const { [id]: _gone, ...rest } = settings.providers
      settings.providers = rest
    }
    // A default model of the removed provider would fail every new session: fall back.
    const fallback = settings.model?.default
    if (typeof fallback === 'string' && !root.llm.models().some(info => info.model === fallback || `${info.provider}/${info.model}` === fallback)) {
      const { default: _dropped, ...model } = settings.model!
      settings.model = model
    }
    writeSettings(home(), settings)
    const keyName = providerKeyName(id)
    if (readCredentials(home())[keyName] !== undefined) writeCredential(home(), keyName, undefined)
    delete process.env[keyName]
    return { removed, ...listProviders() }
  })
}
