/**
 * MC-10 through real protocol server processes: ACP `session/new.mcpServers` (and those of
 * `session/load` and `session/resume`) and the SDK's
 * `session/create` start servers whose tools only that session sees; the ACP row's
 * `mcpServers: refuse` answers -32602 as the original does.
 */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { TEST_SERVER } from '../../test-support/mcp.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { DshClient } from '../sdk/client.js'
import { ErrorCodes, JsonRpcPeer } from '../sdk/jsonrpc.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

function connect(home: string, cwd: string, patches: string[] = []) {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries({ ...process.env, DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' })) {
    if (value !== undefined && key !== 'DSH_MODEL') env[key] = value
  }
  const child = spawn(process.execPath, [dshBin, '--profile', 'acp', ...patches.flatMap(file => ['--patch', file])], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr += text })
  const peer = new JsonRpcPeer({ input: child.stdout, output: child.stdin })
  return {
    peer,
    stderr: () => stderr,
    close: async () => {
      child.stdin.end()
      if (child.exitCode !== null) return child.exitCode
      return new Promise<number | null>(resolve => child.on('close', code => resolve(code)))
    },
  }
}

const acpServer = { name: 'sess', command: process.execPath, args: [TEST_SERVER], env: [{ name: 'MCP_TEST_MODE', value: 'basic' }] }
const toolNames = (body: { tools?: { function: { name: string } }[] }) => (body.tools ?? []).map(tool => tool.function.name)

describe('ACP session/new.mcpServers', () => {
  it('MC-10: per-session servers give that session (only) their tools, and the model can call them', async () => {
    const { home, cwd } = tempHome()
    const connection = connect(home, cwd)
    try {
      await connection.peer.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      const { sessionId } = await connection.peer.request<{ sessionId: string }>('session/new', { cwd, mcpServers: [acpServer] })
      const other = await connection.peer.request<{ sessionId: string }>('session/new', { cwd, mcpServers: [] })
      server.enqueue(
        streamResponse([{ toolCall: { id: 'call-1', name: 'mcp__sess__echo', arguments: '{"text":"per session"}' } }, { finish: 'tool_calls', usage }]),
        streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]),
      )
      const before = server.requests.length
      expect(await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'echo' }] })).toEqual({ stopReason: 'end_turn' })
      expect(toolNames(server.requests[before].body)).toContain('mcp__sess__echo')
      const toolMessage = server.requests[before + 1].body.messages.find((message: { role: string }) => message.role === 'tool')
      expect(toolMessage).toMatchObject({ tool_call_id: 'call-1', content: 'per session' })
      server.enqueue(streamResponse([{ text: 'plain' }, { finish: 'stop', usage }]))
      const otherAt = server.requests.length
      expect(await connection.peer.request('session/prompt', { sessionId: other.sessionId, prompt: [{ type: 'text', text: 'hi' }] })).toEqual({ stopReason: 'end_turn' })
      expect(toolNames(server.requests[otherAt].body).some(name => name.startsWith('mcp__'))).toBe(false)
      expect(connection.stderr()).toContain('[mcp sess] test server basic started')
      await expect(connection.peer.request('session/new', { cwd, mcpServers: [{ name: 'bad', type: 'http', url: 'ftp://x' }] }))
        .rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: expect.stringContaining('http(s) URL') })
    } finally {
      expect(await connection.close()).toBe(0)
    }
  })

  it('MC-10: with mcpServers: refuse, a non-empty list is -32602 "mcpServers is not supported"; an empty one is fine', async () => {
    const { home, cwd } = tempHome()
    const patch = join(home, 'refuse.yml')
    writeFileSync(patch, JSON.stringify([{ id: 'app', config: { mcpServers: 'refuse' } }]))
    const connection = connect(home, cwd, [patch])
    try {
      await connection.peer.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      await expect(connection.peer.request('session/new', { cwd, mcpServers: [acpServer] }))
        .rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: 'mcpServers is not supported' })
      expect(await connection.peer.request('session/new', { cwd, mcpServers: [] })).toMatchObject({ sessionId: expect.any(String) })
    } finally {
      expect(await connection.close()).toBe(0)
    }
  })
})

describe('ACP session/load and session/resume mcpServers', () => {
  it.each(['session/load', 'session/resume'])('MC-10: %s starts the given servers for that session, as session/new does', async (method) => {
    const { home, cwd } = tempHome()
    // A stored session, made by another connection without servers.
    const first = connect(home, cwd)
    let sessionId: string
    try {
      await first.peer.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      ;({ sessionId } = await first.peer.request<{ sessionId: string }>('session/new', { cwd, mcpServers: [] }))
      server.enqueue(streamResponse([{ text: 'hello' }, { finish: 'stop', usage }]))
      expect(await first.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hi' }] })).toEqual({ stopReason: 'end_turn' })
    } finally {
      expect(await first.close()).toBe(0)
    }
    const second = connect(home, cwd)
    try {
      await second.peer.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      await second.peer.request(method, { sessionId, cwd, mcpServers: [acpServer] })
      server.enqueue(
        streamResponse([{ toolCall: { id: 'call-1', name: 'mcp__sess__echo', arguments: '{"text":"after load"}' } }, { finish: 'tool_calls', usage }]),
        streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]),
      )
      const before = server.requests.length
      expect(await second.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'echo' }] })).toEqual({ stopReason: 'end_turn' })
      expect(toolNames(server.requests[before].body)).toContain('mcp__sess__echo')
      expect(server.requests[before + 1].body.messages.find((message: { role: string }) => message.role === 'tool')).toMatchObject({ tool_call_id: 'call-1', content: 'after load' })
      expect(second.stderr()).toContain('[mcp sess] test server basic started')
      // Checked as session/new checks them, before anything is opened.
      await expect(second.peer.request(method, { sessionId, cwd, mcpServers: [{ name: 'bad', type: 'http', url: 'ftp://x' }] }))
        .rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: expect.stringContaining('http(s) URL') })
    } finally {
      expect(await second.close()).toBe(0)
    }
  })
})

describe('SDK session/create mcpServers', () => {
  it('MC-10: a session created with servers can call their tools; another session cannot see them', async () => {
    const { home, cwd } = tempHome()
    const client = await DshClient.start({ cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined } })
    try {
      const { sessionId } = await client.createSession({ mcpServers: [acpServer] })
      server.enqueue(
        streamResponse([{ toolCall: { id: 'call-1', name: 'mcp__sess__add', arguments: '{"a":1,"b":2}' } }, { finish: 'tool_calls', usage }]),
        streamResponse([{ text: 'three' }, { finish: 'stop', usage }]),
      )
      const before = server.requests.length
      const run = await client.run('add', { sessionId })
      expect(run.finalResponse).toBe('three')
      expect(toolNames(server.requests[before].body)).toContain('mcp__sess__add')
      expect(server.requests[before + 1].body.messages.find((message: { role: string }) => message.role === 'tool')).toMatchObject({ content: '3' })
      server.enqueue(streamResponse([{ text: 'plain' }, { finish: 'stop', usage }]))
      const otherAt = server.requests.length
      await client.run('hi')
      expect(toolNames(server.requests[otherAt].body).some(name => name.startsWith('mcp__'))).toBe(false)
      await expect(client.createSession({ mcpServers: [{ name: 'x' }] })).rejects.toMatchObject({ code: ErrorCodes.invalidParams })
    } finally {
      await client.close()
    }
  })
})
