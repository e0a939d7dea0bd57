/**
 * Composer completion: `/` commands from the shared registry (`commands.list`) while the message
 * is a lone `/word`, and `@` file mentions (`files.search`, fuzzy over the session's workspace)
 * at the caret. Arrows move, Enter or Tab take the highlighted entry, Escape closes the menu.
 * A taken file is written as `@path` and sent as a mention: the server attaches its text to the
 * message as a reference block (docs/web.md).
 */
import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode, type RefObject } from 'react'
import { call } from './api'
import './workspace.css'

export interface CommandInfo { name: string; description: string; argumentHint: string | null }

type Entry =
  | { kind: 'command'; key: string; command: CommandInfo }
  | { kind: 'file'; key: string; path: string }

/** The `@word` being typed at the caret: its start (the `@`) and the word after it. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | undefined {
  const before = text.slice(0, caret)
  const at = before.lastIndexOf('@')
  if (at < 0) return undefined
  if (at > 0 && !/\s/.test(before[at - 1]!)) return undefined
  const query = before.slice(at + 1)
  if (/\s/.test(query) || query.length > 200) return undefined
  return { start: at, query }
}

/** The mentioned paths still written as `@path` in `text` (a removed mention is not sent). */
export function mentionsIn(text: string, taken: Iterable<string>): string[] {
  return [...taken].filter(path => new RegExp(`(^|\\s)@${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=\\s|$|[,.;:!?)])`).test(text))
}

export function useComposerCompletion(props: {
  sessionId: string
  text: string
  setText(text: string): void
  area: RefObject<HTMLTextAreaElement | null>
}): { menu: ReactNode; onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>): boolean; takeMentions(text: string): string[]; inputProps: Record<string, string | boolean | undefined> } {
  const { sessionId, text, setText, area } = props
  const [caret, setCaret] = useState(0)
  const [commands, setCommands] = useState<CommandInfo[] | null>(null)
  const [files, setFiles] = useState<{ query: string; paths: string[] } | null>(null)
  const [active, setActive] = useState(0)
  const [dismissed, setDismissed] = useState<string | null>(null)
  const taken = useRef(new Set<string>())

  // The caret moves with typing, clicks and arrow keys: follow the textarea's selection.
  useEffect(() => {
    const element = area.current
    if (!element) return
    const update = () => setCaret(element.selectionStart ?? element.value.length)
    update()
    document.addEventListener('selectionchange', update)
    return () => document.removeEventListener('selectionchange', update)
  }, [area, text])

  const typingCommand = /^\/[^\s]*$/.test(text)
  const mention = typingCommand ? undefined : mentionAt(text, Math.min(caret, text.length))

  useEffect(() => {
    if (!typingCommand || commands !== null) return
    call<{ commands: CommandInfo[] }>('commands.list', { id: sessionId }).then(result => setCommands(result.commands), () => setCommands([]))
  }, [typingCommand, commands, sessionId])

  const query = mention?.query
  useEffect(() => {
    if (query === undefined) return
    let live = true
    const timer = setTimeout(() => {
      call<{ files: string[] }>('files.search', { id: sessionId, query, limit: 12 })
        .then(result => { if (live) setFiles({ query, paths: result.files }) }, () => { if (live) setFiles({ query, paths: [] }) })
    }, 60)
    return () => { live = false; clearTimeout(timer) }
  }, [query, sessionId])

  const entries: Entry[] = useMemo(() => {
    if (typingCommand && commands !== null) {
      return commands.filter(command => `/${command.name}`.startsWith(text)).map(command => ({ kind: 'command', key: `/${command.name}`, command }))
    }
    if (mention !== undefined && files !== null) return files.paths.map(path => ({ kind: 'file', key: path, path }))
    return []
  }, [typingCommand, commands, text, mention?.query, files])

  // A new token resets the highlight and re-opens a menu closed with Escape.
  const token = typingCommand ? text : mention === undefined ? null : `@${mention.start}:${mention.query}`
  useEffect(() => { setActive(0) }, [token])
  const open = entries.length > 0 && token !== null && dismissed !== token

  const take = useCallback((entry: Entry) => {
    if (entry.kind === 'command') {
      setText(`/${entry.command.name} `)
      area.current?.focus()
      return
    }
    if (mention === undefined) return
    const before = text.slice(0, mention.start)
    const after = text.slice(mention.start + 1 + mention.query.length)
    const inserted = `@${entry.path}${after.startsWith(' ') ? '' : ' '}`
    taken.current.add(entry.path)
    setText(before + inserted + after)
    const position = before.length + inserted.length
    requestAnimationFrame(() => {
      const element = area.current
      if (!element) return
      element.focus()
      element.setSelectionRange(position, position)
      setCaret(position)
    })
  }, [mention, text, setText, area])

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>): boolean => {
    if (!open) return false
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault()
      setActive(index => (index + (event.key === 'ArrowDown' ? 1 : entries.length - 1)) % entries.length)
      return true
    }
    if ((event.key === 'Enter' && !event.shiftKey && !event.ctrlKey && !event.metaKey) || event.key === 'Tab') {
      event.preventDefault()
      take(entries[Math.min(active, entries.length - 1)]!)
      return true
    }
    if (event.key === 'Escape') {
      event.preventDefault()
      setDismissed(token)
      return true
    }
    return false
  }

  const menu = open ? (
    <ul id="composer-completion" className="command-menu completion-menu" role="listbox" aria-label={entries[0]!.kind === 'command' ? 'Commands' : 'Files'} data-testid={entries[0]!.kind === 'command' ? 'command-menu' : 'mention-menu'}>
      {entries.map((entry, index) => (
        <li key={entry.key} id={`composer-completion-${index}`} role="option" aria-selected={index === active} className={index === active ? 'active' : ''}
          onMouseDown={event => { event.preventDefault(); take(entry) }} onMouseEnter={() => setActive(index)}>
          {entry.kind === 'command' ? (
            <><code>/{entry.command.name}</code>{entry.command.argumentHint ? <span className="muted"> {entry.command.argumentHint}</span> : null}<span className="muted"> — {entry.command.description}</span></>
          ) : <FilePath path={entry.path} />}
        </li>
      ))}
    </ul>
  ) : null

  // The textarea is the combobox of the menu (screen readers follow the highlighted entry).
  const inputProps = { role: 'combobox', 'aria-autocomplete': 'list', 'aria-expanded': open, 'aria-controls': open ? 'composer-completion' : undefined, 'aria-activedescendant': open ? `composer-completion-${Math.min(active, entries.length - 1)}` : undefined }
  return { menu, onKeyDown, takeMentions: (value: string) => mentionsIn(value, taken.current), inputProps }
}

function FilePath({ path }: { path: string }) {
  const slash = path.lastIndexOf('/')
  return <span className="file-entry"><span className="file-name">{path.slice(slash + 1)}</span>{slash > 0 ? <span className="muted file-dir">{path.slice(0, slash)}</span> : null}</span>
}

/** Under a user message: the files its `@` mentions attached. */
export function References({ paths }: { paths: readonly string[] }) {
  return (
    <div className="references" data-testid="references" aria-label="Attached files">
      {paths.map(path => <span key={path} className="reference-chip" title={`${path} was attached to this message`}><span className="muted">file </span>{path}</span>)}
    </div>
  )
}
