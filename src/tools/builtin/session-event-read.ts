/**
 * `session_event_read`: reads one event of the session log back, in full, by seq, with optional
 * one-line summaries of the events around it. The log is the source of truth: the model can look
 * up what a tool returned, what a request carried or what a child did, even after compaction
 * dropped it from the context. The session is the current one, or a live session of its lineage
 * (an ancestor or a descendant); a large result goes through the spill rule. Off by default: a
 * deployment enables it by loading `SessionEventReadToolPlugin` (row `tool-session-event-read`).
 */
import { Context } from 'cordis'
import type { Tool, ToolContext, ToolOutput } from '../api.js'
import { ToolError } from '../errors.js'
import type { JsonSchema } from '../json-schema.js'
import type { Session } from '../../session/api.js'
import type { SessionEvent } from '../../session/types.js'
import { withSpill } from './spill.js'
import '../../session/api.js'

export interface SessionEventReadArgs {
  readonly session_id?: string
  readonly seq: number
  readonly before?: number
  readonly after?: number
}

/** At most this many neighbour summaries on each side. */
export const MAX_NEIGHBOURS = 50
const SUMMARY_CHARS = 160

export const sessionEventReadParameters = {
  type: 'object',
  properties: {
    session_id: { type: 'string', minLength: 1, description: 'The session to read; omit for the current session.' },
    seq: { type: 'integer', minimum: 0, description: 'Sequence number of the event to read in full.' },
    before: { type: 'integer', minimum: 0, maximum: MAX_NEIGHBOURS, description: 'How many preceding events to summarise, one line each. Omit for none.' },
    after: { type: 'integer', minimum: 0, maximum: MAX_NEIGHBOURS, description: 'How many following events to summarise, one line each. Omit for none.' },
  },
  required: ['seq'],
} as const satisfies JsonSchema

export class SessionQueryError extends ToolError {
  override name = 'SessionQueryError'
}

interface SessionsLike {
  get(id: string): Session | undefined
}

/** The current session or a live session of its lineage (ancestor or descendant), else an error naming it. */
function targetSession(sessions: SessionsLike | undefined, current: Session, id: string | undefined): Session {
  if (id === undefined || id === current.id) return current
  const found = sessions?.get(id)
  const refuse = () => new SessionQueryError(`session ${id} is not readable from this session: only the current session and live sessions of its lineage (parents and subagents) are`, 'SESSION_NOT_AUTHORIZED')
  if (found === undefined) throw refuse()
  const ancestors = (session: Session): string[] => {
    const chain: string[] = []
    for (let at = session.header.parentSession; at !== undefined && !chain.includes(at); at = sessions?.get(at)?.header.parentSession) chain.push(at)
    return chain
  }
  if (ancestors(current).includes(id) || ancestors(found).includes(current.id)) return found
  throw refuse()
}

function titleOf(session: Session): string | undefined {
  for (let seq = session.length - 1; seq >= 0; seq -= 1) {
    const event = session.events[seq]!
    if (event.type === 'session/title') return (event.data as { title?: string }).title
  }
  return undefined
}

/** `seq N type: {data...}` cut to one short line. */
export function summariseEvent(event: SessionEvent): string {
  const data = JSON.stringify(event.data) ?? ''
  const cut = data.length > SUMMARY_CHARS ? `${data.slice(0, SUMMARY_CHARS)}…` : data
  return `seq ${event.seq} ${event.type}: ${cut}`
}

/** The text the model gets: heading, preceding summaries, the event as JSON, following summaries. */
export function renderSessionEvent(session: Session, args: SessionEventReadArgs): string {
  if (args.seq >= session.length) {
    throw new SessionQueryError(`seq ${args.seq} is beyond the end of session ${session.id} (${session.length} events, seq 0..${session.length - 1})`, 'SEQ_OUT_OF_RANGE')
  }
  const title = titleOf(session)
  const parts = [`Session ${session.id}${title !== undefined ? ` — ${title}` : ''}`]
  const before = session.events.slice(Math.max(0, args.seq - (args.before ?? 0)), args.seq)
  if (before.length > 0) parts.push('Preceding events:', ...before.map(summariseEvent))
  parts.push(`Target event seq ${args.seq}:`, '```json', JSON.stringify(session.events[args.seq], null, 2), '```')
  const after = session.events.slice(args.seq + 1, args.seq + 1 + (args.after ?? 0))
  if (after.length > 0) parts.push('Following events:', ...after.map(summariseEvent))
  return parts.join('\n')
}

export function createSessionEventReadTool(ctx: Context): Tool<SessionEventReadArgs> {
  return {
    name: 'session_event_read',
    description: 'Read one event of a session log in full (JSON) by its seq, with optional one-line summaries of the events before and after it. The session is the current one unless session_id names a parent or subagent session. Use it to look back at a tool result, a request or a message that is no longer in your context.',
    parameters: sessionEventReadParameters,
    timeoutMs: 10_000,
    isConcurrencySafe: () => true,
    execute: withSpill('session_event_read', async (args, context: ToolContext): Promise<ToolOutput> => {
      if (context.session === undefined) throw new SessionQueryError('session_event_read runs only inside a session', 'NO_SESSION')
      const session = targetSession(ctx.get('sessions') as SessionsLike | undefined, context.session, args.session_id)
      const text = renderSessionEvent(session, args)
      return { content: [{ type: 'text', text }], meta: { sessionId: session.id, seq: args.seq } }
    }),
  }
}

/** Off by default: load it to let the model read its session log back. */
export class SessionEventReadToolPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context) {
    const tool = createSessionEventReadTool(ctx)
    ctx.effect(() => ctx.tools.register(tool))
  }
}
