/**
 * Crash safety of delegation (issue item 7): the real headless binary is SIGKILLed while two
 * children (one continuable, one foreground) are mid-request. Every stored log must load with
 * repair; on resume the parent has no orphan tool call, and the continuable child resumes from
 * storage on the next send_message and settles with a notice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'
import { SessionsServicePlugin } from '../session/index.js'
import { JsonlPersistencePlugin } from '../persistence/plugins.js'
import { ApprovalPlugin } from '../approval/index.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

interface Line { type: string; data?: any; parentSession?: string; id?: string }

function logs(dir: string): Line[][] {
  const found: Line[][] = []
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) found.push(...logs(path))
    else if (name.endsWith('.jsonl')) {
      found.push(readFileSync(path, 'utf8').split('\n').filter(line => line.trim() !== '').flatMap(line => {
        try { return [JSON.parse(line) as Line] } catch { return [] } // a torn tail line
      }))
    }
  }
  return found
}

const call = (index: number, id: string, args: Record<string, unknown>, name = 'subagent') => ({ toolCall: { index, id, name, arguments: JSON.stringify(args) } })

describe('delegation crash safety (SIGKILL)', () => {
  it('SA-15 C-1..C-4: a SIGKILL with running children leaves every log repairable; the parent resumes without orphan calls and the continuable child resumes on send_message', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    const hanging = streamResponse([{ text: 'working' }], { end: 'hang', done: false })
    server.enqueue(
      streamResponse([
        call(0, 'call_bg', { description: 'Background child', prompt: 'background work' }),
        call(1, 'call_fg', { description: 'Foreground child', prompt: 'foreground work', run_in_background: false }),
        { finish: 'tool_calls' },
      ]),
      hanging, hanging,
    )
    const before = server.requests.length
    let killed = false
    const first = runDsh(['--profile', 'headless', 'delegate two things'], {
      cwd, env,
      onSpawn: child => {
        // Both children are mid-stream once three requests arrived (the checkpoint flushed their
        // logs before each request went out): kill the whole process then.
        void server.waitForRequests(before + 3).then(() => {
          killed = true
          child.kill('SIGKILL')
        })
      },
    })
    const result = await first
    expect(killed).toBe(true)
    expect(result.signal).toBe('SIGKILL')

    const stored = logs(join(home, 'sessions'))
    const parent = stored.find(lines => lines[0]!.parentSession === undefined)!
    const children = stored.filter(lines => lines[0]!.parentSession !== undefined)
    expect(children).toHaveLength(2)
    const continuable = children.find(lines => lines[1]?.type === 'subagent/descriptor' && lines[1].data.mode === 'continuable')!
    expect(continuable).toBeDefined()

    // Every stored log loads with crash repair (C-1..C-4), children included.
    const ctx = new Context()
    await ctx.plugin(SessionsServicePlugin).await()
    // The headless profile composes approvals: child logs carry approval/policy (SA-13).
    await ctx.plugin(ApprovalPlugin).await()
    await ctx.plugin(JsonlPersistencePlugin, { root: join(home, 'sessions') }).await()
    for (const lines of children) {
      const { session, repaired } = await ctx.sessionPersistence.load(lines[0]!.id!)
      expect(session.position.turnOpen).toBe(false)
      expect(repaired.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'interrupted' } } })
      // Unload gives the writer lock back (one writer per session): this test process is alive,
      // so a lock it kept would make the resumed run refuse the child as in use.
      await ctx.sessionPersistence.unload(session.id)
    }

    // Resume the parent: it sends the continuable child more work (cold resume from storage).
    const childId = continuable[0]!.id!
    server.enqueue(
      streamResponse([call(0, 'call_send', { subagent_id: childId, message: 'continue please' }, 'send_message'), { finish: 'tool_calls' }]),
      // The parent's next step and the child's resumed turn race; both get the same text.
      streamResponse([{ text: 'OK' }, { finish: 'stop' }]),
      streamResponse([{ text: 'OK' }, { finish: 'stop' }]),
      streamResponse([{ text: 'NOTED' }, { finish: 'stop' }]),
    )
    const second = await runDsh(['--profile', 'headless', '--session', parent[0]!.id!, 'go on'], { cwd, env })
    expect(withoutSessionHint(second.stderr)).toBe('')
    expect(second.code).toBe(0)
    expect(second.stdout).toBe('NOTED\n')

    const after = logs(join(home, 'sessions'))
    const resumedParent = after.find(lines => lines[0]!.id === parent[0]!.id)!
    // No orphan tool call: every call has its result (the interrupted children's are repair results).
    const calls = resumedParent.filter(e => e.type === 'tool/call').map(e => e.data.callId)
    const results = resumedParent.filter(e => e.type === 'tool/result').map(e => e.data.message.content[0].toolCallId)
    expect(new Set(results)).toEqual(new Set(calls))
    expect(resumedParent.some(e => e.type === 'turn/end' && e.data.reason.kind === 'interrupted')).toBe(true)
    const notice = resumedParent.find(e => e.type === 'user/message' && e.data.source.kind === 'subagent-settled')
    expect(notice?.data.content[0].text).toBe(`Background subagent ${childId} finished and will do no further work unless you send it more.`)
    const resumedChild = after.find(lines => lines[0]!.id === childId)!
    const ends = resumedChild.filter(e => e.type === 'turn/end').map(e => e.data.reason.kind)
    expect(ends).toEqual(['interrupted', 'completed'])
    expect(server.pending).toBe(0)
  }, 60_000)
})
