/**
 * security #40: the network of confined commands under real bubblewrap, in each mode, against a
 * local HTTP server. `full` reaches it; `none` reaches nothing (a network namespace with loopback
 * only); `allowlist` reaches a listed name (mapped to this machine's own non-loopback address by
 * the gate's resolver) only through dsh's proxy, refuses a listed name that resolves to loopback,
 * and asks for an unlisted one: an approval lets exactly that host through. Every attempt is a
 * `sandbox/connection` event. The same argv holds for an ordinary user (setpriv).
 */
import { execFile, spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../../test-support/agent-harness.js'
import { text, toolCalls } from '../../../test-support/scripted-model.js'
import { ApprovalPlugin } from '../../approval/service.js'
import type { ApprovalAnswer } from '../../approval/api.js'
import type { NetworkMode } from '../../sandbox/modes.js'
import { bwrapRunner, probeRunner } from '../../sandbox/runner.js'
import { SandboxPlugin, type SandboxConfig } from '../../sandbox/service.js'
import { BuiltinToolsPlugin } from './index.js'
import { hasSetpriv } from '../../../test-support/processes.js'

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the sandbox network tests: ${bwrapProblem} (install the Debian package bubblewrap)`)
const curl = spawnSync('curl', ['--version']).status === 0
if (!curl) console.warn('skipping the sandbox network tests: curl is missing (apt-get install -y curl)')
const asRoot = process.getuid?.() === 0
const setpriv = hasSetpriv()
/** This machine's own non-loopback IPv4 address: a listed name is mapped to it. */
const own = Object.values(networkInterfaces()).flat().find(address => address?.family === 'IPv4' && !address.internal)?.address
if (own === undefined) console.warn('skipping the allowlist cases: this machine has no non-loopback IPv4 address')

let server: Server
let port: number
let root: string
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'dsh-net-root-'))
  chmodSync(root, 0o777)
  server = createServer((request, response) => { response.end(`hello from ${request.headers.host}\n`) })
  await new Promise<void>(resolve => server.listen(0, '0.0.0.0', resolve))
  port = (server.address() as { port: number }).port
})
afterAll(async () => {
  await new Promise(resolve => server.close(resolve))
  rmSync(root, { recursive: true, force: true })
})

/** The gate's resolver: test names on this machine's address, `loopy.test` on loopback. */
const resolve = async (host: string) => {
  if (host === 'loopy.test') return [{ address: '127.0.0.1', family: 4 as const }]
  if (host.endsWith('.test') && own !== undefined) return [{ address: own, family: 4 as const }]
  throw Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' })
}

/** An agent whose model runs each command with bash, in `network`, answering approvals from `answers`. */
async function agent(network: NetworkMode, commands: readonly string[], options: { answers?: ApprovalAnswer[]; sandbox?: SandboxConfig } = {}): Promise<{ h: LoopHarness; results: string[] }> {
  const h = await loopHarness({
    responses: [...commands.map((command, i) => toolCalls([{ id: `c${i}`, name: 'bash', arguments: JSON.stringify({ command, description: 'net' }) }])), text('done')],
    cwd: root,
    setup: async (ctx) => {
      await ctx.plugin(ApprovalPlugin, { network, mode: 'workspace-write' }).await()
      await ctx.plugin(SandboxPlugin, { workspaceRoot: root, allowedHosts: [`registry.test:${port}`, `loopy.test:${port}`], resolve, ...options.sandbox }).await()
      await ctx.plugin(BuiltinToolsPlugin).await()
    },
  })
  const answers = [...options.answers ?? []]
  h.ctx.approval.answerer(() => answers.shift() ?? 'rejected')
  h.agent.followup([{ type: 'text', text: 'go' }])
  await h.agent.whenIdle()
  const results = h.of('tool/result').map(e => (e.data.message as unknown as { content: { content: { text: string }[] }[] }).content[0]!.content.map(b => b.text).join(''))
  return { h, results }
}

const run = (command: string, args: readonly string[]) => new Promise<{ stdout: string; stderr: string }>((resolve) => {
  execFile(command, args, { encoding: 'utf8' }, (_error, stdout, stderr) => resolve({ stdout, stderr }))
})

const connections = (h: LoopHarness) => h.of('sandbox/connection').map(e => e.data as { host: string; port: number; outcome: string; reason?: string; callId?: string })
const get = (url: string, flags = '') => `curl -sS --max-time 20 ${flags} ${url}; echo " [exit $?]"`

describe.skipIf(bwrapProblem !== undefined || !curl)('the network of confined commands under real bubblewrap (security #40)', () => {
  it('full: a command reaches a local server, as before', async () => {
    const { h, results } = await agent('full', [get(`http://127.0.0.1:${port}/`)])
    expect(results[0]).toContain(`hello from 127.0.0.1:${port}`)
    expect(connections(h)).toEqual([])
    await h.dispose()
  })

  it('none: a command reaches neither the host\'s loopback nor any name; its own loopback works', async () => {
    const { h, results } = await agent('none', [
      get(`http://127.0.0.1:${port}/`),
      get(`http://registry.test:${port}/`),
      'python3 -c "import socket; s=socket.socket(); s.bind((\'127.0.0.1\', 0)); s.listen(); print(\'own loopback ok\')"',
    ])
    expect(results[0]).toMatch(/\[exit 7\]|Couldn't connect|Connection refused/)
    expect(results[0]).not.toContain('hello from')
    expect(results[1]).not.toContain('hello from')
    expect(results[2]).toContain('own loopback ok')
    await h.dispose()
  })

  it.skipIf(own === undefined)('allowlist: a listed name goes through the proxy (plain and CONNECT), loopback is refused whatever the name, the host\'s loopback is out of reach; each attempt is logged', async () => {
    const { h, results } = await agent('allowlist', [
      get(`http://registry.test:${port}/`),
      // -p: a CONNECT tunnel, as https takes.
      get(`http://registry.test:${port}/`, '-p'),
      // Listed, but its name resolves to 127.0.0.1: a service on the host must stay out of reach.
      get(`http://loopy.test:${port}/`),
      // No route but the proxy: the host's loopback is not the sandbox's.
      get(`http://127.0.0.1:${port}/`, '--noproxy "*"'),
      'echo "$HTTPS_PROXY"',
    ])
    expect(results[0]).toContain(`hello from registry.test:${port}`)
    expect(results[1]).toContain(`hello from registry.test:${port}`)
    expect(results[2]).not.toContain('hello from')
    expect(results[2]).toContain('loopback')
    expect(results[3]).not.toContain('hello from')
    expect(results[4]).toContain('http://127.0.0.1:3128')
    const seen = connections(h)
    expect(seen.map(c => [c.host, c.outcome, c.reason ?? null, c.callId])).toEqual([
      ['registry.test', 'allowed', null, 'c0'],
      ['registry.test', 'allowed', null, 'c1'],
      ['loopy.test', 'refused', 'loopback', 'c2'],
    ])
    expect(h.of('approval/asked')).toEqual([])
    await h.dispose()
  })

  it.skipIf(own === undefined)('allowlist: an unlisted host asks; allowed once lets exactly that host through for that call, a rejected one stays out', async () => {
    const { h, results } = await agent('allowlist', [
      `${get(`http://other.test:${port}/`)}; ${get(`http://other.test:${port}/again`)}; ${get(`http://third.test:${port}/`)}`,
      get(`http://other.test:${port}/later`),
    ], { answers: ['allowed-once', 'rejected', 'rejected'] })
    expect(results[0]).toContain(`hello from other.test:${port}`)
    expect(results[0].match(/hello from other\.test/g)).toHaveLength(2)
    expect(results[0]).not.toContain('hello from third.test')
    // Once means for that call: the next call asks again (and is rejected).
    expect(results[1]).not.toContain('hello from')
    const asked = h.of('approval/asked').map(e => e.data as { toolName: string; callId: string; reason: string })
    expect(asked.map(a => [a.toolName, a.callId, a.reason])).toEqual([
      ['network', 'c0', `connect to other.test:${port} (not in sandbox.allowedHosts)`],
      ['network', 'c0', `connect to third.test:${port} (not in sandbox.allowedHosts)`],
      ['network', 'c1', `connect to other.test:${port} (not in sandbox.allowedHosts)`],
    ])
    expect(connections(h).map(c => [c.host, c.outcome, c.reason ?? null])).toEqual([
      ['other.test', 'allowed', null], ['other.test', 'allowed', null], ['third.test', 'refused', 'declined'], ['other.test', 'refused', 'declined'],
    ])
    await h.dispose()
  })

  it.skipIf(own === undefined)('allowlist: allowed for the session holds for later calls, through the shell host too', async () => {
    const { h, results } = await agent('allowlist', [
      get(`http://other.test:${port}/1`), get(`http://other.test:${port}/2`), get(`http://other.test:${port}/3`),
    ], { answers: ['allowed-session'] })
    for (const result of results) expect(result).toContain(`hello from other.test:${port}`)
    expect(h.of('approval/asked')).toHaveLength(1)
    const metas = h.of('tool/result').map(e => (e.data as unknown as { meta?: { sandbox?: { shellHost?: boolean } } }).meta?.sandbox?.shellHost === true)
    expect(metas).toContain(true)
    await h.dispose()
  })

  it.skipIf(own === undefined || !asRoot || !setpriv)('the same argv holds for an ordinary user (setpriv to uid 65534): none has no route, allowlist goes through the bridge', async () => {
    // A home of its own: the real one (/root) has secrets an ordinary user cannot even look at.
    const home = mkdtempSync(join(tmpdir(), 'dsh-net-home-'))
    const { h } = await agent('allowlist', ['true'], { sandbox: { home, dshHome: join(home, '.dsh') } })
    const runner = (await h.ctx.sandbox.runner()).runner!
    const none = h.ctx.sandbox.prefix!(runner, 'workspace-write', root, { mode: 'none' })
    const cut = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...none, 'bash', '-c', get(`http://127.0.0.1:${port}/`)], { encoding: 'utf8' })
    expect(cut.stderr).not.toMatch(/^bwrap: /m)
    expect(cut.stdout).not.toContain('hello from')
    const gate = await h.ctx.sandbox.gate!(h.session, { ask: async () => 'no', record: () => {} })
    // The gate's socket belongs to the user dsh runs as; here that user is root.
    chmodSync(gate.socketPath, 0o666)
    chmodSync(join(gate.socketPath, '..'), 0o755)
    const allow = h.ctx.sandbox.prefix!(runner, 'workspace-write', root, { mode: 'allowlist', socket: gate.socketPath, perl: 'perl' })
    // Not spawnSync: the gate's proxy answers in this process.
    const through = await run('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...allow, 'bash', '-c', `http_proxy=http://127.0.0.1:3128 ${get(`http://registry.test:${port}/`)}`])
    expect(through.stderr).not.toMatch(/^bwrap: /m)
    expect(through.stdout).toContain(`hello from registry.test:${port}`)
    await h.dispose()
  })
})
