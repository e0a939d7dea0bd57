/**
 * Tool cards as the terminal app draws them.
 */
import { createElement as h } from 'react'
import { renderToString } from 'ink'
import { describe, expect, it } from 'vitest'
import { ToolCardView } from './cards.js'
import type { ToolCallView } from './fold.js'

const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '')
const draw = (call: ToolCallView) => plain(renderToString(h(ToolCardView, { call, running: false }), { columns: 80 }))

function bash(exitCode: number | null, text: string, meta: Record<string, unknown> = {}): ToolCallView {
  return { id: 'b1', name: 'bash', arguments: JSON.stringify({ command: 'make test', description: 'run' }), result: { text, isError: false, meta: { exitCode, ...meta } } }
}

describe('bash card', () => {
  it('a command that exits non-zero is marked failed (✗), not done (✓), though the tool itself worked', () => {
    expect(draw(bash(0, 'all good\n'))).toMatch(/^✓ \$ make test · exit 0/)
    const failed = draw(bash(2, 'make: *** [test] Error 2\n[exit code: 2]\n'))
    expect(failed).toMatch(/^✗ \$ make test · exit 2/)
    expect(failed).toContain('Error 2')
    // The header already says how it exited.
    expect(failed).not.toContain('[exit code: 2]')
    expect(draw(bash(null, 'partial\n', { timedOut: true }))).toMatch(/^✗ \$ make test · timed out/)
  })

  it('a running command shows its latest live output; progress redrawn with a carriage return and colour escapes show as a terminal leaves them', () => {
    const running: ToolCallView = { id: 'b1', name: 'bash', arguments: JSON.stringify({ command: 'npm test' }) }
    const live = 'line 1\r\nline 2\n\x1b[32mpassing\x1b[0m 12\nprogress 10%\rprogress 80%'
    const drawn = plain(renderToString(h(ToolCardView, { call: running, running: true, live }), { columns: 80 }))
    expect(drawn).toMatch(/^… \$ npm test/)
    expect(drawn.split('\n').slice(1).map(line => line.trim())).toEqual(['line 1', 'line 2', 'passing 12', 'progress 80%'])
  })
})

describe('background job cards (docs/jobs.md)', () => {
  const call = (name: string, args: unknown, text: string, meta: unknown, isError = false): ToolCallView =>
    ({ id: 'j', name, arguments: JSON.stringify(args), result: { text, isError, meta } })

  it('a background bash names its job instead of an exit; job_output shows the status and the new output; job_list counts', () => {
    const started = draw(call('bash', { command: 'npm run dev', run_in_background: true }, 'started background job bash-1', { job: { id: 'bash-1', status: 'running' } }))
    expect(started).toBe('✓ $ npm run dev · background job bash-1')
    const read = draw(call('job_output', { job_id: 'bash-1' }, 'ready on :3000\n[status: failed, exit code 1]', { job: { id: 'bash-1', status: 'failed', detail: 'exit code 1' } }))
    expect(read.split('\n').map(line => line.trimEnd())).toEqual(['✗ job bash-1 · failed (exit code 1)', '  ready on :3000'])
    const quiet = draw(call('job_output', { job_id: 'bash-1' }, '(no new output)\n[status: running]', { job: { id: 'bash-1', status: 'running' } }))
    expect(quiet).toBe('✓ job bash-1 · running')
    const missing = draw(call('job_output', { job_id: 'bash-9' }, 'Error: no background job "bash-9" in this session', undefined, true))
    expect(missing).toMatch(/^✗ job bash-9 · Error: no background job "bash-9"/)
    expect(draw(call('job_list', {}, 'bash-1  running  dev  3 s', { jobs: [{ status: 'running' }, { status: 'completed' }] }))).toBe('✓ jobs · 2 jobs, 1 running')
    expect(draw(call('job_kill', { job_id: 'bash-1' }, 'requested cancellation of job bash-1', { job: { id: 'bash-1', status: 'stopping' } }))).toBe('✓ kill job bash-1 · requested cancellation of job bash-1')
  })
})

describe('read_image card', () => {
  it('names the file and the image the model was shown', () => {
    const call: ToolCallView = { id: 'i', name: 'read_image', arguments: JSON.stringify({ file_path: 'shot.png' }), result: { text: '<path>/w/shot.png</path>', isError: false, meta: { image: { mediaType: 'image/png', width: 3, height: 2 } } } }
    expect(draw(call)).toBe('✓ image shot.png · image/png, 3x2 px')
  })
})

describe('the model\'s and the tool\'s escapes in a card (security #42.6)', () => {
  it('the command, the tool name and a diff show escapes as text; the output drops whole sequences and names overrides', () => {
    const active = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/
    const call: ToolCallView = { id: 'b1', name: 'bash', arguments: JSON.stringify({ command: 'ls # \x1b]0;pwned\x07 \u202E' }), result: { text: 'a\u202Eb\x1b]52;c;eA==\x07\n', isError: false, meta: { exitCode: 0 } } }
    const card = renderToString(h(ToolCardView, { call, running: false }), { columns: 80 })
    expect(card.replace(/\x1b\[[0-9;]*m/g, '')).not.toMatch(active)
    expect(plain(card)).toContain('$ ls # ␛]0;pwned␇ <U+202E> · exit 0')
    expect(plain(card)).toMatch(/^\s+a<U\+202E>b$/m)
    const other = draw({ id: 'x1', name: 'mcp__x\x1b[2J', arguments: '{"a":"\u009d0;t\u009c"}' })
    expect(other).toContain('mcp__x␛[2J {"a":"<U+009D>0;t<U+009C>"}')
    const edit = draw({ id: 'e1', name: 'edit', arguments: JSON.stringify({ file_path: 'f\u202Etxt' }), result: { text: 'ok', isError: false, meta: { replacements: 1, diff: '@@ -1 +1 @@\n-old\n+new\x1b]0;pwned\x07\n' } } })
    expect(edit).toContain('edit f<U+202E>txt')
    expect(edit).toContain('+new␛]0;pwned␇')
    expect(edit).not.toMatch(active)
  })
})

describe('run_code card', () => {
  it('the program\'s calls nest under it as they start and finish, folded from tool/code-dispatch events', async () => {
    const { ConversationFold } = await import('./fold.js')
    const fold = new ConversationFold()
    const ev = (type: string, data: unknown, seq: number) => ({ type, seq, time: 0, data }) as never
    const program = JSON.stringify({ code: 'await tools.bash({ command: "echo A" })', description: 'Print two markers' })
    fold.apply(ev('assistant/message', { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'tool-call', id: 'c1', name: 'run_code', arguments: program }] } }, 1))
    const ids = { rootCallId: 'c1', parentCallId: 'c1' }
    fold.apply(ev('tool/code-dispatch-start', { ...ids, subCallId: 'c1:code:1', name: 'bash', arguments: { command: 'echo A' } }, 2))
    fold.apply(ev('tool/code-dispatch', { ...ids, subCallId: 'c1:code:1', name: 'bash', arguments: { command: 'echo A' }, isError: false, content: [{ type: 'text', text: 'A\n' }] }, 3))
    fold.apply(ev('tool/code-dispatch-start', { ...ids, subCallId: 'c1:code:2', name: 'read', arguments: { file_path: 'missing.txt' } }, 4))
    const call = () => (fold.items[0] as unknown as { calls: ToolCallView[] }).calls[0]!
    const live = plain(renderToString(h(ToolCardView, { call: call(), running: true }), { columns: 80 })).split('\n').map(line => line.trimEnd())
    expect(live).toEqual(['… code Print two markers · 2 calls', '  ✓ $ echo A', '    A', '  … read missing.txt'])
    fold.apply(ev('tool/code-dispatch', { ...ids, subCallId: 'c1:code:2', name: 'read', arguments: { file_path: 'missing.txt' }, isError: true, content: [{ type: 'text', text: 'Error: no such file' }] }, 5))
    expect(plain(renderToString(h(ToolCardView, { call: call(), running: true }), { columns: 80 })).split('\n').at(-1)!.trimEnd()).toBe('  ✗ read missing.txt · Error: no such file')
  })
})

describe('terminal cards (docs/pty-terminals.md)', () => {
  it('a send shows the terminal, what was sent, how the wait ended and the last lines of the screen', () => {
    const call: ToolCallView = {
      id: 't', name: 'terminal_send', arguments: JSON.stringify({ sessionId: 'pty-1', text: "printf 'PTY_OK\\n'" }),
      result: { text: "printf 'PTY_OK\\n'\nPTY_OK\ndsh> \n[wait: stdin_read]\n[session: running]", isError: false, meta: { viewport: "printf 'PTY_OK\\n'\nPTY_OK\ndsh> ", waitReason: 'stdin_read', sessionStatus: { kind: 'running' }, truncated: false } },
    }
    const drawn = draw(call).split('\n').map(line => line.trimEnd())
    expect(drawn[0]).toBe("✓ terminal send pty-1 printf 'PTY_OK\\n' · wait: stdin_read")
    expect(drawn.slice(1).map(line => line.trim())).toEqual(["printf 'PTY_OK\\n'", 'PTY_OK', 'dsh>'])
  })

  it('an unknown id is a failed card with the error', () => {
    const call: ToolCallView = { id: 't', name: 'terminal_signal', arguments: JSON.stringify({ sessionId: 'pty-missing', signal: 'SIGINT' }), result: { text: 'Error: unknown PTY session pty-missing', isError: true } }
    expect(draw(call)).toMatch(/^✗ terminal signal pty-missing SIGINT · Error: unknown PTY session pty-missing/)
  })
})


describe('web_search card (#44.8)', () => {
  it('names the queries and how many sources came back, or the error', () => {
    const call = (text: string, isError: boolean, meta?: unknown): ToolCallView => ({ id: 'w', name: 'web_search', arguments: JSON.stringify({ queries: ['node lts', 'bun 1.2'] }), result: { text, isError, meta } })
    expect(draw(call('Sources:\n- [a](https://a/)', false, { sources: [{ url: 'https://a/' }, { url: 'https://b/' }] }))).toBe('✓ search node lts, bun 1.2 · 2 sources')
    expect(draw(call('Error: Exa search failed: HTTP 401: invalid API key', true))).toBe('✗ search node lts, bun 1.2 · Error: Exa search failed: HTTP 401: invalid API key')
  })
})
