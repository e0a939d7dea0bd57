/**
 * `/mcp` (every surface's command registry) and `serverStderr: false` (the terminal app's
 * setting), against the real stdio test server.
 */
import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { testServerEntry } from '../../test-support/mcp.js'
import { CommandsPlugin } from '../commands/index.js'
import { McpPlugin } from './plugin.js'

async function runtime(serverStderr?: boolean) {
  const lines: string[] = []
  const h = await loopHarness({
    setup: async (ctx) => {
      await ctx.plugin(CommandsPlugin).await()
      await ctx.plugin(McpPlugin, { servers: { basic: testServerEntry(), broken: { command: '/nonexistent/mcp-server', reconnect: { enabled: false } } }, log: (line: string) => { lines.push(line) }, ...serverStderr === undefined ? {} : { serverStderr } }).await()
    },
  })
  return { h, lines }
}

describe('/mcp', () => {
  it('lists each server with its state and tool count, why one is not connected, and with "tools" each tool', async () => {
    const { h } = await runtime()
    const outcome = await h.ctx.commands.execute(h.agent, '/mcp')
    expect(outcome?.kind).toBe('success')
    const lines = outcome!.text!.split('\n')
    expect(lines[0]).toMatch(/^NAME\s+SOURCE\s+TRANSPORT\s+STATE\s+TOOLS$/)
    expect(lines[1]).toMatch(/^basic\s+settings\s+stdio\s+connected\s+9$/)
    expect(lines[2]).toMatch(/^broken\s+settings\s+stdio\s+failed\s+0$/)
    expect(lines[3]).toMatch(/^ {2}error: /)
    const tools = await h.ctx.commands.execute(h.agent, '/mcp tools')
    expect(tools?.text).toContain('  mcp__basic__echo (read-only)')
    expect(await h.ctx.commands.execute(h.agent, '/mcp everything')).toEqual({ kind: 'error', text: 'unknown argument "everything": use /mcp or /mcp tools' })
    await h.dispose()
  })

  it('serverStderr: false keeps a server\'s own lines in its status only; our diagnostics still reach the log', async () => {
    const quiet = await runtime(false)
    expect(quiet.h.ctx.mcp.servers().find(server => server.name === 'basic')!.stderr).toContain('test server basic started')
    expect(quiet.lines.some(line => line.startsWith('[mcp basic]'))).toBe(false)
    expect(quiet.lines.some(line => line.startsWith('dsh: MCP server "broken"'))).toBe(true)
    await quiet.h.dispose()
    const loud = await runtime()
    expect(loud.lines).toContain('[mcp basic] test server basic started')
    await loud.h.dispose()
  })
})
