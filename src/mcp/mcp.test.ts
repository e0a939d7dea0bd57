/**
 * The MCP client against a real stdio server written with the official SDK
 * (test-support/mcp-stdio-server.mjs), spawned for real.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { ToolsPlugin } from '../tools/index.js'
import type { ToolExecution } from '../tools/api.js'
import { McpPlugin, McpServerPlugin, type McpPluginConfig } from './plugin.js'
import { publicToolName } from './names.js'
import { LONG_TOOL_NAME, readEvents, testServerEntry, waitForEvent, waitForStatus } from '../../test-support/mcp.js'

const open: Context[] = []
afterEach(async () => {
  for (const ctx of open.splice(0)) {
    for (const runtime of [...ctx.registry.values()]) for (const fiber of [...runtime.fibers]) await fiber.dispose()
  }
})

function logFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'dsh-mcp-')), 'events.jsonl')
}

async function start(config: McpPluginConfig): Promise<{ ctx: Context; mcp: McpPlugin; lines: string[] }> {
  const ctx = new Context()
  open.push(ctx)
  await ctx.plugin(ToolsPlugin).await()
  const lines: string[] = []
  await ctx.plugin(McpPlugin, { log: (line: string) => { lines.push(line) }, ...config }).await()
  return { ctx, mcp: ctx.get('mcp') as McpPlugin, lines }
}

let callCount = 0
function call(ctx: Context, name: string, args: unknown, signal = new AbortController().signal) {
  const execution: ToolExecution = { callId: `c${++callCount}`, name, arguments: JSON.stringify(args) }
  return ctx.tools.execute(execution, { cwd: process.cwd(), signal })
}

describe('MCP stdio client', () => {
  it('MC-1 MC-8: registers every tool as mcp__<server>__<tool> before activation ends and captures stderr', async () => {
    const log = logFile()
    const { ctx, mcp } = await start({ servers: { basic: testServerEntry({ log }) } })
    const names = ctx.tools.list().map(tool => tool.name)
    expect(names).toEqual(['add', 'crash', 'echo', 'env', 'fail', 'grow', 'hang', 'mixed', 'slow'].map(name => `mcp__basic__${name}`))
    const [status] = mcp.servers()
    expect(status).toMatchObject({ name: 'basic', source: 'settings', transport: 'stdio', state: 'connected' })
    expect(status.tools).toHaveLength(9)
    expect(status.stderr).toContain('test server basic started')
    expect(ctx.tools.get('mcp__basic__echo')?.description).toBe('Echo the text back')
    expect(readEvents(log).filter(event => event.event === 'list')).toHaveLength(1)
  })

  it('MC-3: sends the raw name and the arguments unchanged and maps the text result', async () => {
    const log = logFile()
    const { ctx } = await start({ servers: { basic: testServerEntry({ log }) } })
    const record = await call(ctx, 'mcp__basic__echo', { text: 'héllo\nworld' })
    expect(record).toMatchObject({ isError: false, content: [{ type: 'text', text: 'héllo\nworld' }], meta: { mcp: { server: 'basic', tool: 'echo' } } })
    expect(readEvents(log).find(event => event.event === 'call')).toMatchObject({ name: 'echo', arguments: { text: 'héllo\nworld' } })
    expect(await call(ctx, 'mcp__basic__add', { a: 2, b: 40 })).toMatchObject({ content: [{ type: 'text', text: '42' }] })
  })

  it('MC-4: isError becomes an error result; other blocks become explicit notes in block order', async () => {
    const { ctx } = await start({ servers: { basic: testServerEntry() } })
    const failed = await call(ctx, 'mcp__basic__fail', {})
    expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'Error: it broke' }] })
    const mixed = await call(ctx, 'mcp__basic__mixed', {})
    const text = (mixed.content[0] as { text: string }).text.split('\n')
    expect(text[0]).toBe('first')
    expect(text[1]).toMatch(/^\[image image\/png .*not shown/)
    expect(text[2]).toBe('[resource report.txt](file:///tmp/report.txt)')
    expect(text[3]).toMatch(/^\[audio audio\/wav .*not supported/)
    expect(text[4]).toBe('last')
  })

  it('MC-4: arguments the server rejects come back as an error result, not a crash', async () => {
    const { ctx } = await start({ servers: { basic: testServerEntry() } })
    const record = await call(ctx, 'mcp__basic__add', { a: 'two' })
    expect(record.isError).toBe(true)
  })

  it('MC-3: aborting the tool call cancels the MCP request on the server', async () => {
    const log = logFile()
    const { ctx } = await start({ servers: { basic: testServerEntry({ log }) } })
    const controller = new AbortController()
    const pending = call(ctx, 'mcp__basic__slow', {}, controller.signal)
    await waitForEvent(log, event => event.event === 'call' && event.name === 'slow')
    controller.abort()
    const record = await pending
    expect(record.isError).toBe(true)
    await waitForEvent(log, event => event.event === 'cancelled')
  })

  it('MC-3: a server that never answers yields a timeout error result', async () => {
    const { ctx } = await start({ servers: { basic: testServerEntry({ extra: { toolCallTimeoutMs: 200 } }) } })
    const record = await call(ctx, 'mcp__basic__hang', {})
    expect(record).toMatchObject({ isError: true, error: { code: 'TIMEOUT' } })
    // The connection survives a timed-out call.
    expect(await call(ctx, 'mcp__basic__echo', { text: 'still here' })).toMatchObject({ isError: false })
  })

  it('MC-7: a server that crashes mid-call is an error result, then it is restarted and its tools work again, not duplicated', async () => {
    const log = logFile()
    const { ctx, mcp } = await start({ servers: { basic: testServerEntry({ log, extra: { reconnect: { initialDelayMs: 20 } } }) } })
    const before = ctx.tools.list().map(tool => tool.name)
    const crashed = await call(ctx, 'mcp__basic__crash', {})
    expect(crashed.isError).toBe(true)
    await waitForEvent(log, event => event.event === 'start' && readEvents(log).filter(e => e.event === 'start').length === 2)
    await waitForStatus(ctx, 'basic', status => status.state === 'connected' && readEvents(log).filter(e => e.event === 'list').length === 2)
    expect(ctx.tools.list().map(tool => tool.name)).toEqual(before)
    expect(new Set(readEvents(log).filter(e => e.event === 'start').map(e => e.pid)).size).toBe(2)
    expect(await call(ctx, 'mcp__basic__echo', { text: 'back' })).toMatchObject({ isError: false, content: [{ text: 'back' }] })
    expect(mcp.servers()[0].state).toBe('connected')
  })

  it('MC-7: a server that keeps failing stops after maxAttempts and its tools are removed', async () => {
    const { ctx, mcp } = await start({ servers: { gone: { command: join(tmpdir(), 'no-such-mcp-server'), reconnect: { initialDelayMs: 5, maxAttempts: 2 } } } })
    const status = await waitForStatus(ctx, 'gone', s => s.state === 'failed')
    expect(status.error).toMatch(/ENOENT|spawn/)
    expect(mcp.servers()[0].tools).toEqual([])
    expect(ctx.tools.list()).toEqual([])
  })

  it('MC-5: a failing server never blocks activation; failOnStartupError makes it fail the row', async () => {
    const { mcp, lines } = await start({ servers: { broken: { command: join(tmpdir(), 'no-such-mcp-server'), reconnect: { enabled: false } } } })
    expect(mcp.servers()[0]).toMatchObject({ name: 'broken', state: 'failed' })
    expect(lines.some(line => line.includes('"broken"'))).toBe(true)
    const ctx = new Context()
    open.push(ctx)
    await ctx.plugin(ToolsPlugin).await()
    const fiber = ctx.plugin(McpPlugin, { log: () => {}, servers: { broken: { command: join(tmpdir(), 'no-such-mcp-server'), failOnStartupError: true, reconnect: { enabled: false } } } })
    await expect(fiber.await()).rejects.toThrow(/broken/)
  })

  it('MC-6: list_changed swaps in the whole new generation once; tools are never re-listed otherwise', async () => {
    const log = logFile()
    const { ctx } = await start({ servers: { basic: testServerEntry({ log }) } })
    await call(ctx, 'mcp__basic__echo', { text: 'a' })
    await call(ctx, 'mcp__basic__echo', { text: 'b' })
    expect(readEvents(log).filter(e => e.event === 'list')).toHaveLength(1)
    await call(ctx, 'mcp__basic__grow', {})
    await waitForStatus(ctx, 'basic', status => status.tools.some(tool => tool.rawName === 'extra'))
    expect(ctx.tools.list().map(tool => tool.name)).toContain('mcp__basic__extra')
    expect(ctx.tools.list()).toHaveLength(10)
    expect(readEvents(log).filter(e => e.event === 'list')).toHaveLength(2)
  })

  it('MC-9: the server sees no provider key from our environment, only the env it was given', async () => {
    const saved = { DEEPSEEK_API_KEY: process.env.DEEPSEEK_API_KEY, OPENAI_API_KEY: process.env.OPENAI_API_KEY }
    process.env.DEEPSEEK_API_KEY = 'sk-secret-deepseek'
    process.env.OPENAI_API_KEY = 'sk-secret-openai'
    try {
      const { ctx } = await start({ servers: { basic: testServerEntry({ env: { GIVEN_TOKEN: 'on purpose' } }) } })
      const record = await call(ctx, 'mcp__basic__env', { names: ['DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'GIVEN_TOKEN', 'PATH'] })
      const seen = JSON.parse((record.content[0] as { text: string }).text) as Record<string, string | null>
      expect(seen.DEEPSEEK_API_KEY).toBeNull()
      expect(seen.OPENAI_API_KEY).toBeNull()
      expect(seen.GIVEN_TOKEN).toBe('on purpose')
      expect(seen.PATH).toBe(process.env.PATH)
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key]
        else process.env[key] = value
      }
    }
  })

  it('enabledTools / disabledTools pick tools; enabled: false starts nothing', async () => {
    const log = logFile()
    const { ctx, mcp } = await start({
      servers: {
        only: testServerEntry({ extra: { enabledTools: ['echo', 'add'], disabledTools: ['add'] } }),
        off: testServerEntry({ log, extra: { enabled: false } }),
      },
    })
    expect(ctx.tools.list().map(tool => tool.name)).toEqual(['mcp__only__echo'])
    expect(mcp.servers().find(server => server.name === 'off')).toMatchObject({ state: 'disabled', enabled: false })
    expect(readEvents(log)).toEqual([])
  })

  it('MC-2: a 100-character tool name, a $ref schema and a root anyOf become valid provider tools', async () => {
    const log = logFile()
    const { ctx, mcp } = await start({ servers: { weird: testServerEntry({ mode: 'weird', log }) } })
    const long = publicToolName('weird', LONG_TOOL_NAME)
    expect(long).toHaveLength(64)
    expect(long).toMatch(/^mcp__weird__a+_[0-9a-f]{12}$/)
    const names = ctx.tools.list().map(tool => tool.name)
    expect(names).toContain(long)
    expect(names).toContain(publicToolName('weird', 'dotted.name'))
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
    const lookup = ctx.tools.get('mcp__weird__lookup')!.parameters
    expect(JSON.stringify(lookup)).not.toContain('$ref')
    expect(lookup).toMatchObject({ type: 'object', properties: { where: { type: 'object', properties: { city: { type: 'string' } } }, when: { type: 'string', description: 'format: date-time' } }, required: ['where'] })
    const dotted = ctx.tools.get(publicToolName('weird', 'dotted.name'))!.parameters
    expect(dotted).toMatchObject({ type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } } })
    expect(mcp.servers()[0].tools.find(tool => tool.rawName === 'lookup')!.notes).toContain('$ref was inlined')
    const record = await call(ctx, long, { x: 'y' })
    expect(JSON.parse((record.content[0] as { text: string }).text)).toEqual({ name: LONG_TOOL_NAME, arguments: { x: 'y' } })
    expect(readEvents(log).filter(e => e.event === 'call').map(e => e.name)).toEqual([LONG_TOOL_NAME])
  })

  it('MC-11: read-only tools run in parallel, others are exclusive; tools/pre-execute matchers apply', async () => {
    const { ctx } = await start({ servers: { basic: testServerEntry() } })
    const execution = (name: string): ToolExecution => ({ callId: 'x', name, arguments: '{"text":"a","a":1,"b":2}' })
    expect(ctx.tools.executionMode(execution('mcp__basic__echo')).kind).toBe('parallel')
    expect(ctx.tools.executionMode(execution('mcp__basic__add')).kind).toBe('exclusive')
    ctx.on('tools/pre-execute', async (exec, next) => /^mcp__basic__a/.test(exec.name) ? { kind: 'deny', reason: 'no adding' } : next())
    expect(await call(ctx, 'mcp__basic__add', { a: 1, b: 2 })).toMatchObject({ isError: true, error: { code: 'DENIED' } })
    expect(await call(ctx, 'mcp__basic__echo', { text: 'ok' })).toMatchObject({ isError: false })
  })

  it('a mcp-server row is listed by ctx.mcp; unloading it disconnects and unregisters its tools', async () => {
    const log = logFile()
    const { ctx, mcp } = await start({})
    const entry = testServerEntry({ log })
    const fiber = ctx.plugin(McpServerPlugin, { serverName: 'row', transport: 'stdio', command: entry.command, args: entry.args, env: entry.env, log: () => {} })
    await fiber.await()
    expect(mcp.servers()).toMatchObject([{ name: 'row', source: 'row', state: 'connected' }])
    expect(ctx.tools.list()).toHaveLength(9)
    await fiber.dispose()
    expect(ctx.tools.list()).toEqual([])
    expect(mcp.servers()).toEqual([])
  })
})
