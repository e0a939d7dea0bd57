/**
 * The JSON-RPC SDK server and client through real processes (`node bin/dsh.js --profile sdk`)
 * against the fake DeepSeek server on 127.0.0.1.
 */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { waitForFile } from '../../test-support/wait-for-file.js'
import { heldCommand } from '../../test-support/gate.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import type { SessionEvent } from '../session/types.js'
import { DshClient, type Notification } from './client.js'
import { ErrorCodes, LineSplitter } from './jsonrpc.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

function envFor(home: string) {
  return { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key', DSH_MODEL: undefined }
}

async function startClient(home: string, cwd: string, options: { env?: Record<string, string | undefined> } = {}): Promise<DshClient> {
  return DshClient.start({ cwd, env: { ...envFor(home), ...options.env } })
}

/** Resolves with the first notification matching `test`. */
function nextNotification(client: DshClient, test: (n: Notification) => boolean): Promise<Notification> {
  return new Promise(resolve => {
    const off = client.onNotification(n => {
      if (!test(n)) return
      off()
      resolve(n)
    })
  })
}

const isEvent = (type: string, sessionId?: string) => (n: Notification) =>
  n.method === 'session.event' && n.params.event.type === type && (sessionId === undefined || n.params.sessionId === sessionId)

describe('SDK server: methods and notifications', () => {
  it('initialize answers the protocol version, server info and cwd', async () => {
    const { home, cwd } = tempHome()
    const client = await DshClient.start({ cwd, env: envFor(home), initialize: false })
    try {
      const result = await client.initialize({ cwd })
      expect(result).toMatchObject({ protocolVersion: 1, serverInfo: { name: 'dsh' }, cwd })
      await expect(client.initialize({ model: 'no-such-model' })).rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: expect.stringContaining('no-such-model') })
      await expect(client.initialize({ cwd: join(cwd, 'missing') })).rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: expect.stringContaining('not an existing folder') })
    } finally {
      await client.close()
    }
  })

  it('run(prompt) resolves to {sessionId, finalResponse, events, notifications}; session.event carries every log event in seq order', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ reasoning: 'thinking' }, { text: 'SDK OK' }, { finish: 'stop', usage }]))
    const client = await startClient(home, cwd)
    try {
      const result = await client.run('Reply with exactly: SDK OK')
      expect(result.finalResponse).toBe('SDK OK')
      expect(result.reason).toEqual({ kind: 'completed' })
      expect(result.events.map(event => event.seq)).toEqual(result.events.map((_, index) => index))
      expect(result.events[0]).toMatchObject({ type: 'agent/inbox/spliced', data: { target: 'next-turn' } })
      expect(result.events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
      // Full envelopes: seq, time, data, and surfaceOp where the log has one.
      const message = result.events.find(event => event.type === 'assistant/message')!
      expect(message).toMatchObject({ seq: expect.any(Number), time: expect.any(Number), surfaceOp: 'append' })
      // session.status: running right after the first event, idle last.
      const methods = result.notifications.map(n => n.method === 'session.status' ? `status:${n.params.status}` : 'event')
      expect(methods[0]).toBe('event')
      expect(methods[1]).toBe('status:running')
      expect(methods.at(-1)).toBe('status:idle')
      expect(methods.filter(m => m.startsWith('status'))).toEqual(['status:running', 'status:idle'])
      expect(result.notifications.every(n => n.params.sessionId === result.sessionId)).toBe(true)
    } finally {
      await client.close()
    }
  })

  it('initialize {output: true} adds session.output: a running command\'s output, live, before its tool/result; run(..., {onOutput}) hands it out; without it nothing is sent', async () => {
    const { home, cwd } = tempHome()
    // The command prints, then waits until the test has seen that output.
    const command = heldCommand('printf "first\\n"', 'gate', 'printf "oops\\n" >&2; printf "second\\n"')
    const script = (id: string) => server.enqueue(
      streamResponse([{ toolCall: { id, name: 'bash', arguments: JSON.stringify({ command, description: 'gated' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Done.' }, { finish: 'stop', usage }]),
    )
    script('b1')
    const client = await DshClient.start({ cwd, env: envFor(home), initialize: { output: true } })
    try {
      const seen: { callId: string; stream: string; text: string }[] = []
      const first = new Promise<void>(resolve => {
        const off = client.onNotification(n => {
          if (n.method !== 'session.output' || !n.params.text.includes('first')) return
          off()
          writeFileSync(join(cwd, 'gate'), '')
          resolve()
        })
      })
      const result = await client.run('run it', { onOutput: output => { seen.push(output) } })
      await first
      expect(seen[0]).toEqual({ callId: 'b1', toolName: 'bash', stream: 'stdout', text: 'first\n' })
      // Each stream in order (two pipes: their pieces may interleave either way).
      const of = (stream: string) => seen.filter(o => o.stream === stream).map(o => o.text).join('')
      expect([of('stdout'), of('stderr')]).toEqual(['first\nsecond\n', 'oops\n'])
      // Live output comes before the call's result, in the run's notifications too.
      const order = result.notifications.map(n => n.method === 'session.output' ? 'output' : n.method === 'session.event' ? n.params.event.type : n.method)
      expect(order.indexOf('output')).toBeGreaterThan(order.indexOf('tool/call'))
      expect(order.lastIndexOf('output')).toBeLessThan(order.indexOf('tool/result'))
      expect(result.notifications.filter(n => n.method === 'session.output').every(n => n.params.sessionId === result.sessionId)).toBe(true)
    } finally {
      await client.close()
    }
    script('b2')
    writeFileSync(join(cwd, 'gate'), '')
    const plain = await startClient(home, cwd)
    try {
      const result = await plain.run('run it again')
      expect(result.events.some(event => event.type === 'tool/result')).toBe(true)
      expect(result.notifications.filter(n => n.method === 'session.output')).toEqual([])
    } finally {
      await plain.close()
    }
  })

  it('session.output holds at most 64 KB of a call per notification: a flood keeps its latest text and says how much it dropped', async () => {
    const { home, cwd } = tempHome()
    const command = 'head -c 1000000 /dev/zero | tr "\\0" x; printf "\\nEND\\n"'
    server.enqueue(
      streamResponse([{ toolCall: { id: 'f1', name: 'bash', arguments: JSON.stringify({ command, description: 'flood' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Done.' }, { finish: 'stop', usage }]),
    )
    const client = await DshClient.start({ cwd, env: envFor(home), initialize: { output: true } })
    try {
      const result = await client.run('flood')
      const outputs = result.notifications.filter(n => n.method === 'session.output').map(n => n.params as { text: string; dropped?: number })
      expect(outputs.length).toBeGreaterThan(0)
      for (const output of outputs) expect(output.text.length).toBeLessThanOrEqual(64 * 1024)
      // What was sent plus what was dropped is all of it, and the end always arrives.
      expect(outputs.reduce((sum, output) => sum + output.text.length + (output.dropped ?? 0), 0)).toBe(1_000_000 + '\nEND\n'.length)
      expect(outputs.at(-1)!.text.endsWith('\nEND\n')).toBe(true)
    } finally {
      await client.close()
    }
  })

  it('session/prompt is an enqueue receipt {messageId, sessionId}; the message id is the queued user message', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'queued' }, { finish: 'stop', usage }]))
    const client = await startClient(home, cwd)
    try {
      const spliced = nextNotification(client, isEvent('agent/inbox/spliced'))
      const idle = nextNotification(client, n => n.method === 'session.status' && n.params.status === 'idle')
      const receipt = await client.prompt('hello', 'my-session')
      expect(receipt.sessionId).toBe('my-session')
      const inserted = (await spliced).params.event.data.inserted
      expect(inserted[0].id).toBe(receipt.messageId)
      await idle
    } finally {
      await client.close()
    }
  })

  it('session/command runs a slash command as a user would; session/commands lists them; a prompt outcome queues a turn; other text is refused', async () => {
    const { home, cwd } = tempHome()
    const client = await startClient(home, cwd)
    try {
      const names = (await client.commands()).map(command => command.name)
      expect(names).toEqual(expect.arrayContaining(['compact', 'init', 'model', 'status', 'trust']))
      const before = server.requests.length
      const status = await client.command('/status', 'cmd-session')
      expect(status).toMatchObject({ sessionId: 'cmd-session', kind: 'success', text: expect.stringContaining('Session     cmd-session (0 turns, 0 steps)') })
      const unknown = await client.command('/model no-such-model', 'cmd-session')
      expect(unknown).toEqual({ sessionId: 'cmd-session', kind: 'error', text: expect.stringContaining('Unknown model "no-such-model"') })
      expect(server.requests.length).toBe(before)
      await expect(client.command('/nope', 'cmd-session')).rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: expect.stringContaining('no command /nope') })
      await expect(client.command('hello there', 'cmd-session')).rejects.toMatchObject({ code: ErrorCodes.invalidParams, message: expect.stringContaining('not a slash command') })

      server.enqueue(streamResponse([{ text: 'AGENTS.md written.' }, { finish: 'stop', usage }]))
      const idle = nextNotification(client, n => n.method === 'session.status' && n.params.status === 'idle' && n.params.sessionId === 'cmd-session')
      const init = await client.command('/init', 'cmd-session')
      expect(init).toMatchObject({ sessionId: 'cmd-session', kind: 'prompt', messageId: expect.any(String) })
      await idle
      expect(server.requests.length).toBe(before + 1)
      const loaded = await client.load('cmd-session', { events: true })
      const kinds = loaded.events!.filter(event => event.type.startsWith('command/')).map(event => [event.type, (event.data as { name?: string; kind?: string }).name ?? (event.data as { kind: string }).kind])
      expect(kinds).toEqual([['command/run', 'status'], ['command/done', 'success'], ['command/run', 'model'], ['command/done', 'error'], ['command/run', 'init'], ['command/done', 'prompt']])
    } finally {
      await client.close()
    }
  })

  it('session/list and session/load see the live and stored sessions; load of an unknown id is -32602', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'one' }, { finish: 'stop', usage }]))
    const client = await startClient(home, cwd)
    try {
      const { sessionId } = await client.run('first')
      const { sessions } = await client.list()
      expect(sessions).toContainEqual(expect.objectContaining({ id: sessionId, live: true, status: 'idle' }))
      const loaded = await client.load(sessionId, { events: true })
      expect(loaded).toMatchObject({ sessionId, turns: 1, repaired: 0, status: 'idle' })
      expect(loaded.events!.length).toBe(loaded.length)
      await expect(client.load('nope')).rejects.toMatchObject({ code: ErrorCodes.invalidParams })
      await expect(client.cancel('nope')).rejects.toMatchObject({ code: ErrorCodes.invalidParams })
    } finally {
      await client.close()
    }
  })

  it('a missing API key refuses the prompt with one message naming DEEPSEEK_API_KEY, before any model request', async () => {
    const { home, cwd } = tempHome()
    const client = await startClient(home, cwd, { env: { DEEPSEEK_API_KEY: undefined } })
    const before = server.requests.length
    try {
      await expect(client.prompt('hello')).rejects.toMatchObject({ code: ErrorCodes.serverError, message: expect.stringContaining('DEEPSEEK_API_KEY') })
      expect(server.requests.length).toBe(before)
    } finally {
      await client.close()
    }
  })

  it('two sessions interleave on one server: each gets its own events, status and answer', async () => {
    const { home, cwd } = tempHome()
    let releaseA!: () => void
    const holdA = new Promise<void>(resolve => { releaseA = resolve })
    server.enqueue(streamResponse([{ text: 'answer A' }, { until: holdA }, { finish: 'stop', usage }]))
    const client = await startClient(home, cwd)
    try {
      const order: string[] = []
      client.onNotification(n => {
        if (n.method === 'session.event' && n.params.event.type === 'turn/end') order.push(`end:${n.params.sessionId}`)
      })
      const requested = server.requests.length
      const runA = client.run('question A', { sessionId: 'session-a' })
      await server.waitForRequests(requested + 1)
      server.enqueue(streamResponse([{ text: 'answer B' }, { finish: 'stop', usage }]))
      const b = await client.run('question B', { sessionId: 'session-b' })
      releaseA()
      const a = await runA
      expect(a.finalResponse).toBe('answer A')
      expect(b.finalResponse).toBe('answer B')
      expect(order).toEqual(['end:session-b', 'end:session-a'])
      expect(a.events.map(e => e.seq)).toEqual(a.events.map((_, i) => i))
      expect(b.events.map(e => e.seq)).toEqual(b.events.map((_, i) => i))
      expect(a.notifications.every(n => n.params.sessionId === 'session-a')).toBe(true)
    } finally {
      releaseA()
      await client.close()
    }
  })

  it('A-9, T-6: session/cancel during a tool call: the body is stopped, the turn ends aborted, the session goes idle', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([
      { toolCall: { id: 'call-sleep', name: 'bash', arguments: '{"command":"sleep 30","description":"wait"}' } },
      { finish: 'tool_calls', usage },
    ]))
    const client = await startClient(home, cwd)
    try {
      const started = nextNotification(client, isEvent('tool/call'))
      const run = client.run('run the long command')
      const call = await started
      const events: SessionEvent[] = []
      client.subscribe(call.params.sessionId, event => events.push(event))
      expect(await client.cancel(call.params.sessionId)).toEqual({ cancelled: true })
      const result = await run
      expect(result.reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
      const toolResult = result.events.find(event => event.type === 'tool/result')
      expect(toolResult).toMatchObject({ data: { message: { content: [{ toolCallId: 'call-sleep', isError: true }] } } })
      expect(events.at(-1)?.type).toBe('turn/end')
    } finally {
      await client.close()
    }
  })

  it('D-2: stdin EOF lets a running turn finish, flushes and exits 0; shutdown cancels and exits 0', async () => {
    const { home, cwd } = tempHome()
    let release!: () => void
    const hold = new Promise<void>(resolve => { release = resolve })
    server.enqueue(streamResponse([{ text: 'finished after EOF' }, { until: hold }, { finish: 'stop', usage }]))
    const client = await startClient(home, cwd)
    const requested = server.requests.length
    const receipt = await client.prompt('long', 'eof-session')
    await server.waitForRequests(requested + 1)
    client.process.stdin!.end()
    release()
    expect(await client.exited).toEqual({ code: 0, signal: null })
    // The turn finished and was stored: a new server loads it closed (nothing to repair).
    const second = await startClient(home, cwd)
    try {
      const loaded = await second.load(receipt.sessionId, { events: true })
      expect(loaded.repaired).toBe(0)
      expect(loaded.events!.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
      expect(await second.shutdown()).toEqual({ code: 0, signal: null })
    } finally {
      await second.close()
    }
  })

  it('a client that closes its end of stdout mid-turn: writes fail quietly (EPIPE), the turn finishes and is stored, exit 0', async () => {
    const { home, cwd } = tempHome()
    let release!: () => void
    const hold = new Promise<void>(resolve => { release = resolve })
    server.enqueue(streamResponse([{ text: 'nobody reads this' }, { until: hold }, { finish: 'stop', usage }]))
    const client = await startClient(home, cwd)
    const requested = server.requests.length
    await client.prompt('write into the void', 'void-session')
    await server.waitForRequests(requested + 1)
    client.process.stdout!.destroy()
    client.process.stdin!.end()
    release()
    expect(await client.exited).toEqual({ code: 0, signal: null })
    const second = await startClient(home, cwd)
    try {
      const loaded = await second.load('void-session', { events: true })
      expect(loaded.events!.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
    } finally {
      await second.close()
    }
  })

  it('close() on a real server whose turn never ends: EOF waits, SIGTERM cancels and flushes (exit 143), the log is stored', async () => {
    const { home, cwd } = tempHome()
    let release!: () => void
    const never = new Promise<void>(resolve => { release = resolve })
    server.enqueue(streamResponse([{ text: 'stuck' }, { until: never }, { finish: 'stop', usage }]))
    const client = await DshClient.start({ cwd, env: envFor(home), eofTimeoutMs: 300, termTimeoutMs: 10_000 })
    try {
      const requested = server.requests.length
      await client.prompt('hang forever', 'stuck-session')
      await server.waitForRequests(requested + 1)
      expect(await client.close()).toMatchObject({ via: 'sigterm', code: 143 })
    } finally {
      release()
    }
    const second = await startClient(home, cwd)
    try {
      const loaded = await second.load('stuck-session', { events: true })
      expect(loaded.repaired).toBe(0)
      expect(loaded.events!.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'aborted' } } })
    } finally {
      await second.close()
    }
  })

  it('shutdown during a running turn cancels it (aborted, disposed), answers {} and exits 0 with the log stored', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([
      { toolCall: { id: 'call-long', name: 'bash', arguments: '{"command":"touch started && sleep 30","description":"wait"}' } },
      { finish: 'tool_calls', usage },
    ]))
    const client = await startClient(home, cwd)
    const ended = nextNotification(client, isEvent('turn/end'))
    void client.prompt('long one', 'shut')
    await waitForFile(join(cwd, 'started'))
    expect(await client.shutdown()).toEqual({ code: 0, signal: null })
    expect((await ended).params.event.data.reason).toEqual({ kind: 'aborted', reason: { kind: 'disposed' } })
    const second = await startClient(home, cwd)
    try {
      const loaded = await second.load('shut', { events: true })
      expect(loaded.repaired).toBe(0)
      expect(loaded.events!.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'aborted' } } })
    } finally {
      await second.close()
    }
  })

  it('A-2: concurrent first prompts for a stored session that is not loaded yet all land, in order, in one session', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'stored' }, { finish: 'stop', usage }]))
    const first = await startClient(home, cwd)
    await first.run('remember this', { sessionId: 'cold' })
    await first.close()
    const second = await startClient(home, cwd)
    try {
      for (let i = 0; i < 4; i++) server.enqueue(streamResponse([{ text: `answer ${i}` }, { finish: 'stop', usage }]))
      const idle = nextNotification(second, n => n.method === 'session.status' && n.params.sessionId === 'cold' && n.params.status === 'idle')
      const receipts = await Promise.all(['one', 'two', 'three'].map(text => second.prompt(text, 'cold')))
      expect(receipts.map(r => r.sessionId)).toEqual(['cold', 'cold', 'cold'])
      await idle
      const loaded = await second.load('cold', { events: true })
      const users = loaded.events!.filter(event => event.type === 'user/message')
        .map(event => {
          const content = (event.data as { content: string | { text?: string }[] }).content
          return typeof content === 'string' ? content : content.map(block => block.text ?? '').join('')
        })
      expect(users.filter(text => !text.startsWith('Current runtime context'))).toEqual(['remember this', 'one', 'two', 'three'])
    } finally {
      await second.close()
      // Queued prompts may merge into fewer turns than answers were scripted.
      server.discardPending()
    }
  })

  it('C-1..C-4, D-3: a server killed mid-turn: a new server loads the session (the interrupted turn is closed) and a new prompt works', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([
      { toolCall: { id: 'call-hang', name: 'bash', arguments: '{"command":"touch started && sleep 30","description":"wait"}' } },
      { finish: 'tool_calls', usage },
    ]))
    const first = await startClient(home, cwd)
    // The body runs only after the checkpoint stored the call (D-3): the file says it started.
    const started = waitForFile(join(cwd, 'started'))
    void first.run('start something long', { sessionId: 'crashed' }).catch(() => undefined)
    await started
    first.process.kill('SIGKILL')
    await first.exited

    const second = await startClient(home, cwd)
    try {
      const loaded = await second.load('crashed', { events: true })
      expect(loaded.repaired).toBe(3)
      const tail = loaded.events!.slice(-3)
      expect(tail.map(event => event.type)).toEqual(['tool/result', 'step/end', 'turn/end'])
      expect(tail[0]).toMatchObject({ data: { error: { code: 'TOOL_OUTCOME_UNKNOWN' } } })
      expect(tail[2]).toMatchObject({ data: { reason: { kind: 'interrupted' } } })
      server.enqueue(streamResponse([{ text: 'resumed fine' }, { finish: 'stop', usage }]))
      const result = await second.run('go on', { sessionId: 'crashed' })
      expect(result.finalResponse).toBe('resumed fine')
      expect(result.events[0]!.seq).toBe(loaded.length)
      const request = server.requests.at(-1)!.body
      expect(request.messages.some((m: { role: string; tool_call_id?: string }) => m.role === 'tool' && m.tool_call_id === 'call-hang')).toBe(true)
    } finally {
      await second.close()
    }
  })
})

/** Raw frames against a raw process: every kind of bad input. */
describe('SDK delegation notifications (SA-17)', () => {
  it('SA-17: a foreground subagent sends subagent.started, the child\'s own session.event stream, then subagent.finished before the parent\'s tool/result', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { index: 0, id: 'call_sub', name: 'subagent', arguments: JSON.stringify({ description: 'Child task', prompt: 'child work', run_in_background: false }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'CHILD_DONE' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'PARENT_DONE' }, { finish: 'stop', usage }]),
    )
    const client = await startClient(home, cwd)
    const seen: Notification[] = []
    const off = client.onNotification(n => { seen.push(n) })
    try {
      const result = await client.run('delegate it')
      expect(result.finalResponse).toBe('PARENT_DONE')
      const parentId = result.sessionId
      const started = seen.filter(n => n.method === 'subagent.started')
      expect(started).toHaveLength(1)
      const childId = started[0]!.params.childSessionId as string
      expect(started[0]!.params).toEqual({ parentSessionId: parentId, childSessionId: childId })
      const finished = seen.filter(n => n.method === 'subagent.finished')
      expect(finished).toHaveLength(1)
      expect(finished[0]!.params).toMatchObject({ parentSessionId: parentId, childSessionId: childId, status: 'ok', provider: 'spawn' })
      // The child's log streams as its own session.event notifications, its answer included.
      const childMessage = seen.find(n => isEvent('assistant/message', childId)(n))
      expect(childMessage?.params.event.data.message.content).toEqual([{ type: 'text', text: 'CHILD_DONE' }])
      // Order: started, the child's events, finished, then the parent's tool/result.
      const at = (test: (n: Notification) => boolean) => seen.findIndex(test)
      const parentResult = at(isEvent('tool/result', parentId))
      expect(at(n => n.method === 'subagent.started')).toBeLessThan(at(isEvent('assistant/message', childId)))
      expect(at(isEvent('assistant/message', childId))).toBeLessThan(at(n => n.method === 'subagent.finished'))
      expect(at(n => n.method === 'subagent.finished')).toBeLessThan(parentResult)
      expect(seen[parentResult]!.params.event.data.message.content[0].content).toEqual([{ type: 'text', text: 'CHILD_DONE' }])
    } finally {
      off()
      await client.close()
    }
  }, 60_000)
})

describe('SDK delegation notifications for background children (SA-17)', () => {
  it('SA-17 SA-10: a continuable child sends subagent.started, its own session.event stream and subagent.finished; its settlement notice reaches the parent; run() carries the child\'s notifications', async () => {
    const { home, cwd } = tempHome()
    const patch = join(home, 'continuable.patch.yml')
    writeFileSync(patch, JSON.stringify([{ id: 'subagent-tools', config: { tools: [{ provider: 'spawn', toolName: 'subagent', backgroundMode: 'continuable', maxDepth: 1 }] } }]))
    // The parent's second step and the child's turn run concurrently: both get the same text, so
    // the order in which they take the two responses does not matter.
    server.enqueue(
      streamResponse([{ toolCall: { index: 0, id: 'call_bg', name: 'subagent', arguments: JSON.stringify({ description: 'Background task', prompt: 'child work' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'DONE' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'DONE' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'NOTED' }, { finish: 'stop', usage }]),
    )
    const client = await DshClient.start({ cwd, env: envFor(home), patches: [patch] })
    const seen: Notification[] = []
    const off = client.onNotification(n => { seen.push(n) })
    try {
      const finished = nextNotification(client, n => n.method === 'subagent.finished')
      const result = await client.run('delegate in the background')
      const parentId = result.sessionId
      const done = await finished
      const childId = done.params.childSessionId as string
      expect(done.params).toMatchObject({ provider: 'spawn', agentId: childId, parentSessionId: parentId, status: 'ok', stopReason: 'completed', lastAssistantMessage: [{ type: 'text', text: 'DONE' }] })
      const started = seen.filter(n => n.method === 'subagent.started')
      expect(started.map(n => n.params)).toEqual([{ parentSessionId: parentId, childSessionId: childId }])
      // The run's own notifications include the child's (they interleave with the parent's).
      expect(result.notifications.some(n => n.method === 'subagent.started')).toBe(true)
      // The child's log streams under its own id: its descriptor (continuable) and its answer.
      const descriptor = seen.find(isEvent('subagent/descriptor', childId))
      expect(descriptor?.params.event.data).toMatchObject({ version: 2, mode: 'continuable', provider: 'spawn', label: 'Background task' })
      expect(seen.find(isEvent('assistant/message', childId))?.params.event.data.message.content).toEqual([{ type: 'text', text: 'DONE' }])
      expect(seen.findIndex(n => n.method === 'subagent.started')).toBeLessThan(seen.findIndex(isEvent('assistant/message', childId)))
      expect(seen.findIndex(isEvent('turn/end', childId))).toBeLessThan(seen.indexOf(done))
      // SA-10: the settlement notice reaches the parent and is answered.
      await nextOrSeen(client, seen, n => isEvent('assistant/message', parentId)(n) && n.params.event.data.message.content[0]?.text === 'NOTED')
      const notice = seen.find(n => isEvent('user/message', parentId)(n) && n.params.event.data.source.kind === 'subagent-settled')
      expect(notice?.params.event.data.content[0]).toEqual({ type: 'text', text: `Background subagent ${childId} finished and will do no further work unless you send it more.` })
    } finally {
      off()
      await client.close()
    }
  }, 60_000)
})

describe('goals over the SDK against the fake model server (GL-1, GL-2)', () => {
  it('GL-1 GL-2: a goal created by the model runs two automatic rounds and completes; the run ends after the closing message', async () => {
    const { home, cwd } = tempHome()
    const client = await startClient(home, cwd)
    // Round 1's response waits until the goal id is known and round 2's responses are queued.
    let known!: () => void
    const idKnown = new Promise<void>(resolve => { known = resolve })
    const off = client.onNotification((n) => {
      if (!isEvent('goal/change')(n) || n.params.event.data.operation !== 'create') return
      const goalId = n.params.event.data.goal.id as string
      server.enqueue(
        streamResponse([{ toolCall: { index: 0, id: 'call_done', name: 'update_goal', arguments: JSON.stringify({ goal_id: goalId, revision: 1, action: 'complete' }) } }, { finish: 'tool_calls', usage }]),
        streamResponse([{ text: 'all done: counted to two' }, { finish: 'stop', usage }]),
      )
      known()
    })
    const round1 = streamResponse([{ text: 'one' }, { finish: 'stop', usage }])
    server.enqueue(
      streamResponse([{ toolCall: { index: 0, id: 'call_goal', name: 'create_goal', arguments: JSON.stringify({ objective: 'count to two', max_goal_rounds: 5 }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'goal set' }, { finish: 'stop', usage }]),
      { ...round1, segments: [{ until: idKnown }, ...round1.segments ?? []] },
    )
    try {
      const result = await client.run('count to two as a goal')
      expect(result.finalResponse).toBe('all done: counted to two')
      const changes = result.events.filter(event => event.type === 'goal/change').map(event => event.data as { operation: string; roundsStarted: number; goal: { phase: string; revision: number } })
      expect(changes.map(change => [change.operation, change.goal.revision, change.goal.phase])).toEqual([['create', 1, 'active'], ['complete', 2, 'complete']])
      expect(changes[1]!.roundsStarted).toBe(2)
      const rounds = result.events.filter(event => event.type === 'user/message' && (event.data as { source: { kind: string } }).source.kind === 'goal')
      expect(rounds.map(event => (event.data as { source: { round: number } }).source.round)).toEqual([1, 2])
      expect(result.events.filter(event => event.type === 'turn/end').map(event => (event.data as { reason: { kind: string } }).reason.kind)).toEqual(['completed', 'completed', 'completed'])
      expect(server.pending).toBe(0)
    } finally {
      off()
      await client.close()
    }
  }, 60_000)
})

describe('ask_user_question over the SDK (question/request)', () => {
  it('the client\'s onQuestion answers the model\'s question; without it the question fails closed', async () => {
    const { home, cwd } = tempHome()
    const ask = { questions: [{ id: 'checkpoint', header: 'Checkpoint', question: 'Ready to continue?', options: [{ label: 'Yes' }, { label: 'No' }] }] }
    const asked: unknown[] = []
    server.enqueue(
      streamResponse([{ toolCall: { index: 0, id: 'call_q', name: 'ask_user_question', arguments: JSON.stringify(ask) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'You said yes.' }, { finish: 'stop', usage }]),
    )
    const client = await DshClient.start({ cwd, env: envFor(home), onQuestion: (request) => { asked.push(request); return [{ id: 'checkpoint', selected: ['Yes'] }] } })
    try {
      const result = await client.run('ask me')
      expect(asked).toMatchObject([{ sessionId: result.sessionId, callId: 'call_q', questions: ask.questions }])
      const answered = result.events.find(event => event.type === 'tool/result')!.data as { message: { content: { content: { text: string }[]; isError: boolean }[] } }
      expect(answered.message.content[0]!.content[0]!.text).toBe('{"answers":[{"id":"checkpoint","selected":["Yes"]}]}')
      expect(result.finalResponse).toBe('You said yes.')
    } finally {
      await client.close()
    }
    server.enqueue(
      streamResponse([{ toolCall: { index: 0, id: 'call_q2', name: 'ask_user_question', arguments: JSON.stringify(ask) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'No answer; going on.' }, { finish: 'stop', usage }]),
    )
    const silent = await startClient(home, cwd)
    try {
      const result = await silent.run('ask me again')
      const failed = result.events.find(event => event.type === 'tool/result')!.data as { error?: unknown; message: { content: { content: { text: string }[]; isError: boolean }[] } }
      expect(failed.message.content[0]!.isError).toBe(true)
      expect(failed.error).toEqual({ name: 'UserQuestionError', code: 'UNAVAILABLE' })
    } finally {
      await silent.close()
    }
  }, 60_000)
})

/** The first notification matching `test`, already seen or still to come. */
function nextOrSeen(client: DshClient, seen: readonly Notification[], test: (n: Notification) => boolean): Promise<Notification> {
  const found = seen.find(test)
  return found !== undefined ? Promise.resolve(found) : nextNotification(client, test)
}

describe('SDK server: bad frames get JSON-RPC errors and never stop the server', () => {
  it('garbage, non-object, batch, missing jsonrpc, bad id, unknown method, bad params, U+2028 inside a frame', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
    const env: Record<string, string> = {}
    for (const [key, value] of Object.entries({ ...process.env, ...envFor(home) })) if (value !== undefined) env[key] = value
    const child = spawn(process.execPath, [dshBin, '--profile', 'sdk'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] })
    const frames: any[] = []
    const raw: string[] = []
    const splitter = new LineSplitter()
    const waiters: { test: (frame: any) => boolean; resolve: (frame: any) => void }[] = []
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      for (const line of splitter.push(text)) {
        raw.push(line)
        const frame = JSON.parse(line)
        frames.push(frame)
        for (const waiter of waiters.filter(w => w.test(frame))) {
          waiters.splice(waiters.indexOf(waiter), 1)
          waiter.resolve(frame)
        }
      }
    })
    const answer = (id: unknown) => new Promise<any>(resolve => {
      const found = frames.find(frame => frame.id === id && !('method' in frame))
      if (found !== undefined) resolve(found)
      else waiters.push({ test: frame => frame.id === id && !('method' in frame), resolve })
    })
    const send = (line: string) => child.stdin.write(`${line}\n`)
    try {
      send('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}')
      await answer(0)
      send('this is not json')
      send('42')
      send('[{"jsonrpc":"2.0","id":1,"method":"session/list"}]')
      send('{"id":2,"method":"session/list"}')
      send('{"jsonrpc":"2.0","id":{"x":1},"method":"session/list"}')
      send('{"jsonrpc":"2.0","id":3,"method":"no/such/method"}')
      send('{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"contentBlocks":[]}}')
      send('{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"contentBlocks":[{"type":"video"}]}}')
      send('{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"maxTokens":-1}}')
      send('{"jsonrpc":"2.0","id":7,"method":"session/list","params":"nope"}')
      // U+2028 raw between tokens is not JSON whitespace: one parse error for the whole line, not two frames.
      send('{"jsonrpc":"2.0",\u2028"id":8,"method":"session/list"}')
      // U+2028 / U+2029 raw inside a string are fine and must survive the round trip.
      send('{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"sep","contentBlocks":[{"type":"text","text":"line\u2028sep\u2029end"}]}}')
      const errors = async (id: unknown) => (await answer(id)).error
      expect(await errors(3)).toMatchObject({ code: -32601, message: expect.stringContaining('no/such/method') })
      expect(await errors(2)).toMatchObject({ code: -32600 })
      expect(await errors(4)).toMatchObject({ code: -32602, message: expect.stringContaining('contentBlocks') })
      expect(await errors(5)).toMatchObject({ code: -32602 })
      expect(await errors(6)).toMatchObject({ code: -32602, message: expect.stringContaining('maxTokens') })
      expect(await errors(7)).toMatchObject({ code: -32602 })
      expect((await answer(9)).result).toMatchObject({ sessionId: 'sep', messageId: expect.any(String) })
      const nullErrors = frames.filter(frame => frame.id === null).map(frame => frame.error.code)
      // garbage -32700, 42 -32600, batch -32600, bad id -32600, U+2028 between tokens -32700
      expect(nullErrors).toEqual([-32700, -32600, -32600, -32600, -32700])
      const spliced = await new Promise<any>(resolve => {
        const test = (frame: any) => frame.method === 'session.event' && frame.params.event.type === 'user/message'
        const found = frames.find(test)
        if (found) resolve(found)
        else waiters.push({ test, resolve })
      })
      expect(spliced.params.event.data.content[0].text).toBe('line\u2028sep\u2029end')
      // Still alive and answering.
      send('{"jsonrpc":"2.0","id":10,"method":"session/list"}')
      expect((await answer(10)).result.sessions).toEqual(expect.any(Array))
      // stdout carries frames only: every line parsed as a JSON-RPC frame.
      expect(raw.every(line => JSON.parse(line).jsonrpc === '2.0')).toBe(true)
    } finally {
      child.stdin.end()
      await new Promise(resolve => child.on('exit', resolve))
    }
    expect(child.exitCode).toBe(0)
  })
})

describe('client shutdown escalation', () => {
  /** A stand-in server that says `ready` (a notification) once its signal handlers are installed. */
  const stubborn = (signals: string) => [process.execPath, '-e', `${signals}; process.stdin.resume(); process.stdin.on('end', () => {}); setInterval(() => {}, 1000); process.stdout.write('{"jsonrpc":"2.0","method":"ready"}\\n')`] as [string, ...string[]]
  const ready = (client: DshClient) => nextNotification(client, n => n.method === 'ready')

  it('a server that exits on EOF is closed by EOF alone', async () => {
    const client = await DshClient.start({ command: [process.execPath, '-e', 'process.stdin.resume(); process.stdin.on("end", () => process.exit(0))'], initialize: false })
    expect(await client.close()).toMatchObject({ via: 'eof', code: 0 })
  })

  it('a server that ignores EOF gets SIGTERM', async () => {
    const client = await DshClient.start({ command: stubborn(''), initialize: false, eofTimeoutMs: 100, termTimeoutMs: 10_000 })
    await ready(client)
    expect(await client.close()).toMatchObject({ via: 'sigterm', signal: 'SIGTERM' })
  })

  it('a server that ignores EOF and SIGTERM gets SIGKILL', async () => {
    const client = await DshClient.start({ command: stubborn("process.on('SIGTERM', () => {})"), initialize: false, eofTimeoutMs: 100, termTimeoutMs: 100 })
    await ready(client)
    expect(await client.close()).toMatchObject({ via: 'sigkill', signal: 'SIGKILL' })
  })

  it('a request fails naming the exit code and stderr when the server dies', async () => {
    const client = await DshClient.start({ command: [process.execPath, '-e', 'process.stdin.resume(); process.stdin.on("data", () => { process.stderr.write("boom\\n"); process.exit(3) })'], initialize: false })
    await expect(client.request('session/list')).rejects.toMatchObject({ message: expect.stringMatching(/code 3[\s\S]*boom/) })
  })
})

describe('SDK approvals (AP-2, AP-3)', () => {
  const escalatedWrite = (id: string, file: string) => streamResponse([
    { toolCall: { id, name: 'write', arguments: JSON.stringify({ file_path: file, content: 'x', sandbox_permissions: 'danger-full-access', justification: 'the user asked' }) } },
    { finish: 'tool_calls', usage },
  ])

  it('AP-2: the server sends approval/request to onApproval; allowed-once runs the call, rejected does not', async () => {
    const { home, cwd } = tempHome()
    const seen: unknown[] = []
    const answers = ['allowed-once', 'rejected'] as const
    const client = await DshClient.start({ cwd, env: envFor(home), onApproval: (request) => { seen.push(request); return answers[seen.length - 1]! } })
    try {
      server.enqueue(escalatedWrite('call-a', 'a.txt'), streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
      const first = await client.run('write a')
      server.enqueue(escalatedWrite('call-b', 'b.txt'), streamResponse([{ text: 'no' }, { finish: 'stop', usage }]), )
      await client.run('write b', { sessionId: first.sessionId })
      const { existsSync } = await import('node:fs')
      expect(existsSync(join(cwd, 'a.txt'))).toBe(true)
      expect(existsSync(join(cwd, 'b.txt'))).toBe(false)
      expect(seen).toEqual([
        expect.objectContaining({ sessionId: first.sessionId, toolName: 'write', callId: 'call-a', reason: 'escalate sandbox to danger-full-access: the user asked' }),
        expect.objectContaining({ callId: 'call-b' }),
      ])
      expect((seen[0] as { arguments: string }).arguments).toContain('"file_path":"a.txt"')
    } finally {
      await client.close()
    }
  })

  it('AP-3: a client without onApproval fails closed: the request is unavailable and nothing runs', async () => {
    const { home, cwd } = tempHome()
    const client = await startClient(home, cwd)
    try {
      server.enqueue(escalatedWrite('call-c', 'c.txt'), streamResponse([{ text: 'no' }, { finish: 'stop', usage }]))
      const result = await client.run('write c')
      const { existsSync } = await import('node:fs')
      expect(existsSync(join(cwd, 'c.txt'))).toBe(false)
      expect(result.events.filter(e => e.type === 'approval/decided').map(e => (e.data as { outcome: string }).outcome)).toEqual(['unavailable'])
    } finally {
      await client.close()
    }
  })
})
