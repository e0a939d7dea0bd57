import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { errorResponse, FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
function envFor(home: string) {
  return { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
}

describe('dsh --profile headless', () => {
  it('runs a task with a real tool round trip and prints the final answer (exit 0)', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-1', name: 'bash', arguments: '{"command":"echo from-bash","description":"echo"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ reasoning: 'done' }, { text: 'The command printed from-bash.' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'run', 'the', 'echo'], { cwd, env: envFor(home) })
    expect(withoutSessionHint(result.stderr)).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('The command printed from-bash.\n')
    const second = server.requests[before + 1].body
    const toolMessage = second.messages.find((message: { role: string }) => message.role === 'tool')
    expect(toolMessage).toMatchObject({ tool_call_id: 'call-1', content: 'from-bash\n' })
    expect(second.messages.find((message: { role: string }) => message.role === 'user').content).toBe('run the echo')
  })

  it('with no task words and stdin not a terminal, the task is read from stdin (`echo task | dsh`); an empty stdin is the usage error', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'PONG' }, { finish: 'stop', usage }]))
    const before = server.requests.length
    const piped = await runDsh([], { cwd, env: envFor(home), input: 'say pong\nin two lines\n' })
    expect(piped.code).toBe(0)
    expect(piped.stdout).toBe('PONG\n')
    const user = server.requests[before].body.messages.find((message: { role: string }) => message.role === 'user')
    expect(user.content).toBe('say pong\nin two lines')
    const empty = await runDsh(['--profile', 'headless'], { cwd, env: envFor(home), input: '  \n' })
    expect(empty.code).toBe(2)
    expect(empty.stderr).toMatch(/no task given/)
    expect(server.requests.length).toBe(before + 1)
  })

  it('--output stream-json prints one session_event line per event, then a result line', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'PONG' }, { finish: 'stop', usage }]))
    const result = await runDsh(['--profile', 'headless', '--output', 'stream-json', 'say pong'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    const lines = result.stdout.trim().split('\n').map(line => JSON.parse(line))
    const last = lines.pop()
    expect(last).toMatchObject({ type: 'result', output: 'PONG', usage: { inputTokens: 10, outputTokens: 3 } })
    expect(lines.every(line => line.type === 'session_event' && line.sessionId === last.sessionId)).toBe(true)
    const events = lines.map(line => line.event)
    expect(events.map(event => event.seq)).toEqual(events.map((_, index) => index))
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } } })
  })

  it('--output json prints one JSON object: the answer, session id, usage and how the turn ended; a failed turn too (exit 1)', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'PONG' }, { finish: 'stop', usage }]))
    const result = await runDsh(['--profile', 'headless', '--output', 'json', 'say pong'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    const object = JSON.parse(result.stdout)
    expect(result.stdout.trim().split('\n')).toHaveLength(1)
    expect(object).toEqual({ type: 'result', sessionId: expect.any(String), output: 'PONG', usage: { inputTokens: 10, outputTokens: 3 }, reason: { kind: 'completed' } })
    // The id is in the object: no "continue with" hint on stderr.
    expect(result.stderr).toBe('')
    server.enqueue(errorResponse(401, { error: { message: 'bad key' } }))
    const failed = await runDsh(['--profile', 'headless', '--output', 'json', '--session', object.sessionId, 'again'], { cwd, env: envFor(home) })
    expect(failed.code).toBe(1)
    expect(JSON.parse(failed.stdout)).toMatchObject({ type: 'result', sessionId: object.sessionId, output: '', reason: { kind: 'error', error: { code: 'AUTH' } } })
    expect(failed.stderr).toMatch(/^dsh: AUTH: /)
    const bad = await runDsh(['--profile', 'headless', '--output', 'yaml', 'x'], { cwd, env: envFor(home) })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--output must be text, json or stream-json/)
  })

  it('a provider error ends the turn with exit 1 and one line on stderr naming the code', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(errorResponse(401, { error: { message: 'bad key' } }))
    const result = await runDsh(['--profile', 'headless', 'hello'], { cwd, env: envFor(home) })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    const lines = withoutSessionHint(result.stderr).trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^dsh: AUTH: /)
  })

  it('a missing key is one clear line naming DEEPSEEK_API_KEY, before any request', async () => {
    const { home, cwd } = tempHome()
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'hello'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url } })
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain('DEEPSEEK_API_KEY')
    expect(server.requests.length).toBe(before)
  })

  it('a key stored in $DSH_HOME/.credentials.yaml is used when the environment has none', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, '.credentials.yaml'), 'DEEPSEEK_API_KEY: stored-key\n', { mode: 0o600 })
    server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
    const result = await runDsh(['--profile', 'headless', 'hello'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url } })
    expect(result.code).toBe(0)
    expect(server.requests.at(-1)!.headers.authorization).toBe('Bearer stored-key')
  })

  it('--session continues a stored session: the model sees the earlier turn', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'first answer' }, { finish: 'stop', usage }]))
    const first = await runDsh(['--profile', 'headless', '--output', 'stream-json', 'first question'], { cwd, env: envFor(home) })
    expect(first.code).toBe(0)
    const sessionId = JSON.parse(first.stdout.trim().split('\n').at(-1)!).sessionId
    server.enqueue(streamResponse([{ text: 'second answer' }, { finish: 'stop', usage }]))
    const second = await runDsh(['--profile', 'headless', '--session', sessionId, 'second question'], { cwd, env: envFor(home) })
    expect(withoutSessionHint(second.stderr)).toBe('')
    expect(second.code).toBe(0)
    expect(second.stdout).toBe('second answer\n')
    const texts = server.requests.at(-1)!.body.messages.map((message: { role: string; content: string }) => `${message.role}:${message.content}`)
    expect(texts).toContain('user:first question')
    expect(texts).toContain('assistant:first answer')
    expect(texts.at(-1)).toBe('user:second question')

    const listed = await runDsh(['sessions'], { cwd, env: envFor(home) })
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain(sessionId)
    expect(listed.stdout).toContain('first question')
  })
})

describe('signals', () => {
  /** A headless stream-json run whose model never finishes, sent `signal` once its request is in. */
  async function signalledMidStream(signal: NodeJS.Signals) {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: 'partial answer' }, { until: new Promise(() => {}) }], { end: 'hang' }))
    const before = server.requests.length
    let child: import('node:child_process').ChildProcess | undefined
    const running = runDsh(['--profile', 'headless', '--output', 'stream-json', 'a long task'], { cwd, env: envFor(home), onSpawn: c => { child = c } })
    await server.waitForRequests(before + 1)
    child!.kill(signal)
    const result = await running
    const lines = result.stdout.trim().split('\n').map(line => JSON.parse(line))
    return { home, cwd, result, lines }
  }

  it('SIGINT mid-stream cancels the turn, flushes the log and exits 130', async () => {
    const { home, cwd, result, lines } = await signalledMidStream('SIGINT')
    expect(result.code).toBe(130)
    const sessionId = lines[0].sessionId
    expect(lines.filter(line => line.type === 'session_event').at(-1).event).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'aborted' } } })
    // Everything appended before the signal is on disk: a new run continues the stored session.
    server.enqueue(streamResponse([{ text: 'resumed' }, { finish: 'stop', usage }]))
    const again = await runDsh(['--profile', 'headless', '--session', sessionId, 'go on'], { cwd, env: envFor(home) })
    expect(again.code).toBe(0)
    const texts = server.requests.at(-1)!.body.messages.map((message: { role: string; content: string }) => `${message.role}:${message.content}`)
    expect(texts).toContain('user:a long task')
    expect(texts).toContain('assistant:partial answer')
  })

  it('SIGHUP (the terminal closed) cancels the turn like SIGTERM, flushes the log and exits 129', async () => {
    const { result, lines } = await signalledMidStream('SIGHUP')
    expect({ code: result.code, signal: result.signal }).toEqual({ code: 129, signal: null })
    expect(lines.filter(line => line.type === 'session_event').at(-1).event).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'aborted' } } })
  })
})

describe('composition errors and dumps through the CLI', () => {
  it('a patch with an unknown key fails with one line naming the file, row and key', async () => {
    const { home, cwd } = tempHome()
    const patch = join(cwd, 'bad.yml')
    writeFileSync(patch, '- id: model\n  colour: red\n')
    const result = await runDsh(['--profile', 'headless', '--patch', patch, 'hi'], { cwd, env: envFor(home) })
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toContain('bad.yml')
    expect(result.stderr).toContain('row "model"')
    expect(result.stderr).toContain('key "colour"')
  })

  it('an unknown plugin name fails with one line naming the row', async () => {
    const { home, cwd } = tempHome()
    const patch = join(cwd, 'swap.yml')
    writeFileSync(patch, '- id: model\n  name: no-such-plugin-anywhere\n')
    const result = await runDsh(['--profile', 'headless', '--patch', patch, 'hi'], { cwd, env: envFor(home) })
    expect(result.code).toBe(1)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).toMatch(/row "model".*unknown plugin "no-such-plugin-anywhere"/)
  })

  it('--dump-config prints loadable YAML with the patch applied and warns about unmatched patches', async () => {
    const { home, cwd } = tempHome()
    const patch = join(cwd, 'p.yml')
    writeFileSync(patch, '- id: model\n  config: {baseUrl: "http://127.0.0.1:9"}\n- id: nothing-here\n  disabled: true\n')
    const result = await runDsh(['--profile', 'headless', '--patch', patch, '--dump-config'], { cwd, env: { DSH_HOME: home } })
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(/warning: .*"nothing-here" matched no row/)
    const rows = parseYaml(result.stdout) as { id: string; config?: unknown }[]
    expect(rows.find(row => row.id === 'model')!.config).toEqual({ baseUrl: 'http://127.0.0.1:9' })
    expect(result.stdout).toContain(`# from bundle base`)
    expect(result.stdout).toContain('patched by')
  })

  it('--version answers without loading the plugin tree', async () => {
    const result = await runDsh(['--version'])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^dsh \d+\.\d+\.\d+/)
  })
})

describe('dsh --profile headless permissions (AP-3, SB-2)', () => {
  const writeCall = (id: string, args: Record<string, unknown>) =>
    streamResponse([{ toolCall: { id, name: 'write', arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])

  it('SB-2: --permission-mode read-only "create x.txt" leaves no x.txt and says why on stderr', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(writeCall('call-x', { file_path: 'x.txt', content: 'hello' }), streamResponse([{ text: 'The sandbox refused the write.' }, { finish: 'stop', usage }]))
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--permission-mode', 'read-only', 'create x.txt'], { cwd, env: envFor(home) })
    expect(existsSync(join(cwd, 'x.txt'))).toBe(false)
    expect(withoutSessionHint(result.stderr)).toBe('dsh: a file write was denied by the sandbox (read-only mode). To allow writes in the working folder, pass --permission-mode workspace-write (or set DSH_PERMISSION_MODE).\n')
    expect(result.stdout).toBe('The sandbox refused the write.\n')
    const tool = server.requests[before + 1]!.body.messages.find((m: { role: string }) => m.role === 'tool')
    expect(tool.content).toMatch(/^Error: \[sandbox: file access denied under read-only mode\]\n\[sandbox: escalation available/)
  })

  it('AP-3: an escalation in a headless run fails closed with a line naming the flag; DSH_PERMISSION_MODE sets the mode', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      writeCall('call-e', { file_path: 'x.txt', content: 'hello', sandbox_permissions: 'workspace-write', justification: 'the user asked for x.txt' }),
      streamResponse([{ text: 'Refused.' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'create x.txt'], { cwd, env: { ...envFor(home), DSH_PERMISSION_MODE: 'read-only' } })
    expect(existsSync(join(cwd, 'x.txt'))).toBe(false)
    expect(withoutSessionHint(result.stderr)).toBe('dsh: write needs approval (escalate sandbox to workspace-write: the user asked for x.txt) and headless runs cannot ask; it was refused. To allow writes in the working folder, pass --permission-mode workspace-write (or set DSH_PERMISSION_MODE). Or allow just this with --allow \'Write(x.txt)\' (or permissions.allow in settings.yaml).\n')
    const tool = server.requests[before + 1]!.body.messages.find((m: { role: string }) => m.role === 'tool')
    expect(tool.content).toBe('Error: sandbox escalation to "workspace-write" requires approval, but no approval channel is available')
  })

  it('ask_user_question in a headless run fails closed: the model is told no one can answer, stderr names the question', async () => {
    const { home, cwd } = tempHome()
    const ask = { questions: [{ id: 'mode', question: 'Which mode should the build use?', options: [{ label: 'fast' }, { label: 'safe' }] }] }
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-q', name: 'ask_user_question', arguments: JSON.stringify(ask) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Going with safe.' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'build it'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Going with safe.\n')
    expect(withoutSessionHint(result.stderr)).toBe('dsh: the model asked "Which mode should the build use?" and headless runs cannot ask; it was told to go on without an answer.\n')
    const tool = server.requests[before + 1]!.body.messages.find((m: { role: string }) => m.role === 'tool')
    expect(tool.content).toMatch(/^Error: no one can answer questions in this session/)
  })

  it('--permission-mode rejects an unknown mode with a usage error', async () => {
    const { home, cwd } = tempHome()
    const result = await runDsh(['--profile', 'headless', '--permission-mode', 'yolo', 'x'], { cwd, env: envFor(home) })
    expect(result.code).toBe(2)
    expect(result.stderr).toBe('dsh: --permission-mode must be read-only, workspace-write, danger-full-access, not "yolo"\n')
  })
})
