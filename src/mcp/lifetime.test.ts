/**
 * A stdio server's processes do not outlive dsh, and a result larger than the SDK's 10 MiB read
 * limit neither breaks nor restarts the connection. The server is a real SDK server in a temp
 * folder that ignores the end of its input and has a child of its own (`lingeringServer`); the
 * runs are real: `dsh --profile headless` and the SDK client's `dsh --profile sdk` process.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ToolsPlugin } from '../tools/index.js'
import { McpPlugin } from './plugin.js'
import { MCP_RESULT_TOO_LARGE } from './results.js'
import { edgeId } from './stdio.js'
import { DshClient } from '../sdk/client.js'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { lingeringServer, readStarts } from '../../test-support/mcp.js'
import { allGoneWithin } from '../../test-support/processes.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { waitForFile } from '../../test-support/wait-for-file.js'

/** Long enough for end of input + SIGTERM grace (2 s each) with room on a loaded machine. */
const GONE_WITHIN_MS = 15_000

let model: FakeDeepSeek
beforeAll(async () => { model = await FakeDeepSeek.start() })
afterAll(async () => { await model.close() })

/** The `starts` files of this test's servers: what a failed run left behind is killed after it. */
const startFiles: string[] = []
const open: Context[] = []
afterEach(async () => {
  for (const ctx of open.splice(0)) {
    for (const runtime of [...ctx.registry.values()]) for (const fiber of [...runtime.fibers]) await fiber.dispose()
  }
  // A failed run must not leave its processes behind for the next test.
  for (const file of startFiles.splice(0)) {
    for (const { server, child } of readStarts(file)) for (const pid of [server, child]) try { process.kill(pid, 'SIGKILL') } catch { /* gone */ }
  }
})

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const envFor = (home: string) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined })

function serverForTest(): ReturnType<typeof lingeringServer> {
  const server = lingeringServer()
  startFiles.push(server.starts)
  return server
}

function settingsWith(home: string, servers: Record<string, unknown>): void {
  writeFileSync(join(home, 'settings.yaml'), JSON.stringify({ mcpServers: servers }))
}

function startedOnce(starts: string): { server: number; child: number } {
  const [first, ...more] = readStarts(starts)
  expect(first).toBeDefined()
  expect(more).toEqual([])
  return first!
}

const echoThenAnswer = () => model.enqueue(
  streamResponse([{ toolCall: { id: 'call-1', name: 'mcp__keep__echo', arguments: '{"text":"still here"}' } }, { finish: 'tool_calls', usage }]),
  streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
)

describe('MCP server processes end with dsh (#43.12)', () => {
  it('MC-8: after a headless run exits, a server that ignores end of input and its child are gone', async () => {
    const { home, cwd } = tempHome()
    const server = serverForTest()
    settingsWith(home, { keep: server.entry })
    echoThenAnswer()
    const before = model.requests.length
    const result = await runDsh(['--profile', 'headless', 'use the echo tool'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('done\n')
    const toolMessage = model.requests[before + 1]!.body.messages.find((message: { role: string }) => message.role === 'tool')
    expect(toolMessage).toMatchObject({ content: 'still here' })
    const pids = startedOnce(server.starts)
    expect(await allGoneWithin([pids.server, pids.child], GONE_WITHIN_MS)).toBe(true)
  })

  it('MC-8: after an SDK client run and close, the server and its child are gone', async () => {
    const { home, cwd } = tempHome()
    const server = serverForTest()
    settingsWith(home, { keep: server.entry })
    echoThenAnswer()
    const client = await DshClient.start({ cwd, env: envFor(home) })
    try {
      const run = await client.run('use the echo tool')
      expect(run.finalResponse).toBe('done')
    } finally {
      await client.close()
    }
    const pids = startedOnce(server.starts)
    expect(await allGoneWithin([pids.server, pids.child], GONE_WITHIN_MS)).toBe(true)
  })

  it('MC-8: when dsh is killed with SIGKILL mid-run, the guard kills the server and its child', async () => {
    const { home, cwd } = tempHome()
    const server = serverForTest()
    settingsWith(home, { keep: server.entry })
    let release!: () => void
    const held = new Promise<void>(resolve => { release = resolve })
    const asked = model.requests.length
    model.enqueue(streamResponse([{ until: held }, { text: 'never' }, { finish: 'stop', usage }]))
    try {
      const result = await runDsh(['--profile', 'headless', 'wait'], {
        cwd,
        env: envFor(home),
        onSpawn: child => { void waitForFile(server.starts).then(() => waitForModelRequest(asked)).then(() => child.kill('SIGKILL')) },
      })
      expect(result.signal).toBe('SIGKILL')
    } finally {
      release()
    }
    const pids = startedOnce(server.starts)
    expect(await allGoneWithin([pids.server, pids.child], GONE_WITHIN_MS)).toBe(true)
  })
})

/** Resolves once the fake model has received more than `count` requests. */
async function waitForModelRequest(count: number): Promise<void> {
  while (model.requests.length <= count) await new Promise(resolve => setTimeout(resolve, 20))
}

async function start(servers: Record<string, unknown>): Promise<Context> {
  const ctx = new Context()
  open.push(ctx)
  await ctx.plugin(ToolsPlugin).await()
  await ctx.plugin(McpPlugin, { log: () => {}, servers }).await()
  return ctx
}

let calls = 0
const call = (ctx: Context, name: string, args: unknown) =>
  ctx.tools.execute({ callId: `t${++calls}`, name, arguments: JSON.stringify(args) }, { cwd: process.cwd(), signal: new AbortController().signal })

const MiB = 1024 * 1024

describe('MCP results over the SDK read limit (#43.12)', () => {
  it('MC-4: an 11 MiB result is spilled to a file like a built-in tool\'s; the server is not restarted and the next call works', async () => {
    const server = serverForTest()
    const ctx = await start({ keep: server.entry })
    const result = await call(ctx, 'mcp__keep__big', { bytes: 11 * MiB })
    expect(result.isError).toBe(false)
    const text = (result.content[0] as { text: string }).text
    expect(text.length).toBeLessThan(64 * 1024)
    const path = /saved to (\S+) \(page/.exec(text)?.[1]
    expect(path).toBeDefined()
    expect(readFileSync(path!, 'utf8')).toBe('x'.repeat(11 * MiB))
    expect(result.meta).toMatchObject({ mcp: { server: 'keep', tool: 'big' }, spilled: [path] })
    expect(await call(ctx, 'mcp__keep__echo', { text: 'after' })).toMatchObject({ isError: false, content: [{ text: 'after' }] })
    expect(readStarts(server.starts)).toHaveLength(1)
  })

  it('MC-4: a result over maxMessageBytes is a clear "too large" error result; the server is not restarted and the next call works', async () => {
    const server = serverForTest()
    const ctx = await start({ keep: { ...server.entry, maxMessageBytes: 12 * MiB } })
    const result = await call(ctx, 'mcp__keep__big', { bytes: 13 * MiB })
    expect(result).toMatchObject({ isError: true, error: { code: MCP_RESULT_TOO_LARGE } })
    const text = (result.content[0] as { text: string }).text
    expect(text).toMatch(/result too large to read: the server sent a \d+-byte message, over the limit of 12582912 bytes \(maxMessageBytes\)/)
    expect(await call(ctx, 'mcp__keep__echo', { text: 'after' })).toMatchObject({ isError: false, content: [{ text: 'after' }] })
    expect(readStarts(server.starts)).toHaveLength(1)
    expect(ctx.mcp.servers().find(status => status.name === 'keep')?.state).toBe('connected')
  })

  it('a dropped message\'s request id is read from either edge of the line', () => {
    expect(edgeId('{"result":{"content":[{"type":"text","text":"xx', 'xxx"}]},"jsonrpc":"2.0","id":7}')).toBe(7)
    expect(edgeId('{"jsonrpc":"2.0","id":"req-1","result":{"content":"xx', 'xx"}}')).toBe('req-1')
    expect(edgeId('{"result":{"id":3,"text":"xx', 'xx"}}')).toBeUndefined()
    expect(edgeId('{"method":"notifications/message","params":{"data":"xx', 'xx"}}')).toBeUndefined()
  })
})
