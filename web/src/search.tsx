/**
 * Search across session content from the sidebar's search box: from three characters on,
 * `sessions.search` finds the text in prompts, answers, tool calls and tool output of every
 * stored session; choosing a hit opens that session scrolled to the message (and flashes it).
 */
import { useEffect, useState, type MutableRefObject, type RefObject } from 'react'
import { call } from './api'
import './workspace.css'

export interface SearchHit {
  sessionId: string; title: string | null; cwd?: string; seq: number; turn: number | null
  kind: 'user' | 'assistant' | 'tool-call' | 'tool-result'; toolName?: string; before: string; match: string; after: string; time: number
}

const KIND: Record<SearchHit['kind'], string> = { user: 'prompt', assistant: 'answer', 'tool-call': 'tool call', 'tool-result': 'tool output' }
const FOCUS_EVENT = 'dsh:focus-seq'
let pending: { id: string; seq: number } | null = null

/** Asks the conversation of session `id` (open now or next) to scroll to the item holding `seq`. */
export function requestFocus(id: string, seq: number): void {
  pending = { id, seq }
  window.dispatchEvent(new CustomEvent(FOCUS_EVENT))
}

export function ContentSearch(props: { query: string; onOpen(id: string): void }) {
  const needle = props.query.trim()
  const [result, setResult] = useState<{ query: string; hits: SearchHit[]; truncated: boolean } | { query: string; error: string } | null>(null)
  useEffect(() => {
    if (needle.length < 3) { setResult(null); return }
    let live = true
    const timer = setTimeout(() => {
      call<{ hits: SearchHit[]; truncated: boolean }>('sessions.search', { query: needle, limit: 30 })
        .then(found => { if (live) setResult({ query: needle, ...found }) }, error => { if (live) setResult({ query: needle, error: (error as Error).message }) })
    }, 200)
    return () => { live = false; clearTimeout(timer) }
  }, [needle])
  if (needle.length < 3 || result === null) return null
  return (
    <section className="content-search" aria-label="Matches in session content" data-testid="content-search">
      <div className="group-head">In messages and tool output</div>
      {'error' in result ? <div className="empty-note">{result.error}</div>
        : result.hits.length === 0 ? <div className="empty-note">No message matches.</div>
          : result.hits.map(hit => (
            <button key={`${hit.sessionId}:${hit.seq}`} className="search-hit-row" data-testid="content-hit"
              onClick={() => { requestFocus(hit.sessionId, hit.seq); props.onOpen(hit.sessionId) }}>
              <span className="search-hit-title">{hit.title ?? 'Untitled session'}<span className="muted"> · {hit.toolName ? `${hit.toolName} ${KIND[hit.kind]}` : KIND[hit.kind]}</span></span>
              <span className="search-hit-snippet">{hit.before}<mark>{hit.match}</mark>{hit.after}</span>
            </button>
          ))}
      {'hits' in result && result.truncated ? <div className="empty-note">More matches: refine the search.</div> : null}
    </section>
  )
}

/**
 * In a conversation: takes a focus request for this session and scrolls to the item holding the
 * seq (the newest item at or before it), loading and showing earlier pages first when needed.
 */
export function useSearchFocus(options: {
  id: string
  items: readonly { seq: number; key: string }[]
  loaded: boolean
  container: RefObject<HTMLElement | null>
  shown: number
  setShown(count: number): void
  stick: MutableRefObject<boolean>
  /** History pages: the first loaded seq, whether earlier pages exist, and loading them down to a seq. */
  from: number
  more: boolean
  earlier(downTo: number): Promise<void>
}): void {
  const { id, items, loaded, container, shown, setShown, stick, from, more, earlier } = options
  const [target, setTarget] = useState<number | null>(null)
  useEffect(() => {
    const take = () => {
      if (pending?.id !== id) return
      setTarget(pending.seq)
      pending = null
    }
    take()
    window.addEventListener(FOCUS_EVENT, take)
    return () => window.removeEventListener(FOCUS_EVENT, take)
  }, [id])
  useEffect(() => {
    if (target === null || !loaded || items.length === 0) return
    // A hit before the loaded pages: load them down to its seq first (one request).
    if (target < from && more) {
      void earlier(target)
      return
    }
    let index = 0
    for (let i = 0; i < items.length; i += 1) if (items[i]!.seq <= target) index = i
    const needed = items.length - index
    if (shown < needed) {
      setShown(needed + 20)
      return
    }
    stick.current = false
    const anchor = container.current?.querySelector(`[data-seq="${items[index]!.seq}"]`)
    const element = (anchor?.firstElementChild ?? anchor) as HTMLElement | null
    if (!element) return
    setTarget(null)
    element.scrollIntoView({ block: 'center' })
    // Rows above lay out as they come into view (content-visibility): settle once more.
    requestAnimationFrame(() => element.scrollIntoView({ block: 'center' }))
    element.classList.add('search-hit')
    container.current?.querySelectorAll<HTMLElement>('[data-search-hit]').forEach(old => { delete old.dataset.searchHit })
    element.dataset.searchHit = 'true'
    setTimeout(() => { element.classList.remove('search-hit') }, 2500)
  }, [target, loaded, items, shown, setShown, container, stick, from, more, earlier])
}
