/**
 * The sandbox's filtering proxy (src/sandbox/proxy.ts), prints numbers only:
 *   npx tsx bench/proxy.bench.ts [iterations]
 * - a plain-HTTP GET to a local server, direct vs through the proxy over its Unix socket (a new
 *   connection each time on both sides, as the proxy opens one upstream per request);
 * - opening a CONNECT tunnel and doing one echo round trip over it vs a direct TCP connect and
 *   the same round trip.
 * The proxy never reaches loopback, so the servers listen on this machine's first non-loopback
 * IPv4 address and an injected lookup maps `bench.test` to it; without one, nothing is measured.
 */
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer as createHttpServer, request } from 'node:http'
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { forbiddenAddress } from '../src/sandbox/hosts.js'
import { FilteringProxy } from '../src/sandbox/proxy.js'

const iterations = Number(process.argv[2] ?? 300)
const address = Object.values(networkInterfaces()).flat()
  .find(info => info !== undefined && info.family === 'IPv4' && !info.internal && forbiddenAddress(info.address) === undefined)?.address

if (address === undefined) {
  console.log('skipped: this machine has no non-loopback IPv4 address for the bench servers (the proxy refuses loopback)')
} else {
  const web = createHttpServer((_req, res) => res.end('ok'))
  const echo = createTcpServer(socket => { socket.on('error', () => undefined); socket.pipe(socket) })
  for (const server of [web, echo]) {
    server.listen(0, address)
    await once(server, 'listening')
  }
  const webPort = (web.address() as AddressInfo).port
  const echoPort = (echo.address() as AddressInfo).port
  const dir = await mkdtemp(join(tmpdir(), 'dsh-bench-proxy-'))
  const proxy = await FilteringProxy.start({
    socketPath: join(dir, 'proxy.sock'),
    allowed: (host, port) => host === 'bench.test' && (port === webPort || port === echoPort),
    lookup: async host => (host === 'bench.test' ? [{ address, family: 4 as const }] : []),
  })

  const get = (options: { host?: string; port?: number; socketPath?: string; path: string }) => new Promise<void>((resolve, reject) => {
    const req = request({ ...options, agent: false }, res => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`))
      res.resume().on('end', resolve)
    })
    req.on('error', reject).end()
  })

  /** One `ping` written on `socket` and read back. */
  const roundTrip = (socket: Socket, early = Buffer.alloc(0)) => new Promise<void>((resolve, reject) => {
    let seen = early.toString()
    const check = () => { if (seen.includes('ping')) { socket.destroy(); resolve() } }
    socket.on('data', (chunk: Buffer) => { seen += chunk.toString(); check() }).on('error', reject)
    socket.write('ping')
  })

  const directTcp = () => new Promise<void>((resolve, reject) => {
    const socket = connect(echoPort, address, () => { roundTrip(socket).then(resolve, reject) })
    socket.on('error', reject)
  })

  const tunnel = () => new Promise<void>((resolve, reject) => {
    const socket = connect(proxy.socketPath, () => socket.write(`CONNECT bench.test:${echoPort} HTTP/1.1\r\nHost: bench.test:${echoPort}\r\n\r\n`))
    let head = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      const end = head.indexOf('\r\n\r\n')
      if (end < 0) return
      socket.off('data', onData)
      if (!head.subarray(0, end).toString().startsWith('HTTP/1.1 200')) { reject(new Error(head.toString())); return }
      roundTrip(socket, head.subarray(end + 4)).then(resolve, reject)
    }
    socket.on('data', onData).on('error', reject)
  })

  async function time(label: string, fn: () => Promise<void>): Promise<number> {
    for (let i = 0; i < 20; i++) await fn()
    const start = performance.now()
    for (let i = 0; i < iterations; i++) await fn()
    const ms = (performance.now() - start) / iterations
    console.log(`${label.padEnd(44)} ${ms.toFixed(3).padStart(8)} ms/op`)
    return ms
  }

  try {
    console.log(`${iterations} iterations each; servers on ${address}`)
    const direct = await time('plain-HTTP GET, direct', () => get({ host: address, port: webPort, path: '/' }))
    const proxied = await time('plain-HTTP GET, through the proxy', () => get({ socketPath: proxy.socketPath, path: `http://bench.test:${webPort}/` }))
    console.log(`${'  ratio proxy/direct'.padEnd(44)} ${(proxied / direct).toFixed(2).padStart(8)}x`)
    const tcp = await time('TCP connect + echo round trip, direct', directTcp)
    const tunnelled = await time('CONNECT tunnel + echo round trip', tunnel)
    console.log(`${'  ratio tunnel/direct'.padEnd(44)} ${(tunnelled / tcp).toFixed(2).padStart(8)}x`)
  } finally {
    await proxy.close()
    web.closeAllConnections()
    await Promise.all([new Promise(resolve => web.close(resolve)), new Promise(resolve => echo.close(resolve))])
    await rm(dir, { recursive: true, force: true })
  }
}
