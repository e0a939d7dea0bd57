/**
 * A real headless run (the built binary against the fake DeepSeek server) that starts a
 * background job, reads it, and ends with another one still running: the run says so on stderr
 * and the job's process does not outlive dsh.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'
import { waitForFile } from '../../test-support/wait-for-file.js'
import { processGone } from '../../test-support/processes.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const call = (id: string, name: string, args: unknown) =>
  streamResponse([{ toolCall: { id, name, arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])

describe('background jobs in a real headless run', () => {
  it('a job is read back in the same run; one still running at the end is named on stderr and stopped', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(
      call('c1', 'bash', { command: 'echo built; exit 0', description: 'build it', run_in_background: true }),
      call('c2', 'job_output', { job_id: 'bash-1', wait: true }),
      call('c3', 'bash', { command: 'echo $$ > server.pid; exec sleep 600', description: 'serve the site', run_in_background: true }),
      // The answer waits until the job has started (so the test knows which process to watch).
      (() => { const done = streamResponse([{ text: 'done' }, { finish: 'stop', usage }]); return { ...done, segments: [{ until: waitForFile(join(cwd, 'server.pid')) }, ...done.segments!] } })(),
    )
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--permission-mode', 'danger-full-access', 'build and serve'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' } })
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('done\n')
    expect(withoutSessionHint(result.stderr)).toBe('dsh: stopping a background job still running at exit: bash-2 (serve the site)\n')
    // What each call answered, from the last request (a notice may come between them: bash-1
    // can end before job_output asks, and then the model hears of it at the next step too).
    const messages = server.requests.slice(before).at(-1)!.body.messages as { role: string; tool_call_id?: string; content: string }[]
    const answer = (id: string) => messages.find(message => message.role === 'tool' && message.tool_call_id === id)?.content
    expect(answer('c1')).toBe('started background job bash-1')
    expect(answer('c2')).toBe('built\n[status: completed]')
    expect(answer('c3')).toBe('started background job bash-2')
    // The SIGTERM went out from the exit handler; the process is gone, or going (the test's
    // timeout fails one that never ends).
    const pid = Number(readFileSync(join(cwd, 'server.pid'), 'utf8'))
    await processGone(pid)
  })
})
