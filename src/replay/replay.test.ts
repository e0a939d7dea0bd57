import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { LlmServicePlugin } from '../llm/index.js'
import type { LlmCallOptions, StreamChunk } from '../llm/types.js'
import { applyOverride, ReplayAdapter, ReplayPlugin, replayModelInfo, scriptFromEvents, scriptFromLogText, substitute, type ReplayEntry } from './index.js'
import type { SessionEvent } from '../session/types.js'

const chunk = (turn: number, step: number, c: StreamChunk, seq = 0): SessionEvent =>
  ({ type: 'assistant/chunk', seq, time: 0, data: { turn, step, chunk: c } }) as SessionEvent
const other = (type: string): SessionEvent => ({ type, seq: 0, time: 0, data: {} }) as SessionEvent
const finish = (kind: 'stop' | 'tool-calls'): StreamChunk => ({ type: 'finish', reason: { kind } })

async function drain(iterable: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const c of iterable) out.push(c)
  return out
}

const request = (sessionId = 's', text = ''): LlmCallOptions => ({
  provider: 'rp', model: 'm', meta: { sessionId },
  messages: [{ id: '1', role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text }] }],
})

describe('replay adapter: the recorder\'s fence (beforeCall)', () => {
  it('serves a session\'s call only once beforeCall for that session settled', async () => {
    let release!: () => void
    const gate = new Promise<void>(resolve => { release = resolve })
    const held: (string | undefined)[] = []
    const adapter = new ReplayAdapter({
      provider: 'rp',
      sessions: { child: [{ kind: 'chunks', chunks: [{ type: 'text-delta', index: 0, text: 'child' }, finish('stop')] }] },
      default: [{ kind: 'chunks', chunks: [{ type: 'text-delta', index: 0, text: 'parent' }, finish('stop')] }],
      beforeCall: async (id) => { if (id === 'child') { held.push(id); await gate } },
    })
    let served = false
    const child = drain(adapter.stream(request('child'))).then((chunks) => { served = true; return chunks })
    expect(await drain(adapter.stream(request('parent')))).toEqual([{ type: 'text-delta', index: 0, text: 'parent' }, finish('stop')])
    expect(held).toEqual(['child'])
    expect(served).toBe(false)
    release()
    expect(await child).toEqual([{ type: 'text-delta', index: 0, text: 'child' }, finish('stop')])
  })
})

describe('replay adapter', () => {
  it('derives one entry per step attempt, error finishes included; an unfinished run is a hang', () => {
    const err: StreamChunk = { type: 'finish', reason: { kind: 'error', failure: { code: 'EMPTY_RESPONSE', message: 'x' } } }
    const script = scriptFromEvents([
      other('step/start'),
      chunk(1, 1, err),
      other('llm/retry'),
      chunk(1, 1, { type: 'text-delta', index: 0, text: 'a' }), chunk(1, 1, finish('stop')),
      other('step/end'),
      chunk(2, 1, { type: 'text-delta', index: 0, text: 'partial' }),
      other('assistant/message'),
    ])
    expect(script).toEqual([
      { kind: 'chunks', chunks: [err] },
      { kind: 'chunks', chunks: [{ type: 'text-delta', index: 0, text: 'a' }, finish('stop')] },
      { kind: 'hang', chunks: [{ type: 'text-delta', index: 0, text: 'partial' }] },
    ])
  })

  it('reads projected logs with packed rows through the codec', () => {
    const text = [
      '{"type":"session","version":0,"id":"x","createdAt":0,"delegationDepth":0}',
      '{"type":"turn/start","data":{"turn":1}}',
      '{"type":"step/start","data":{"turn":1,"step":1}}',
      '{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b","c"]}}',
      '{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}',
    ].join('\n') + '\n'
    const script = scriptFromLogText(text)
    expect(script).toHaveLength(1)
    expect(script[0]!.chunks!.map(c => c.type)).toEqual(['text-delta', 'text-delta', 'text-delta', 'finish'])
  })

  it('overrides replace the script or patch entries; bad entries are refused clearly', () => {
    const base: ReplayEntry[] = [{ kind: 'chunks', chunks: [finish('stop')] }, { kind: 'chunks', chunks: [finish('stop')] }]
    expect(applyOverride(base, [{ kind: 'hang' }])).toEqual([{ kind: 'hang' }])
    const patched = applyOverride(base, { patches: [{ at: 1, entry: { kind: 'throw', message: 'm', code: 'AUTH' } }] })
    expect(patched[1]).toEqual({ kind: 'throw', message: 'm', code: 'AUTH' })
    expect(patched[0]).toBe(base[0])
    expect(() => applyOverride(base, [{ kind: 'explode' }])).toThrow(/unknown entry kind "explode"/)
    expect(() => applyOverride(base, { patches: [{ at: 9, entry: { kind: 'hang' } }] })).toThrow(/at must be an index/)
    expect(() => applyOverride(base, { nope: 1 })).toThrow(/ReplayEntry\[\] or \{patches/)
  })

  it('fills {{fromRequest:regex}} with the last match in the live request text', () => {
    expect(substitute({ a: ['id {{fromRequest:goal-[0-9a-f]+}}'] }, () => 'goal-aa then goal-bb')).toEqual({ a: ['id goal-bb'] })
    expect(() => substitute('{{fromRequest:zzz}}', () => 'nothing')).toThrow(/matched nothing/)
  })

  it('fills {{cwd}} with the live folder, JSON-escaped inside tool-call arguments (INDEX.md placeholders)', () => {
    const chunk = { type: 'tool-call-delta', argumentsDelta: '{"path":"{{cwd}}/note.txt"}', text: 'in {{cwd}}' }
    expect(substitute(chunk, () => '', '/tmp/a "b"')).toEqual({ type: 'tool-call-delta', argumentsDelta: '{"path":"/tmp/a \\"b\\"/note.txt"}', text: 'in /tmp/a "b"' })
    expect(JSON.parse(substitute(chunk, () => '', '/tmp/a "b"').argumentsDelta)).toEqual({ path: '/tmp/a "b"/note.txt' })
    expect(substitute(chunk, () => '')).toEqual(chunk)
  })

  it('serves calls in order per session, throws recorded errors, fails clearly when calls run out and reports leftovers', async () => {
    const ctx = new Context()
    await ctx.plugin(LlmServicePlugin).await()
    const adapter = new ReplayAdapter({
      provider: 'rp',
      sessions: {
        s: [{ kind: 'chunks', chunks: [{ type: 'text-delta', index: 0, text: 'id={{fromRequest:n[0-9]}}' }, finish('stop')] }, { kind: 'throw', message: 'HTTP 401', code: 'AUTH', status: 401 }],
        t: [{ kind: 'chunks', chunks: [finish('stop')] }, { kind: 'chunks', chunks: [finish('stop')] }],
      },
    })
    ctx.llm.register({ adapter, models: [replayModelInfo('rp', 'm')] })
    expect(await drain(ctx.llm.stream(request('s', 'value n7')))).toEqual([{ type: 'text-delta', index: 0, text: 'id=n7' }, finish('stop')])
    expect(await drain(ctx.llm.stream(request('t')))).toEqual([finish('stop')])
    expect((await drain(ctx.llm.stream(request('s')))).at(-1)).toEqual({ type: 'finish', reason: { kind: 'error', failure: { code: 'AUTH', message: 'HTTP 401', status: 401 } } })
    const exhausted = (await drain(ctx.llm.stream(request('s')))).at(-1)
    expect(exhausted).toMatchObject({ type: 'finish', reason: { kind: 'error', failure: { code: 'REPLAY_EXHAUSTED' } } })
    expect(adapter.leftover()).toEqual([{ sessionId: 't', remaining: 1 }])
  })

  it('a hang entry emits its chunks, then waits for the abort', async () => {
    const ctx = new Context()
    await ctx.plugin(LlmServicePlugin).await()
    let hung!: () => void
    const ready = new Promise<void>(r => { hung = r })
    const adapter = new ReplayAdapter({ provider: 'rp', default: [{ kind: 'hang', chunks: [{ type: 'text-delta', index: 0, text: 'partial' }] }], onHang: () => hung() })
    ctx.llm.register({ adapter, models: [replayModelInfo('rp', 'm')] })
    const abort = new AbortController()
    const done = drain(ctx.llm.stream({ ...request(), signal: abort.signal }))
    await ready
    abort.abort()
    const chunks = await done
    expect(chunks[0]).toEqual({ type: 'text-delta', index: 0, text: 'partial' })
    expect(chunks.at(-1)).toMatchObject({ type: 'finish', reason: { kind: 'aborted' } })
  })
})

describe('ReplayPlugin (from config)', () => {
  it('registers the recorded route and serves the log, with an override patch applied', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-replay-plugin-'))
    try {
      const log = join(dir, 'session.jsonl')
      writeFileSync(log, [
        '{"type":"session","version":0,"id":"x","createdAt":0,"delegationDepth":0}',
        '{"type":"turn/start","data":{"turn":1}}',
        '{"type":"step/start","data":{"turn":1,"step":1}}',
        '{"type":"request/header","data":{"header":{"config":{"provider":"rec","model":"m1"},"system":"","tools":[]},"reason":"initial"}}',
        '{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"first"}}}',
        '{"type":"assistant/chunk","data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}',
        '{"type":"step/end","data":{"turn":1,"step":1}}',
        '{"type":"step/start","data":{"turn":1,"step":2}}',
        '{"type":"assistant/chunk","data":{"turn":1,"step":2,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}',
      ].join('\n') + '\n')
      const override = join(dir, 'replay.override.json')
      writeFileSync(override, JSON.stringify({ patches: [{ at: 1, entry: { kind: 'throw', message: 'boom', code: 'SERVER' } }] }))
      const ctx = new Context()
      await ctx.plugin(LlmServicePlugin).await()
      await ctx.plugin(ReplayPlugin, { log, override }).await()
      expect(ctx.llm.model('rec', 'm1')).toBeDefined()
      const call = { provider: 'rec', model: 'm1', messages: [] }
      expect(await drain(ctx.llm.stream(call))).toEqual([{ type: 'text-delta', index: 0, text: 'first' }, finish('stop')])
      expect((await drain(ctx.llm.stream(call))).at(-1)).toEqual({ type: 'finish', reason: { kind: 'error', failure: { code: 'SERVER', message: 'boom' } } })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
