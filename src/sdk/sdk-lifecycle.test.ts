/**
 * Sessions of a long-running SDK server end as the lifecycle says (docs/persistence.md,
 * "Session lifecycle"): a finished child gives its writer lock back while the server runs (another process, this test, takes it), and
 * a refused prompt leaves no session behind. Real server processes against the fake DeepSeek
 * server on 127.0.0.1.
 */
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { tempHome } from '../../test-support/run-dsh.js'
import { JsonlBackend } from '../persistence/jsonl/backend.js'
import { DshClient, type Notification } from './client.js'
import { ErrorCodes } from './jsonrpc.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const envFor = (home: string, key: string | undefined) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: key, DSH_MODEL: undefined })
/** The writer locks held in a home's JSONL store. */
const locks = (home: string) => {
  const dir = join(home, 'sessions', '.locks')
  return existsSync(dir) ? readdirSync(dir).filter(name => name.endsWith('.lock')) : []
}

describe('SDK server: session lifecycle (#43)', () => {
  it('#43.2 SA-1: after a turn with five subagent children the server holds only the parent\'s writer lock, and another process takes each child\'s lock while the server runs', async () => {
    const { home, cwd } = tempHome()
    const calls = [1, 2, 3, 4, 5].map(n => ({ toolCall: { index: n - 1, id: `call_${n}`, name: 'subagent', arguments: JSON.stringify({ description: `Task ${n}`, prompt: `child work ${n}`, run_in_background: false }) } }))
    server.enqueue(
      streamResponse([...calls, { finish: 'tool_calls', usage }]),
      ...[1, 2, 3, 4, 5].map(() => streamResponse([{ text: 'CHILD_DONE' }, { finish: 'stop', usage }])),
      streamResponse([{ text: 'PARENT_DONE' }, { finish: 'stop', usage }]),
    )
    const client = await DshClient.start({ cwd, env: envFor(home, 'test-key') })
    const started: string[] = []
    const off = client.onNotification((n: Notification) => { if (n.method === 'subagent.started') started.push(n.params.childSessionId as string) })
    try {
      const result = await client.run('delegate five')
      expect(result.finalResponse).toBe('PARENT_DONE')
      expect(started).toHaveLength(5)
      // The parent is live (idle) and keeps its lock; every finished child gave its own back.
      expect(locks(home)).toHaveLength(1)
      const { sessions } = await client.list()
      for (const id of started) expect(sessions).toContainEqual(expect.objectContaining({ id, live: false }))
      // The test runs in another process than the server: it takes a child's lock and reads it whole.
      const store = new JsonlBackend({ root: join(home, 'sessions') })
      for (const id of started) {
        await (await store.acquireWriter(id)).release()
        expect((await store.loadStored(id))!.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
      }
    } finally {
      off()
      await client.close()
    }
  }, 60_000)

  it('#43.5: a refused prompt leaves no session: none live, none listed, no writer lock, nothing stored after the server ends', async () => {
    const { home, cwd } = tempHome()
    const client = await DshClient.start({ cwd, env: envFor(home, undefined) })
    try {
      await expect(client.prompt('hello')).rejects.toMatchObject({ code: ErrorCodes.serverError, message: expect.stringContaining('DEEPSEEK_API_KEY') })
      await expect(client.prompt('hello', 'named')).rejects.toMatchObject({ code: ErrorCodes.serverError })
      expect((await client.list()).sessions).toEqual([])
      expect(locks(home)).toEqual([])
    } finally {
      await client.close()
    }
    // The server flushed everything it had on its way out: still nothing stored.
    expect(await new JsonlBackend({ root: join(home, 'sessions') }).list()).toEqual([])
  }, 60_000)
})
