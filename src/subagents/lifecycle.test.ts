/**
 * A finished one-shot child is closed like any session (docs/persistence.md, "Session
 * lifecycle"): it leaves memory, its log is stored and its writer lock is given back while the
 * parent still runs, so a second store instance or another process can open it.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls, type ScriptedResponse } from '../../test-support/scripted-model.js'
import { spawnWriter } from '../../test-support/writer-lock.js'
import type { LlmCallOptions, TextBlock } from '../llm/types.js'
import type { PersistenceBackend } from '../persistence/api.js'
import { JsonlBackend } from '../persistence/jsonl/backend.js'
import { SqliteBackend } from '../persistence/sqlite/backend.js'
import { JsonlPersistencePlugin, SqlitePersistencePlugin } from '../persistence/plugins.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { SubagentsPlugin, SubagentToolsPlugin, type SubagentStarted } from './index.js'

/** The parent delegates twice in one message; each child answers with its own prompt's text. */
const respond: ScriptedResponse = (request: LlmCallOptions) => {
  const first = request.messages.find(m => m.role === 'user' && m.source.kind === 'user')
  const key = (first?.content.find(b => b.type === 'text') as TextBlock | undefined)?.text ?? ''
  if (key.startsWith('child ')) return text(`DONE ${key}`)
  const answered = request.messages.some(m => m.role === 'user' && m.source.kind === 'tool')
  return answered ? text('PARENT_DONE') : toolCalls([1, 2].map(n => ({ id: `c${n}`, name: 'subagent', arguments: { description: `Task ${n}`, prompt: `child ${n}`, run_in_background: false } })))
}

const stores = [
  { name: 'jsonl', kind: 'jsonl', store: (dir: string) => join(dir, 'sessions'), plugin: (ctx: Context, dir: string) => ctx.plugin(JsonlPersistencePlugin, { root: join(dir, 'sessions') }), open: (dir: string): PersistenceBackend => new JsonlBackend({ root: join(dir, 'sessions') }) },
  { name: 'sqlite', kind: 'sqlite', store: (dir: string) => join(dir, 'sessions.db'), plugin: (ctx: Context, dir: string) => ctx.plugin(SqlitePersistencePlugin, { file: join(dir, 'sessions.db') }), open: (dir: string): PersistenceBackend => new SqliteBackend({ file: join(dir, 'sessions.db') }) },
]

let harness: LoopHarness | undefined
const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

describe.each(stores)('subagents over $name: a finished child is closed (#43.2)', (store) => {
  it('#43.2 SA-1: after the parent turn, with the parent still live, each finished child is out of memory, stored whole, and another store instance and another process can open it', async () => {
    const dir = await mkdtemp(join(tmpdir(), `dsh-child-life-${store.name}-`))
    cleanups.push(() => rm(dir, { recursive: true, force: true }))
    harness = await loopHarness({
      responses: Array.from({ length: 6 }, () => respond),
      setup: async (ctx: Context) => {
        await store.plugin(ctx, dir).await()
        await ctx.plugin(SystemPromptPlugin).await()
        await ctx.plugin(SubagentsPlugin).await()
        await ctx.plugin(SubagentToolsPlugin, {}).await()
      },
    })
    const h = harness
    const started: SubagentStarted[] = []
    h.ctx.on('subagent/started', info => { started.push(info) })
    h.agent.followup('delegate twice')
    await h.agent.whenIdle()
    expect(h.of('tool/result')).toHaveLength(2)
    expect(started).toHaveLength(2)
    // The parent is still live and still holds its own lock.
    expect(h.ctx.sessions.get(h.session.id)).toBe(h.session)
    const second = store.open(dir)
    cleanups.push(async () => second.close?.())
    for (const { childSessionId: id } of started) {
      expect(h.ctx.sessions.get(id)).toBeUndefined()
      expect((await h.ctx.sessionPersistence.inspect(id)).pendingEvents).toBe(0)
      await (await second.acquireWriter!(id)).release()
      const stored = await second.loadStored(id)
      expect(stored!.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
    }
    const child = spawnWriter(store.kind, store.store(dir), started[0]!.childSessionId, 'load')
    cleanups.push(async () => { child.kill(); await child.exit })
    expect(await child.line()).toBe(`held ${child.pid}`)
    // The parent's lock is taken with its first write: once what it logged is out, it is held.
    await h.ctx.sessionPersistence.flushAll()
    await expect(second.acquireWriter!(h.session.id)).rejects.toMatchObject({ name: 'SessionInUseError' })
  })
})
