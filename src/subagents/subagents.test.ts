import { afterEach, describe, expect, it } from 'vitest'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { JsonlPersistencePlugin } from '../persistence/plugins.js'
import type { Context } from 'cordis'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { hang, text, toolCalls, type ScriptedResponse } from '../../test-support/scripted-model.js'
import { Router } from '../../test-support/model-router.js'
import type { LlmCallOptions, StreamChunk, TextBlock, ToolResultMessage, UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import type { SessionEvent } from '../session/types.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { ApprovalPlugin } from '../approval/index.js'
import { SubagentsPlugin, SubagentToolsPlugin, type SubagentFinished, type SubagentStarted, type SubagentToolRow } from './index.js'

let harness: LoopHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

async function setup(router: Router, rows?: readonly SubagentToolRow[], approval = false): Promise<LoopHarness> {
  harness = await loopHarness({
    responses: Array.from({ length: 40 }, () => router.respond),
    setup: async (ctx: Context) => {
      await ctx.plugin(SystemPromptPlugin).await()
      if (approval) await ctx.plugin(ApprovalPlugin, { mode: 'workspace-write', policy: 'ask' }).await()
      await ctx.plugin(SubagentsPlugin).await()
      await ctx.plugin(SubagentToolsPlugin, rows === undefined ? {} : { tools: rows }).await()
    },
  })
  return harness
}

const call = (id: string, name: string, args: Record<string, unknown>) => toolCalls([{ id, name, arguments: args }])
const resultText = (event: SessionEvent): string => {
  const block = (event.data as { message: ToolResultMessage }).message.content[0] as unknown as { content: { text: string }[]; isError: boolean }
  return block.content.map(b => b.text).join('')
}
const isError = (event: SessionEvent): boolean => ((event.data as { message: ToolResultMessage }).message.content[0] as { isError: boolean }).isError
const children = (ctx: Context, parent: Session) => ctx.sessions.list().filter(s => s.header.parentSession === parent.id)

function track(ctx: Context) {
  const started: SubagentStarted[] = []
  const finished: SubagentFinished[] = []
  const sessions = new Map<string, Session>()
  ctx.on('subagent/started', info => { started.push(info) })
  ctx.on('subagent/finished', info => { finished.push(info) })
  ctx.on('session/created', session => { sessions.set(session.id, session) })
  return { started, finished, sessions }
}

describe('subagents: one-shot', () => {
  it('SA-1 SA-3 SA-5: a foreground spawn runs a child session and returns only its final text', async () => {
    const router = new Router()
      .script('delegate', call('c1', 'subagent', { description: 'Say OK', prompt: 'Reply OK', run_in_background: false }), text('PARENT_DONE'))
      .script('Reply OK', [{ type: 'block-start', index: 0, blockType: 'reasoning' }, { type: 'reasoning-delta', index: 0, text: 'think' }, { type: 'block-end', index: 0, block: { type: 'reasoning', text: 'think' } }, ...text('CHILD_OK', { index: 1 })] as StreamChunk[])
    const h = await setup(router)
    const seen = track(h.ctx)
    h.agent.followup('delegate')
    await h.agent.whenIdle()
    const results = h.of('tool/result')
    expect(results.map(resultText)).toEqual(['CHILD_OK'])
    expect(seen.started).toHaveLength(1)
    const child = seen.sessions.get(seen.started[0].childSessionId)!
    expect(child.header).toMatchObject({ parentSession: h.session.id, origin: 'subagent', delegationDepth: 1, cwd: h.session.header.cwd })
    const types = child.events.map(e => e.type)
    expect(types.slice(0, 5)).toEqual(['agent/inbox/spliced', 'turn/start', 'agent/inbox/spliced', 'subagent/descriptor', 'step/start'])
    expect(child.events[3].data).toEqual({ version: 2, mode: 'one-shot', provider: 'spawn', label: 'Say OK' })
    const contexts = child.events.filter(e => e.type === 'user/message' && (e.data as UserMessage).source.kind === 'plugin')
    expect(JSON.stringify(contexts.at(-1)!.data)).toContain('You are a delegated subagent')
    expect(seen.finished).toEqual([expect.objectContaining({ status: 'ok', stopReason: 'completed', parentSessionId: h.session.id })])
    // The one-shot child is released after its run.
    expect(h.ctx.sessions.get(child.id)).toBeUndefined()
    expect(h.ctx.agents.get(child.id)).toBeUndefined()
  })

  it('SA-7: two subagent calls in one message overlap and commit in model order', async () => {
    let releaseA!: () => void
    const aGate = new Promise<void>(resolve => { releaseA = resolve })
    const router = new Router()
      .script('two', toolCalls([
        { id: 'a', name: 'subagent', arguments: { description: 'A', prompt: 'task A', run_in_background: false } },
        { id: 'b', name: 'subagent', arguments: { description: 'B', prompt: 'task B', run_in_background: false } },
      ]), text('BOTH'))
      // A finishes only after B's child has made its request: the children overlap.
      .script('task A', async () => { await aGate; return text('RESULT_A') })
      .script('task B', () => { releaseA(); return text('RESULT_B') })
    const h = await setup(router)
    h.agent.followup('two')
    await h.agent.whenIdle()
    const step1 = h.session.events.filter(e => (e.type === 'tool/call' || e.type === 'tool/result'))
    expect(step1.map(e => e.type)).toEqual(['tool/call', 'tool/call', 'tool/result', 'tool/result'])
    expect(step1.slice(2).map(resultText)).toEqual(['RESULT_A', 'RESULT_B'])
  })

  it('SA-2: a grandchild beyond maxDepth is rejected with the exact text and no session is created', async () => {
    const router = new Router()
      .script('top', call('c1', 'subagent', { description: 'Level one', prompt: 'level one', run_in_background: false }), text('TOP_DONE'))
      .script('level one', call('c2', 'subagent', { description: 'Level two', prompt: 'level two', run_in_background: false }), text('ONE_DONE'))
    const h = await setup(router, [{ provider: 'spawn', toolName: 'subagent', backgroundMode: 'continuable', maxDepth: 1 }])
    const seen = track(h.ctx)
    h.agent.followup('top')
    await h.agent.whenIdle()
    expect(seen.started).toHaveLength(1)
    const child = seen.sessions.get(seen.started[0].childSessionId)!
    const childResults = child.events.filter(e => e.type === 'tool/result')
    expect(childResults.map(resultText)).toEqual(['Error: subagent depth 2 exceeds maxDepth 1'])
    expect(isError(childResults[0])).toBe(true)
    // The tool stays visible at the cap.
    const header = child.events.find(e => e.type === 'request/header')!
    expect(JSON.stringify(header.data)).toContain('"name":"subagent"')
    expect(h.of('tool/result').map(resultText)).toEqual(['ONE_DONE'])
  })

  it('SA-15: cancelling the parent aborts the running child turn', async () => {
    let ready!: () => void
    const childStreaming = new Promise<void>(resolve => { ready = resolve })
    const router = new Router()
      .script('cancel me', call('c1', 'subagent', { description: 'Hang', prompt: 'hang', run_in_background: false }))
      .script('hang', hang(text('partial').slice(0, 2), () => ready()))
    const h = await setup(router)
    const seen = track(h.ctx)
    h.agent.followup('cancel me')
    await childStreaming
    h.agent.cancel()
    await h.agent.whenIdle()
    const child = seen.sessions.get(seen.started[0].childSessionId)!
    const end = child.events.findLast(e => e.type === 'turn/end')!
    expect(end.data).toEqual({ turn: 1, reason: { kind: 'aborted', reason: { kind: 'parent' } } })
    expect(h.session.events.findLast(e => e.type === 'turn/end')!.data).toMatchObject({ reason: { kind: 'aborted' } })
    expect(seen.finished[0]).toMatchObject({ status: 'error', stopReason: 'aborted' })
  })

  it('SA-6: a child that hits max-tokens returns the headline and its partial text as an error', async () => {
    const router = new Router()
      .script('limit', call('c1', 'subagent', { description: 'Long', prompt: 'long', run_in_background: false }), text('SAW_ERROR'))
      .script('long', [
        { type: 'block-start', index: 0, blockType: 'text' }, { type: 'text-delta', index: 0, text: 'partial one' },
        { type: 'block-end', index: 0, block: { type: 'text', text: 'partial one' } }, { type: 'finish', reason: { kind: 'max-tokens' } },
      ] as StreamChunk[])
    const h = await setup(router)
    h.agent.followup('limit')
    await h.agent.whenIdle()
    const [result] = h.of('tool/result')
    expect(resultText(result)).toBe('Error: subagent run hit its token limit before finishing\nPartial output before the run ended:\npartial one')
    expect(isError(result)).toBe(true)
  })

  it('SA-4: a fork child is seeded with the completed turns and continues the turn numbering', async () => {
    const router = new Router()
      // The fork child's first user text is the parent's first prompt (seeded), so its call
      // comes third under the same key: parent turn 1, parent turn 2 step 1, child, parent step 2.
      .script('first', text('FIRST_DONE'), call('f1', 'subagent_fork', { description: 'Fork it', prompt: 'forked task' }), text('FORK_RESULT'), text('PARENT_AFTER_FORK'))
    const h = await setup(router)
    const seen = track(h.ctx)
    h.agent.followup('first')
    await h.agent.whenIdle()
    const seedLength = h.session.length
    h.agent.followup('second')
    // The second prompt's model call sees 'first' as its first user text too.
    await h.agent.whenIdle()
    const child = seen.sessions.get(seen.started[0].childSessionId)!
    expect(child.header).toMatchObject({ seedLength, origin: 'subagent', delegationDepth: 1, parentSession: h.session.id })
    expect(child.events[seedLength].type).toBe('session/end-seed')
    expect(child.events.find(e => e.type === 'turn/start' && e.seq > seedLength)!.data).toEqual({ turn: 2 })
    expect(child.events.find(e => e.type === 'request/header' && e.seq > seedLength)!.data).toMatchObject({ reason: 'resume' })
    expect(h.of('tool/result').map(resultText)).toEqual(['FORK_RESULT'])
  })
})

describe('subagents: continuable', () => {
  it('SA-8 SA-10: a background child settles while the parent is idle: the notice starts a new parent turn', async () => {
    const router = new Router()
      .script('bg', call('c1', 'subagent', { description: 'Background', prompt: 'bg task' }), text('STARTED_IT'), text('GOT_NOTICE'))
      .script('bg task', async () => { await idleParent; return text('BG_RESULT') })
    let parentIdle!: () => void
    const idleParent = new Promise<void>(resolve => { parentIdle = resolve })
    const h = await setup(router)
    const seen = track(h.ctx)
    h.agent.followup('bg')
    await h.agent.whenIdle()
    const id = seen.started[0].childSessionId
    expect(h.of('tool/result').map(resultText)).toEqual([`started subagent ${id}`])
    const child = seen.sessions.get(id)!
    expect(child.events.slice(0, 2).map(e => e.type)).toEqual(['subagent/descriptor', 'session/end-seed'])
    expect(child.events[0].data).toMatchObject({ version: 2, mode: 'continuable', provider: 'spawn', label: 'Background' })
    parentIdle()
    await h.ctx.subagents.whenQuiet(h.agent.id)
    const notice = h.of('agent/inbox/spliced').find(e => (e.data.inserted[0]?.source as { kind: string } | undefined)?.kind === 'subagent-settled')!
    expect(notice.data.target).toBe('next-turn')
    expect(notice.data.inserted[0].content).toEqual([
      { type: 'text', text: `Background subagent ${id} finished and will do no further work unless you send it more.` },
      { type: 'text', text: 'Its closing message:' },
      { type: 'text', text: 'BG_RESULT' },
    ])
    expect(h.of('turn/start')).toHaveLength(2)
    expect(h.of('assistant/message').at(-1)!.data.message.content).toEqual([{ type: 'text', text: 'GOT_NOTICE' }])
  })

  it('SA-10: a child settling while the parent is busy is claimed at the next step of the same turn', async () => {
    let childDone!: () => void
    const childFinished = new Promise<void>(resolve => { childDone = resolve })
    const router = new Router()
      .script('busy', call('c1', 'subagent', { description: 'Background', prompt: 'busy task' }),
        // The parent's second step waits until the child's notice is queued, then stops.
        async () => { await childFinished; return text('WAITED') },
        text('SAW_NOTICE'))
      .script('busy task', text('CHILD_DONE'))
    const h = await setup(router)
    h.ctx.on('subagent/finished', () => { childDone() })
    h.agent.followup('busy')
    await h.ctx.subagents.whenQuiet(h.agent.id)
    const notice = h.of('agent/inbox/spliced').find(e => (e.data.inserted[0]?.source as { kind: string } | undefined)?.kind === 'subagent-settled')!
    expect(notice.data.target).toBe('next-step')
    expect(h.of('turn/start')).toHaveLength(1)
    expect(h.of('step/start').map(e => e.data.step)).toEqual([1, 2, 3])
    expect(h.of('assistant/message').at(-1)!.data.message.content).toEqual([{ type: 'text', text: 'SAW_NOTICE' }])
  })

  it('SA-9 SA-12: send_message queues FIFO turns, unknown ids fail NOT_RESUMABLE, report reaches the parent', async () => {
    let idOf!: () => string
    const router = new Router()
      .script('ctl', call('c1', 'subagent', { description: 'Worker', prompt: 'work' }),
        () => call('c2', 'send_message', { subagent_id: idOf(), message: 'more' }),
        call('c3', 'send_message', { subagent_id: 'nope', message: 'x' }),
        text('PARENT_IDLE'))
      .fallback('ctl', text('PARENT_MORE'))
      .script('work', call('r1', 'report', { output: 'REPORTED_VALUE' }), text('FIRST'), text('SECOND'))
    idOf = () => h.ctx.sessions.list().find(s => s.header.parentSession === h.session.id)!.id
    const h = await setup(router)
    h.agent.followup('ctl')
    await h.ctx.subagents.whenQuiet(h.agent.id)
    const results = h.of('tool/result')
    const id = idOf()
    expect(resultText(results[1])).toBe(`message queued as the next turn for subagent ${id}`)
    expect(resultText(results[2])).toBe('Error: subagent "nope" is unavailable')
    expect(results[2].data.error).toEqual({ name: 'SubagentError', code: 'NOT_RESUMABLE' })
    const child = h.ctx.sessions.get(id)!
    const relay = child.events.find(e => e.type === 'agent/inbox/spliced' && (e.data as { inserted: UserMessage[] }).inserted[0]?.source.kind === ('coordinator' as never))!
    expect((relay.data as { target: string }).target).toBe('next-turn')
    expect(child.events.filter(e => e.type === 'turn/start')).toHaveLength(2)
    const reports = h.of('user/message').filter(e => (e.data.source as { kind: string }).kind === 'subagent-report')
    expect(reports[0].data.content).toEqual([{ type: 'text', text: `Background subagent ${id} reported:` }, { type: 'text', text: 'REPORTED_VALUE' }])
    const listed = await h.ctx.subagents.list(h.agent, 'children')
    expect(listed).toEqual([`${id} [idle] — Worker`])
  })
})

describe('subagents: interrupt_agent', () => {
  it('SA-15 interrupt_agent: stops only the child\'s current turn (notice: stopped), an unknown id is an accepted no-op, and the child takes a later send_message', async () => {
    let childReady!: () => void
    const hanging = new Promise<void>(resolve => { childReady = resolve })
    let idOf!: () => string
    const router = new Router()
      .script('ctl', call('c1', 'subagent', { description: 'Long job', prompt: 'long job' }),
        async () => { await hanging; return toolCalls([{ id: 'c2', name: 'interrupt_agent', arguments: { agent_id: idOf() } }, { id: 'c3', name: 'interrupt_agent', arguments: { agent_id: 'nope' } }]) },
        text('ASKED'))
      // Whether the stop notice lands in the same parent turn or the next one is timing: the rest
      // answers by content.
      .fallback('ctl', (request) => {
        const last = request.messages.at(-1)!
        const lastText = last.role === 'user' ? (last.content[0] as { text?: string }).text : undefined
        return lastText === 'send more' ? call('c4', 'send_message', { subagent_id: idOf(), message: 'again' }) : text('OK')
      })
      .script('long job', hang([], () => childReady()), text('AGAIN_DONE'))
    const h = await setup(router)
    const seen = track(h.ctx)
    idOf = () => seen.started[0]!.childSessionId
    h.agent.followup('ctl')
    await h.ctx.subagents.whenQuiet(h.agent.id)
    const id = idOf()
    const results = h.of('tool/result')
    expect(results.slice(1, 3).map(resultText)).toEqual([`interrupt requested for agent ${id}`, 'interrupt requested for agent nope'])
    expect(results.slice(1, 3).map(isError)).toEqual([false, false])
    const child = seen.sessions.get(id)!
    expect(child.events.filter(e => e.type === 'turn/end').map(e => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(['aborted'])
    const notices = h.of('user/message').filter(e => (e.data.source as { kind: string }).kind === 'subagent-settled')
    expect(notices).toHaveLength(1)
    expect(notices[0]!.data.content[0]).toEqual({ type: 'text', text: `Background subagent ${id} was stopped before it finished.` })
    // The child stays available: a later send_message runs a new turn on the same conversation.
    h.agent.followup('send more')
    await h.ctx.subagents.whenQuiet(h.agent.id)
    expect(child.events.filter(e => e.type === 'turn/end').map(e => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(['aborted', 'completed'])
    expect(h.ctx.sessions.get(id)!.events.filter(e => e.type === 'assistant/message').at(-1)!.data).toMatchObject({ message: { content: [{ type: 'text', text: 'AGAIN_DONE' }] } })
  })
})

describe('subagents: list_agents over storage (SA-16)', () => {
  let root: string | undefined
  afterEach(async () => { if (root !== undefined) await rm(root, { recursive: true, force: true }) })

  it('SA-16: a stored subagent child without a descriptor is a corrupt diagnostic; live continuable children and stored ones merge by createdAt; a stored child of another origin is omitted', async () => {
    root = await mkdtemp(join(tmpdir(), 'dsh-list-agents-'))
    const router = new Router()
      .script('ctl', call('c1', 'subagent', { description: 'Live worker', prompt: 'live work' }), text('STARTED'))
      .fallback('ctl', text('OK'))
      .script('live work', text('LIVE_DONE'))
    harness = await loopHarness({
      responses: Array.from({ length: 10 }, () => router.respond),
      setup: async (ctx: Context) => {
        await ctx.plugin(JsonlPersistencePlugin, { root: root! }).await()
        await ctx.plugin(SystemPromptPlugin).await()
        await ctx.plugin(SubagentsPlugin).await()
        await ctx.plugin(SubagentToolsPlugin, {}).await()
      },
    })
    const h = harness
    const persistence = h.ctx.sessionPersistence
    // Stored children written before the live one (earlier createdAt), then unloaded.
    const stored = async (id: string, createdAt: number, write: (session: Session) => void, origin?: 'subagent') => {
      const session = h.ctx.sessions.create({ id, createdAt, parentSession: h.session.id, ...origin !== undefined && { origin, delegationDepth: 1 } })
      write(session)
      await persistence.unload(id)
    }
    await stored('b-descriptorless', 1, session => {
      session.append('turn/start', { turn: 1 })
      session.append('turn/end', { turn: 1, reason: { kind: 'interrupted' } })
    }, 'subagent')
    await stored('a-not-a-subagent', 1, () => undefined)
    h.agent.followup('ctl')
    await h.ctx.subagents.whenQuiet(h.agent.id)
    const live = h.ctx.sessions.list().find(s => s.header.parentSession === h.session.id && s.header.origin === 'subagent')!
    expect(await h.ctx.subagents.list(h.agent, 'children')).toEqual([
      'b-descriptorless [diagnostic: corrupt]',
      `${live.id} [idle] — Live worker`,
    ])
    // The tool prints the same lines.
    const result = await h.ctx.tools.get('list_agents')!.execute({}, { callId: 'x', cwd: h.session.header.cwd, signal: new AbortController().signal, session: h.session, agent: h.agent } as never)
    expect(JSON.stringify(result)).toContain('b-descriptorless [diagnostic: corrupt]')
  })
})

describe('subagents: list_agents over an unreadable child log (SA-16)', () => {
  let root: string | undefined
  afterEach(async () => { if (root !== undefined) await rm(root, { recursive: true, force: true }) })

  it('SA-16: a stored child whose log cannot be read is listed as a corrupt diagnostic, not unavailable', async () => {
    root = await mkdtemp(join(tmpdir(), 'dsh-list-agents-'))
    harness = await loopHarness({
      responses: [],
      setup: async (ctx: Context) => {
        await ctx.plugin(JsonlPersistencePlugin, { root: root! }).await()
        await ctx.plugin(SystemPromptPlugin).await()
        await ctx.plugin(SubagentsPlugin).await()
        await ctx.plugin(SubagentToolsPlugin, {}).await()
      },
    })
    const h = harness
    const child = h.ctx.sessions.create({ id: 'c-damaged', createdAt: 1, parentSession: h.session.id, origin: 'subagent', delegationDepth: 1 })
    child.append('subagent/descriptor', { version: 2, mode: 'continuable', provider: 'spawn', label: 'Damaged' })
    await h.ctx.sessionPersistence.unload('c-damaged')
    // The header stays, a line in the middle becomes garbage: the log no longer loads.
    const file = (await readdir(root, { recursive: true })).map(String).find(name => name.endsWith('session.jsonl') && name.includes('c-damaged'))!
    const [header, descriptor] = (await readFile(join(root, file), 'utf8')).split('\n')
    await writeFile(join(root, file), `${header}\n{not json at all\n${descriptor}\n`)
    await expect(h.ctx.sessionPersistence.backend.loadStored('c-damaged')).rejects.toThrow()
    expect(await h.ctx.subagents.list(h.agent, 'children')).toEqual(['c-damaged [diagnostic: corrupt]'])
  })
})

describe('subagents: approvals', () => {
  it('SA-13: a child runs with policy never and inherits an explicit parent sandbox mode stamped delegation; a later parent switch leaves it alone', async () => {
    const router = new Router()
      .script('guarded', call('c1', 'subagent', { description: 'Guarded', prompt: 'guarded task', run_in_background: false }), text('DONE'))
      .script('guarded task', text('CHILD'))
    const h = await setup(router, undefined, true)
    const seen = track(h.ctx)
    h.ctx.approval.setMode(h.session, 'read-only')
    h.agent.followup('guarded')
    await h.agent.whenIdle()
    const child = seen.sessions.get(seen.started[0].childSessionId)!
    expect(child.events.slice(0, 3).map(e => [e.type, e.data])).toEqual([
      ['sandbox/mode', { mode: 'read-only', source: 'delegation' }],
      ['approval/policy', { policy: 'never', source: 'delegation' }],
      ['agent/inbox/spliced', expect.objectContaining({ target: 'next-turn' })],
    ])
    const snapshot = child.events.find(e => e.type === 'user/message' && (e.data as UserMessage).source.kind === 'plugin')!
    const names = ((snapshot.data as UserMessage).source as unknown as { sections: { name: string }[] }).sections.map(section => section.name)
    expect(names.indexOf('approval:policy')).toBeGreaterThanOrEqual(0)
    expect(names.indexOf('subagent:delegation')).toBeGreaterThan(names.indexOf('approval:policy'))
    h.ctx.approval.setMode(h.session, 'danger-full-access')
    expect(h.ctx.approval.mode(child)).toBe('read-only')
    expect(h.ctx.approval.policy(child)).toBe('never')
  })
})

