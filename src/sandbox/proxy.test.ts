import { once } from 'node:events'
import { existsSync, linkSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, request, type IncomingHttpHeaders, type Server as HttpServer } from 'node:http'
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { forbiddenAddress, hostAllowed, parseAllowedHosts } from './hosts.js'
import { defaultRefusalHint, FilteringProxy, type FilteringProxyOptions, type ProxyConnection } from './proxy.js'

// Test servers listen on a non-loopback address of this machine (the proxy never reaches
// loopback); names like pkg.test are mapped to it by an injected lookup.
const external = Object.values(networkInterfaces()).flat()
  .find(info => info !== undefined && info.family === 'IPv4' && !info.internal && forbiddenAddress(info.address) === undefined)?.address
const needsServers = external === undefined ? ' (SKIPPED: this machine has no non-loopback IPv4 address for the test servers)' : ''
const itServers = it.skipIf(external === undefined)

let httpServer: HttpServer
let echoServer: TcpServer
let httpPort = 0
let echoPort = 0
let closedPort = 0

beforeAll(async () => {
  if (external === undefined) return
  httpServer = createHttpServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      res.writeHead(req.url === '/missing' ? 404 : 200, { 'content-type': 'application/json', 'x-from-server': 'yes', connection: 'x-upstream-hop', 'x-upstream-hop': '1', 'proxy-authenticate': 'Basic' })
      res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() }))
    })
  })
  echoServer = createTcpServer(socket => { socket.on('error', () => undefined); socket.pipe(socket) })
  const spare = createTcpServer()
  for (const server of [httpServer, echoServer, spare]) {
    server.listen(0, external)
    await once(server, 'listening')
  }
  httpPort = (httpServer.address() as AddressInfo).port
  echoPort = (echoServer.address() as AddressInfo).port
  closedPort = (spare.address() as AddressInfo).port
  await new Promise(resolve => spare.close(resolve))
})
afterAll(async () => {
  if (external === undefined) return
  httpServer.closeAllConnections()
  await Promise.all([new Promise(resolve => httpServer.close(resolve)), new Promise(resolve => echoServer.close(resolve))])
})

let dir: string
let proxy: FilteringProxy | undefined
let records: ProxyConnection[]
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-proxy-'))
  records = []
})
afterEach(async () => {
  await proxy?.close()
  proxy = undefined
  rmSync(dir, { recursive: true, force: true })
})

const names: Record<string, string[]> = {
  'pkg.test': [external ?? '192.0.2.200'],
  'other.test': [external ?? '192.0.2.200'],
  'rebind.test': ['192.0.2.200', '127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'v6-loop.test': ['::ffff:127.0.0.1'],
  'empty.test': [],
  'garbage.test': ['not-an-address'],
}
const testLookup = async (host: string) => {
  const found = names[host]
  if (found === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
  return found.map(address => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }))
}

async function start(options: Partial<FilteringProxyOptions> = {}): Promise<FilteringProxy> {
  const { rules } = parseAllowedHosts([`pkg.test:${httpPort || 1}`, `pkg.test:${echoPort || 1}`])
  proxy = await FilteringProxy.start({
    socketPath: join(dir, 'proxy.sock'),
    allowed: (host, port) => hostAllowed(rules, host, port),
    lookup: testLookup,
    onConnection: connection => records.push(connection),
    ...options,
  })
  return proxy
}

interface Head { status: number; headers: Record<string, string>; rest: Buffer }

/** Reads a raw response head from `socket`; `rest` is what came after it. */
function readHead(socket: Socket): Promise<Head> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk])
      const end = buffer.indexOf('\r\n\r\n')
      if (end < 0) return
      socket.off('data', onData)
      socket.pause()
      const [line, ...lines] = buffer.subarray(0, end).toString().split('\r\n')
      const headers = Object.fromEntries(lines.map(header => [header.slice(0, header.indexOf(':')).toLowerCase(), header.slice(header.indexOf(':') + 1).trim()]))
      resolve({ status: Number(line.split(' ')[1]), headers, rest: buffer.subarray(end + 4) })
    }
    socket.on('data', onData)
    socket.once('error', reject)
    socket.once('close', () => reject(new Error('closed before a response head')))
  })
}

/** Everything `socket` sends until it ends, after `rest`. */
async function readToEnd(socket: Socket, rest: Buffer): Promise<string> {
  const chunks: Buffer[] = [rest]
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.resume()
  await once(socket, 'end')
  return Buffer.concat(chunks).toString()
}

/** Waits until `socket` has sent `text` (after `rest`). */
function readUntil(socket: Socket, text: string, rest: Buffer = Buffer.alloc(0)): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = rest.toString()
    if (seen.includes(text)) { resolve(seen); return }
    const onData = (chunk: Buffer) => {
      seen += chunk.toString()
      if (seen.includes(text)) { socket.off('data', onData); resolve(seen) }
    }
    socket.on('data', onData).resume()
    socket.once('close', () => reject(new Error(`closed before ${JSON.stringify(text)}; got ${JSON.stringify(seen)}`)))
  })
}

/** Sends `CONNECT authority` (with `early` bytes in the same write) over the proxy's socket. */
async function tunnel(authority: string, early = ''): Promise<Head & { socket: Socket }> {
  const socket = connect(proxy!.socketPath)
  socket.on('error', () => undefined)
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n${early}`)
  return { ...await readHead(socket), socket }
}

/** A refused CONNECT: its status, reason header and body. */
async function refusedTunnel(authority: string): Promise<{ status: number; reason: string; body: string; headers: Record<string, string> }> {
  const { status, headers, rest, socket } = await tunnel(authority)
  return { status, reason: headers['x-dsh-refused'], headers, body: await readToEnd(socket, rest) }
}

/** A request over the proxy's socket with `target` as the request target. */
function viaProxy(target: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: proxy!.socketPath, method: options.method ?? 'GET', path: target, headers: options.headers, agent: false }, res => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }))
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

/** Event-loop turns until `condition` holds (a deadline only as a failure guard). */
async function settled(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`never settled: ${what}`)
    await new Promise(resolve => setImmediate(resolve))
  }
}

describe('FilteringProxy: what it lets through', () => {
  itServers(`a listed host tunnels with CONNECT, bytes sent with the CONNECT head included${needsServers}`, async () => {
    await start()
    const { status, rest, socket } = await tunnel(`pkg.test:${echoPort}`, 'early bytes;')
    expect(status).toBe(200)
    expect(await readUntil(socket, 'early bytes;', rest)).toBe('early bytes;')
    socket.write('ping')
    expect(await readUntil(socket, 'ping')).toBe('ping')
    expect(proxy!.active).toBe(1)
    expect(records).toEqual([{ host: 'pkg.test', port: echoPort, kind: 'connect', outcome: 'allowed', address: external }])
    socket.end()
    await once(socket, 'close')
  })

  itServers(`a listed host gets plain-HTTP requests forwarded: status, headers, bodies both ways, hop-by-hop headers dropped${needsServers}`, async () => {
    await start()
    const get = await viaProxy(`http://pkg.test:${httpPort}/hello?q=1`, { headers: { 'Proxy-Authorization': 'Basic c2VjcmV0', 'Proxy-Connection': 'keep-alive', 'X-Kept': 'yes', Connection: 'x-private', 'X-Private': 'hop' } })
    expect(get.status).toBe(200)
    expect(get.headers['x-from-server']).toBe('yes')
    expect(get.headers['x-upstream-hop']).toBeUndefined()
    expect(get.headers['proxy-authenticate']).toBeUndefined()
    const seen = JSON.parse(get.body) as { method: string; url: string; headers: IncomingHttpHeaders }
    expect(seen.method).toBe('GET')
    expect(seen.url).toBe('/hello?q=1')
    expect(seen.headers.host).toBe(`pkg.test:${httpPort}`)
    expect(seen.headers['x-kept']).toBe('yes')
    for (const dropped of ['proxy-authorization', 'proxy-connection', 'x-private']) expect(seen.headers[dropped], dropped).toBeUndefined()

    const body = 'x'.repeat(200_000)
    const post = await viaProxy(`http://pkg.test:${httpPort}/missing`, { method: 'POST', body, headers: { 'content-type': 'text/plain' } })
    expect(post.status).toBe(404)
    expect((JSON.parse(post.body) as { body: string }).body).toBe(body)
    expect(records.map(record => [record.kind, record.outcome, record.host, record.port, record.address])).toEqual([['http', 'allowed', 'pkg.test', httpPort, external], ['http', 'allowed', 'pkg.test', httpPort, external]])
    await settled(() => proxy!.active === 0, 'requests released')
  })

  itServers(`the Host header sent upstream is the request target's, whatever the client claims${needsServers}`, async () => {
    await start()
    const get = await viaProxy(`http://pkg.test:${httpPort}/`, { headers: { Host: 'internal.corp' } })
    expect((JSON.parse(get.body) as { headers: IncomingHttpHeaders }).headers.host).toBe(`pkg.test:${httpPort}`)
  })

  itServers(`ask: true lets exactly that host through, false refuses it as declined, a throw counts as false${needsServers}`, async () => {
    const asked: string[] = []
    await start({ allowed: () => false, ask: async (host, port) => { asked.push(`${host}:${port}`); if (host === 'boom.test') throw new Error('no'); return host === 'pkg.test' } })
    const ok = await tunnel(`pkg.test:${echoPort}`)
    expect(ok.status).toBe(200)
    ok.socket.destroy()
    expect(await refusedTunnel(`other.test:${echoPort}`)).toMatchObject({ status: 403, reason: 'declined' })
    expect(await refusedTunnel('boom.test:443')).toMatchObject({ status: 403, reason: 'declined' })
    expect(asked).toEqual([`pkg.test:${echoPort}`, `other.test:${echoPort}`, 'boom.test:443'])
    expect(records.map(record => [record.host, record.outcome, record.reason])).toEqual([['pkg.test', 'allowed', undefined], ['other.test', 'refused', 'declined'], ['boom.test', 'refused', 'declined']])
  })

  itServers(`concurrent asks for one host:port share one pending promise${needsServers}`, async () => {
    let release!: (answer: boolean) => void
    const answer = new Promise<boolean>(resolve => { release = resolve })
    let policyCalls = 0
    let asks = 0
    // The second attempt joins the pending ask in the same turn as its policy check, so the answer
    // is given from inside that check (its callbacks run only after the join).
    await start({ allowed: () => { policyCalls += 1; if (policyCalls === 2) release(true); return false }, ask: () => { asks += 1; return answer } })
    const [first, second] = await Promise.all([tunnel(`pkg.test:${echoPort}`), tunnel(`pkg.test:${echoPort}`)])
    expect([first.status, second.status]).toEqual([200, 200])
    expect(asks).toBe(1)
    first.socket.destroy()
    second.socket.destroy()
    // Once settled the answer is not kept: a later attempt asks again.
    const third = await tunnel(`pkg.test:${echoPort}`)
    expect(asks).toBe(2)
    third.socket.destroy()
  })

  itServers(`an unlisted host, or its address written as an IP literal, is refused 403 not-listed${needsServers}`, async () => {
    await start()
    const refused = await refusedTunnel(`evil.example:443`)
    expect(refused).toMatchObject({ status: 403, reason: 'not-listed' })
    expect(refused.headers['content-type']).toBe('text/plain; charset=utf-8')
    expect(refused.body).toBe('dsh sandbox: evil.example:443 is not in sandbox.allowedHosts (network: allowlist); add it in settings or run with --network full\n')
    expect(await refusedTunnel(`${external}:${echoPort}`)).toMatchObject({ status: 403, reason: 'not-listed' })
    const plain = await viaProxy(`http://${external}:${httpPort}/`)
    expect(plain.status).toBe(403)
    expect(plain.headers['x-dsh-refused']).toBe('not-listed')
    expect(plain.body).toContain(`${external}:${httpPort} is not in sandbox.allowedHosts`)
    expect(records.map(record => record.reason)).toEqual(['not-listed', 'not-listed', 'not-listed'])
  })
})

describe('FilteringProxy: what it never reaches', () => {
  it('a listed name that resolves to loopback (real localhost, default lookup) is refused loopback', async () => {
    await start({ allowed: () => true, lookup: undefined })
    const refused = await refusedTunnel('localhost:8080')
    expect(refused).toMatchObject({ status: 403, reason: 'loopback' })
    expect(refused.body).toMatch(/^dsh sandbox: localhost:8080 resolves to (127\.0\.0\.1|::1) \(loopback\)/)
    const plain = await viaProxy('http://LOCALHOST:8080/')
    expect(plain.status).toBe(403)
    expect(plain.headers['x-dsh-refused']).toBe('loopback')
    expect(records).toHaveLength(2)
    expect(records[0]).toMatchObject({ host: 'localhost', port: 8080, kind: 'connect', outcome: 'refused', reason: 'loopback' })
    expect(['127.0.0.1', '::1']).toContain(records[0].address)
    expect(records[1]).toMatchObject({ host: 'localhost', kind: 'http', reason: 'loopback' })
  })

  it('loopback in every spelling, and a name with any loopback address among its answers', async () => {
    await start({ allowed: () => true })
    for (const authority of ['127.0.0.1:80', '127.9.9.9:443', '[::1]:80', '[::ffff:127.0.0.1]:80', '[0:0:0:0:0:ffff:7f00:1]:443', 'rebind.test:443', 'v6-loop.test:443']) {
      expect(await refusedTunnel(authority), authority).toMatchObject({ status: 403, reason: 'loopback' })
    }
    expect((await viaProxy('http://0x7f.1/')).headers['x-dsh-refused']).toBe('loopback')
    expect(records.find(record => record.host === 'rebind.test')).toMatchObject({ outcome: 'refused', reason: 'loopback', address: '127.0.0.1' })
    expect(records.find(record => record.host === '::1')).toMatchObject({ port: 80, reason: 'loopback', address: '::1' })
  })

  it('cloud metadata (169.254.169.254) is refused link-local, as are unspecified, multicast and broadcast', async () => {
    await start({ allowed: () => true })
    const metadata = await viaProxy('http://169.254.169.254/latest/meta-data/')
    expect(metadata.status).toBe(403)
    expect(metadata.headers['x-dsh-refused']).toBe('link-local')
    expect(metadata.body).toBe('dsh sandbox: 169.254.169.254:80 resolves to 169.254.169.254 (link-local), which sandboxed commands never reach\n')
    expect(await refusedTunnel('169.254.169.254:80')).toMatchObject({ reason: 'link-local' })
    expect(await refusedTunnel('metadata.test:80')).toMatchObject({ reason: 'link-local' })
    expect((await viaProxy('http://[::ffff:169.254.169.254]/')).headers['x-dsh-refused']).toBe('link-local')
    expect(await refusedTunnel('[fe80::1]:443')).toMatchObject({ reason: 'link-local' })
    expect(await refusedTunnel('0.0.0.0:80')).toMatchObject({ reason: 'unspecified' })
    expect(await refusedTunnel('[::]:80')).toMatchObject({ reason: 'unspecified' })
    expect(await refusedTunnel('224.0.0.251:5353')).toMatchObject({ reason: 'multicast' })
    expect(await refusedTunnel('255.255.255.255:80')).toMatchObject({ reason: 'broadcast' })
    expect(records[0]).toEqual({ host: '169.254.169.254', port: 80, kind: 'http', outcome: 'refused', reason: 'link-local', address: '169.254.169.254' })
  })

  it('an unlisted name is refused before it is looked up', async () => {
    const looked: string[] = []
    await start({ lookup: async host => { looked.push(host); return testLookup(host) } })
    expect(await refusedTunnel('metadata.test:80')).toMatchObject({ reason: 'not-listed' })
    expect(looked).toEqual([])
  })
})

describe('FilteringProxy: failures and bad requests', () => {
  it('unresolvable → 502 unresolved (no answer, no addresses, not an address)', async () => {
    await start({ allowed: () => true })
    for (const host of ['nowhere.test', 'empty.test', 'garbage.test']) {
      const refused = await refusedTunnel(`${host}:443`)
      expect(refused, host).toMatchObject({ status: 502, reason: 'unresolved' })
      expect(refused.body).toBe(`dsh sandbox: ${host}:443 could not be resolved; check the host name\n`)
    }
    expect((await viaProxy('http://nowhere.test/')).status).toBe(502)
  })

  itServers(`connect failure → 502 unreachable${needsServers}`, async () => {
    await start({ allowed: () => true })
    expect(await refusedTunnel(`pkg.test:${closedPort}`)).toMatchObject({ status: 502, reason: 'unreachable' })
    const plain = await viaProxy(`http://pkg.test:${closedPort}/`)
    expect([plain.status, plain.headers['x-dsh-refused']]).toEqual([502, 'unreachable'])
    expect(records.map(record => [record.kind, record.reason, record.address])).toEqual([['connect', 'unreachable', external], ['http', 'unreachable', external]])
  })

  it('origin-form, https:// absolute-form and malformed CONNECT targets → 400 bad-request', async () => {
    await start({ allowed: () => true })
    for (const target of ['/path', 'https://pkg.test/', 'ftp://pkg.test/']) {
      const answer = await viaProxy(target)
      expect([answer.status, answer.headers['x-dsh-refused']], target).toEqual([400, 'bad-request'])
    }
    for (const authority of ['pkg.test', 'pkg.test:0', 'pkg.test:65536', 'pkg.test:443/x', '[::1:443', 'user@pkg.test:443', '2130706433:80', 'fe80::1%25eth0:80', ':443']) {
      expect(await refusedTunnel(authority), authority).toMatchObject({ status: 400, reason: 'bad-request' })
    }
    expect(records.every(record => record.outcome === 'refused' && record.reason === 'bad-request')).toBe(true)
    expect(records).toHaveLength(12)
  })

  it('past maxConnections new attempts get 503 busy; a pending ask holds a place', async () => {
    let release!: (answer: boolean) => void
    let asked!: () => void
    const asking = new Promise<void>(resolve => { asked = resolve })
    await start({ allowed: () => false, maxConnections: 1, ask: () => { asked(); return new Promise<boolean>(answer => { release = answer }) } })
    const first = tunnel('pkg.test:443')
    await asking
    expect(proxy!.active).toBe(1)
    expect(await refusedTunnel('pkg.test:443')).toMatchObject({ status: 503, reason: 'busy' })
    release(false)
    expect((await first).status).toBe(403)
    expect(records.map(record => record.reason)).toEqual(['busy', 'declined'])
  })

  it('throws from allowed, onConnection and refusalHint are contained', async () => {
    await start({ allowed: () => { throw new Error('policy bug') }, onConnection: () => { throw new Error('log bug') }, refusalHint: () => { throw new Error('hint bug') } })
    const refused = await refusedTunnel('pkg.test:443')
    expect(refused).toMatchObject({ status: 403, reason: 'not-listed' })
    expect(refused.body).toBe(`${defaultRefusalHint({ host: 'pkg.test', port: 443, kind: 'connect', outcome: 'refused', reason: 'not-listed' })}\n`)
  })

  it('a lookup or an ask that throws at once counts as unresolved or declined', async () => {
    await start({ allowed: host => host === 'pkg.test', lookup: () => { throw new Error('resolver bug') }, ask: () => { throw new Error('approval bug') } })
    expect(await refusedTunnel('pkg.test:443')).toMatchObject({ status: 502, reason: 'unresolved' })
    expect(await refusedTunnel('other.test:443')).toMatchObject({ status: 403, reason: 'declined' })
  })

  it('refusalHint gives the body line', async () => {
    await start({ refusalHint: connection => `no ${connection.host}:${connection.port} (${connection.reason})\r\nInjected: header` })
    const refused = await refusedTunnel('evil.example:443')
    expect(refused.body).toBe('no evil.example:443 (not-listed) Injected: header\n')
    expect(refused.headers.injected).toBeUndefined()
  })
})

describe('FilteringProxy: lifetime', () => {
  itServers(`a client that aborts mid-tunnel, or an upstream that ends, releases both sides${needsServers}`, async () => {
    await start()
    const upstreamSide = once(echoServer, 'connection') as Promise<[Socket]>
    const { status, socket } = await tunnel(`pkg.test:${echoPort}`)
    expect(status).toBe(200)
    const [echoSocket] = await upstreamSide
    socket.write('x')
    await readUntil(socket, 'x')
    expect(proxy!.active).toBe(1)
    socket.destroy()
    await once(echoSocket, 'close')
    await settled(() => proxy!.active === 0, 'tunnel released after the client left')

    const nextSide = once(echoServer, 'connection') as Promise<[Socket]>
    const second = await tunnel(`pkg.test:${echoPort}`)
    const [echoSecond] = await nextSide
    expect(proxy!.active).toBe(1)
    echoSecond.destroy()
    await once(second.socket, 'close')
    await settled(() => proxy!.active === 0, 'tunnel released after the upstream left')
  })

  it('a client that leaves while its ask is pending is never connected', async () => {
    let release!: (answer: boolean) => void
    let asked!: () => void
    const asking = new Promise<void>(resolve => { asked = resolve })
    await start({ allowed: () => false, ask: () => { asked(); return new Promise<boolean>(answer => { release = answer }) } })
    const socket = connect(proxy!.socketPath)
    socket.on('error', () => undefined)
    socket.write(`CONNECT pkg.test:${echoPort || 443} HTTP/1.1\r\n\r\n`)
    await asking
    socket.destroy()
    await settled(() => proxy!.active === 0, 'the attempt released')
    release(true)
    await settled(() => records.length === 1, 'the attempt recorded')
    expect(records[0]).toMatchObject({ host: 'pkg.test', outcome: 'refused', reason: 'closed' })
  })

  itServers(`close() destroys open tunnels and removes the socket file${needsServers}`, async () => {
    const started = await start()
    const open = await tunnel(`pkg.test:${echoPort}`)
    expect(open.status).toBe(200)
    const closed = once(open.socket, 'close')
    await started.close()
    await closed
    expect(started.active).toBe(0)
    expect(existsSync(started.socketPath)).toBe(false)
    await started.close()
  })

  it('the socket file is mode 0600 and removed by close()', async () => {
    const started = await start()
    expect(statSync(started.socketPath).isSocket()).toBe(true)
    expect(statSync(started.socketPath).mode & 0o777).toBe(0o600)
    await started.close()
    expect(existsSync(started.socketPath)).toBe(false)
  })

  it('a stale socket file is replaced; a live socket or another file is not', async () => {
    const socketPath = join(dir, 'proxy.sock')
    // A second name for a listening socket's inode stays behind, stale, when that server closes.
    const other = createTcpServer()
    other.listen(join(dir, 'other.sock'))
    await once(other, 'listening')
    linkSync(join(dir, 'other.sock'), socketPath)
    await expect(start()).rejects.toThrow(/is in use/)
    await new Promise(resolve => other.close(resolve))
    expect(statSync(socketPath).isSocket()).toBe(true)
    await start()
    expect(await refusedTunnel('evil.example:443')).toMatchObject({ reason: 'not-listed' })
    await proxy!.close()
    proxy = undefined
    writeFileSync(socketPath, 'not a socket')
    await expect(start()).rejects.toThrow(/not a socket/)
  })
})
