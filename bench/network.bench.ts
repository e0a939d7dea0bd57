/**
 * The added cost of the network modes on a confined command (security #40), prints numbers only:
 *   npx tsx bench/network.bench.ts [iterations]
 * A sandbox per command (`bwrap ... -- bash -c true`, what a command pays while no shell host is
 * up) under full (the host's network), none (--unshare-net) and allowlist (--unshare-net, the
 * gate's socket bound in and the Perl bridge as pid 1), and under allowlist one `curl` through the
 * bridge and the gate's proxy to a local server against the same `curl` direct under full.
 * The request cost of the proxy alone is in bench/proxy.bench.ts.
 */
import { execFile } from 'node:child_process'
import { createServer } from 'node:http'
import { networkInterfaces } from 'node:os'
import { promisify } from 'node:util'
import { NetworkGate, networkEnvironment, type NetworkPlan } from '../src/sandbox/network.js'
import { bwrapRunner, probeRunner } from '../src/sandbox/runner.js'

const run = promisify(execFile)
const iterations = Number(process.argv[2] ?? 40)
const runner = bwrapRunner()
const problem = await probeRunner(runner, { root: '/', timeoutMs: 10_000 })
const own = Object.values(networkInterfaces()).flat().find(a => a?.family === 'IPv4' && !a.internal)?.address
if (problem !== undefined) {
  console.log(`skipped: ${problem}`)
} else {
  const server = createServer((_req, res) => res.end('ok'))
  await new Promise<void>(resolve => server.listen(0, '0.0.0.0', resolve))
  const port = (server.address() as { port: number }).port
  const gate = await NetworkGate.open({
    allowedHosts: [`bench.test:${port}`],
    hooks: { ask: async () => 'no', record: () => {} },
    lookup: async () => [{ address: own ?? '127.0.0.1', family: 4 }],
  })
  const plans: [string, NetworkPlan | undefined][] = [['full', undefined], ['none', { mode: 'none' }], ['allowlist', { mode: 'allowlist', socket: gate.socketPath, perl: 'perl' }]]
  const time = async (argv: readonly string[], env?: NodeJS.ProcessEnv) => {
    await run(argv[0]!, argv.slice(1), { env: env ?? process.env })
    const start = performance.now()
    for (let i = 0; i < iterations; i++) await run(argv[0]!, argv.slice(1), { env: env ?? process.env })
    return (performance.now() - start) / iterations
  }
  const base: Record<string, number> = {}
  for (const [name, plan] of plans) {
    base[name] = await time([...runner.argv('workspace-write', process.cwd(), undefined, plan), 'bash', '-c', 'true'])
    console.log(`confined command, network ${name.padEnd(9)}: ${base[name]!.toFixed(2)} ms  (${(base[name]! / base.full!).toFixed(2)}x full)`)
  }
  if (own === undefined) console.log('curl through the gate: skipped (no non-loopback IPv4 address)')
  else {
    const direct = await time([...runner.argv('workspace-write', process.cwd(), undefined, undefined), 'curl', '-s', `http://${own}:${port}/`])
    const proxied = await time([...runner.argv('workspace-write', process.cwd(), undefined, plans[2]![1]), 'curl', '-s', `http://bench.test:${port}/`], { ...process.env, ...networkEnvironment() })
    console.log(`confined curl, full direct      : ${direct.toFixed(2)} ms`)
    console.log(`confined curl, allowlist proxied: ${proxied.toFixed(2)} ms  (+${(proxied - direct).toFixed(2)} ms)`)
  }
  await gate.close()
  server.close()
}
