/**
 * L-10 as a piped user sees it: a headless run against a model server that is down says, one
 * stderr line per retry, which attempt this is of how many and why.
 */
import { createServer } from 'node:net'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>(resolve => server.close(() => resolve()))
  return port
}

describe('retries in a piped headless run', () => {
  it('L-10: one stderr line per retry, with attempt n of N and the cause', async () => {
    const { home, cwd } = tempHome()
    const patch = join(cwd, 'fast-retry.yml')
    writeFileSync(patch, '- id: llm-retry\n  config: {maxRetries: 2, baseDelayMs: 1, maxDelayMs: 1}\n')
    const port = await closedPort()
    const result = await runDsh(['--profile', 'headless', '--patch', patch, 'hello'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: `http://127.0.0.1:${port}`, DEEPSEEK_API_KEY: 'test-key' } })
    expect(result.code).toBe(1)
    const retries = result.stderr.split('\n').filter(line => line.includes('retrying'))
    expect(retries).toHaveLength(2)
    expect(retries[0]).toMatch(/^dsh: model request failed \(\S+.*\); retrying, attempt 1 of 2\b/)
    expect(retries[1]).toMatch(/attempt 2 of 2\b/)
    expect(retries[0]).toMatch(/ECONNREFUSED|refused|connect/i)
  })
})
