/**
 * Persistence with the real agent loop: the checkpoint policy makes every model request and
 * every tool body see its log on disk (D-3), and a copy of the store taken while a tool runs
 * (what a crash at that instant leaves) cold-loads with the call closed as TOOL_OUTCOME_UNKNOWN.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, sep } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { SessionsServicePlugin } from '../session/service.js'
import { checkLogInvariants } from '../session/invariants.js'
import { createEventTypeRegistry } from '../session/registry.js'
import type { StreamChunk } from '../llm/types.js'
import type { Tool } from '../tools/api.js'
import { CheckpointPolicy } from './checkpoint.js'
import { JsonlBackend } from './jsonl/backend.js'
import { encodeEvent } from './records.js'
import { SessionPersistence } from './service.js'

describe('persistence with the agent loop (D-3)', () => {
  let root: string
  let harness: LoopHarness | undefined
  afterEach(async () => {
    await harness?.dispose()
    harness = undefined
    if (root) await rm(root, { recursive: true, force: true })
  })

  it('D-3/C-2: requests and tool bodies see their log on disk; a crash during a tool body repairs to TOOL_OUTCOME_UNKNOWN', async () => {
    root = await mkdtemp(join(tmpdir(), 'dsh-persistence-loop-'))
    const store = join(root, 'store')
    const backend = new JsonlBackend({ root: store })
    const seen: { at: string; stored: number; live: number; lastType?: string }[] = []
    const observe = async (at: string) => {
      const session = harness!.session
      const stored = (await backend.loadStored(session.id))?.events ?? []
      seen.push({ at, stored: stored.length, live: session.length, lastType: stored.at(-1)?.type })
    }
    const probe: Tool = {
      name: 'probe',
      description: 'records what is on disk, then snapshots the store as a crash would leave it',
      parameters: { type: 'object', properties: {} },
      async execute() {
        await observe('tool')
        // A crash leaves the lock of a dead process (stale); this process lives on, so its lock
        // is not part of the copy.
        await cp(store, join(root, 'crashed'), { recursive: true, filter: (path) => !path.includes(`${sep}.locks`) })
        return { content: [{ type: 'text', text: 'probed' }] }
      },
    }
    const recordingModel = (chunks: StreamChunk[]) => async () => { await observe('request'); return chunks }
    harness = await loopHarness({
      tools: [probe],
      responses: [recordingModel(toolCalls([{ id: 'call_1', name: 'probe' }])), recordingModel(text('done'))],
      setup: async (ctx) => {
        await ctx.plugin(SessionPersistence, { backend, maxDelayMs: 1_000_000 })
        await ctx.plugin(CheckpointPolicy)
      },
    })
    harness.agent.followup('probe it')
    await harness.agent.whenIdle()
    expect(seen.map((s) => s.at)).toEqual(['request', 'tool', 'request'])
    for (const s of seen) expect(s.stored, `${s.at}: everything appended so far is stored`).toBe(s.live)
    expect(seen[1].lastType).toBe('tool/call')

    // The finished session round-trips.
    await harness.ctx.sessionPersistence.flush(harness.session)
    const finished = (await backend.loadStored(harness.session.id))!
    expect(finished.events.map(encodeEvent)).toEqual(harness.session.events.map(encodeEvent))

    // The copy taken inside the tool body is what a crash at that moment leaves behind.
    const ctx = new Context()
    await ctx.plugin(SessionsServicePlugin, {})
    await ctx.plugin(SessionPersistence, { backend: new JsonlBackend({ root: join(root, 'crashed') }), maxDelayMs: 1_000_000 })
    const { session, repaired } = await ctx.sessionPersistence.load(harness.session.id)
    expect(repaired.map((e) => e.type)).toEqual(['tool/result', 'step/end', 'turn/end'])
    expect(repaired[0]).toMatchObject({ data: { error: { code: 'TOOL_OUTCOME_UNKNOWN' } }, surfaceOp: 'append' })
    expect(repaired[2]).toMatchObject({ data: { reason: { kind: 'interrupted' } } })
    expect(checkLogInvariants(session.events, createEventTypeRegistry()).turnOpen).toBe(false)
  })
})
