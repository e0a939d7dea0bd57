/**
 * MCP through the real `dsh` binary: `dsh mcp list|add|remove`, a pasted Claude Code `.mcp.json`
 * that needs trust, a patch row, and headless runs where the fake DeepSeek server calls MCP tools.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { testServerEntry } from '../../test-support/mcp.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const envFor = (home: string) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' })

function pasteMcpJson(cwd: string, servers: Record<string, unknown>): void {
  writeFileSync(join(cwd, '.mcp.json'), JSON.stringify({ mcpServers: servers }, null, 2))
}

describe('dsh mcp', () => {
  it('list shows a pasted .mcp.json as untrusted until --trust-project-mcp, then its state and tool count', async () => {
    const { home, cwd } = tempHome()
    pasteMcpJson(cwd, { proj: testServerEntry() })
    const untrusted = await runDsh(['mcp', 'list'], { cwd, env: { DSH_HOME: home } })
    expect(untrusted.code).toBe(0)
    expect(untrusted.stdout).toMatch(/^proj\s+project\s+stdio\s+untrusted\s+0$/m)
    const trusted = await runDsh(['mcp', 'list', '--trust-project-mcp', '--tools'], { cwd, env: { DSH_HOME: home } })
    expect(trusted.code).toBe(0)
    expect(trusted.stdout).toMatch(/^proj\s+project\s+stdio\s+connected\s+9$/m)
    expect(trusted.stdout).toContain('  mcp__proj__echo (read-only)')
  })

  it('add and remove edit settings.yaml; a bad entry is refused with the reason', async () => {
    const { home, cwd } = tempHome()
    const entry = testServerEntry()
    const added = await runDsh(['mcp', 'add', 'demo', '-e', 'MCP_TEST_MODE=basic', '--', String(entry.command), ...(entry.args as string[])], { cwd, env: { DSH_HOME: home } })
    expect(added.code).toBe(0)
    const settings = parseYaml(readFileSync(join(home, 'settings.yaml'), 'utf8'))
    expect(settings.mcpServers.demo).toEqual({ command: entry.command, args: entry.args, env: { MCP_TEST_MODE: 'basic' } })
    const listed = await runDsh(['mcp', 'list'], { cwd, env: { DSH_HOME: home } })
    expect(listed.stdout).toMatch(/^demo\s+settings\s+stdio\s+connected\s+9$/m)
    const http = await runDsh(['mcp', 'add', 'web', '--transport', 'http', 'http://127.0.0.1:9/mcp', '--header', 'Authorization: Bearer x'], { cwd, env: { DSH_HOME: home } })
    expect(http.code).toBe(0)
    expect(parseYaml(readFileSync(join(home, 'settings.yaml'), 'utf8')).mcpServers.web).toEqual({ type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer x' } })
    const bad = await runDsh(['mcp', 'add', 'bad', '--transport', 'http', 'ftp://nowhere'], { cwd, env: { DSH_HOME: home } })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('must be an http(s) URL')
    expect((await runDsh(['mcp', 'remove', 'demo'], { cwd, env: { DSH_HOME: home } })).code).toBe(0)
    expect(parseYaml(readFileSync(join(home, 'settings.yaml'), 'utf8')).mcpServers).toEqual({ web: expect.any(Object) })
    const missing = await runDsh(['mcp', 'remove', 'demo'], { cwd, env: { DSH_HOME: home } })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('no MCP server "demo"')
  })
})

describe('headless runs with MCP tools', () => {
  it('MC-1 MC-8: the fake model calls a tool of a trusted .mcp.json server; stdout holds only the answer', async () => {
    const { home, cwd } = tempHome()
    pasteMcpJson(cwd, { proj: testServerEntry() })
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-1', name: 'mcp__proj__echo', arguments: '{"text":"from mcp"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'The server said: from mcp' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--trust-project-mcp', 'use the echo tool'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('The server said: from mcp\n')
    expect(result.stderr).toContain('[mcp proj] test server basic started')
    const first = server.requests[before].body
    expect(first.tools.map((tool: { function: { name: string } }) => tool.function.name)).toContain('mcp__proj__echo')
    const toolMessage = server.requests[before + 1].body.messages.find((message: { role: string }) => message.role === 'tool')
    expect(toolMessage).toMatchObject({ tool_call_id: 'call-1', content: 'from mcp' })
  })

  it('an untrusted .mcp.json starts nothing and says how to trust it; its tools are not offered', async () => {
    const { home, cwd } = tempHome()
    pasteMcpJson(cwd, { proj: testServerEntry() })
    server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'hello'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    expect(result.stderr).toContain('--trust-project-mcp')
    const names = server.requests[before].body.tools.map((tool: { function: { name: string } }) => tool.function.name)
    expect(names.some((name: string) => name.startsWith('mcp__'))).toBe(false)
  })

  it('a patch row (mcp-server, the plugin-row shape) adds a server for those who compose', async () => {
    const { home, cwd } = tempHome()
    const entry = testServerEntry()
    const patch = join(home, 'mcp.patch.yml')
    writeFileSync(patch, JSON.stringify([{ insert: [{ id: 'mcp-calc', name: 'mcp-server', config: { serverName: 'calc', transport: 'stdio', command: entry.command, args: entry.args, env: entry.env } }] }]))
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-1', name: 'mcp__calc__add', arguments: '{"a":20,"b":22}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: '42' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--patch', patch, 'add them'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    const toolMessage = server.requests[before + 1].body.messages.find((message: { role: string }) => message.role === 'tool')
    expect(toolMessage).toMatchObject({ tool_call_id: 'call-1', content: '42' })
  })
})

describe('an MCP server that fails to start (#44.6)', () => {
  it('is one stderr line naming the server, why and the error line it printed, not its Node stack; the run goes on', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, 'settings.yaml'), `mcpServers:\n  broken:\n    command: ${JSON.stringify(process.execPath)}\n    args: ["-e", "throw new Error('boom at start')"]\n`)
    server.enqueue(streamResponse([{ text: 'answered anyway' }, { finish: 'stop', usage }]))
    const result = await runDsh(['--profile', 'headless', 'hello'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('answered anyway\n')
    const lines = result.stderr.trimEnd().split('\n').filter(line => !line.startsWith('dsh: session ') && !line.startsWith('dsh: warning:'))
    expect(lines).toEqual([expect.stringMatching(/^dsh: MCP server "broken" failed to start: .+; it said: Error: boom at start( \(retrying; \/mcp shows its state\))?$/)])
    expect(result.stderr).not.toMatch(/^\s*at /m)
    expect(result.stderr).not.toContain('[mcp broken]')
  })
})
