/**
 * The ACP agent server through a real process (`node bin/dsh.js --profile acp`) against the fake
 * DeepSeek server on 127.0.0.1, driven by a client-side JSON-RPC peer.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { errorResponse, FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { waitForFile } from '../../test-support/wait-for-file.js'
import { ErrorCodes, JsonRpcPeer, LineSplitter, method, type NotificationFrame } from '../sdk/jsonrpc.js'
import { askBashPatch, askNetworkPatch } from '../../test-support/patches.js'
import { PERMISSION_OPTIONS, permissionAnswer, permissionOptions } from './permissions.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

interface Connection {
  readonly child: ChildProcessWithoutNullStreams
  readonly peer: JsonRpcPeer
  readonly notifications: NotificationFrame[]
  /** Every frame the agent wrote, parsed. */
  readonly frames: any[]
  readonly permissionRequests: any[]
  stderr: string
  close(): Promise<number | null>
}

/** A patch putting the ACP server in its compatibility mode (the original's frames only). */
function recordedPatch(): string {
  const patch = join(mkdtempSync(join(tmpdir(), 'dsh-acp-recorded-')), 'patch.yml')
  writeFileSync(patch, JSON.stringify([{ id: 'app', config: { updates: 'recorded' } }]))
  return patch
}

function connect(options: { home: string; cwd: string; patches?: string[]; answer?: (params: any) => unknown; recorded?: boolean }): Connection {
  const env: Record<string, string> = {}
  const vars = { ...process.env, DSH_HOME: options.home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined }
  for (const [key, value] of Object.entries(vars)) if (value !== undefined) env[key] = value
  const patches = [...(options.patches ?? []), ...(options.recorded === true ? [recordedPatch()] : [])].flatMap(file => ['--patch', file])
  const child = spawn(process.execPath, [dshBin, '--profile', 'acp', ...patches], { cwd: options.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] })
  const notifications: NotificationFrame[] = []
  const frames: any[] = []
  const permissionRequests: any[] = []
  const splitter = new LineSplitter()
  child.stdout.on('data', (text: string | Buffer) => { for (const line of splitter.push(String(text))) frames.push(JSON.parse(line)) })
  const connection: Connection = {
    child,
    notifications,
    frames,
    permissionRequests,
    stderr: '',
    peer: new JsonRpcPeer({
      input: child.stdout,
      output: child.stdin,
      onNotification: frame => notifications.push(frame),
      methods: {
        'session/request_permission': method(z.any(), params => {
          permissionRequests.push(params)
          return options.answer?.(params) ?? { outcome: { outcome: 'cancelled' } }
        }),
      },
    }),
    close: async () => {
      child.stdin.end()
      if (child.exitCode !== null) return child.exitCode
      return new Promise(resolve => child.on('close', code => resolve(code)))
    },
  }
  child.stderr.setEncoding('utf8').on('data', (text: string) => { connection.stderr += text })
  return connection
}

async function openSession(connection: Connection, cwd: string): Promise<string> {
  await connection.peer.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
  const { sessionId } = await connection.peer.request<{ sessionId: string }>('session/new', { cwd, mcpServers: [] })
  return sessionId
}

/** The session's updates, without the slash-command advertisements (tested on their own). */
const chunks = (connection: Connection, sessionId: string) => connection.notifications
  .filter(n => n.method === 'session/update' && (n.params as any).sessionId === sessionId)
  .map(n => (n.params as any).update)
  .filter(update => update.sessionUpdate !== 'available_commands_update')

describe('ACP server', () => {
  it('full mode: a launch folder whose hooks wait for trust says so in each new session, with /trust on; once trusted it does not; recorded mode never does', async () => {
    const { home, cwd } = tempHome()
    mkdirSync(join(cwd, '.claude'))
    writeFileSync(join(cwd, '.claude', 'settings.json'), JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'true' }] }] } }))
    const texts = (connection: Connection, sessionId: string) => chunks(connection, sessionId).filter(u => u.sessionUpdate === 'agent_message_chunk').map(u => u.content.text as string)
    const recorded = connect({ home, cwd, recorded: true })
    try {
      const sessionId = await openSession(recorded, cwd)
      // A request answered after the session opened: anything the opening sent is in by now.
      await recorded.peer.request('session/new', { cwd, mcpServers: [] })
      expect(texts(recorded, sessionId)).toEqual([])
    } finally {
      await recorded.close()
    }
    const connection = connect({ home, cwd })
    try {
      const sessionId = await openSession(connection, cwd)
      await expect.poll(() => texts(connection, sessionId)).toHaveLength(1)
      expect(texts(connection, sessionId)[0]).toBe([
        `${realpathSync(cwd)} brings code that runs with your user's rights once the folder is trusted; until then none of it runs:`,
        '  hooks   .claude/settings.json (PreToolUse)',
        'Type /trust on to trust the folder and start it (/trust shows what it runs).',
      ].join('\n'))
      expect(await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/trust on' }] })).toEqual({ stopReason: 'end_turn' })
      const { sessionId: second } = await connection.peer.request<{ sessionId: string }>('session/new', { cwd, mcpServers: [] })
      expect(await connection.peer.request('session/prompt', { sessionId: second, prompt: [{ type: 'text', text: '/trust' }] })).toEqual({ stopReason: 'end_turn' })
      const said = texts(connection, second)
      expect(said).toHaveLength(1)
      expect(said[0]).toContain('is trusted')
    } finally {
      await connection.close()
    }
  })

  it('initialize (capabilities, recorded mode), authenticate, session/new (absolute cwd only)', async () => {
    const { home, cwd } = tempHome()
    const connection = connect({ home, cwd, recorded: true })
    try {
      const init = await connection.peer.request<any>('initialize', { protocolVersion: 1, clientCapabilities: {} })
      expect(init).toEqual({
        protocolVersion: 1,
        agentInfo: { name: 'dsh', version: expect.any(String) },
        agentCapabilities: { promptCapabilities: { image: false, audio: false, embeddedContext: false } },
        authMethods: [],
      })
      expect(await connection.peer.request('authenticate', { methodId: 'none' })).toEqual({})
      await expect(connection.peer.request('session/new', { cwd: 'relative/dir', mcpServers: [] }))
        .rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: expect.stringContaining('absolute') })
      await expect(connection.peer.request('session/new', {})).rejects.toMatchObject({ code: ErrorCodes.invalidParams })
      await expect(connection.peer.request('session/new', { cwd: join(cwd, 'missing'), mcpServers: [] }))
        .rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: expect.stringContaining('not an existing folder') })
      const { sessionId } = await connection.peer.request<{ sessionId: string }>('session/new', { cwd, mcpServers: [] })
      expect(sessionId).toMatch(/^[0-9a-f-]{36}$/)
      await expect(connection.peer.request('session/prompt', { sessionId: 'unknown', prompt: [{ type: 'text', text: 'x' }] }))
        .rejects.toMatchObject({ code: ErrorCodes.invalidParams })
    } finally {
      expect(await connection.close()).toBe(0)
    }
  })

  it('recorded mode: committed assistant text arrives as one agent_message_chunk per message, then stopReason end_turn', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ text: 'Running it.' }, { toolCall: { id: 'call-1', name: 'bash', arguments: '{"command":"echo hi","description":"echo"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ reasoning: 'done' }, { text: 'DO' }, { text: 'NE' }, { finish: 'stop', usage }]),
    )
    const connection = connect({ home, cwd, recorded: true })
    try {
      const sessionId = await openSession(connection, cwd)
      const result = await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'run echo then say DONE' }] })
      expect(result).toEqual({ stopReason: 'end_turn' })
      expect(chunks(connection, sessionId)).toEqual([
        { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Running it.' } },
        { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'DONE' } },
      ])
      // The updates precede the answer on the wire.
      const answerAt = connection.frames.findIndex(frame => frame.result?.stopReason !== undefined)
      const lastUpdateAt = connection.frames.findLastIndex(frame => frame.method === 'session/update')
      expect(lastUpdateAt).toBeLessThan(answerAt)
    } finally {
      expect(await connection.close()).toBe(0)
    }
  })

  it('a failed turn answers the prompt with -32603 "Internal error: turn failed: ..."', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(errorResponse(401, { error: { message: 'bad key' } }))
    const connection = connect({ home, cwd })
    try {
      const sessionId = await openSession(connection, cwd)
      await expect(connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }] }))
        .rejects.toMatchObject({ code: ErrorCodes.internalError, message: expect.stringMatching(/^Internal error: turn failed: /) })
    } finally {
      await connection.close()
    }
  })

  it('A-9, T-6: session/cancel during a tool call: the prompt answers stopReason cancelled', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([
      { toolCall: { id: 'call-sleep', name: 'bash', arguments: '{"command":"touch started && sleep 30","description":"wait"}' } },
      { finish: 'tool_calls', usage },
    ]))
    const connection = connect({ home, cwd })
    try {
      const sessionId = await openSession(connection, cwd)
      const answered = connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait a long time' }] })
      await waitForFile(join(cwd, 'started'))
      connection.peer.notify('session/cancel', { sessionId })
      expect(await answered).toEqual({ stopReason: 'cancelled' })
      // The session takes a new prompt afterwards.
      server.enqueue(streamResponse([{ text: 'after cancel' }, { finish: 'stop', usage }]))
      expect(await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'again' }] })).toEqual({ stopReason: 'end_turn' })
      expect(chunks(connection, sessionId).at(-1)).toEqual({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'after cancel' } })
    } finally {
      expect(await connection.close()).toBe(0)
    }
  })

  it('stdin EOF cancels a running turn (no one can see it), answers the prompt and exits 0', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([
      { toolCall: { id: 'call-eof', name: 'bash', arguments: '{"command":"touch started && sleep 30","description":"wait"}' } },
      { finish: 'tool_calls', usage },
    ]))
    const connection = connect({ home, cwd })
    const sessionId = await openSession(connection, cwd)
    const answered = connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait' }] })
    await waitForFile(join(cwd, 'started'))
    expect(await connection.close()).toBe(0)
    expect(await answered).toEqual({ stopReason: 'cancelled' })
  })

  it('T-7/AP-4: a tools/pre-execute ask becomes session/request_permission (recorded mode: only toolCallId) with the two once-options; allow_once runs the tool', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-ok', name: 'bash', arguments: '{"command":"echo approved-run","description":"echo"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'ran' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const connection = connect({ home, cwd, recorded: true, patches: [askBashPatch()], answer: () => ({ outcome: { outcome: 'selected', optionId: 'allow-once' } }) })
    try {
      const sessionId = await openSession(connection, cwd)
      expect(await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'echo' }] })).toEqual({ stopReason: 'end_turn' })
      expect(connection.permissionRequests).toEqual([{
        sessionId,
        toolCall: { toolCallId: 'call-ok' },
        options: [
          { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
          { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
        ],
      }])
      const tool = server.requests[before + 1]!.body.messages.find((m: { role: string }) => m.role === 'tool')
      expect(tool.content).toBe('approved-run\n')
    } finally {
      await connection.close()
    }
  })

  it('a request with scopes also offers allow_always options for the session and for settings, mapped to allowed-session and allowed-always', async () => {
    const { home, cwd } = tempHome()
    const fetch = (id: string, host: string) => streamResponse([{ toolCall: { id, name: 'fetch_host', arguments: JSON.stringify({ host }) } }, { finish: 'tool_calls', usage }])
    server.enqueue(fetch('n1', 'registry.example.org'), fetch('n2', 'pypi.example.org'), streamResponse([{ text: 'both' }, { finish: 'stop', usage }]))
    const before = server.requests.length
    const choices = ['allow-session', 'allow-settings']
    const connection = connect({ home, cwd, patches: [askNetworkPatch()], answer: () => ({ outcome: { outcome: 'selected', optionId: choices.shift() } }) })
    try {
      const sessionId = await openSession(connection, cwd)
      expect(await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'reach two hosts' }] })).toEqual({ stopReason: 'end_turn' })
      expect(connection.permissionRequests.map(request => request.options)).toEqual([0, 1].map(() => [
        { optionId: 'allow-once', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'allow-session', name: 'Allow for this session', kind: 'allow_always' },
        { optionId: 'allow-settings', name: 'Always allow (add to settings)', kind: 'allow_always' },
        { optionId: 'reject-once', name: 'Reject', kind: 'reject_once' },
      ]))
      expect(connection.permissionRequests[0].toolCall.title).toContain('connect to registry.example.org:443 (not in sandbox.allowedHosts)')
      const tools = server.requests.slice(before + 1, before + 3).map(request => request.body.messages.filter((m: { role: string }) => m.role === 'tool').at(-1).content)
      expect(tools).toEqual(['network approval: allowed-session', 'network approval: allowed-always'])
    } finally {
      await connection.close()
    }
  })

  it('without scopes the options are exactly the two once-options; an option the request did not offer rejects', () => {
    expect(permissionOptions(undefined)).toBe(PERMISSION_OPTIONS)
    expect(permissionOptions([])).toBe(PERMISSION_OPTIONS)
    expect(permissionOptions(['always']).map(option => option.optionId)).toEqual(['allow-once', 'allow-settings', 'reject-once'])
    expect(permissionAnswer('allow-once', undefined)).toBe('allowed-once')
    expect(permissionAnswer('allow-session', undefined)).toBe('rejected')
    expect(permissionAnswer('allow-settings', ['session'])).toBe('rejected')
    expect(permissionAnswer('allow-settings', ['session', 'always'])).toBe('allowed-always')
    expect(permissionAnswer('reject-once', ['session'])).toBe('rejected')
    expect(permissionAnswer('something-else', ['session', 'always'])).toBe('rejected')
  })

  it('recorded mode sends no elicitation/create even to a client that advertises forms: ask_user_question fails closed (UNAVAILABLE) as the original does', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'q-rec', name: 'ask_user_question', arguments: JSON.stringify({ questions: [{ id: 'go', question: 'Continue?', options: [{ label: 'Yes' }, { label: 'No' }] }] }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'went on' }, { finish: 'stop', usage }]),
    )
    const connection = connect({ home, cwd, recorded: true })
    try {
      await connection.peer.request('initialize', { protocolVersion: 1, clientCapabilities: { elicitation: { form: {} } } })
      const { sessionId } = await connection.peer.request<{ sessionId: string }>('session/new', { cwd, mcpServers: [] })
      expect(await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'ask' }] })).toEqual({ stopReason: 'end_turn' })
      expect(connection.frames.filter(frame => frame.method !== undefined && frame.method !== 'session/update')).toEqual([])
      const tool = server.requests.at(-1)!.body.messages.find((m: { role: string; tool_call_id?: string }) => m.role === 'tool' && m.tool_call_id === 'q-rec')
      expect(String(tool.content)).toMatch(/^Error: no one can answer questions in this session/)
    } finally {
      await connection.close()
    }
  })

  it('T-7: reject_once (or a cancelled permission) denies the call: the model sees a denial, the body never runs', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-no', name: 'bash', arguments: '{"command":"touch should-not-exist","description":"touch"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'denied' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const connection = connect({ home, cwd, patches: [askBashPatch()], answer: () => ({ outcome: { outcome: 'selected', optionId: 'reject-once' } }) })
    try {
      const sessionId = await openSession(connection, cwd)
      expect(await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'touch' }] })).toEqual({ stopReason: 'end_turn' })
      expect(connection.permissionRequests).toHaveLength(1)
      const tool = server.requests[before + 1]!.body.messages.find((m: { role: string }) => m.role === 'tool')
      expect(tool.content).toBe('Error: the user rejected tool "bash"')
      const { existsSync } = await import('node:fs')
      expect(existsSync(join(cwd, 'should-not-exist'))).toBe(false)
    } finally {
      await connection.close()
    }
  })

  it('two sessions interleave on one connection (recorded mode): B answers while A is still streaming, each gets its own updates', async () => {
    const { home, cwd } = tempHome()
    const other = mkdtempSync(join(tmpdir(), 'dsh-acp-other-'))
    let releaseA!: () => void
    const holdA = new Promise<void>(resolve => { releaseA = resolve })
    const connection = connect({ home, cwd, recorded: true })
    try {
      const a = await openSession(connection, cwd)
      const { sessionId: b } = await connection.peer.request<{ sessionId: string }>('session/new', { cwd: other, mcpServers: [] })
      expect(b).not.toBe(a)
      server.enqueue(streamResponse([{ text: 'for A' }, { until: holdA }, { finish: 'stop', usage }]))
      const requested = server.requests.length
      const answerA = connection.peer.request('session/prompt', { sessionId: a, prompt: [{ type: 'text', text: 'a' }] })
      await server.waitForRequests(requested + 1)
      server.enqueue(streamResponse([{ text: 'for B' }, { finish: 'stop', usage }]))
      expect(await connection.peer.request('session/prompt', { sessionId: b, prompt: [{ type: 'text', text: 'b' }] })).toEqual({ stopReason: 'end_turn' })
      expect(chunks(connection, a)).toEqual([])
      releaseA()
      expect(await answerA).toEqual({ stopReason: 'end_turn' })
      expect(chunks(connection, a).map(update => update.content.text)).toEqual(['for A'])
      expect(chunks(connection, b).map(update => update.content.text)).toEqual(['for B'])
    } finally {
      releaseA()
      await connection.close()
    }
  })

  it('a second prompt on a session whose prompt is running is refused (-32000); the first still completes', async () => {
    const { home, cwd } = tempHome()
    let release!: () => void
    const hold = new Promise<void>(resolve => { release = resolve })
    const connection = connect({ home, cwd })
    try {
      const sessionId = await openSession(connection, cwd)
      server.enqueue(streamResponse([{ text: 'first' }, { until: hold }, { finish: 'stop', usage }]))
      const requested = server.requests.length
      const first = connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '1' }] })
      await server.waitForRequests(requested + 1)
      await expect(connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: '2' }] }))
        .rejects.toMatchObject({ code: ErrorCodes.serverError, message: expect.stringContaining('already running') })
      release()
      expect(await first).toEqual({ stopReason: 'end_turn' })
    } finally {
      release()
      await connection.close()
    }
  })

  it('a session in another folder: tools run there and the runtime context names that folder, not the server\'s', async () => {
    const { home, cwd } = tempHome()
    const other = mkdtempSync(join(tmpdir(), 'dsh-acp-elsewhere-'))
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-pwd', name: 'bash', arguments: '{"command":"pwd","description":"where"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const connection = connect({ home, cwd })
    try {
      await connection.peer.request('initialize', { protocolVersion: 1 })
      const { sessionId } = await connection.peer.request<{ sessionId: string }>('session/new', { cwd: other, mcpServers: [] })
      expect(await connection.peer.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'where?' }] })).toEqual({ stopReason: 'end_turn' })
      const messages = server.requests[before + 1]!.body.messages as { role: string; content: string }[]
      const context = messages.find(m => m.role === 'user' && m.content.startsWith('Current runtime context.'))!
      expect(context.content).toContain(other)
      expect(context.content).not.toContain(cwd)
      expect(messages.find(m => m.role === 'tool')!.content.trim()).toBe(other)
    } finally {
      await connection.close()
    }
  })

  it('bad frames get JSON-RPC errors and the server keeps serving; #42.7: a request before initialize is -32002', async () => {
    const { home, cwd } = tempHome()
    const connection = connect({ home, cwd })
    try {
      connection.child.stdin.write('not json\n')
      connection.child.stdin.write('"a string"\n')
      connection.child.stdin.write('{"jsonrpc":"2.0","id":"x","method":"nope/never"}\n')
      connection.child.stdin.write('{"jsonrpc":"2.0","id":"y","method":"session/prompt","params":{"sessionId":"s"}}\n')
      await expect(connection.peer.request('session/new', { cwd, mcpServers: [] })).rejects.toMatchObject({ code: -32002, message: 'Server not initialized: send initialize before session/new' })
      const init = await connection.peer.request('initialize', { protocolVersion: 1 })
      expect(init).toMatchObject({ protocolVersion: 1 })
      connection.child.stdin.write('{"jsonrpc":"2.0","id":"z","method":"session/prompt","params":{"sessionId":"s"}}\n')
      await connection.peer.request('session/new', { cwd, mcpServers: [] })
      const errors = connection.frames.filter(frame => frame.error !== undefined)
      expect(errors.map(frame => [frame.id, frame.error.code])).toEqual([[null, -32700], [null, -32600], ['x', -32601], ['y', -32002], [0, -32002], ['z', -32602]])
    } finally {
      expect(await connection.close()).toBe(0)
    }
  })

  it('advertises the slash-command registry (available_commands_update) and runs `/model` without a model call', async () => {
    const { home, cwd } = tempHome()
    const connection = connect({ home, cwd })
    try {
      const sessionId = await openSession(connection, cwd)
      const requests = server.requests.length
      const answer = await connection.peer.request<any>('session/prompt', { sessionId, prompt: [{ type: 'text', text: '/model' }] })
      expect(answer).toEqual({ stopReason: 'end_turn' })
      const updates = connection.notifications.filter(n => n.method === 'session/update').map(n => (n.params as any).update)
      const advertised = updates.find(update => update.sessionUpdate === 'available_commands_update')
      const names = advertised.availableCommands.map((command: { name: string }) => command.name)
      expect(names).toEqual(expect.arrayContaining(['compact', 'model']))
      expect(advertised.availableCommands.find((command: { name: string }) => command.name === 'model')).toEqual({ name: 'model', description: expect.any(String), input: { hint: '[model]' } })
      expect(chunks(connection, sessionId)).toEqual([{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: expect.stringContaining('Model: deepseek-v4-flash') } }])
      expect(server.requests.length).toBe(requests)
    } finally {
      expect(await connection.close()).toBe(0)
    }
  })
})
