/**
 * Search across session content: user prompts, assistant text, tool calls' arguments and tool
 * results of the stored (and live) sessions. Case-insensitive plain text, never a pattern.
 * Bounded: the newest MAX_SESSIONS sessions are scanned, at most `limit` hits in all and
 * MAX_HITS_PER_SESSION per session, each event's text up to MAX_EVENT_CHARS.
 */
import type { SessionEvent } from '../session/types.js'

export const MAX_SESSIONS = 300
export const MAX_HITS_PER_SESSION = 5
export const MAX_EVENT_CHARS = 200_000
export const SNIPPET_CHARS = 70
export const MIN_QUERY = 2
export const MAX_QUERY = 200

export type HitKind = 'user' | 'assistant' | 'tool-call' | 'tool-result'

export interface SearchHit {
  readonly sessionId: string
  readonly title: string | null
  readonly cwd?: string
  /** The event holding the text; the page opens the session there. */
  readonly seq: number
  readonly turn: number | null
  readonly kind: HitKind
  readonly toolName?: string
  /** The snippet in three parts, so the page can mark the match without markup. */
  readonly before: string
  readonly match: string
  readonly after: string
  readonly time: number
}

interface Searchable { readonly kind: HitKind; readonly text: string; readonly toolName?: string; readonly turn: number | null }

function textBlocks(content: unknown): string {
  if (!Array.isArray(content)) return ''
  return content.filter(block => block?.type === 'text' && typeof block.text === 'string').map(block => block.text as string).join('\n')
}

/** The searchable text of one event, or undefined for events that carry none. */
export function searchableText(event: SessionEvent, toolNames: Map<string, string>): Searchable | undefined {
  const data = event.data as Record<string, any> | undefined
  const turn = typeof data?.turn === 'number' ? data.turn : null
  switch (event.type) {
    case 'user/message':
      return { kind: 'user', text: textBlocks(data?.content), turn }
    case 'assistant/message':
      return { kind: 'assistant', text: textBlocks(data?.message?.content), turn }
    case 'tool/call':
      if (typeof data?.callId === 'string') toolNames.set(data.callId, String(data.name))
      return { kind: 'tool-call', text: typeof data?.arguments === 'string' ? data.arguments : '', toolName: String(data?.name ?? ''), turn }
    case 'tool/result': {
      const block = data?.message?.content?.[0]
      const name = toolNames.get(block?.toolCallId)
      return { kind: 'tool-result', text: textBlocks(block?.content), turn, ...name === undefined ? {} : { toolName: name } }
    }
    default:
      return undefined
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ')
}

/** Hits of `needle` (lower-cased) in one session's events, newest session content last. */
export function searchEvents(
  session: { id: string; title: string | null; cwd?: string },
  events: readonly SessionEvent[],
  needle: string,
  max: number,
): SearchHit[] {
  const hits: SearchHit[] = []
  const toolNames = new Map<string, string>()
  for (const event of events) {
    if (hits.length >= max) break
    const found = searchableText(event, toolNames)
    if (found === undefined || found.text === '') continue
    const text = found.text.length > MAX_EVENT_CHARS ? found.text.slice(0, MAX_EVENT_CHARS) : found.text
    const index = text.toLowerCase().indexOf(needle)
    if (index < 0) continue
    const start = Math.max(0, index - SNIPPET_CHARS)
    const end = Math.min(text.length, index + needle.length + SNIPPET_CHARS)
    hits.push({
      sessionId: session.id, title: session.title, ...session.cwd === undefined ? {} : { cwd: session.cwd },
      seq: event.seq, turn: found.turn, kind: found.kind, ...found.toolName ? { toolName: found.toolName } : {},
      before: (start > 0 ? '…' : '') + oneLine(text.slice(start, index)).trimStart(),
      match: oneLine(text.slice(index, index + needle.length)),
      after: oneLine(text.slice(index + needle.length, end)).trimEnd() + (end < text.length ? '…' : ''),
      time: event.time,
    })
  }
  return hits
}

/** Validates a query: plain text, MIN_QUERY..MAX_QUERY characters after trimming. */
export function searchNeedle(query: unknown): string | string[] {
  if (typeof query !== 'string') return ['"query" must be a string']
  const trimmed = query.trim()
  if (trimmed.length < MIN_QUERY) return [`"query" needs at least ${MIN_QUERY} characters`]
  if (trimmed.length > MAX_QUERY) return [`"query" is limited to ${MAX_QUERY} characters`]
  return trimmed.toLowerCase()
}
