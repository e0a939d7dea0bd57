/**
 * `session_event_read`: one stored event of the current session (or a live session of its
 * lineage), in full, by seq, with optional one-line summaries of its neighbours; a large result
 * goes through the spill rule like every built-in tool's output.
 */
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { SessionsServicePlugin } from '../../session/index.js'
import { ToolsPlugin } from '../index.js'
import { SessionEventReadToolPlugin } from './session-event-read.js'
import type { ToolResultRecord } from '../api.js'

async function harness() {
  const ctx = new Context()
  await ctx.plugin(SessionsServicePlugin)
  await ctx.plugin(ToolsPlugin)
  await ctx.plugin(SessionEventReadToolPlugin)
  let calls = 0
  const call = (session: ReturnType<typeof ctx.sessions.create>, args: unknown) => ctx.tools.execute(
    { callId: `call-${++calls}`, name: 'session_event_read', arguments: JSON.stringify(args) },
    { cwd: '/', signal: new AbortController().signal, session },
  )
  return { ctx, call }
}

const text = (record: ToolResultRecord) => record.content.map(block => block.type === 'text' ? block.text : '').join('')

describe('session_event_read', () => {
  it('reads one event of the current session in full, by seq, with the session title', async () => {
    const { ctx, call } = await harness()
    const session = ctx.sessions.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    session.append('session/title', { title: 'Spill check', messageSeqs: [0], source: { kind: 'fallback' } })
    session.append('todo/write', { todos: [{ content: 'UNIQUE_TODO_TEXT', status: 'in_progress' }] })
    const record = await call(session, { seq: 2 })
    expect(record.isError).toBe(false)
    const shown = text(record)
    expect(shown).toContain(`Session ${session.id} — Spill check`)
    expect(shown).toContain('Target event seq 2:')
    const json = /```json\n([\s\S]*)\n```/.exec(shown)![1]!
    expect(JSON.parse(json)).toEqual(JSON.parse(JSON.stringify(session.events[2])))
  })

  it('before/after add one summary line per neighbouring event', async () => {
    const { ctx, call } = await harness()
    const session = ctx.sessions.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    for (const content of ['a', 'b', 'c']) session.append('todo/write', { todos: [{ content, status: 'pending' }] })
    const shown = text(await call(session, { seq: 2, before: 1, after: 5 }))
    expect(shown).toMatch(/^seq 1 todo\/write\b/m)
    expect(shown).toMatch(/^seq 3 todo\/write\b/m)
    expect(shown).not.toMatch(/^seq 0 /m)
    expect(shown).not.toMatch(/^seq 4 /m)
  })

  it('a seq beyond the log, or a session outside the lineage, is an error result naming it', async () => {
    const { ctx, call } = await harness()
    const session = ctx.sessions.create({ cwd: '/w' })
    const beyond = await call(session, { seq: 7 })
    expect(beyond.isError).toBe(true)
    expect(text(beyond)).toMatch(/seq 7.*0 events/)
    const stranger = ctx.sessions.create({ cwd: '/w' })
    const refused = await call(session, { session_id: stranger.id, seq: 0 })
    expect(refused.isError).toBe(true)
    expect(text(refused)).toContain(stranger.id)
    const child = ctx.sessions.create({ cwd: '/w', parentSession: session.id })
    child.append('turn/start', { turn: 1 })
    child.append('todo/write', { todos: [{ content: 'child work', status: 'pending' }] })
    const read = await call(session, { session_id: child.id, seq: 1 })
    expect(read.isError).toBe(false)
    expect(text(read)).toContain('child work')
  })

  it('a large event goes through the spill rule: a preview and the path of the whole text', async () => {
    const { ctx, call } = await harness()
    const session = ctx.sessions.create({ cwd: '/w' })
    session.append('turn/start', { turn: 1 })
    session.append('todo/write', { todos: Array.from({ length: 3000 }, (_, i) => ({ content: `item number ${i} with some words`, status: 'pending' })) })
    const record = await call(session, { seq: 1 })
    expect(record.isError).toBe(false)
    expect(text(record).length).toBeLessThan(60_000)
    expect(JSON.stringify(record.meta)).toMatch(/session_event_read/)
  })
})
