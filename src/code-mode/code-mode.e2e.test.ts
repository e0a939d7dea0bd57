/**
 * Code mode in a whole headless process (#36): DSH_TOOLS_MODE=code sends run_code alone with the
 * SDK section; the program's bash calls run as the model's own would (in the sandbox), each in
 * the stored log; the program itself runs in the confined runtime when bubblewrap works.
 */
import type { ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { stringify as stringifyYaml } from 'yaml'
import { testServerEntry } from '../../test-support/mcp.js'
import { waitForFile } from '../../test-support/wait-for-file.js'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { bwrapRunner, probeRunner } from '../sandbox/runner.js'

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the code mode process test: ${bwrapProblem} (install the Debian package bubblewrap)`)

let model: FakeDeepSeek
beforeEach(async () => { model = await FakeDeepSeek.start() })
afterEach(async () => { await model.close() })
const usage = { prompt_tokens: 100, completion_tokens: 5 }

describe.skipIf(bwrapProblem !== undefined)('code mode in a headless run (#36)', () => {
  it('DSH_TOOLS_MODE=code: run_code alone, two bash calls in the log, logs then the value to the model', async () => {
    const { home, cwd } = tempHome()
    const code = 'const one = await tools.bash({ command: "echo CODE_ONE", description: "Print CODE_ONE" })\nconst two = await tools.bash({ command: "echo CODE_TWO", description: "Print CODE_TWO" })\nconsole.log("captured output")\nreturn one.stdout.text.trim() + "+" + two.stdout.text.trim()'
    model.enqueue(
      streamResponse([{ toolCall: { id: 'c1', name: 'run_code', arguments: JSON.stringify({ code, description: 'Run two echo commands' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'CODE_ONE+CODE_TWO' }, { finish: 'stop', usage }]),
    )
    const result = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_TOOLS_MODE: 'code' } })
    expect(result.code, result.stderr).toBe(0)
    const first = model.requests[0]!.body as { tools: { function: { name: string } }[]; messages: { role: string; content: string }[] }
    expect(first.tools.map((tool) => tool.function.name)).toEqual(['run_code'])
    expect(first.messages[0]!.content).toContain('## Writing code for run_code')
    expect(first.messages[0]!.content).toMatch(/\n {2}bash: \{\n(.*\n)* {4}command: string;\n/)
    expect(first.messages[0]!.content).toContain('  bash: {\n    kind: "background";')
    const second = model.requests[1]!.body as { messages: { role: string; content: string }[] }
    expect(second.messages.find((message) => message.role === 'tool')?.content).toBe('captured output\nCODE_ONE+CODE_TWO')
    const sessions = join(home, 'sessions')
    const file = readdirSync(sessions, { recursive: true }).map(String).find((name) => name.endsWith('.jsonl'))!
    const events = readFileSync(join(sessions, file), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { type: string; data?: { subCallId?: string; content?: { text: string }[] } })
    const dispatched = events.filter((event) => event.type.startsWith('tool/code-dispatch'))
    expect(dispatched.map((event) => `${event.type} ${event.data?.subCallId}`)).toEqual([
      'tool/code-dispatch-start c1:code:1', 'tool/code-dispatch c1:code:1', 'tool/code-dispatch-start c1:code:2', 'tool/code-dispatch c1:code:2'])
    expect(dispatched[1]!.data?.content?.[0]?.text).toContain('CODE_ONE')
  })

  it('a program calls bash, read and an MCP tool (both mode) and its value reaches the next request', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, 'settings.yaml'), stringifyYaml({ mcpServers: { demo: testServerEntry() } }))
    writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\n')
    const code = [
      'const listed = await tools.bash({ command: "ls", description: "List files" })',
      'const notes = await tools.read({ file_path: "notes.txt" })',
      'const echoed = await tools.mcp__demo__echo({ text: "from mcp" })',
      'return { files: listed.stdout.text.trim().split("\\n"), second: notes.lines[1].text, echoed }',
    ].join('\n')
    model.enqueue(
      streamResponse([{ toolCall: { id: 'm1', name: 'run_code', arguments: JSON.stringify({ code, description: 'Use three tools' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
    )
    const result = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_TOOLS_MODE: 'both' } })
    expect(result.code, result.stderr).toBe(0)
    const first = model.requests[0]!.body as { tools: { function: { name: string } }[] }
    expect(first.tools.map((tool) => tool.function.name)).toEqual(expect.arrayContaining(['bash', 'read', 'mcp__demo__echo', 'run_code']))
    const second = model.requests[1]!.body as { messages: { role: string; content: string }[] }
    expect(JSON.parse(second.messages.find((message) => message.role === 'tool')!.content)).toEqual({ files: ['notes.txt'], second: 'beta', echoed: 'from mcp' })
  })

  it('SIGKILL mid-program: the resumed session shows the turn closed, no inner call left open, and goes on', async () => {
    const { home, cwd } = tempHome()
    const code = 'await tools.bash({ command: "touch started && sleep 60", description: "Wait a minute" })\nreturn "never"'
    model.enqueue(streamResponse([{ toolCall: { id: 'k1', name: 'run_code', arguments: JSON.stringify({ code, description: 'Wait' }) } }, { finish: 'tool_calls', usage }]))
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_TOOLS_MODE: 'code' }
    const logFile = () => {
      const sessions = join(home, 'sessions')
      const name = existsSync(sessions) ? readdirSync(sessions, { recursive: true }).map(String).find((entry) => entry.endsWith('.jsonl')) : undefined
      return name === undefined ? undefined : join(sessions, name)
    }
    let child: ChildProcess | undefined
    const run = runDsh(['go'], { cwd, env, onSpawn: (spawned) => { child = spawned } })
    await waitForFile(join(cwd, 'started'))
    // The inner call's start is durable (write-behind) before the kill.
    await expect.poll(() => { const file = logFile(); return file !== undefined && readFileSync(file, 'utf8').includes('tool/code-dispatch-start') }, { timeout: 10_000 }).toBe(true)
    child!.kill('SIGKILL')
    expect((await run).signal).toBe('SIGKILL')
    const id = (JSON.parse(readFileSync(logFile()!, 'utf8').split('\n')[0]!) as { id: string }).id
    model.enqueue(streamResponse([{ text: 'resumed' }, { finish: 'stop', usage }]))
    const resumed = await runDsh(['--session', id, 'again'], { cwd, env })
    expect(resumed.code, resumed.stderr).toBe(0)
    const events = readFileSync(logFile()!, 'utf8').trim().split('\n').slice(1).map((line) => JSON.parse(line) as { type: string; data: { subCallId?: string; isError?: boolean; reason?: { kind: string }; callId?: string } })
    const started = events.filter((event) => event.type === 'tool/code-dispatch-start').map((event) => event.data.subCallId)
    const closed = events.filter((event) => event.type === 'tool/code-dispatch').map((event) => event.data.subCallId)
    expect(started).toEqual(['k1:code:1'])
    expect(closed).toEqual(['k1:code:1'])
    expect(events.find((event) => event.type === 'tool/code-dispatch')!.data.isError).toBe(true)
    expect(events.filter((event) => event.type === 'turn/end').map((event) => event.data.reason?.kind)).toEqual(['interrupted', 'completed'])
  })

  it('a bad DSH_TOOLS_MODE is a clear error', async () => {
    const { home, cwd } = tempHome()
    const result = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_TOOLS_MODE: 'program' } })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('DSH_TOOLS_MODE must be native, code or both, not "program"')
    expect(model.requests).toHaveLength(0)
  })
})
