/**
 * The transport's connections opened ahead (connections.ts): a warmed connection is the one the
 * next request goes out on, over plain HTTP and over TLS, and nothing is sent until then.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer as createHttpServer, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { waitingConnections, warmConnection } from './connections.js'
import { post, readText } from './http-post.js'

/** A server that counts its connections, what arrives on each, and answers `ok`. */
function counting(server: Server, tls = false) {
  const sockets: Socket[] = []
  const received: { connection: number }[] = []
  const bytes = new Map<Socket, number>()
  let waiter: { count: number; resolve: () => void } | undefined
  const accepted = (socket: Socket) => {
    sockets.push(socket)
    bytes.set(socket, 0)
    socket.on('data', (chunk: Buffer) => { bytes.set(socket, bytes.get(socket)! + chunk.length) })
    if (waiter !== undefined && sockets.length >= waiter.count) waiter.resolve()
  }
  server.on(tls ? 'secureConnection' : 'connection', accepted)
  server.on('request', (request, response) => {
    received.push({ connection: sockets.indexOf(request.socket as Socket) + 1 })
    request.resume()
    request.on('end', () => { response.end('ok') })
  })
  return {
    sockets,
    received,
    closed: (index: number) => new Promise<void>(resolve => { if (sockets[index].destroyed) resolve(); else sockets[index].once('close', () => resolve()) }),
    waitForConnections: (count: number) => new Promise<void>(resolve => {
      if (sockets.length >= count) resolve()
      else waiter = { count, resolve }
    }),
    sent: (index: number) => bytes.get(sockets[index]) ?? 0,
  }
}

const servers: Server[] = []
const folders: string[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  }
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true })
})

async function listen(server: Server): Promise<number> {
  servers.push(server)
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

/** Resolves once `check` holds, looking again after each turn of the event loop. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise(resolve => setImmediate(resolve))
}

async function ask(url: string): Promise<string> {
  const exchange = await post(url, { 'content-type': 'application/json' }, Buffer.from('{}'), new AbortController().signal)
  const text = await readText(exchange.body)
  exchange.close(true)
  return text
}

describe('connections opened ahead', () => {
  it('the next request goes out on the connection opened ahead; nothing was sent on it before', async () => {
    const server = createHttpServer()
    const seen = counting(server)
    const url = `http://127.0.0.1:${await listen(server)}/v1/chat/completions`
    warmConnection(url)
    await seen.waitForConnections(1)
    // A second warm while the first waits opens nothing more.
    warmConnection(url)
    expect(seen.sent(0)).toBe(0)
    expect(await ask(url)).toBe('ok')
    expect(seen.received).toEqual([{ connection: 1 }])
    // Kept alive and free after the answer: warming again opens nothing, the next request reuses it.
    warmConnection(url)
    expect(await ask(url)).toBe('ok')
    expect(seen.sockets).toHaveLength(1)
    expect(seen.received.map(r => r.connection)).toEqual([1, 1])
    expect(waitingConnections()).toBe(0)
  })

  it('a connection nobody takes is closed after its idle time; one that cannot open is dropped quietly', async () => {
    const server = createHttpServer()
    const seen = counting(server)
    const port = await listen(server)
    warmConnection(`http://127.0.0.1:${port}/x`, 20)
    await seen.waitForConnections(1)
    await seen.closed(0)
    expect(seen.sent(0)).toBe(0)
    expect(seen.received).toEqual([])
    // Nothing listens on a port just freed: the warm fails silently and the request says why.
    const gone = createHttpServer()
    const free = await listen(gone)
    await new Promise(resolve => gone.close(resolve))
    servers.splice(servers.indexOf(gone), 1)
    const refused = `http://127.0.0.1:${free}/x`
    warmConnection(refused)
    const ticks = async () => { for (let i = 0; i < 5; i++) await Promise.resolve() }
    await ticks()
    expect(waitingConnections()).toBe(1)
    await until(() => waitingConnections() === 0)
    // After a failure the host is left alone for a while (no attempt once a second while typing).
    warmConnection(refused)
    await ticks()
    expect(waitingConnections()).toBe(0)
    await expect(ask(refused)).rejects.toThrow(/ECONNREFUSED/)
    warmConnection('not a url')
    warmConnection('ftp://127.0.0.1/x')
  })

  const openssl = (() => { try { execFileSync('openssl', ['version'], { stdio: 'ignore' }); return true } catch { return false } })()
  if (!openssl) console.warn('skipping the TLS connection test: openssl is missing (apt-get install -y openssl)')
  it.skipIf(!openssl)('over TLS: the handshake happens ahead, and the request does not make another', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'dsh-tls-'))
    folders.push(folder)
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-keyout', join(folder, 'key.pem'), '-out', join(folder, 'cert.pem')], { stdio: 'ignore' })
    const server = createHttpsServer({ key: readFileSync(join(folder, 'key.pem')), cert: readFileSync(join(folder, 'cert.pem')) })
    const seen = counting(server, true)
    const url = `https://127.0.0.1:${await listen(server)}/v1/chat/completions`
    // The certificate is the test's own; the client checks nothing else differently.
    const before = process.env.NODE_TLS_REJECT_UNAUTHORIZED
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'
    try {
      warmConnection(url)
      await seen.waitForConnections(1)
      expect(seen.sent(0)).toBe(0)
      expect(await ask(url)).toBe('ok')
      expect(seen.sockets).toHaveLength(1)
      expect(seen.received.map(r => r.connection)).toEqual([1])
    } finally {
      if (before === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = before
    }
  })
})
