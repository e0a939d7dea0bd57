/**
 * D-1 for large tool outputs: a spilled output is part of the session. Its file outlives the
 * process that wrote it (the stored log points to it) and goes away only with the session.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../../test-support/run-dsh.js'
import { toolsHarness } from '../../../test-support/builtin-tools.js'
import { SessionsServicePlugin } from '../../session/index.js'
import { SessionPersistence } from '../../persistence/service.js'
import { JsonlBackend } from '../../persistence/jsonl/backend.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const BIG = 'head -c 200000 /dev/zero | tr "\\\\0" a'

function storedEvents(home: string): { type: string; data: any }[] {
  const dir = join(home, 'sessions')
  const files = readdirSync(dir, { recursive: true }).map(String).filter(name => name.endsWith('.jsonl'))
  return readFileSync(join(dir, files[0]!), 'utf8').trim().split('\n').slice(1).map(line => JSON.parse(line))
}

describe('spill files live as long as their session', () => {
  it('D-1: a spilled bash output is still on disk after dsh exits, under $DSH_HOME, private', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-1', name: 'bash', arguments: JSON.stringify({ command: BIG, description: 'big' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
    )
    const result = await runDsh(['--profile', 'headless', 'make noise'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' } })
    expect(withoutSessionHint(result.stderr)).toBe('')
    expect(result.code).toBe(0)
    const toolResult = storedEvents(home).find(e => e.type === 'tool/result')!
    const spilled: string[] = toolResult.data.meta.spilled
    expect(spilled).toHaveLength(1)
    const path = spilled[0]!
    expect(path.startsWith(join(home, 'tool-output') + '/')).toBe(true)
    expect(existsSync(path)).toBe(true)
    expect(readFileSync(path, 'utf8')).toBe('a'.repeat(200000))
    expect(statSync(path).mode & 0o777).toBe(0o600)
  })

  it('D-1: deleting the session deletes its spill files, and only its own', async () => {
    const root = await mkdtemp(join(tmpdir(), 'dsh-spill-root-'))
    const harness = await toolsHarness({ spillRoot: join(root, 'tool-output') })
    await harness.ctx.plugin(SessionsServicePlugin)
    await harness.ctx.plugin(SessionPersistence, { backend: new JsonlBackend({ root: join(root, 'sessions') }) })
    const doomed = harness.ctx.sessions.create({ id: 'doomed/../x' })
    const kept = harness.ctx.sessions.create({ id: 'kept' })
    const first = await harness.call('bash', { command: BIG, description: 'big' }, { session: doomed })
    const second = await harness.call('bash', { command: BIG, description: 'big' }, { session: kept })
    const doomedPath = (first.meta as any).spilled[0] as string
    const keptPath = (second.meta as any).spilled[0] as string
    expect(doomedPath.startsWith(join(root, 'tool-output') + '/')).toBe(true)
    expect(existsSync(doomedPath)).toBe(true)
    await harness.ctx.parallel('session/flush', doomed)
    expect(await harness.ctx.sessionPersistence.delete(doomed.id)).toBe(true)
    expect(existsSync(doomedPath)).toBe(false)
    expect(existsSync(keptPath)).toBe(true)
    await harness.cleanup()
  })
})
