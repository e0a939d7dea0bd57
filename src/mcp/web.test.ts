/**
 * The web UI's MCP methods in process: `mcp.list` (state, tools, errors), the one-time trust of a
 * project's `.mcp.json` (`mcp.trust`, recorded with the file's hash) and `mcp.setEnabled`.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { AgentsServicePlugin, ReactLoopPlugin } from '../agent/index.js'
import { readSettings, writeSettings } from '../config/home.js'
import { LlmServicePlugin } from '../llm/index.js'
import { JsonlPersistencePlugin } from '../persistence/plugins.js'
import { SessionsServicePlugin } from '../session/index.js'
import { ToolsPlugin } from '../tools/index.js'
import { WebApiPlugin } from '../web/methods.js'
import { McpPlugin, projectFileHash, trustedProjects } from './plugin.js'
import { testServerEntry } from '../../test-support/mcp.js'

const open: Context[] = []
afterEach(async () => {
  for (const ctx of open.splice(0)) for (const runtime of [...ctx.registry.values()]) for (const fiber of [...runtime.fibers]) await fiber.dispose()
})

async function boot(home: string, cwd: string) {
  const ctx = new Context()
  open.push(ctx)
  for (const plugin of [SessionsServicePlugin, LlmServicePlugin, ToolsPlugin, ReactLoopPlugin]) await ctx.plugin(plugin as never, undefined as never).await()
  await ctx.plugin(AgentsServicePlugin, { loop: { provider: 'none', model: 'none' } }).await()
  await ctx.plugin(JsonlPersistencePlugin, { root: join(home, 'sessions') }).await()
  await ctx.plugin(McpPlugin, {
    servers: readSettings(home).mcpServers,
    cwd,
    settings: { read: () => readSettings(home), write: settings => writeSettings(home, settings) },
    log: () => {},
  }).await()
  await ctx.plugin(WebApiPlugin, { home, cwd }).await()
  const call = (name: string, params: Record<string, unknown> = {}) => Promise.resolve(ctx.webApi.get(name)!(params, { signal: new AbortController().signal })) as Promise<any>
  return { ctx, call }
}

describe('web MCP methods', () => {
  it('lists servers, trusts the project .mcp.json once (by hash) and toggles a settings server', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-work-'))
    writeSettings(home, { mcpServers: { mine: testServerEntry() } })
    writeFileSync(join(cwd, '.mcp.json'), JSON.stringify({ mcpServers: { proj: testServerEntry() } }))
    const { call } = await boot(home, cwd)
    const before = await call('mcp.list')
    expect(before.untrusted).toEqual(['proj'])
    expect(before.servers.map((server: { name: string; state: string }) => [server.name, server.state])).toEqual([['mine', 'connected'], ['proj', 'untrusted']])
    const trusted = await call('mcp.trust')
    expect(trusted.untrusted).toEqual([])
    expect(trusted.servers.find((server: { name: string }) => server.name === 'proj')).toMatchObject({ state: 'connected', source: 'project' })
    expect(trustedProjects(readSettings(home))[cwd]).toBe(projectFileHash(JSON.stringify({ mcpServers: { proj: testServerEntry() } })))
    const off = await call('mcp.setEnabled', { name: 'mine', enabled: false })
    expect(off.servers.find((server: { name: string }) => server.name === 'mine')).toMatchObject({ state: 'disabled', enabled: false, tools: [] })
    expect(readSettings(home).mcpServers.mine).toMatchObject({ enabled: false })
    await expect(call('mcp.setEnabled', { name: 'proj', enabled: false })).rejects.toMatchObject({ code: 'BAD_PARAMS' })
    // A new run of the same project: trusted now, as long as the file is unchanged.
    const again = await boot(home, cwd)
    expect((await again.call('mcp.list')).servers.find((server: { name: string }) => server.name === 'proj').state).toBe('connected')
    writeFileSync(join(cwd, '.mcp.json'), JSON.stringify({ mcpServers: { proj: testServerEntry(), more: testServerEntry() } }))
    const changed = await boot(home, cwd)
    expect((await changed.call('mcp.list')).untrusted).toEqual(['more', 'proj'])
  })
})
