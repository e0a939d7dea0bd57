/**
 * The MCP client over Streamable HTTP on 127.0.0.1 (an SDK server in this process) and against a
 * third-party server (`@modelcontextprotocol/server-filesystem`, spawned over stdio), plus MC-6's
 * request-header rule through the real agent loop.
 */
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { Context } from 'cordis'
import { McpServer as SdkServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ToolsPlugin } from '../tools/index.js'
import { McpPlugin, type McpPluginConfig } from './plugin.js'
import { loopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { readEvents, testServerEntry, waitForStatus } from '../../test-support/mcp.js'

const open: Context[] = []
const servers: Server[] = []
afterEach(async () => {
  for (const ctx of open.splice(0)) {
    for (const runtime of [...ctx.registry.values()]) for (const fiber of [...runtime.fibers]) await fiber.dispose()
  }
  await Promise.all(servers.splice(0).map(server => new Promise(resolve => { server.closeAllConnections(); server.close(resolve) })))
})

async function start(config: McpPluginConfig): Promise<Context> {
  const ctx = new Context()
  open.push(ctx)
  await ctx.plugin(ToolsPlugin).await()
  await ctx.plugin(McpPlugin, { log: () => {}, ...config }).await()
  return ctx
}

/** A stateless Streamable HTTP MCP server; records the headers of every request. */
async function httpServer(): Promise<{ url: string; headers: IncomingHttpHeaders[] }> {
  const headers: IncomingHttpHeaders[] = []
  const server = createServer((req, res) => {
    headers.push(req.headers)
    const mcp = new SdkServer({ name: 'http-test', version: '1.0.0' })
    mcp.registerTool('shout', { description: 'Upper-cases text', inputSchema: { text: z.string() }, annotations: { readOnlyHint: true } },
      async ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }))
    mcp.registerTool('oops', { description: 'Fails' }, async () => ({ isError: true, content: [{ type: 'text', text: 'nope' }] }))
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    res.on('close', () => { void transport.close(); void mcp.close() })
    void mcp.connect(transport).then(() => transport.handleRequest(req, res))
  })
  servers.push(server)
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, headers }
}

let calls = 0
const call = (ctx: Context, name: string, args: unknown) =>
  ctx.tools.execute({ callId: `t${++calls}`, name, arguments: JSON.stringify(args) }, { cwd: process.cwd(), signal: new AbortController().signal })

describe('MCP over Streamable HTTP', () => {
  it('MC-1 MC-3 MC-4: a `type: http` server on 127.0.0.1 with headers (Claude Code shape)', async () => {
    const server = await httpServer()
    const saved = process.env.MCP_TEST_BEARER
    const ctx = await start({
      servers: { web: { type: 'http', url: server.url, headers: { Authorization: 'Bearer ${MCP_TEST_BEARER}' } } },
      lookup: name => name === 'MCP_TEST_BEARER' ? 'abc123' : undefined,
    })
    process.env.MCP_TEST_BEARER = saved
    expect(ctx.tools.list().map(tool => tool.name)).toEqual(['mcp__web__oops', 'mcp__web__shout'])
    expect(await call(ctx, 'mcp__web__shout', { text: 'hi' })).toMatchObject({ isError: false, content: [{ type: 'text', text: 'HI' }] })
    expect(await call(ctx, 'mcp__web__oops', {})).toMatchObject({ isError: true, content: [{ text: 'Error: nope' }] })
    expect(server.headers.length).toBeGreaterThan(0)
    for (const headers of server.headers) expect(headers.authorization).toBe('Bearer abc123')
  })

  it('MC-5: an HTTP server that is not there yet leaves the agent running and reports the failure', async () => {
    const ctx = await start({ servers: { later: { type: 'http', url: 'http://127.0.0.1:9/mcp', reconnect: { enabled: false } } } })
    expect(ctx.tools.list()).toEqual([])
    expect(ctx.get('mcp')!.servers()[0]).toMatchObject({ name: 'later', state: 'failed', transport: 'streamable-http' })
  })
})

describe('third-party MCP server', () => {
  it('MC-1 MC-11: @modelcontextprotocol/server-filesystem tools are registered and callable', async () => {
    const entry = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist', 'index.js')
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-mcp-fs-')))
    writeFileSync(join(root, 'note.txt'), 'hello from disk\n')
    const ctx = await start({ servers: { fs: { command: process.execPath, args: [entry, root] } } })
    const names = ctx.tools.list().map(tool => tool.name)
    expect(names).toContain('mcp__fs__read_text_file')
    expect(names).toContain('mcp__fs__write_file')
    const record = await call(ctx, 'mcp__fs__read_text_file', { path: join(root, 'note.txt') })
    expect(record).toMatchObject({ isError: false, content: [{ type: 'text', text: 'hello from disk\n' }] })
    const outside = await call(ctx, 'mcp__fs__read_text_file', { path: '/etc/hostname' })
    expect(outside.isError).toBe(true)
    const mode = (name: string) => ctx.tools.executionMode({ callId: 'x', name, arguments: JSON.stringify({ path: root, content: '' }) }).kind
    expect(mode('mcp__fs__read_text_file')).toBe('parallel')
    expect(mode('mcp__fs__write_file')).toBe('exclusive')
  })
})

describe('tool set and request headers', () => {
  it('MC-6: a list_changed tool set yields one new request/header on the next step; no re-listing per step', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'dsh-mcp-')), 'events.jsonl')
    const harness = await loopHarness({
      setup: async ctx => { await ctx.plugin(McpPlugin, { log: () => {}, servers: { basic: testServerEntry({ log }) } }).await() },
      responses: [
        toolCalls([{ id: 'c1', name: 'mcp__basic__echo', arguments: { text: 'one' } }]),
        toolCalls([{ id: 'c2', name: 'mcp__basic__grow', arguments: {} }]),
        toolCalls([{ id: 'c3', name: 'mcp__basic__extra', arguments: {} }]),
        toolCalls([{ id: 'c4', name: 'mcp__basic__echo', arguments: { text: 'two' } }]),
        text('done'),
      ],
    })
    open.push(harness.ctx)
    const grown = waitForStatus(harness.ctx, 'basic', status => status.tools.some(tool => tool.rawName === 'extra'))
    // The grow result commits once the new generation is in, so the next step is the one that sees it.
    harness.ctx.on('tools/post-execute', async (execution, record, next) => {
      if (execution.name === 'mcp__basic__grow') await grown
      return next()
    })
    harness.agent.followup('go')
    await harness.agent.whenIdle()
    const results = harness.of('tool/result').map(event => (event.data as unknown as { message: { content: { content: { text: string }[] }[] } }).message.content[0].content[0].text)
    expect(results).toEqual(['one', 'grown', 'extra!', 'two'])
    const headers = harness.of('request/header').map(event => event.data as unknown as { reason: string; header: { tools: { name: string }[] } })
    expect(headers.map(header => header.reason)).toEqual(['initial', 'change'])
    expect(headers[0].header.tools.map(tool => tool.name)).not.toContain('mcp__basic__extra')
    expect(headers[1].header.tools.map(tool => tool.name)).toContain('mcp__basic__extra')
    // Five model requests, two tools/list (connect + list_changed): never one per step.
    expect(harness.model.requests).toHaveLength(5)
    expect(readEvents(log).filter(event => event.event === 'list')).toHaveLength(2)
  })
})
