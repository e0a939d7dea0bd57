/**
 * The web UI's settings methods (docs/web.md): models and the default model, credentials
 * (written, never read back), MCP servers and their enable switches, and project trust.
 */
import type { Context } from 'cordis'
import { readCredentials, readSettings, writeCredential, writeSettings, type Settings } from '../config/home.js'
import { isCredentialName } from '../config/credentials.js'
import type { McpService } from '../mcp/api.js'
import type { ProjectTrustStatus } from '../trust/plugin.js'
import { WebApiError, type WebMethod } from './api.js'
import { str } from './params.js'
import '../agent/api.js'
import '../llm/api.js'
import { PROVIDER_PRESETS } from '../llm/presets/catalog.js'

/** What the settings methods need of the web api. */
export interface SettingsHost {
  readonly root: Context
  readonly config: { readonly home?: string; readonly cwd?: string; readonly credentialNames?: readonly string[] }
  /** A model name's route (a 400 for an unknown one); undefined when no name is given or set. */
  route(name?: string): { provider: string; model: string } | undefined
  /** The home folder (a 500 when the api has none). */
  home(): string
}

export function registerSettingsMethods(host: SettingsHost, add: (name: string, method: WebMethod) => void): void {
  const { root } = host
  add('models.list', () => {
    const settings = host.config.home === undefined ? {} : readSettings(host.config.home)
    const fallback = root.agents.list()[0]?.config
    const models = root.llm.models().map(info => ({
      ...info,
      ready: root.llm.adapter(info.provider)?.readiness?.() ?? null,
    }))
    return { models, default: settings.model?.default ?? fallback?.model ?? models[0]?.model ?? null }
  })

  add('settings.get', () => {
    const settings = readSettings(host.home())
    const stored = readCredentials(host.home())
    // The shipped routes' keys: DeepSeek's and each provider preset's (docs/llm.md).
    const shipped = ['DEEPSEEK_API_KEY', ...PROVIDER_PRESETS.flatMap(preset => preset.keyEnv === undefined ? [] : [preset.keyEnv])]
    const names = new Set([...host.config.credentialNames ?? shipped, ...Object.keys(stored)])
    const credentials = [...names].sort().map(name => ({
      name,
      set: Boolean(stored[name]) || Boolean(process.env[name]),
      source: stored[name] ? 'credentials' : process.env[name] ? 'environment' : null,
    }))
    return { defaultModel: settings.model?.default ?? null, credentials }
  })

  add('settings.set', params => {
    const settings: Settings = readSettings(host.home())
    if (params.defaultModel !== undefined) {
      const model = str(params, 'defaultModel')
      const route = host.route(model)
      settings.model = { ...settings.model, default: route?.model ?? model }
    }
    writeSettings(host.home(), settings)
    return { defaultModel: settings.model?.default ?? null }
  })

  // MCP servers (docs/mcp.md): state, tools and errors; trust for the project's .mcp.json; enable toggles.
  const mcp = () => {
    const service = root.get('mcp') as McpService | undefined
    if (service === undefined) throw new WebApiError(501, 'UNSUPPORTED', 'no mcp row in this profile')
    return service
  }
  const mcpList = () => {
    const service = root.get('mcp') as McpService | undefined
    const servers = service?.servers() ?? []
    return { available: service !== undefined, servers, untrusted: servers.filter(server => server.state === 'untrusted').map(server => server.name) }
  }
  add('mcp.list', () => mcpList())
  // Project trust (docs/security.md): the launch folder's hook files and .mcp.json servers.
  const trustView = async (status?: ProjectTrustStatus) => {
    const { describeProjectCode, needsTrust, projectTrustStatus } = await import('../trust/plugin.js')
    const folder = host.config.cwd
    if (folder === undefined || host.config.home === undefined) return { available: false }
    const current = status ?? projectTrustStatus(folder, host.config.home)
    return {
      available: true, folder: current.folder, needsTrust: needsTrust(current), code: describeProjectCode(current),
      ...current.trustedBy !== undefined ? { trustedBy: current.trustedBy } : {}, ...current.problem !== undefined ? { problem: current.problem } : {},
    }
  }
  add('trust.status', () => trustView())
  add('trust.on', async () => {
    const { trustFolder } = await import('../trust/plugin.js')
    if (host.config.cwd === undefined) throw new WebApiError(501, 'UNSUPPORTED', 'no launch folder to trust')
    return trustView(await trustFolder(host.config.cwd, host.home(), root.get('mcp') as McpService | undefined))
  })
  add('mcp.trust', async () => {
    await mcp().trustProject()
    return mcpList()
  })
  add('mcp.setEnabled', async params => {
    if (typeof params.enabled !== 'boolean') throw new WebApiError(400, 'BAD_PARAMS', '"enabled" must be true or false')
    try {
      await mcp().setEnabled(str(params, 'name'), params.enabled)
    } catch (error) {
      if (error instanceof WebApiError) throw error
      throw new WebApiError(400, 'BAD_PARAMS', (error as Error).message)
    }
    return mcpList()
  })

  add('credentials.set', params => {
    const name = str(params, 'name')
    if (!isCredentialName(name)) throw new WebApiError(400, 'BAD_PARAMS', `"${name}" is not a credential name: credentials are provider API keys named like DEEPSEEK_API_KEY`)
    const value = params.value === null || params.value === '' ? undefined : str(params, 'value')
    writeCredential(host.home(), name, value)
    // Adapters read credentials per request from the host's layers, whose first layer is the
    // live process environment: updating it makes the new key effective without a restart.
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
    return { name, set: value !== undefined }
  })
}
