/**
 * The ACP server as an editor drives it: the real `dsh --profile acp` process, the official
 * client library (`@agentclientprotocol/sdk`) on the other end, the fake DeepSeek server on
 * 127.0.0.1. Every frame the agent writes is validated against the library's protocol schemas.
 */
import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { client, ndJsonStream, RequestError, type ClientContext, type CreateElicitationRequest, type CreateElicitationResponse, type CreateTerminalRequest, type RequestPermissionRequest, type SessionNotification } from '@agentclientprotocol/sdk'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ZodType } from 'zod'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, repoRoot, tempHome } from '../../test-support/run-dsh.js'
import { waitForFile } from '../../test-support/wait-for-file.js'
import { heldCommand } from '../../test-support/gate.js'
import { LineSplitter } from '../sdk/jsonrpc.js'
import { bwrapRunner, probeRunner } from '../sandbox/runner.js'
import { askBashPatch } from '../../test-support/patches.js'

let server: FakeDeepSeek
let schemas: Record<string, ZodType>
beforeAll(async () => {
  server = await FakeDeepSeek.start()
  // The library's generated zod schemas (not exported by name; loaded from its own files).
  const entry = createRequire(join(repoRoot, 'package.json')).resolve('@agentclientprotocol/sdk')
  schemas = await import(pathToFileURL(join(dirname(entry), '..', 'schema', 'zod.gen.js')).href) as Record<string, ZodType>
})
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the editor-terminal tests: ${bwrapProblem} (install the Debian package bubblewrap and allow unprivileged user namespaces)`)

/** The schema of each agent response, by the method of the request it answers. */
const RESPONSE_SCHEMAS: Readonly<Record<string, string>> = {
  initialize: 'zInitializeResponse',
  authenticate: 'zAuthenticateResponse',
  'session/new': 'zNewSessionResponse',
  'session/load': 'zLoadSessionResponse',
  'session/resume': 'zResumeSessionResponse',
  'session/list': 'zListSessionsResponse',
  'session/close': 'zCloseSessionResponse',
  'session/delete': 'zDeleteSessionResponse',
  'session/prompt': 'zPromptResponse',
  'session/set_mode': 'zSetSessionModeResponse',
}

/** The schema of each terminal request the agent sends. */
const TERMINAL_SCHEMAS: Readonly<Record<string, string>> = {
  'terminal/create': 'zCreateTerminalRequest',
  'terminal/output': 'zTerminalOutputRequest',
  'terminal/wait_for_exit': 'zWaitForTerminalExitRequest',
  'terminal/kill': 'zKillTerminalRequest',
  'terminal/release': 'zReleaseTerminalRequest',
}

interface Editor {
  readonly child: ChildProcessWithoutNullStreams
  readonly agent: ClientContext
  readonly updates: SessionNotification[]
  readonly permissions: RequestPermissionRequest[]
  /** `elicitation/create` requests the editor received (with `elicit`). */
  readonly elicitations: CreateElicitationRequest[]
  /** Frames each side wrote, parsed. */
  readonly sent: any[]
  readonly received: any[]
  stderr(): string
  /** Each agent frame checked against the protocol schema: the problems found (none expected). */
  invalidFrames(): string[]
  /** Resolves once `test` holds, checked now and after every `session/update`. */
  until(test: () => boolean): Promise<void>
  close(): Promise<number | null>
}

/**
 * The terminal side of an editor, for real: `terminal/create` spawns the command (its own process
 * group, only the environment it was given), output is interleaved and cut from the front at
 * `outputByteLimit`, kill and release end the whole group.
 */
class FakeTerminals {
  /** Every terminal request, in order of arrival. */
  readonly calls: { method: string; params: any }[] = []
  private readonly terminals = new Map<string, { child: ChildProcess; output: Buffer; limit: number; truncated: boolean; exit: Promise<{ exitCode: number | null; signal: string | null }>; status?: { exitCode: number | null; signal: string | null } }>()
  private readonly waiting: { test: () => boolean; resolve: () => void }[] = []

  /** Resolves once `test` holds (checked now and after every request). */
  when(test: () => boolean): Promise<void> {
    if (test()) return Promise.resolve()
    return new Promise(resolve => this.waiting.push({ test, resolve }))
  }

  /** Methods called for one terminal, in order. */
  methodsOf(terminalId: string): string[] {
    return this.calls.filter(c => c.params.terminalId === terminalId).map(c => c.method)
  }

  /** Exit status of each terminal created (after it ended). */
  statuses(): Promise<{ exitCode: number | null; signal: string | null }[]> {
    return Promise.all([...this.terminals.values()].map(t => t.exit))
  }

  private record(method: string, params: any): void {
    this.calls.push({ method, params })
    for (const waiter of this.waiting.filter(w => w.test())) {
      this.waiting.splice(this.waiting.indexOf(waiter), 1)
      waiter.resolve()
    }
  }

  private get(terminalId: string) {
    const terminal = this.terminals.get(terminalId)
    if (terminal === undefined) throw new RequestError(-32602, `no terminal ${terminalId}`)
    return terminal
  }

  private killGroup(terminalId: string): void {
    const terminal = this.get(terminalId)
    if (terminal.status !== undefined || terminal.child.pid === undefined) return
    try { process.kill(-terminal.child.pid, 'SIGKILL') } catch { /* already gone */ }
  }

  /** Ends every command still running (as an editor does when its agent goes away). */
  killAll(): void {
    for (const terminalId of this.terminals.keys()) this.killGroup(terminalId)
  }

  install(app: ReturnType<typeof client>): void {
    app
      .onRequest('terminal/create', ({ params }) => {
        const terminalId = `term-${this.terminals.size + 1}`
        // Kept with the id it got, so `methodsOf` lists the create too.
        this.record('terminal/create', { ...params, terminalId })
        const env = Object.fromEntries((params.env ?? []).map(v => [v.name, v.value]))
        const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
        const terminal = { child, output: Buffer.alloc(0), limit: params.outputByteLimit ?? Infinity, truncated: false, exit: undefined as any, status: undefined as { exitCode: number | null; signal: string | null } | undefined }
        const append = (chunk: Buffer) => {
          terminal.output = Buffer.concat([terminal.output, chunk])
          if (terminal.output.length > terminal.limit) {
            let start = terminal.output.length - terminal.limit
            while (start < terminal.output.length && (terminal.output[start]! & 0xc0) === 0x80) start++
            terminal.output = terminal.output.subarray(start)
            terminal.truncated = true
          }
        }
        child.stdout!.on('data', append)
        child.stderr!.on('data', append)
        terminal.exit = new Promise(resolve => {
          child.on('error', () => resolve(terminal.status = { exitCode: 127, signal: null }))
          child.on('close', (code, signal) => resolve(terminal.status = { exitCode: code, signal }))
        })
        this.terminals.set(terminalId, terminal)
        return { terminalId }
      })
      .onRequest('terminal/wait_for_exit', async ({ params }) => {
        this.record('terminal/wait_for_exit', params)
        return await this.get(params.terminalId).exit
      })
      .onRequest('terminal/output', ({ params }) => {
        this.record('terminal/output', params)
        const terminal = this.get(params.terminalId)
        return { output: terminal.output.toString('utf8'), truncated: terminal.truncated, exitStatus: terminal.status ?? null }
      })
      .onRequest('terminal/kill', ({ params }) => {
        this.record('terminal/kill', params)
        this.killGroup(params.terminalId)
        return {}
      })
      .onRequest('terminal/release', ({ params }) => {
        this.record('terminal/release', params)
        this.killGroup(params.terminalId)
        return {}
      })
  }
}

function openEditor(options: { home: string; cwd: string; key?: boolean; patches?: string[]; permission?: (request: RequestPermissionRequest) => string; buffers?: Map<string, string>; writes?: { path: string; content: string }[]; terminals?: FakeTerminals; env?: Record<string, string>; elicit?: (request: CreateElicitationRequest, signal: AbortSignal) => CreateElicitationResponse | Promise<CreateElicitationResponse> }): Editor {
  const env: Record<string, string> = {}
  const vars = { ...process.env, ...options.env, DSH_HOME: options.home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: options.key === false ? undefined : 'test-key', DSH_MODEL: undefined }
  for (const [key, value] of Object.entries(vars)) if (value !== undefined) env[key] = value
  const patches = (options.patches ?? []).flatMap(file => ['--patch', file])
  const child = spawn(process.execPath, [dshBin, '--profile', 'acp', ...patches], { cwd: options.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (text: string) => { stderr += text })
  const sent: any[] = []
  const received: any[] = []
  const inSplitter = new LineSplitter()
  const outSplitter = new LineSplitter()
  const decoder = new TextDecoder()
  const input = new ReadableStream<Uint8Array>({
    start(controller) {
      child.stdout.on('data', (chunk: Buffer) => {
        for (const line of inSplitter.push(chunk.toString('utf8'))) received.push(JSON.parse(line))
        try { controller.enqueue(new Uint8Array(chunk)) } catch { /* the connection closed */ }
      })
      // The library cancels the stream when the connection closes; a later end is no news.
      child.stdout.on('end', () => { try { controller.close() } catch { /* already closed */ } })
    },
  })
  const output = new WritableStream<Uint8Array>({
    write(chunk) {
      for (const line of outSplitter.push(decoder.decode(chunk))) sent.push(JSON.parse(line))
      return new Promise<void>((resolve, reject) => child.stdin.write(chunk, error => error ? reject(error) : resolve()))
    },
    close() { child.stdin.end() },
  })
  const updates: SessionNotification[] = []
  const waiting: { test: () => boolean; resolve: () => void }[] = []
  const permissions: RequestPermissionRequest[] = []
  const elicitations: CreateElicitationRequest[] = []
  const app = client()
    .onNotification('session/update', ({ params }) => {
      updates.push(params)
      for (const waiter of waiting.filter(w => w.test())) waiting.splice(waiting.indexOf(waiter), 1)[0].resolve()
    })
    .onRequest('session/request_permission', ({ params }) => {
      permissions.push(params)
      return { outcome: { outcome: 'selected', optionId: options.permission?.(params) ?? 'reject-once' } }
    })
  if (options.buffers !== undefined) {
    const buffers = options.buffers
    app
      .onRequest('fs/read_text_file', ({ params }) => {
        const content = buffers.get(params.path)
        if (content === undefined) throw new RequestError(-32002, `Resource not found: ${params.path}`)
        return { content }
      })
      .onRequest('fs/write_text_file', ({ params }) => {
        options.writes?.push({ path: params.path, content: params.content })
        buffers.set(params.path, params.content)
        return {}
      })
  }
  options.terminals?.install(app)
  const elicit = options.elicit
  if (elicit !== undefined) {
    app.onRequest('elicitation/create', ({ params, signal }) => {
      elicitations.push(params)
      return elicit(params, signal)
    })
  }
  const connection = app.connect(ndJsonStream(output, input))
  return {
    child,
    agent: connection.agent,
    updates,
    permissions,
    elicitations,
    sent,
    received,
    stderr: () => stderr,
    invalidFrames() {
      const methods = new Map(sent.filter(frame => frame.method !== undefined && frame.id !== undefined).map(frame => [frame.id, frame.method as string]))
      const problems: string[] = []
      for (const frame of received) {
        let schema: string | undefined
        let value: unknown
        if (frame.method === 'session/update') [schema, value] = ['zSessionNotification', frame.params]
        else if (frame.method === 'session/request_permission') [schema, value] = ['zRequestPermissionRequest', frame.params]
        else if (frame.method === 'fs/read_text_file') [schema, value] = ['zReadTextFileRequest', frame.params]
        else if (frame.method === 'fs/write_text_file') [schema, value] = ['zWriteTextFileRequest', frame.params]
        else if (frame.method === 'elicitation/create') [schema, value] = ['zCreateElicitationRequest', frame.params]
        else if (frame.method === '$/cancel_request') [schema, value] = ['zCancelRequestNotification', frame.params]
        else if (typeof frame.method === 'string' && TERMINAL_SCHEMAS[frame.method] !== undefined) [schema, value] = [TERMINAL_SCHEMAS[frame.method], frame.params]
        else if (frame.result !== undefined) [schema, value] = [RESPONSE_SCHEMAS[methods.get(frame.id) ?? ''], frame.result]
        else if (frame.error !== undefined) continue
        if (schema === undefined) {
          problems.push(`no schema for ${JSON.stringify(frame).slice(0, 200)}`)
          continue
        }
        const parsed = schemas[schema]!.safeParse(value)
        if (!parsed.success) problems.push(`${schema}: ${parsed.error.message.slice(0, 400)} in ${JSON.stringify(frame).slice(0, 300)}`)
      }
      return problems
    },
    until(test) {
      return test() ? Promise.resolve() : new Promise(resolve => waiting.push({ test, resolve }))
    },
    async close() {
      connection.close()
      child.stdin.end()
      if (child.exitCode !== null) return child.exitCode
      return new Promise(resolve => child.on('close', code => resolve(code)))
    },
  }
}

const allUpdates = (editor: Editor, sessionId: string) => editor.updates.filter(n => n.sessionId === sessionId).map(n => n.update)
/** What the agent did (the command list it advertises is left out). */
const kinds = (editor: Editor, sessionId: string) => allUpdates(editor, sessionId).filter(u => u.sessionUpdate !== 'available_commands_update')

async function start(editor: Editor, cwd: string, clientCapabilities: Record<string, unknown> = {}): Promise<string> {
  await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities })
  return (await editor.agent.request('session/new', { cwd, mcpServers: [] })).sessionId
}

describe('ACP through the official client library', () => {
  it('initialize says the truth: load, list, resume, close, delete, embedded context; an auth method that says how to give a key', async () => {
    const { home, cwd } = tempHome()
    const editor = openEditor({ home, cwd })
    try {
      const init = await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      expect(init.agentCapabilities).toMatchObject({
        loadSession: true,
        promptCapabilities: { image: false, embeddedContext: true },
        sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {} },
      })
      expect(init.authMethods?.[0]).toMatchObject({ id: 'api-key', description: expect.stringContaining('DEEPSEEK_API_KEY') })
      expect(await editor.agent.request('authenticate', { methodId: 'api-key' })).toEqual({})
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
    }
  })

  it('permission presets are session modes: session/new names them, set_mode switches and the client hears current_mode_update; the command list arrives', async () => {
    const { home, cwd } = tempHome()
    const editor = openEditor({ home, cwd })
    try {
      await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      const created = await editor.agent.request('session/new', { cwd, mcpServers: [] })
      const sessionId = created.sessionId
      expect(created.modes?.currentModeId).toBe('workspace-write')
      expect(created.modes?.availableModes.map(mode => mode.id)).toEqual(['read-only', 'workspace-write', 'danger-full-access'])
      expect(await editor.agent.request('session/set_mode', { sessionId, modeId: 'read-only' })).toEqual({})
      await expect(editor.agent.request('session/set_mode', { sessionId, modeId: 'yolo' })).rejects.toMatchObject({ message: expect.stringContaining('unknown mode "yolo"') })
      // Choosing the mode in force again changes nothing and says nothing (AP-5).
      expect(await editor.agent.request('session/set_mode', { sessionId, modeId: 'read-only' })).toEqual({})
      const updates = allUpdates(editor, sessionId)
      expect(updates.filter(u => u.sessionUpdate === 'current_mode_update')).toEqual([{ sessionUpdate: 'current_mode_update', currentModeId: 'read-only' }])
      const commands = updates.find(u => u.sessionUpdate === 'available_commands_update') as any
      expect(commands.availableCommands.map((c: { name: string }) => c.name)).toEqual(expect.arrayContaining(['compact', 'model']))
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
    }
  })

  it('an editor that offers its file system: read sees the unsaved buffer, write and edit land in the editor, the fence still refuses a path outside the folder', async () => {
    const { home, cwd } = tempHome()
    const file = join(cwd, 'notes.txt')
    writeFileSync(file, 'on disk\n')
    const buffers = new Map([[file, 'unsaved buffer\n']])
    const writes: { path: string; content: string }[] = []
    // Outside every writable root of workspace-write (the session folder and the temp folders).
    const outside = join(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : homedir(), 'dsh-acp-outside-')), 'x.txt')
    server.enqueue(
      streamResponse([{ toolCall: { id: 'r1', name: 'read', arguments: JSON.stringify({ file_path: 'notes.txt' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'e1', name: 'edit', arguments: JSON.stringify({ file_path: 'notes.txt', old_string: 'unsaved', new_string: 'edited' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'w1', name: 'write', arguments: JSON.stringify({ file_path: 'new.txt', content: 'fresh\n' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'w2', name: 'write', arguments: JSON.stringify({ file_path: outside, content: 'no\n' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
    )
    const editor = openEditor({ home, cwd, buffers, writes })
    try {
      await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } } })
      const { sessionId } = await editor.agent.request('session/new', { cwd, mcpServers: [] })
      const before = server.requests.length
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'edit notes' }] })
      const toolText = (index: number) => (server.requests[before + index]!.body.messages as { role: string; content: string }[]).filter(m => m.role === 'tool').at(-1)!.content
      expect(toolText(1)).toContain('unsaved buffer')
      expect(writes).toEqual([{ path: file, content: 'edited buffer\n' }, { path: join(cwd, 'new.txt'), content: 'fresh\n' }])
      // The diffs the editor is shown are of its own buffers, not of the untouched disk.
      const diffOf = (id: string) => (kinds(editor, sessionId).find(u => u.sessionUpdate === 'tool_call_update' && u.toolCallId === id && u.status === 'completed') as any).content[0]
      expect(diffOf('e1')).toEqual({ type: 'diff', path: file, oldText: 'unsaved buffer\n', newText: 'edited buffer\n' })
      expect(diffOf('w1')).toEqual({ type: 'diff', path: join(cwd, 'new.txt'), oldText: null, newText: 'fresh\n' })
      // The disk is the editor's business: nothing was written there by dsh.
      expect(readFileSync(file, 'utf8')).toBe('on disk\n')
      expect(existsSync(join(cwd, 'new.txt'))).toBe(false)
      // Outside the session folder (workspace-write): refused before the editor is asked.
      expect(toolText(4)).toMatch(/sandbox|denied|not allowed/i)
      expect(existsSync(outside)).toBe(false)
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
    }
  })

  it('authenticate without a key answers an error naming what to set', async () => {
    const { home, cwd } = tempHome()
    const editor = openEditor({ home, cwd, key: false })
    try {
      await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      await expect(editor.agent.request('authenticate', { methodId: 'api-key' })).rejects.toMatchObject({ message: expect.stringContaining('DEEPSEEK_API_KEY') })
    } finally {
      expect(await editor.close()).toBe(0)
    }
  })

  it('a coding turn shows reasoning, each tool call with kind, title, locations and status, diffs for write and edit, bash output, and the plan', async () => {
    const { home, cwd } = tempHome()
    const file = join(cwd, 'notes.txt')
    server.enqueue(
      streamResponse([{ reasoning: 'Write the file first.' }, { text: 'Writing.' }, { toolCall: { id: 'w1', name: 'write', arguments: JSON.stringify({ file_path: 'notes.txt', content: 'one\n' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'r1', name: 'read', arguments: JSON.stringify({ file_path: file }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'e1', name: 'edit', arguments: JSON.stringify({ file_path: file, old_string: 'one', new_string: 'two' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([
        { toolCall: { index: 0, id: 'b1', name: 'bash', arguments: JSON.stringify({ command: 'cat notes.txt', description: 'show' }) } },
        { toolCall: { index: 1, id: 't1', name: 'todo_write', arguments: JSON.stringify({ todos: [{ content: 'edit notes', status: 'completed' }, { content: 'review', status: 'pending' }] }) } },
        { finish: 'tool_calls', usage },
      ]),
      streamResponse([{ text: 'Done' }, { text: '.' }, { finish: 'stop', usage }]),
    )
    const editor = openEditor({ home, cwd })
    try {
      const sessionId = await start(editor, cwd)
      expect(await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'write notes' }] })).toEqual({ stopReason: 'end_turn' })
      expect(readFileSync(file, 'utf8')).toBe('two\n')
      const updates = kinds(editor, sessionId)
      expect(updates[0]).toEqual({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'Write the file first.' } })
      expect(updates.filter(u => u.sessionUpdate === 'agent_message_chunk').map(u => (u as any).content.text).join('')).toBe('Writing.Done.')
      const call = (id: string) => updates.find(u => u.sessionUpdate === 'tool_call' && u.toolCallId === id) as any
      // Live output updates (no status) may come between, for a command that prints.
      const statuses = (id: string) => updates.filter(u => (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') && u.toolCallId === id && (u as any).status !== undefined).map(u => (u as any).status)
      expect(call('w1')).toMatchObject({ kind: 'edit', title: `Write ${file}`, status: 'pending', locations: [{ path: file }], rawInput: { file_path: 'notes.txt' } })
      expect(call('r1')).toMatchObject({ kind: 'read', title: `Read ${file}`, locations: [{ path: file }] })
      expect(call('e1')).toMatchObject({ kind: 'edit', title: `Edit ${file}` })
      expect(call('b1')).toMatchObject({ kind: 'execute', title: 'cat notes.txt' })
      expect(call('t1')).toMatchObject({ kind: 'think' })
      for (const id of ['w1', 'r1', 'e1', 'b1', 't1']) expect(statuses(id)).toEqual(['pending', 'in_progress', 'completed'])
      const finished = (id: string) => updates.find(u => u.sessionUpdate === 'tool_call_update' && u.toolCallId === id && u.status === 'completed') as any
      expect(finished('w1').content[0]).toEqual({ type: 'diff', path: file, oldText: null, newText: 'one\n' })
      expect(finished('e1').content[0]).toEqual({ type: 'diff', path: file, oldText: 'one\n', newText: 'two\n' })
      expect(finished('b1').content.map((c: any) => c.content.text).join('')).toContain('two')
      expect(updates.find(u => u.sessionUpdate === 'plan')).toEqual({
        sessionUpdate: 'plan',
        entries: [{ content: 'edit notes', priority: 'medium', status: 'completed' }, { content: 'review', priority: 'medium', status: 'pending' }],
      })
      // Every update precedes the prompt's answer on the wire.
      const answer = editor.received.findIndex(frame => frame.result?.stopReason !== undefined)
      expect(editor.received.slice(answer + 1).filter(frame => frame.method === 'session/update' && frame.params.update.sessionUpdate !== 'available_commands_update')).toEqual([])
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
    }
    expect(editor.stderr()).toBe('')
  })

  it('a running command\'s output shows live in its tool call (the latest tail as its content, no status change), and the finishing update comes last', async () => {
    const { home, cwd } = tempHome()
    // The command prints, then waits for the test to have seen that output before it goes on.
    const command = heldCommand('printf "first line\\n"', 'gate', 'printf "second line\\n"')
    server.enqueue(
      streamResponse([{ toolCall: { id: 'b1', name: 'bash', arguments: JSON.stringify({ command, description: 'wait for the gate' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Done.' }, { finish: 'stop', usage }]),
    )
    const editor = openEditor({ home, cwd })
    try {
      const sessionId = await start(editor, cwd)
      const ofCall = () => kinds(editor, sessionId).filter(u => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'b1') as any[]
      const answered = editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'run it' }] })
      await editor.until(() => ofCall().some(u => u.status === undefined))
      const live = ofCall().find(u => u.status === undefined)
      expect(live).toEqual({ sessionUpdate: 'tool_call_update', toolCallId: 'b1', content: [{ type: 'content', content: { type: 'text', text: 'first line\n' } }] })
      writeFileSync(join(cwd, 'gate'), '')
      expect(await answered).toEqual({ stopReason: 'end_turn' })
      const updates = ofCall()
      expect(updates.map(u => u.status).filter(status => status !== undefined)).toEqual(['in_progress', 'completed'])
      // Nothing live after the call finished: the result is the call's last word.
      expect(updates.at(-1).status).toBe('completed')
      expect(updates.at(-1).content.map((c: any) => c.content.text).join('')).toContain('second line')
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
    }
  })

  it('a failed tool call ends failed, with the error text', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'x1', name: 'read', arguments: JSON.stringify({ file_path: 'missing.txt' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'No file.' }, { finish: 'stop', usage }]),
    )
    const editor = openEditor({ home, cwd })
    try {
      const sessionId = await start(editor, cwd)
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'read it' }] })
      const last = kinds(editor, sessionId).filter(u => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'x1').at(-1) as any
      expect(last.status).toBe('failed')
      expect(last.content[0].content.text).toMatch(/missing\.txt|not found|no such/i)
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      await editor.close()
    }
  })

  it('session/list and session/load reopen yesterday\'s session: the conversation is replayed, then a prompt continues it', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ reasoning: 'Look.' }, { toolCall: { id: 'b1', name: 'bash', arguments: JSON.stringify({ command: 'echo stored', description: 'echo' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'It said stored.' }, { finish: 'stop', usage }]),
    )
    const first = openEditor({ home, cwd })
    let sessionId: string
    try {
      sessionId = await start(first, cwd)
      await first.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'run echo' }] })
    } finally {
      expect(await first.close()).toBe(0)
    }
    const second = openEditor({ home, cwd })
    try {
      await second.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      const listed = await second.agent.request('session/list', { cwd })
      expect(listed.sessions.map(info => info.sessionId)).toEqual([sessionId])
      expect(listed.sessions[0]).toMatchObject({ cwd, title: expect.any(String), updatedAt: expect.any(String) })
      expect((await second.agent.request('session/list', { cwd: join(cwd, 'elsewhere') })).sessions).toEqual([])
      await second.agent.request('session/load', { sessionId, cwd, mcpServers: [] })
      const replayed = kinds(second, sessionId)
      expect(replayed.map(u => u.sessionUpdate)).toEqual(['user_message_chunk', 'agent_thought_chunk', 'tool_call', 'tool_call_update', 'agent_message_chunk'])
      expect(replayed[0]).toEqual({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'run echo' } })
      expect(replayed[3]).toMatchObject({ toolCallId: 'b1', status: 'completed' })
      // The replay precedes the load's answer.
      const answer = second.received.findIndex(frame => frame.result !== undefined && second.sent.find(s => s.id === frame.id)?.method === 'session/load')
      expect(second.received.slice(answer + 1).filter(frame => frame.method === 'session/update' && frame.params.update.sessionUpdate !== 'available_commands_update')).toEqual([])
      const before = server.requests.length
      server.enqueue(streamResponse([{ text: 'Still here.' }, { finish: 'stop', usage }]))
      expect(await second.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'and now?' }] })).toEqual({ stopReason: 'end_turn' })
      const messages = server.requests[before]!.body.messages as { role: string; content: string }[]
      expect(messages.some(m => m.role === 'assistant' && m.content === 'It said stored.')).toBe(true)
      await expect(second.agent.request('session/load', { sessionId: 'no-such-session', cwd, mcpServers: [] })).rejects.toMatchObject({ message: expect.stringContaining('no-such-session') })
      expect(second.invalidFrames()).toEqual([])
    } finally {
      expect(await second.close()).toBe(0)
    }
  })

  it('done when: an editor session shows each tool call with its status and diff, the process exits, and a new process lists and loads it, replaying the conversation with its tool calls and diffs', async () => {
    const { home, cwd } = tempHome()
    const file = join(cwd, 'notes.txt')
    server.enqueue(
      streamResponse([{ text: 'Writing.' }, { toolCall: { id: 'w1', name: 'write', arguments: JSON.stringify({ file_path: 'notes.txt', content: 'one\ntwo\nthree\n' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'e1', name: 'edit', arguments: JSON.stringify({ file_path: 'notes.txt', old_string: 'two', new_string: 'TWO' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'b1', name: 'bash', arguments: JSON.stringify({ command: 'cat notes.txt', description: 'show' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Done.' }, { finish: 'stop', usage }]),
    )
    const written = { type: 'diff', path: file, oldText: null, newText: 'one\ntwo\nthree\n' }
    const edited = { type: 'diff', path: file, oldText: 'one\ntwo\nthree\n', newText: 'one\nTWO\nthree\n' }
    const calls = (updates: ReturnType<typeof kinds>) => updates
      .filter(u => (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') && (u as any).status !== undefined)
      .map(u => ({ id: (u as any).toolCallId, status: (u as any).status, diff: (u as any).content?.find((c: any) => c.type === 'diff') }))

    const yesterday = openEditor({ home, cwd })
    let sessionId: string
    try {
      sessionId = await start(yesterday, cwd)
      expect(await yesterday.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'make notes' }] })).toEqual({ stopReason: 'end_turn' })
      expect(calls(kinds(yesterday, sessionId))).toEqual([
        { id: 'w1', status: 'pending', diff: undefined }, { id: 'w1', status: 'in_progress', diff: undefined }, { id: 'w1', status: 'completed', diff: written },
        { id: 'e1', status: 'pending', diff: undefined }, { id: 'e1', status: 'in_progress', diff: undefined }, { id: 'e1', status: 'completed', diff: edited },
        { id: 'b1', status: 'pending', diff: undefined }, { id: 'b1', status: 'in_progress', diff: undefined }, { id: 'b1', status: 'completed', diff: undefined },
      ])
      expect(yesterday.invalidFrames()).toEqual([])
    } finally {
      expect(await yesterday.close()).toBe(0)
    }
    expect(yesterday.child.exitCode).toBe(0)
    expect(yesterday.stderr()).toBe('')

    const today = openEditor({ home, cwd })
    try {
      await today.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      expect((await today.agent.request('session/list', { cwd })).sessions.map(info => info.sessionId)).toEqual([sessionId])
      await today.agent.request('session/load', { sessionId, cwd, mcpServers: [] })
      const replayed = kinds(today, sessionId)
      expect(replayed.map(u => u.sessionUpdate)).toEqual([
        'user_message_chunk', 'agent_message_chunk',
        'tool_call', 'tool_call_update', 'tool_call', 'tool_call_update', 'tool_call', 'tool_call_update',
        'agent_message_chunk',
      ])
      expect(calls(replayed)).toEqual([
        { id: 'w1', status: 'pending', diff: undefined }, { id: 'w1', status: 'completed', diff: written },
        { id: 'e1', status: 'pending', diff: undefined }, { id: 'e1', status: 'completed', diff: edited },
        { id: 'b1', status: 'pending', diff: undefined }, { id: 'b1', status: 'completed', diff: undefined },
      ])
      expect(replayed.find(u => u.sessionUpdate === 'tool_call' && u.toolCallId === 'b1')).toMatchObject({ kind: 'execute', title: 'cat notes.txt' })
      expect((replayed[7] as any).content.map((c: any) => c.content.text).join('')).toContain('TWO')
      expect(replayed.at(-1)).toEqual({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Done.' } })
      expect(today.invalidFrames()).toEqual([])
    } finally {
      expect(await today.close()).toBe(0)
    }
    expect(today.stderr()).toBe('')
  })

  it('#43.2: session/close lets a session go (out of memory, its writer lock given back; it can be resumed), session/delete moves it to the trash', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
    const editor = openEditor({ home, cwd })
    try {
      const sessionId = await start(editor, cwd)
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hi' }] })
      expect([await editor.agent.request('session/close', { sessionId }), readdirSync(join(home, 'sessions', '.locks')).filter(name => name.endsWith('.lock'))]).toEqual([{}, []])
      await expect(editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'x' }] })).rejects.toMatchObject({ message: expect.stringContaining('session/load') })
      expect(await editor.agent.request('session/resume', { sessionId, cwd })).toMatchObject({ modes: { currentModeId: 'workspace-write' } })
      expect(kinds(editor, sessionId).filter(u => u.sessionUpdate === 'user_message_chunk')).toEqual([])
      expect(await editor.agent.request('session/delete', { sessionId })).toEqual({})
      expect((await editor.agent.request('session/list', {})).sessions).toEqual([])
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
    }
  })

  it('T-7: a permission round trip through the library: allow-once runs the tool, and the request names the call', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'p1', name: 'bash', arguments: JSON.stringify({ command: 'touch allowed', description: 'touch' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]),
    )
    const editor = openEditor({ home, cwd, patches: [askBashPatch()], permission: () => 'allow-once' })
    try {
      const sessionId = await start(editor, cwd)
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'touch' }] })
      expect(editor.permissions).toHaveLength(1)
      expect(editor.permissions[0]).toMatchObject({ sessionId, toolCall: { toolCallId: 'p1', kind: 'execute', title: expect.stringContaining('touch allowed'), rawInput: { command: 'touch allowed' } } })
      expect(readFileSync(join(cwd, 'allowed'), 'utf8')).toBe('')
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      await editor.close()
    }
  })

  it('ask_user_question is not mapped onto session/request_permission: even an editor that allows everything is not asked, and the tool fails closed (UNAVAILABLE)', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'q1', name: 'ask_user_question', arguments: JSON.stringify({ questions: [{ id: 'go', question: 'Continue?', options: [{ label: 'Yes' }, { label: 'No' }] }] }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'went on without an answer' }, { finish: 'stop', usage }]),
    )
    const editor = openEditor({ home, cwd, patches: [askBashPatch()], permission: () => 'allow-once' })
    try {
      const sessionId = await start(editor, cwd)
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'ask me' }] })
      expect(editor.permissions).toEqual([])
      const body = server.requests.at(-1)!.body as { messages: { role: string; tool_call_id?: string; content: unknown }[] }
      const result = body.messages.find(m => m.role === 'tool' && m.tool_call_id === 'q1')
      expect(String(result?.content)).toMatch(/^Error: no one can answer questions in this session/)
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      await editor.close()
    }
  })

  describe('ask_user_question through elicitation/create (a client that advertises elicitation.form)', () => {
    const forms = { elicitation: { form: {} } }
    const questions = [
      { id: 'db', header: 'Database', question: 'Which database should the app use?', options: [{ label: 'SQLite', description: 'one file, no server' }, { label: 'PostgreSQL' }] },
      { id: 'features', question: 'Which features go in the first release?', options: [{ label: 'Search' }, { label: 'Tags' }, { label: 'Export' }], multi_select: true },
      { id: 'name', question: 'What is the project called?' },
    ]
    const askCall = (id: string, list: unknown[] = questions) => streamResponse([{ toolCall: { id, name: 'ask_user_question', arguments: JSON.stringify({ questions: list }) } }, { finish: 'tool_calls', usage }])
    /** The tool result the model got for `callId` in the latest request. */
    const toolResult = (callId: string) => {
      const body = server.requests.at(-1)!.body as { messages: { role: string; tool_call_id?: string; content: unknown }[] }
      return String(body.messages.find(m => m.role === 'tool' && m.tool_call_id === callId)?.content)
    }

    it('the questions become one form tied to the session and the tool call; the accepted content reaches the model as the answers', async () => {
      const { home, cwd } = tempHome()
      server.enqueue(askCall('q1'), streamResponse([{ text: 'SQLite it is' }, { finish: 'stop', usage }]))
      const editor = openEditor({ home, cwd, elicit: () => ({ action: 'accept', content: { db: 'SQLite', 'db.text': 'keep it small', features: ['Search', 'Export'], name: 'harbor' } }) })
      try {
        const sessionId = await start(editor, cwd, forms)
        expect(await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'set up the app' }] })).toEqual({ stopReason: 'end_turn' })
        expect(editor.elicitations).toHaveLength(1)
        const request = editor.elicitations[0]! as any
        expect(request).toMatchObject({ sessionId, toolCallId: 'q1', mode: 'form', message: expect.stringContaining('Which database should the app use?') })
        expect(request.requestedSchema).toEqual({
          type: 'object',
          properties: {
            db: { type: 'string', title: 'Database', description: 'Which database should the app use?', oneOf: [{ const: 'SQLite', title: 'SQLite — one file, no server' }, { const: 'PostgreSQL', title: 'PostgreSQL' }] },
            'db.text': { type: 'string', title: expect.any(String), description: expect.stringContaining('Which database') },
            features: { type: 'array', title: 'Which features go in the first release?', items: { anyOf: [{ const: 'Search', title: 'Search' }, { const: 'Tags', title: 'Tags' }, { const: 'Export', title: 'Export' }] } },
            'features.text': { type: 'string', title: expect.any(String), description: expect.any(String) },
            name: { type: 'string', title: 'What is the project called?', minLength: 1 },
          },
          required: ['db', 'features', 'name'],
        })
        // What was sent is a valid request for the library, and the pieces are what they claim to be.
        expect(schemas.zCreateElicitationRequest!.safeParse(request).success).toBe(true)
        expect(schemas.zElicitationSchema!.safeParse(request.requestedSchema).success).toBe(true)
        for (const property of Object.values(request.requestedSchema.properties)) expect(schemas.zElicitationPropertySchema!.safeParse(property).success).toBe(true)
        expect(JSON.parse(toolResult('q1'))).toEqual({ answers: [
          { id: 'db', selected: ['SQLite'], text: 'keep it small' },
          { id: 'features', selected: ['Search', 'Export'] },
          { id: 'name', text: 'harbor' },
        ] })
        expect(editor.permissions).toEqual([])
        expect(editor.invalidFrames()).toEqual([])
      } finally {
        expect(await editor.close()).toBe(0)
      }
    })

    it('decline and cancel dismiss the question (CANCELLED), as on the other surfaces', async () => {
      for (const action of ['decline', 'cancel'] as const) {
        const { home, cwd } = tempHome()
        server.enqueue(askCall('q2', [questions[0]]), streamResponse([{ text: 'ok, not asking again' }, { finish: 'stop', usage }]))
        const editor = openEditor({ home, cwd, elicit: () => ({ action }) })
        try {
          const sessionId = await start(editor, cwd, forms)
          expect(await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'ask' }] })).toEqual({ stopReason: 'end_turn' })
          expect(editor.elicitations).toHaveLength(1)
          expect(toolResult('q2')).toMatch(/^Error: the user dismissed the question/)
          expect(editor.invalidFrames()).toEqual([])
        } finally {
          await editor.close()
        }
      }
    })

    it('fails closed (UNAVAILABLE) with a line on stderr when the client answers an error, or content that does not fit the form', async () => {
      const answers: { elicit: () => CreateElicitationResponse; stderr: RegExp }[] = [
        { elicit: () => { throw new RequestError(-32603, 'the form broke') }, stderr: /elicitation\/create with an error \(.*the form broke.*\); the question fails closed/ },
        { elicit: () => ({ action: 'accept', content: { db: 'MySQL' } }), stderr: /does not fit the form: "MySQL" is not an option of "db"; the question fails closed/ },
        { elicit: () => ({ action: 'accept' }), stderr: /does not fit the form: accept came without content/ },
      ]
      for (const { elicit, stderr } of answers) {
        const { home, cwd } = tempHome()
        server.enqueue(askCall('q3', [questions[0]]), streamResponse([{ text: 'went on' }, { finish: 'stop', usage }]))
        const editor = openEditor({ home, cwd, elicit })
        try {
          const sessionId = await start(editor, cwd, forms)
          expect(await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'ask' }] })).toEqual({ stopReason: 'end_turn' })
          expect(toolResult('q3')).toMatch(/^Error: no one can answer questions in this session/)
          expect(editor.stderr()).toMatch(stderr)
        } finally {
          await editor.close()
        }
      }
    })

    it('session/cancel while the form is open withdraws it ($/cancel_request) and the prompt ends cancelled', async () => {
      const { home, cwd } = tempHome()
      server.enqueue(askCall('q4', [questions[2]]))
      let opened!: () => void
      const formOpen = new Promise<void>(resolve => { opened = resolve })
      let withdrawn = false
      const editor = openEditor({ home, cwd, elicit: (_request, signal) => new Promise((_resolve, reject) => {
        opened()
        signal.addEventListener('abort', () => { withdrawn = true; reject(signal.reason) }, { once: true })
      }) })
      try {
        const sessionId = await start(editor, cwd, forms)
        const prompt = editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'ask' }] })
        await formOpen
        const requests = server.requests.length
        await editor.agent.notify('session/cancel', { sessionId })
        expect(await prompt).toEqual({ stopReason: 'cancelled' })
        expect(withdrawn).toBe(true)
        const create = editor.received.find(frame => frame.method === 'elicitation/create')
        expect(editor.received).toContainEqual({ jsonrpc: '2.0', method: '$/cancel_request', params: { requestId: create.id } })
        expect(server.requests.length).toBe(requests)
        expect(editor.stderr()).not.toMatch(/dropped an answer|fails closed/)
        expect(editor.invalidFrames()).toEqual([])
      } finally {
        expect(await editor.close()).toBe(0)
      }
    })
  })

  it('closing the editor mid-turn is quiet: exit 0, no EPIPE or stack on stderr, the log flushed', async () => {
    const { home, cwd } = tempHome()
    let release!: () => void
    const hold = new Promise<void>(resolve => { release = resolve })
    server.enqueue(streamResponse([{ text: 'partial' }, { until: hold }, { finish: 'stop', usage }]))
    const editor = openEditor({ home, cwd })
    try {
      const sessionId = await start(editor, cwd)
      const requested = server.requests.length
      void editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'long' }] }).catch(() => undefined)
      await server.waitForRequests(requested + 1)
      // The editor goes away: it stops reading and closes its end.
      editor.child.stdout.destroy()
      expect(await editor.close()).toBe(0)
      expect(editor.stderr()).toBe('')
      const stored = readdirSync(home, { recursive: true, encoding: 'utf8' }).find(path => path.includes(sessionId) && path.endsWith('session.jsonl'))
      const log = readFileSync(join(home, stored!), 'utf8')
      expect(log).toContain('"turn/end"')
    } finally {
      release()
    }
  })

  it.for([
    { ending: 'stdin closes', exit: 0, terminal: false },
    { ending: 'stdin closes while the editor\'s terminal runs it', exit: 0, terminal: true },
    { ending: 'session/cancel, then stdin closes', exit: 0, terminal: false },
    { ending: 'SIGTERM', exit: 143, terminal: false },
  ])('T-6: $ending during a running command: nothing on stderr, the turn ends aborted and the log is stored', async ({ ending, exit, terminal }, context) => {
    if (terminal && bwrapProblem !== undefined) context.skip()
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ toolCall: { id: 'long', name: 'bash', arguments: JSON.stringify({ command: 'touch started && sleep 30', description: 'wait' }) } }, { finish: 'tool_calls', usage }]))
    const terminals = new FakeTerminals()
    const editor = openEditor({ home, cwd, terminals })
    await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: { terminal } })
    const { sessionId } = await editor.agent.request('session/new', { cwd, mcpServers: [] })
    const answered = editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait' }] }).catch((error: unknown) => error)
    await waitForFile(join(cwd, 'started'))
    let code: number | null
    if (ending === 'SIGTERM') {
      const closed = new Promise<number | null>(resolve => editor.child.on('close', resolve))
      editor.child.kill('SIGTERM')
      code = await closed
    } else {
      if (ending.startsWith('session/cancel')) {
        await editor.agent.notify('session/cancel', { sessionId })
        expect(await answered).toEqual({ stopReason: 'cancelled' })
      }
      code = await editor.close()
    }
    expect(code).toBe(exit)
    expect(editor.stderr()).toBe('')
    const stored = readdirSync(home, { recursive: true, encoding: 'utf8' }).find(path => path.includes(sessionId) && path.endsWith('session.jsonl'))
    const events = readFileSync(join(home, stored!), 'utf8').trim().split('\n').map(line => JSON.parse(line) as { type: string; data: any })
    expect(events.find(event => event.type === 'tool/result')?.data.message.content[0].toolCallId).toBe('long')
    expect(events.filter(event => event.type === 'turn/end').at(-1)?.data.reason).toMatchObject({ kind: 'aborted' })
    expect(terminals.calls.length > 0).toBe(terminal)
    terminals.killAll()
    await editor.close()
  })
})


/** The text of the last tool message in the model request `index` after `before`. */
const lastToolText = (before: number, index: number) => (server.requests[before + index]!.body.messages as { role: string; content: string }[]).filter(m => m.role === 'tool').at(-1)!.content

describe.skipIf(bwrapProblem !== undefined)('bash in the editor\'s terminal (clientCapabilities.terminal)', () => {
  it('SB-2, SB-4: the editor runs the same bwrap argv as a local run, with no secrets in its env; the output reaches the model, the tool call embeds the terminal, a write outside the folder still fails', async () => {
    const { home, cwd } = tempHome()
    const outside = join(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : homedir(), 'dsh-acp-term-outside-')), 'x.txt')
    const hello = 'echo from-terminal; echo to-stderr >&2'
    server.enqueue(
      streamResponse([{ toolCall: { id: 'b1', name: 'bash', arguments: JSON.stringify({ command: hello, description: 'greet' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'b2', name: 'bash', arguments: JSON.stringify({ command: `touch ${outside}`, description: 'escape' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'b3', name: 'bash', arguments: JSON.stringify({ command: 'yes abcdefg | head -c 100000; echo END', description: 'a lot' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
    )
    const terminals = new FakeTerminals()
    // A user home of the test's own (not the real one), outside /tmp, with one secret to hide.
    const userHome = realpathSync(mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : homedir(), 'dsh-acp-term-home-')))
    writeFileSync(join(userHome, '.netrc'), 'machine example.com password p\n')
    const editor = openEditor({ home, cwd, terminals, env: { MY_SERVICE_TOKEN: 'secret-token', HOME: userHome, DSH_NETWORK: 'full' } })
    try {
      await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: { terminal: true } })
      const { sessionId } = await editor.agent.request('session/new', { cwd, mcpServers: [] })
      const before = server.requests.length
      expect(await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'greet' }] })).toEqual({ stopReason: 'end_turn' })

      const creates = terminals.calls.filter(c => c.method === 'terminal/create').map(c => c.params as CreateTerminalRequest & { terminalId: string })
      expect(creates).toHaveLength(3)
      // The deny-read masks too: the editor gets exactly what a local run would.
      const hidden = [{ path: join(userHome, '.netrc'), dir: false, rule: '~/.netrc', keep: [] }]
      const expectedArgv = (command: string) => [...bwrapRunner().argv('workspace-write', realpathSync(cwd), { readOnly: [], pinned: [], hidden }), 'bash', '-c', command]
      expect([creates[0]!.command, ...creates[0]!.args!]).toEqual(expectedArgv(hello))
      expect([creates[1]!.command, ...creates[1]!.args!]).toEqual(expectedArgv(`touch ${outside}`))
      expect(creates[0]).toMatchObject({ sessionId, cwd, outputByteLimit: 64 * 1024 })
      const names = creates[0]!.env!.map(v => v.name)
      expect(names).toContain('PATH')
      expect(names).not.toContain('DEEPSEEK_API_KEY')
      expect(names).not.toContain('MY_SERVICE_TOKEN')
      // Each terminal: created, waited for, read, released.
      for (const create of creates) expect(terminals.methodsOf(create.terminalId)).toEqual(['terminal/create', 'terminal/wait_for_exit', 'terminal/output', 'terminal/release'])

      // The model got what the terminal showed; the sandbox denied the write outside.
      expect(lastToolText(before, 1)).toContain('from-terminal')
      expect(lastToolText(before, 1)).toContain('to-stderr')
      expect(lastToolText(before, 2)).toContain('[sandbox: file access denied under workspace-write mode]')
      expect(existsSync(outside)).toBe(false)
      // The editor kept the end of a long output; the model is told the beginning is gone.
      const long = lastToolText(before, 3)
      expect(long.startsWith("[... earlier output omitted: the editor's terminal keeps the last 65536 bytes ...]\nefg\nabcdefg\n")).toBe(true)
      // Over the tool-result threshold the text is spilled as usual: the file ends with the command's end.
      const spilled = /is saved to (\S+) \(page through/.exec(long)![1]!
      expect(readFileSync(spilled, 'utf8')).toMatch(/\nabcdefg\n[a-g]*END\n(\[exit code: \d+\])?$/)

      // The tool call shows the terminal while it runs and keeps it when it ends.
      const updates = kinds(editor, sessionId)
      const terminal = { type: 'terminal', terminalId: creates[0]!.terminalId }
      expect(updates).toContainEqual({ sessionUpdate: 'tool_call_update', toolCallId: 'b1', status: 'in_progress', content: [terminal] })
      const finished = updates.find(u => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'b1' && u.status === 'completed') as any
      expect(finished.content).toEqual([terminal])
      expect(finished.rawOutput).toContain('from-terminal')
      // Embedded before the agent released it.
      const embedded = editor.received.findIndex(f => f.method === 'session/update' && f.params.update.content?.[0]?.terminalId === creates[0]!.terminalId)
      const released = editor.received.findIndex(f => f.method === 'terminal/release' && f.params.terminalId === creates[0]!.terminalId)
      expect(embedded).toBeGreaterThanOrEqual(0)
      expect(embedded).toBeLessThan(released)
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
      rmSync(userHome, { recursive: true, force: true })
    }
    expect(editor.stderr()).toBe('')
  })

  it('T-6: a timeout and a cancel kill the terminal\'s command and release the terminal', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 't1', name: 'bash', arguments: JSON.stringify({ command: 'sleep 60', description: 'wait', timeoutMs: 300 }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'timed out' }, { finish: 'stop', usage }]),
      streamResponse([{ toolCall: { id: 'c1', name: 'bash', arguments: JSON.stringify({ command: 'sleep 60', description: 'wait' }) } }, { finish: 'tool_calls', usage }]),
    )
    const terminals = new FakeTerminals()
    const editor = openEditor({ home, cwd, terminals })
    try {
      await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: { terminal: true } })
      const { sessionId } = await editor.agent.request('session/new', { cwd, mcpServers: [] })
      const before = server.requests.length
      expect(await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait' }] })).toEqual({ stopReason: 'end_turn' })
      expect(lastToolText(before, 1)).toContain('[timed out after 300 ms]')
      const [first] = terminals.calls.filter(c => c.method === 'terminal/create').map(c => c.params.terminalId as string)
      expect(terminals.methodsOf(first!)).toEqual(['terminal/create', 'terminal/wait_for_exit', 'terminal/kill', 'terminal/output', 'terminal/release'])
      const timedOut = kinds(editor, sessionId).filter(u => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 't1').at(-1) as any
      expect(timedOut).toMatchObject({ status: 'failed', content: [{ type: 'terminal', terminalId: first }] })

      const prompt = editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'wait again' }] })
      const waitedFor = terminals.calls.length
      // The second command is running once the agent waits for its exit.
      await terminals.when(() => terminals.calls.slice(waitedFor).some(c => c.method === 'terminal/wait_for_exit'))
      await editor.agent.notify('session/cancel', { sessionId })
      expect(await prompt).toEqual({ stopReason: 'cancelled' })
      const second = terminals.calls.filter(c => c.method === 'terminal/create').map(c => c.params.terminalId as string)[1]!
      await terminals.when(() => terminals.methodsOf(second).includes('terminal/release'))
      expect(terminals.methodsOf(second)).toEqual(['terminal/create', 'terminal/wait_for_exit', 'terminal/kill', 'terminal/output', 'terminal/release'])
      // Both commands really ended, killed.
      expect(await terminals.statuses()).toEqual([{ exitCode: null, signal: 'SIGKILL' }, { exitCode: null, signal: 'SIGKILL' }])
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
    }
    expect(editor.stderr()).toBe('')
  })

  it('T-7: approvals still come first (a rejected call never reaches the terminal); a client without the capability gets local bash', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'p1', name: 'bash', arguments: JSON.stringify({ command: 'touch rejected', description: 'touch' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]),
    )
    const asking = new FakeTerminals()
    const editor = openEditor({ home, cwd, terminals: asking, patches: [askBashPatch()], permission: () => 'reject-once' })
    try {
      await editor.agent.request('initialize', { protocolVersion: 1, clientCapabilities: { terminal: true } })
      const { sessionId } = await editor.agent.request('session/new', { cwd, mcpServers: [] })
      await editor.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'touch' }] })
      expect(editor.permissions).toHaveLength(1)
      expect(asking.calls).toEqual([])
      expect(existsSync(join(cwd, 'rejected'))).toBe(false)
      expect(editor.invalidFrames()).toEqual([])
    } finally {
      expect(await editor.close()).toBe(0)
    }

    server.enqueue(
      streamResponse([{ toolCall: { id: 'l1', name: 'bash', arguments: JSON.stringify({ command: 'echo local; touch local.txt', description: 'local' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]),
    )
    const unused = new FakeTerminals()
    const plain = openEditor({ home, cwd, terminals: unused })
    try {
      await plain.agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} })
      const { sessionId } = await plain.agent.request('session/new', { cwd, mcpServers: [] })
      const before = server.requests.length
      await plain.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'local' }] })
      expect(lastToolText(before, 1)).toContain('local')
      expect(existsSync(join(cwd, 'local.txt'))).toBe(true)
      expect(unused.calls).toEqual([])
      const finished = kinds(plain, sessionId).find(u => u.sessionUpdate === 'tool_call_update' && u.toolCallId === 'l1' && u.status === 'completed') as any
      expect(finished.content[0]).toEqual({ type: 'content', content: { type: 'text', text: 'local\n' } })
      expect(plain.invalidFrames()).toEqual([])
    } finally {
      expect(await plain.close()).toBe(0)
    }
  })
})
