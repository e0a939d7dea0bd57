/**
 * security #40.1 in whole processes: the launcher's network mode. New users get `allowlist` (the
 * model sees it in its runtime context; a command cannot reach a service on the host's loopback,
 * and an unlisted host fails closed in headless with one stderr line naming the flag);
 * `--network full` is the old behaviour; `sandbox.network` in settings.yaml and DSH_NETWORK set
 * the default; a bad value is a clear error.
 */
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { bwrapRunner, probeRunner } from '../sandbox/runner.js'

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
const curl = spawnSync('curl', ['--version']).status === 0
if (bwrapProblem !== undefined || !curl) console.warn(`skipping the --network process tests: ${bwrapProblem ?? 'curl is missing (apt-get install -y curl)'}`)

let model: FakeDeepSeek
let service: Server
let port: number
beforeAll(async () => {
  // A service on the host's loopback (a database, another dsh web server...).
  service = createServer((_request, response) => { response.end('host service answered\n') })
  await new Promise<void>(resolve => service.listen(0, '127.0.0.1', resolve))
  port = (service.address() as { port: number }).port
})
afterAll(async () => { await new Promise(resolve => service.close(resolve)) })
beforeEach(async () => { model = await FakeDeepSeek.start() })
afterEach(async () => { await model.close() })

const usage = { prompt_tokens: 100, completion_tokens: 5 }

/** One headless task whose model runs `command` with bash, then answers. */
async function task(command: string, args: readonly string[] = [], setup?: (home: string) => void) {
  const { home, cwd } = tempHome()
  setup?.(home)
  const first = model.requests.length
  model.enqueue(
    streamResponse([{ toolCall: { id: 'b1', name: 'bash', arguments: JSON.stringify({ command, description: 'net' }) } }, { finish: 'tool_calls', usage }]),
    streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]),
  )
  const result = await runDsh([...args, 'go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_NETWORK: undefined } })
  const system = JSON.stringify(model.requests[first]?.body?.messages ?? [])
  const toolResult = (model.requests[first + 1]?.body?.messages as { role: string; content: string }[] | undefined)?.find(m => m.role === 'tool')?.content ?? ''
  return { result, system, toolResult }
}

describe.skipIf(bwrapProblem !== undefined || !curl)('--network in whole processes (security #40.1)', () => {
  it('the default is allowlist: the model is told, the host\'s loopback is out of reach, an unlisted host fails closed with one line naming the flag', async () => {
    const { result, system, toolResult } = await task(`curl -sS --max-time 20 http://127.0.0.1:${port}/; curl -sS --max-time 20 http://unlisted.example/; curl -sS --max-time 20 http://unlisted.example/again; echo done`)
    expect(result.code).toBe(0)
    expect(system).toContain('Current DSH network policy: allowlist')
    expect(toolResult).not.toContain('host service answered')
    expect(toolResult).toContain('the connection to unlisted.example:80 was declined')
    const lines = result.stderr.split('\n').filter(line => line.includes('unlisted.example'))
    expect(lines).toEqual(['dsh: a sandboxed command tried to connect to unlisted.example:80 (not in sandbox.allowedHosts); headless runs cannot ask, so it was refused. Add the host to sandbox.allowedHosts in settings.yaml, or pass --network full.'])
  })

  it('--network full reaches the host as before and adds nothing to the prompt; settings.yaml sandbox.network: none cuts it', async () => {
    const full = await task(`curl -sS --max-time 20 http://127.0.0.1:${port}/`, ['--network', 'full'])
    expect(full.result.code).toBe(0)
    expect(full.toolResult).toContain('host service answered')
    expect(full.system).not.toContain('network policy')
    const none = await task(`curl -sS --max-time 20 http://127.0.0.1:${port}/; echo "exit $?"`, [], home => writeFileSync(join(home, 'settings.yaml'), 'sandbox:\n  network: none\n'))
    expect(none.system).toContain('Current DSH network policy: none')
    expect(none.toolResult).not.toContain('host service answered')
  })

  it('a bad value names its source and the modes; on the command line it is a usage mistake (exit 2), in the environment a configuration one (exit 1)', async () => {
    const { home, cwd } = tempHome()
    const bad = await runDsh(['--network', 'open', 'go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k' } })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--network must be full, allowlist, none, not "open"')
    const env = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DSH_NETWORK: 'open', DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k' } })
    expect(env.code).toBe(1)
    expect(env.stderr).toContain('DSH_NETWORK must be full, allowlist, none, not "open"')
    writeFileSync(join(home, 'settings.yaml'), 'sandbox:\n  allowedHosts: ["https://x.org"]\n')
    const list = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k' } })
    expect(list.code).not.toBe(0)
    expect(list.stderr).toContain('https://x.org')
    expect(model.requests).toHaveLength(0)
  })
})
