/**
 * Model providers in Settings, and the first-run onboarding.
 *
 * `ProviderSettings`: the OpenAI-compatible providers added here (`providers.*`): name, base
 * URL, whether a key is set (never the key), models; a form that discovers the server's models
 * from `<baseUrl>/models` and adds the provider. `FirstRun`: when the default model cannot run
 * (no key), the New session page becomes "Connect a model": paste the key it needs, or add an
 * OpenAI-compatible server and make one of its models the default.
 */
import { useCallback, useEffect, useState, type ReactNode } from 'react'
import { call } from './api'
import './workspace.css'

interface ProviderView { id: string; baseUrl: string; keyName: string | null; keySet: boolean; models: string[] }
interface ProviderList { available: boolean; providers: ProviderView[]; problems: string[] }
interface Discovered { model: string; contextWindow?: number }

/** The add form: name, base URL, key → Discover models → pick → Add. */
function ProviderForm(props: { onAdded(added: { id: string; models: string[] }): void; submitLabel?: string }) {
  const [id, setId] = useState('')
  const [baseUrl, setBaseUrl] = useState('')
  const [key, setKey] = useState('')
  const [models, setModels] = useState<Discovered[] | null>(null)
  const [chosen, setChosen] = useState<Set<string>>(new Set())
  /** Models the user says take images (servers do not tell). */
  const [vision, setVision] = useState<Set<string>>(new Set())
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState('')
  const discover = async () => {
    setBusy(true)
    setError('')
    try {
      const found = (await call<{ models: Discovered[] }>('providers.discover', { baseUrl: baseUrl.trim(), ...key ? { key } : {} })).models
      setModels(found)
      setChosen(new Set(found.map(model => model.model)))
      if (found.length === 0) setError('The server lists no models.')
      if (id === '') setId(suggestName(baseUrl))
    } catch (caught) {
      setModels(null)
      setError((caught as Error).message)
    } finally {
      setBusy(false)
    }
  }
  const add = async () => {
    setBusy(true)
    setError('')
    try {
      const picked = (models ?? []).filter(model => chosen.has(model.model)).map(model => vision.has(model.model) ? { ...model, imageInput: true } : model)
      await call('providers.add', { id: id.trim(), baseUrl: baseUrl.trim(), ...key ? { key } : {}, models: picked })
      setKey('')
      props.onAdded({ id: id.trim(), models: picked.map(model => model.model) })
      setModels(null)
      setId('')
      setBaseUrl('')
    } catch (caught) {
      setError((caught as Error).message)
    } finally {
      setBusy(false)
    }
  }
  return (
    <div className="provider-form" data-testid="provider-form">
      <label className="field"><span>Base URL</span>
        <input value={baseUrl} onChange={event => { setBaseUrl(event.target.value); setModels(null) }} placeholder="http://127.0.0.1:8000/v1" data-testid="provider-url" spellCheck={false} />
      </label>
      <label className="field"><span>API key <span className="muted">(optional for local servers; stored in .credentials.yaml, never shown again)</span></span>
        <input type="password" autoComplete="off" value={key} onChange={event => setKey(event.target.value)} placeholder="Paste key…" data-testid="provider-key" />
      </label>
      {models === null ? (
        <div className="actions"><button className="primary" disabled={busy || baseUrl.trim() === ''} onClick={() => void discover()} data-testid="provider-discover">{busy ? 'Asking the server…' : 'Discover models'}</button></div>
      ) : (
        <>
          <label className="field"><span>Name <span className="muted">(lower case, digits, dashes; the key is stored as NAME_API_KEY)</span></span>
            <input value={id} onChange={event => setId(event.target.value)} placeholder="local-vllm" data-testid="provider-name" spellCheck={false} />
          </label>
          <fieldset className="provider-models" data-testid="provider-models">
            <legend>{models.length} models found</legend>
            {models.map(model => (
              <div key={model.model} className="provider-model">
                <label className="provider-model-pick">
                  <input type="checkbox" checked={chosen.has(model.model)} onChange={event => {
                    const next = new Set(chosen)
                    if (event.target.checked) next.add(model.model)
                    else next.delete(model.model)
                    setChosen(next)
                  }} />
                  <span className="mono">{model.model}</span>{model.contextWindow ? <span className="muted">{Math.round(model.contextWindow / 1024)}k context</span> : null}
                </label>
                {/* Its own label: a click on "images" must not toggle the model's own checkbox. */}
                <label className="provider-vision" title="The model accepts images: pasted screenshots and read_image">
                  <input type="checkbox" checked={vision.has(model.model)} data-testid="provider-vision" aria-label={`${model.model} takes images`} onChange={event => {
                    const next = new Set(vision)
                    if (event.target.checked) next.add(model.model)
                    else next.delete(model.model)
                    setVision(next)
                  }} /> images
                </label>
              </div>
            ))}
          </fieldset>
          <div className="actions">
            <button className="ghost" disabled={busy} onClick={() => setModels(null)}>Back</button>
            <button className="primary" disabled={busy || chosen.size === 0 || id.trim() === ''} onClick={() => void add()} data-testid="provider-add">{props.submitLabel ?? 'Add provider'}</button>
          </div>
        </>
      )}
      {error ? <div className="inline-error" role="alert">{error}</div> : null}
    </div>
  )
}

/** A provider name from a base URL: `http://gpu-box:8000/v1` → `gpu-box`. */
function suggestName(baseUrl: string): string {
  try {
    const host = new URL(baseUrl).hostname.toLowerCase()
    const name = (host === '127.0.0.1' || host === 'localhost' || host === '::1' ? 'local' : host.split('.').filter(part => part !== 'api' && part !== 'www')[0] ?? 'provider')
      .replace(/[^a-z0-9-]+/g, '-').replace(/^[^a-z]+/, '')
    return name.slice(0, 40) || 'provider'
  } catch {
    return 'provider'
  }
}

/** Settings section: the added providers and the add form. */
export function ProviderSettings(props: { onChanged(message: string): void }) {
  const [list, setList] = useState<ProviderList | null>(null)
  const [adding, setAdding] = useState(false)
  const load = useCallback(() => { call<ProviderList>('providers.list').then(setList, () => setList(null)) }, [])
  useEffect(load, [load])
  if (list === null || !list.available) return null
  const remove = async (id: string) => {
    if (!confirm(`Remove the provider ${id} and its stored key?`)) return
    try {
      await call('providers.remove', { id })
      load()
      props.onChanged(`Removed ${id}.`)
    } catch (error) { props.onChanged((error as Error).message) }
  }
  return (
    <div data-testid="providers">
      <h2>Model providers</h2>
      <p className="muted">Any OpenAI-compatible chat-completions server (vLLM, llama.cpp, Ollama, gateways). Its models come from <code>/models</code>.</p>
      {list.problems.map(problem => <div key={problem} className="inline-error">{problem}</div>)}
      {list.providers.map(provider => (
        <div className="provider-row" key={provider.id} data-testid={`provider-${provider.id}`}>
          <div className="provider-title">
            <span className="mono">{provider.id}</span>
            <span className="muted mono provider-url">{provider.baseUrl}</span>
            <span className={`badge ${provider.keySet ? 'ok' : ''}`} data-testid="provider-key-state">{provider.keyName === null ? 'no key' : provider.keySet ? 'key set' : 'key not set'}</span>
            <button className="link-button danger" onClick={() => void remove(provider.id)}>Remove</button>
          </div>
          <div className="muted provider-model-list">{provider.models.join(', ')}</div>
        </div>
      ))}
      {adding ? <ProviderForm onAdded={added => { setAdding(false); load(); props.onChanged(`Added ${added.id} (${added.models.length} models). Choose a default model below.`) }} />
        : <button className="ghost" onClick={() => setAdding(true)} data-testid="provider-open-form">+ Add an OpenAI-compatible provider</button>}
    </div>
  )
}

interface ModelsList { models: { model: string; provider: string; ready: string | null }[]; default: string | null }

/** The key a readiness message asks for (`DEEPSEEK_API_KEY is not set: …`). */
function keyNameIn(message: string): string | undefined {
  return /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_API_KEY\b/.exec(message)?.[0]
}

/**
 * Shows `children` (the New session page) once the default model can run; until then, the
 * onboarding that gets it there.
 */
export function FirstRun(props: { children: ReactNode }) {
  const [models, setModels] = useState<ModelsList | null>(null)
  const load = useCallback(() => { call<ModelsList>('models.list').then(setModels, () => setModels({ models: [], default: null })) }, [])
  useEffect(load, [load])
  if (models === null) return null
  const current = models.models.find(info => info.model === models.default || `${info.provider}/${info.model}` === models.default)
  if (current === undefined || current.ready === null) return <>{props.children}</>
  return <Onboarding problem={current.ready} model={current.model} onReady={load} />
}

function Onboarding(props: { problem: string; model: string; onReady(): void }) {
  const keyName = keyNameIn(props.problem)
  const [key, setKey] = useState('')
  const [error, setError] = useState('')
  const [other, setOther] = useState(false)
  const saveKey = async () => {
    setError('')
    try {
      await call('credentials.set', { name: keyName, value: key.trim() })
      setKey('')
      props.onReady()
    } catch (caught) { setError((caught as Error).message) }
  }
  const useProvider = async (added: { id: string; models: string[] }) => {
    try {
      await call('settings.set', { defaultModel: added.models[0] })
      props.onReady()
    } catch (caught) { setError((caught as Error).message) }
  }
  return (
    <div className="page-center">
      <div className="panel onboarding" data-testid="onboarding">
        <h1>Connect a model</h1>
        <p className="muted">dsh needs a model to talk to. The default, <code>{props.model}</code>, has no key yet: {props.problem.split(':')[0]}.</p>
        {keyName ? (
          <>
            <label className="field"><span>{keyName}</span>
              <input type="password" autoComplete="off" value={key} onChange={event => setKey(event.target.value)} placeholder="Paste key…" data-testid="onboarding-key"
                onKeyDown={event => { if (event.key === 'Enter' && key.trim()) void saveKey() }} />
            </label>
            <p className="muted small">Stored in your dsh home folder (<code>.credentials.yaml</code>, mode 600) and never sent back to the browser.</p>
            <div className="actions"><button className="primary" disabled={key.trim() === ''} onClick={() => void saveKey()} data-testid="onboarding-save">Save key and start</button></div>
          </>
        ) : null}
        <div className="onboarding-other">
          {other ? (
            <>
              <h2>OpenAI-compatible server</h2>
              <ProviderForm onAdded={added => void useProvider(added)} submitLabel="Add and use" />
            </>
          ) : <button className="link-button" onClick={() => setOther(true)} data-testid="onboarding-other">Use another OpenAI-compatible server instead…</button>}
        </div>
        {error ? <div className="inline-error" role="alert">{error}</div> : null}
      </div>
    </div>
  )
}
