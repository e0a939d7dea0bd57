/**
 * Terminal tool cards (docs/pty-terminals.md): a `terminal_*` call shows which terminal, what
 * was sent (control keys spelled out), how the wait ended and the terminal's screen as the
 * result's viewport has it: the rendered screen text, never raw escapes. A send that is still
 * waiting says so; its screen arrives with the result.
 */
import { ToolShell, registerToolCard, type ToolCard, type ToolCardProps } from './cards'

/** Control characters as keys (`^C`, `⏎`, `Esc`), so a sent Ctrl-C reads as one. */
export function spellKeys(text: string): string {
  let out = ''
  for (const char of text) {
    const code = char.codePointAt(0)!
    if (char === '\r' || char === '\n') out += '⏎'
    else if (char === '\t') out += '⇥'
    else if (code === 0x1b) out += 'Esc '
    else if (code < 0x20) out += `^${String.fromCharCode(code + 0x40)}`
    else if (code === 0x7f) out += '⌫'
    else out += char
  }
  return out
}

function cardState(props: ToolCardProps): 'running' | 'ok' | 'error' {
  if (!props.call.result) return 'running'
  return props.call.result.isError ? 'error' : 'ok'
}

/** The screen a result shows: the viewport of open and send, the page of read, the text of the rest. */
function screenOf(props: ToolCardProps): string | undefined {
  const result = props.call.result
  if (result === undefined) return undefined
  if (typeof result.meta?.viewport === 'string') return result.meta.viewport
  if (props.call.name === 'terminal_read' || props.call.name === 'terminal_list' || result.isError) return result.text
  return undefined
}

const TerminalCard: ToolCard = (props) => {
  const { call, args } = props
  const result = call.result
  const meta = result?.meta as Record<string, any> | undefined
  const verb = call.name.slice('terminal_'.length)
  const id: string = typeof args?.sessionId === 'string' ? args.sessionId : typeof meta?.terminal?.id === 'string' ? meta.terminal.id : ''
  const name: string | undefined = typeof args?.name === 'string' ? args.name : meta?.terminal?.name
  const status = meta?.sessionStatus as { kind?: string; exitCode?: number | null; signal?: string | null } | undefined
  const exited = status?.kind === 'exited'
  const screen = screenOf(props)
  const sent = typeof args?.text === 'string' ? spellKeys(args.text) + (args.submit === false ? '' : ' ⏎') : undefined
  const title = call.name === 'terminal_open' ? `${args?.type ?? 'terminal'}${name ? ` (${name})` : ''}`
    : call.name === 'terminal_signal' ? `${id} ${args?.signal ?? ''}` : call.name === 'terminal_list' ? 'terminals' : id
  return (
    <ToolShell icon="▭" testId="card-terminal" state={cardState(props)}
      title={<span className="mono">terminal {verb} · {title}</span>}
      meta={<>
        {typeof meta?.waitReason === 'string' ? <span className="pill idle" data-testid="terminal-wait">wait: {meta.waitReason}</span> : null}
        {exited ? <span className="exit bad" data-testid="terminal-exited">exited {status?.exitCode ?? status?.signal ?? ''}</span> : null}
        {meta?.job?.id ? <span className="pill running">background job {meta.job.id}</span> : null}
      </>}>
      <div className="terminal">
        {sent !== undefined ? <div className="terminal-cmd"><span className="prompt">⌨</span><code data-testid="terminal-sent">{sent}</code></div> : null}
        {screen !== undefined ? <pre className="tool-output terminal-screen" data-testid="terminal-screen">{screen || '(blank screen)'}</pre>
          : result === undefined ? <div className="terminal-wait">{call.name === 'terminal_send' ? 'waiting for the terminal…' : 'running…'}</div>
          : <pre className="tool-output">{result.text}</pre>}
      </div>
    </ToolShell>
  )
}

for (const tool of ['terminal_open', 'terminal_send', 'terminal_read', 'terminal_signal', 'terminal_list', 'terminal_close']) registerToolCard(tool, TerminalCard)
