/**
 * Tool cards: a registry keyed by tool name. A card gets the call (name, raw JSON arguments,
 * start time) and its result once it lands (text, isError, meta). Built-in cards cover the
 * built-in tools; any other tool falls back to the JSON card. Extensions register more with
 * `registerToolCard` (or `window.dsh.registerToolCard` from a script loaded after the app).
 */
import { createContext, useContext, useState, type ReactNode } from 'react'
import type { ToolCallView } from './fold'
import type { SessionSummary } from './types'
import { highlight } from './markdown'
import { useLiveOutput } from './live-output'
import { MessageImages } from './attachments'

export interface ToolCardProps {
  readonly call: ToolCallView
  /** Parsed arguments, or undefined while they are still streaming / not JSON. */
  readonly args: any
  readonly running: boolean
}

export type ToolCard = (props: ToolCardProps) => ReactNode

const cards = new Map<string, ToolCard>()

export function registerToolCard(name: string, card: ToolCard): () => void {
  cards.set(name, card)
  return () => { if (cards.get(name) === card) cards.delete(name) }
}

export function toolCard(name: string): ToolCard {
  return cards.get(name) ?? (name.startsWith('mcp__') ? McpCard : JsonCard)
}

/**
 * Arguments as JSON, or, while they still stream (`{"command":"ec`), the string fields read so far:
 * cards show the command or path as it arrives instead of raw partial JSON. Undefined when nothing
 * can be read yet.
 */
export function parseArgs(raw: string): any {
  try { return JSON.parse(raw) } catch { /* still streaming, or not JSON */ }
  if (!raw.trimStart().startsWith('{')) return undefined
  const fields: Record<string, string> = {}
  for (const match of raw.matchAll(/"([A-Za-z_][\w]*)"\s*:\s*"((?:[^"\\]|\\.)*)(\\?)/g)) {
    try { fields[match[1]!] = JSON.parse(`"${match[2]}"`) } catch { /* a cut escape: skip the field */ }
  }
  return Object.keys(fields).length > 0 ? fields : undefined
}

function duration(call: ToolCallView): string {
  if (call.result?.meta?.durationMs !== undefined) return formatMs(call.result.meta.durationMs)
  if (call.startedAt !== undefined && call.result) return formatMs(call.result.time - call.startedAt)
  return ''
}

export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  return `${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`
}

/** The frame every card uses: a header row (icon, title, meta, state) and a collapsible body. */
export function ToolShell(props: { icon: string; title: ReactNode; meta?: ReactNode; state: 'running' | 'ok' | 'error'; children?: ReactNode; open?: boolean; testId?: string }) {
  const [open, setOpen] = useState(props.open ?? true)
  return (
    <div className={`tool-card state-${props.state}`} data-testid={props.testId}>
      <button className="tool-head" onClick={() => setOpen(!open)} aria-expanded={open}>
        <span className="tool-icon" aria-hidden>{props.icon}</span>
        <span className="tool-title">{props.title}</span>
        <span className="tool-meta">{props.meta}</span>
        <span className={`tool-state ${props.state}`}>{props.state === 'running' ? <span className="spinner" /> : props.state === 'ok' ? '✓' : '✕'}</span>
      </button>
      {open && props.children !== undefined ? <div className="tool-body">{props.children}</div> : null}
    </div>
  )
}

function state(props: ToolCardProps): 'running' | 'ok' | 'error' {
  if (!props.call.result) return 'running'
  return props.call.result.isError ? 'error' : 'ok'
}

function Output({ text, max = 400 }: { text: string; max?: number }) {
  const lines = text.split('\n')
  const [all, setAll] = useState(lines.length <= max)
  const shown = all ? text : lines.slice(-max).join('\n')
  return (
    <>
      {!all ? <button className="link-button" onClick={() => setAll(true)}>Show all {lines.length} lines</button> : null}
      <pre className="tool-output">{shown}</pre>
    </>
  )
}

/**
 * The last lines of a running command's output as a terminal would leave them: what follows the
 * last carriage return of each line (a progress bar redrawn in place), colour escapes dropped.
 */
function liveTail(text: string, lines = 30): string {
  return text.split('\n').slice(-lines).map(raw => {
    const line = raw.replace(/\r+$/, '')
    return line.slice(line.lastIndexOf('\r') + 1).replace(/\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]/g, '')
  }).join('\n')
}

const BashCard: ToolCard = (props) => {
  const { call, args } = props
  const result = call.result
  // While it runs, what the command printed so far (the stream's `output` events).
  const live = useLiveOutput(call.id)
  const exit = result?.meta?.exitCode
  const full = result ? result.text.replace(/\n?\[exit code: -?\d+\]\s*$/, '') : ''
  // SB-4: the sandbox's denial marker lines are drawn apart from the output.
  const denials = full.split('\n').filter(line => line.startsWith('[sandbox: '))
  const output = denials.length > 0 ? full.split('\n').filter(line => !line.startsWith('[sandbox: ')).join('\n') : full
  // A non-zero exit or a timeout is a failure even when the tool result itself is not an error.
  const failed = result !== undefined && ((typeof exit === 'number' && exit !== 0) || result.meta?.timedOut === true)
  return (
    <ToolShell icon="❯" testId="card-bash" state={failed ? 'error' : state(props)}
      title={<span className="mono">{args?.description ?? 'bash'}</span>}
      meta={<>{result?.meta?.job?.id ? <span className="pill running" data-testid="background-job">background job {result.meta.job.id}</span> : null}{exit !== undefined && exit !== null ? <span className={`exit ${exit === 0 ? 'ok' : 'bad'}`}>exit {exit}</span> : null}{result?.meta?.timedOut ? <span className="exit bad">timed out</span> : null}<span>{duration(call)}</span></>}>
      <div className="terminal">
        <div className="terminal-cmd"><span className="prompt">$</span><code dangerouslySetInnerHTML={{ __html: highlight(typeof args?.command === 'string' ? args.command : args === undefined && !props.running ? call.arguments : '', 'bash') }} /></div>
        {result ? <Output text={output || '(no output)'} /> : live ? <pre className="tool-output live-output" data-testid="live-output">{liveTail(live)}</pre> : <div className="terminal-wait">running…</div>}
        {denials.length > 0 ? <div className="sandbox-denial" role="note" data-testid="sandbox-denial">{denials.map(line => <div key={line}>{line}</div>)}</div> : null}
      </div>
    </ToolShell>
  )
}

const ReadCard: ToolCard = (props) => {
  const { args, call } = props
  const range = args?.offset || args?.limit ? `lines ${args.offset ?? 1}–${(args.offset ?? 1) + (args.limit ?? 2000) - 1}` : ''
  return (
    <ToolShell icon="≡" testId="card-read" state={state(props)} open={false} title={<span className="mono">{args?.file_path ?? 'read'}</span>} meta={<span>{range}</span>}>
      {call.result ? <Output text={call.result.text} max={200} /> : null}
    </ToolShell>
  )
}

export function Diff({ text }: { text: string }) {
  const lines = text.replace(/\n+$/, '').split('\n').filter(line => !line.startsWith('===') && !line.startsWith('Index:') && !line.startsWith('\\ No newline'))
  return (
    <pre className="diff">{lines.map((line, index) => {
      const cls = line.startsWith('+++') || line.startsWith('---') ? 'diff-file' : line.startsWith('@@') ? 'diff-hunk' : line.startsWith('+') ? 'diff-add' : line.startsWith('-') ? 'diff-del' : ''
      return <div key={index} className={cls}>{line || ' '}</div>
    })}</pre>
  )
}

function simpleDiff(before: string, after: string): string {
  return [...before.split('\n').map(line => `-${line}`), ...after.split('\n').map(line => `+${line}`)].join('\n')
}

const EditCard: ToolCard = (props) => {
  const { args, call } = props
  const meta = call.result?.meta
  const diff = typeof meta?.diff === 'string' ? meta.diff : args ? simpleDiff(args.old_string ?? '', args.new_string ?? '') : ''
  const what = meta?.replacements !== undefined ? `${meta.replacements} replacement${meta.replacements === 1 ? '' : 's'}` : ''
  return (
    <ToolShell icon="✎" testId="card-edit" state={state(props)} title={<span className="mono">{args?.file_path ?? 'edit'}</span>} meta={<span>{what}</span>}>
      {call.result?.isError ? <pre className="tool-output error-text">{call.result.text}</pre> : <Diff text={diff} />}
    </ToolShell>
  )
}

const WriteCard: ToolCard = (props) => {
  const { args, call } = props
  const meta = call.result?.meta
  const diff = typeof meta?.diff === 'string' ? meta.diff : typeof args?.content === 'string' ? args.content.replace(/\n$/, '').split('\n').map((line: string) => `+${line}`).join('\n') : ''
  return (
    <ToolShell icon="✚" testId="card-write" state={state(props)} title={<span className="mono">{args?.file_path ?? 'write'}</span>}
      meta={<span>{meta ? `${meta.created ? 'created' : 'updated'} · ${meta.lines} lines` : ''}</span>}>
      {call.result?.isError ? <pre className="tool-output error-text">{call.result.text}</pre> : <Diff text={diff} />}
    </ToolShell>
  )
}

const ListCard = (label: string): ToolCard => (props) => {
  const { args, call } = props
  const lines = call.result ? call.result.text.split('\n').filter(Boolean) : []
  return (
    <ToolShell icon="⌕" testId={`card-${label}`} state={state(props)} open={false}
      title={<><span className="muted">{label}</span> <span className="mono">{args?.pattern ?? ''}</span>{args?.path ? <span className="muted"> in {args.path}</span> : null}</>}
      meta={<span>{call.result ? `${lines.length} line${lines.length === 1 ? '' : 's'}` : ''}</span>}>
      {call.result ? <ul className="path-list">{lines.slice(0, 500).map((line, index) => <li key={index} className="mono">{line}</li>)}</ul> : null}
    </ToolShell>
  )
}

const WebFetchCard: ToolCard = (props) => {
  const { args, call } = props
  const meta = call.result?.meta
  return (
    <ToolShell icon="◎" testId="card-web" state={state(props)} open={false} title={<span className="mono">{meta?.url ?? args?.url ?? 'web_fetch'}</span>}
      meta={<span>{meta ? `${meta.status} · ${meta.contentType ?? ''}${meta.truncated ? ' · truncated' : ''}` : ''}</span>}>
      {call.result ? <Output text={call.result.text} max={200} /> : null}
    </ToolShell>
  )
}

/** `web_search`: the queries, then the sources as links (http(s) only; anything else shows as text). */
const WebSearchCard: ToolCard = (props) => {
  const { args, call } = props
  const queries: string[] = Array.isArray(args?.queries) ? args.queries.filter((query: unknown): query is string => typeof query === 'string') : []
  const sources: { url: string; title?: string; snippet?: string; publishedAt?: string }[] | undefined =
    Array.isArray(call.result?.meta?.sources) && call.result?.isError !== true ? call.result.meta.sources : undefined
  return (
    <ToolShell icon="⌕" testId="card-web-search" state={state(props)} open={false} title={<span>Search {queries.join(', ')}</span>}
      meta={<span>{sources ? `${sources.length} source${sources.length === 1 ? '' : 's'}` : ''}</span>}>
      {sources ? (
        <ul className="search-sources">{sources.map((source, index) => (
          <li key={index}>
            {/^https?:\/\//i.test(source.url) ? <a href={source.url} target="_blank" rel="noopener noreferrer">{source.title ?? source.url}</a> : <span className="mono">{source.url}</span>}
            {source.snippet ? <span className="muted"> — {source.snippet}</span> : null}
            {source.publishedAt ? <span className="muted"> ({source.publishedAt})</span> : null}
          </li>
        ))}</ul>
      ) : call.result ? <Output text={call.result.text} max={200} /> : null}
    </ToolShell>
  )
}

export function TodoStrip({ todos }: { todos: readonly { content: string; status: string }[] }) {
  const done = todos.filter(todo => todo.status === 'completed').length
  return (
    <div className="todo-strip" data-testid="todo-strip">
      <div className="todo-head">Plan · {done}/{todos.length} done</div>
      <ul>{todos.map((todo, index) => (
        <li key={index} className={`todo ${todo.status}`}><span className="todo-mark">{todo.status === 'completed' ? '✓' : todo.status === 'in_progress' ? '◐' : '○'}</span>{todo.content}</li>
      ))}</ul>
    </div>
  )
}

const TodoCard: ToolCard = (props) => {
  const todos = props.args?.todos
  return Array.isArray(todos) ? <TodoStrip todos={todos} /> : <JsonCard {...props} />
}

export const JsonCard: ToolCard = (props) => {
  const { call, args } = props
  return (
    <ToolShell icon="⚙" testId="card-json" state={state(props)} open={false} title={<span className="mono">{call.name}</span>}>
      <pre className="tool-output json">{args !== undefined ? JSON.stringify(args, null, 2) : call.arguments}</pre>
      {call.result ? <Output text={call.result.text} max={200} /> : null}
    </ToolShell>
  )
}

/** An MCP tool: server, the server's own tool name, arguments and result (meta.mcp names them). */
export const McpCard: ToolCard = (props) => {
  const { call, args } = props
  const named = call.result?.meta?.mcp as { server?: string; tool?: string } | undefined
  const parts = /^mcp__(.+?)__(.+)$/.exec(call.name)
  const server = named?.server ?? parts?.[1] ?? '?'
  const tool = named?.tool ?? parts?.[2] ?? call.name
  return (
    <ToolShell icon="⧉" testId="card-mcp" state={state(props)} open={false}
      title={<><span className="badge">{server}</span> <span className="mono">{tool}</span></>}
      meta={<span>{duration(call)}</span>}>
      <div className="mcp-args"><div className="muted">arguments</div>
        <pre className="tool-output json">{args !== undefined ? JSON.stringify(args, null, 2) : call.arguments}</pre></div>
      {call.result ? <><div className="muted">result</div><Output text={call.result.text} max={200} /></> : null}
    </ToolShell>
  )
}

/** What delegation cards need from the app: the known sessions and navigation. */
export const DelegationContext = createContext<{ sessionId: string | null; sessions: readonly SessionSummary[]; onSelect(id: string): void }>({
  sessionId: null, sessions: [], onSelect: () => {},
})

/**
 * A child agent inline in its parent's conversation: label, status, its latest output line
 * while it works, and a link to the child's own conversation.
 */
const SubagentCard: ToolCard = (props) => {
  const { call, args } = props
  const { sessionId, sessions, onSelect } = useContext(DelegationContext)
  const childId: string | undefined = call.result?.meta?.childSessionId
    ?? sessions.find(entry => entry.parentCallId === call.id && entry.parentSession === sessionId)?.id
  const child = childId === undefined ? undefined : sessions.find(entry => entry.id === childId)
  const running = child?.status === 'running' || (!call.result && child !== undefined)
  const status = running ? 'running' : call.result?.isError ? 'failed' : child !== undefined ? 'idle' : call.result ? 'done' : 'starting'
  return (
    <ToolShell icon="⑂" testId="card-subagent" state={state(props)} title={<span>{args?.description ?? call.name}</span>}
      meta={<span className={`pill ${running ? 'running' : 'idle'}`} data-testid="subagent-status">{status}</span>}>
      {child?.lastLine ? <div className="subagent-line mono" data-testid="subagent-line">{child.lastLine}</div> : null}
      {childId !== undefined ? (
        <button className="link-button" onClick={() => onSelect(childId)} data-testid="open-subagent">Open the child's conversation</button>
      ) : null}
      {call.result ? <Output text={call.result.text} max={40} /> : null}
    </ToolShell>
  )
}

/** `job_output` (docs/jobs.md): the job, its status, and the output it printed since the last read. */
const JobOutputCard: ToolCard = (props) => {
  const { call, args } = props
  const job = call.result?.meta?.job as { id?: string; status?: string; detail?: string } | undefined
  const text = call.result ? call.result.text.replace(/\n?\[status: [^\]]*\]$/, '') : ''
  const failed = job?.status === 'failed'
  return (
    <ToolShell icon="❯" testId="card-job-output" state={failed ? 'error' : state(props)}
      title={<span className="mono">job {args?.job_id ?? ''}</span>}
      meta={<>{job?.status ? <span className={`pill ${job.status === 'running' ? 'running' : 'idle'}`} data-testid="job-status">{job.detail ? `${job.status} (${job.detail})` : job.status}</span> : null}<span>{duration(call)}</span></>}>
      {call.result ? <div className="terminal"><Output text={text || '(no new output)'} /></div> : <div className="terminal-wait">reading…</div>}
    </ToolShell>
  )
}

/** `read_image`: the file and the image the model was shown. */
const ReadImageCard: ToolCard = (props) => {
  const { call, args } = props
  const { sessionId } = useContext(DelegationContext)
  const image = call.result?.meta?.image as { mediaType?: string; width?: number; height?: number } | undefined
  return (
    <ToolShell icon="▣" testId="card-read-image" state={state(props)} title={<span className="mono">{args?.file_path ?? 'read_image'}</span>}
      meta={<>{image?.width ? <span>{image.mediaType} · {image.width}×{image.height}</span> : null}<span>{duration(call)}</span></>}>
      {call.result?.images && sessionId !== null ? <MessageImages sessionId={sessionId} images={call.result.images} />
        : call.result ? <Output text={call.result.text} max={40} /> : null}
    </ToolShell>
  )
}

/** A run_code program: its description, the calls it made nested as their own cards, then what it printed and returned. */
const CodeCard: ToolCard = (props) => {
  const inner = props.call.inner ?? []
  return (
    <ToolShell icon="{}" title={props.args?.description ?? 'code'} meta={inner.length > 0 ? `${inner.length} call${inner.length === 1 ? '' : 's'}` : undefined} state={state(props)} testId="code-card">
      {inner.length > 0 ? <div className="tool-inner">{inner.map(call => <ToolCallCard key={call.id} call={call} />)}</div> : null}
      {props.call.result ? <Output text={props.call.result.text} /> : null}
    </ToolShell>
  )
}

registerToolCard('run_code', CodeCard)
registerToolCard('read_image', ReadImageCard)
registerToolCard('job_output', JobOutputCard)
registerToolCard('subagent', SubagentCard)
registerToolCard('subagent_fork', SubagentCard)
registerToolCard('bash', BashCard)
registerToolCard('read', ReadCard)
registerToolCard('edit', EditCard)
registerToolCard('write', WriteCard)
registerToolCard('glob', ListCard('glob'))
registerToolCard('grep', ListCard('grep'))
registerToolCard('todo_write', TodoCard)
registerToolCard('web_fetch', WebFetchCard)
registerToolCard('web_search', WebSearchCard)

export function ToolCallCard({ call }: { call: ToolCallView }) {
  const Card = toolCard(call.name)
  return <Card call={call} args={parseArgs(call.arguments)} running={!call.result} />
}
