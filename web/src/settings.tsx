/** The settings dialog: model providers and MCP servers. */
import { useCallback, useEffect, useState } from 'react'
import { call } from './api'
import { ProviderSettings } from './providers'
import { useEscape } from './util'

export function Settings(props: { onClose(): void }) {
  const [settings, setSettings] = useState<{ defaultModel: string | null; credentials: { name: string; set: boolean; source: string | null }[] } | null>(null)
  const [models, setModels] = useState<{ model: string; provider: string; ready: string | null }[]>([])
  const [effective, setEffective] = useState<string | null>(null)
  const [keys, setKeys] = useState<Record<string, string>>({})
  const [message, setMessage] = useState('')
  const load = useCallback(() => {
    call('settings.get').then(setSettings, error => setMessage(error.message))
    call('models.list').then(result => { setModels(result.models); setEffective(result.default) }, () => {})
  }, [])
  useEffect(load, [load])
  useEscape(props.onClose)
  const saveKey = async (name: string) => {
    try {
      await call('credentials.set', { name, value: keys[name] ?? '' })
      setKeys({ ...keys, [name]: '' })
      setMessage(`${name} saved.`)
      load()
    } catch (error) {
      setMessage((error as Error).message)
    }
  }
  const setDefault = async (model: string) => {
    try {
      await call('settings.set', { defaultModel: model })
      setMessage(`Default model: ${model}`)
      load()
    } catch (error) {
      setMessage((error as Error).message)
    }
  }
  return (
    <div className="page-center">
      <div className="panel settings-panel" data-testid="settings">
        <div className="panel-head"><h1>Settings</h1><button className="ghost" onClick={props.onClose}>Close</button></div>
        <h2>API keys</h2>
        <p className="muted">Keys are stored in your dsh home folder (<code>.credentials.yaml</code>, mode 600). They are never sent back to the browser.</p>
        {settings?.credentials.map(credential => (
          <div className="key-row" key={credential.name}>
            <div className="key-name"><code>{credential.name}</code><span className={`badge ${credential.set ? 'ok' : 'warn'}`}>{credential.set ? `set (${credential.source})` : 'not set'}</span></div>
            <div className="key-input">
              <input type="password" autoComplete="off" placeholder={credential.set ? 'Replace key…' : 'Paste key…'} value={keys[credential.name] ?? ''}
                onChange={event => setKeys({ ...keys, [credential.name]: event.target.value })} data-testid={`key-${credential.name}`} />
              <button className="primary" onClick={() => void saveKey(credential.name)} disabled={!keys[credential.name]} data-testid={`save-key-${credential.name}`}>Save</button>
            </div>
          </div>
        ))}
        <ProviderSettings onChanged={text => { setMessage(text); load() }} />
        <h2>Default model</h2>
        <div className="model-list">
          {models.map(info => (
            <label key={`${info.provider}/${info.model}`} className={`model-row ${effective === info.model ? 'active' : ''}`}>
              <input type="radio" name="default-model" checked={effective === info.model} onChange={() => void setDefault(info.model)} />
              <span className="mono">{info.model}</span><span className="muted">{info.provider}</span>
              {info.ready ? <span className="badge warn" title={info.ready}>needs a key</span> : <span className="badge ok">ready</span>}
            </label>
          ))}
        </div>
        <McpServers onMessage={setMessage} />
        {message ? <div className="toast">{message}</div> : null}
      </div>
    </div>
  )
}

interface McpServerView {
  name: string; source: string; transport?: string; state: string; enabled: boolean; error?: string
  tools: { name: string; rawName: string; readOnly: boolean }[]
}

/** Settings section: MCP servers with state, tools, errors, an enable toggle and the project trust prompt. */
function McpServers(props: { onMessage(text: string): void }) {
  const [list, setList] = useState<{ available: boolean; servers: McpServerView[]; untrusted: string[] } | null>(null)
  const [busy, setBusy] = useState(false)
  const load = useCallback(() => { call('mcp.list').then(setList, () => setList(null)) }, [])
  useEffect(load, [load])
  const act = async (method: string, params: Record<string, unknown> = {}) => {
    setBusy(true)
    try {
      setList(await call(method, params))
    } catch (error) {
      props.onMessage((error as Error).message)
    } finally {
      setBusy(false)
    }
  }
  if (list === null || !list.available) return null
  return (
    <div data-testid="mcp-servers">
      <h2>MCP servers</h2>
      <p className="muted">Configured in <code>settings.yaml</code> (<code>mcpServers</code>) or the project's <code>.mcp.json</code>; see <code>dsh mcp</code>. Servers run outside the sandbox.</p>
      {list.untrusted.length > 0 ? (
        <div className="mcp-trust" data-testid="mcp-trust">
          <span>This project's <code>.mcp.json</code> wants to start {list.untrusted.join(', ')}. They run code from the repository.</span>
          <button className="primary" disabled={busy} onClick={() => { if (window.confirm(`Start the MCP servers of this project's .mcp.json (${list.untrusted.join(', ')})? Only do this for a repository you trust.`)) void act('mcp.trust') }}>Trust and start</button>
        </div>
      ) : null}
      {list.servers.length === 0 ? <p className="muted">No MCP servers configured.</p> : null}
      {list.servers.map(server => (
        <details className="mcp-server" key={`${server.source}:${server.name}`} data-testid={`mcp-server-${server.name}`}>
          <summary>
            <span className="mono">{server.name}</span>
            <span className="muted">{server.source} · {server.transport ?? '?'}</span>
            <span className={`badge ${server.state === 'connected' ? 'ok' : 'warn'}`}>{server.state}</span>
            <span className="muted">{server.tools.length} tools</span>
            {server.source === 'settings' ? (
              <label className="mcp-toggle" onClick={event => event.stopPropagation()}>
                <input type="checkbox" checked={server.enabled} disabled={busy} onChange={event => void act('mcp.setEnabled', { name: server.name, enabled: event.target.checked })} /> enabled
              </label>
            ) : null}
          </summary>
          {server.error ? <div className="mcp-error">{server.error}</div> : null}
          <ul className="mcp-tools">{server.tools.map(tool => <li key={tool.name}><code>{tool.name}</code>{tool.readOnly ? <span className="muted"> read-only</span> : null}</li>)}</ul>
        </details>
      ))}
    </div>
  )
}
