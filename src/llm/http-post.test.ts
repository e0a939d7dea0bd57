import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterEach, describe, expect, it } from 'vitest'
import { post, readText } from './http-post.js'

let server: Server | undefined
afterEach(async () => {
  server?.closeAllConnections()
  await new Promise(resolve => server?.close(resolve) ?? resolve(undefined))
  server = undefined
})

async function serve(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void): Promise<{ url: string; connections: () => number }> {
  let connections = 0
  server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (part: string) => { body += part })
    req.on('end', () => handler(req, body, res))
  })
  server.on('connection', () => { connections++ })
  await new Promise<void>(resolve => server!.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections }
}

describe('http-post (the L-9 transport wire)', () => {
  it('L-9: posts the body with its headers and reads the status, headers and body', async () => {
    const { url } = await serve((req, body, res) => {
      res.writeHead(201, { 'x-request-id': 'r-1' })
      res.end(`${req.method} ${req.url} ${req.headers['content-type']} ${body}`)
    })
    const exchange = await post(`${url}/chat`, { 'content-type': 'application/json' }, Buffer.from('{"a":1}'), new AbortController().signal)
    expect(exchange.response.status).toBe(201)
    expect(exchange.response.headers.get('X-Request-Id')).toBe('r-1')
    expect(exchange.response.headers.get('retry-after')).toBeNull()
    expect(await readText(exchange.body)).toBe('POST /chat application/json {"a":1}')
    exchange.close(true)
  })

  it('L-9: a gzip body is decoded, as fetch did', async () => {
    const { url } = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' })
      res.end(gzipSync('data: ok\n\n'))
    })
    const exchange = await post(url, {}, Buffer.alloc(0), new AbortController().signal)
    expect(await readText(exchange.body)).toBe('data: ok\n\n')
    exchange.close(true)
  })

  it('L-9: a 307 redirect is followed with the same POST body', async () => {
    const { url } = await serve((req, body, res) => {
      if (req.url === '/old') {
        res.writeHead(307, { location: '/new' })
        res.end()
      } else res.end(`${req.method} ${req.url} ${body}`)
    })
    const exchange = await post(`${url}/old`, {}, Buffer.from('payload'), new AbortController().signal)
    expect(await readText(exchange.body)).toBe('POST /new payload')
    exchange.close(true)
  })

  it('a drained exchange returns its connection for the next request', async () => {
    const { url, connections } = await serve((_req, _body, res) => res.end('x'))
    for (let i = 0; i < 3; i++) {
      const exchange = await post(url, {}, Buffer.alloc(0), new AbortController().signal)
      expect(await readText(exchange.body)).toBe('x')
      exchange.close(true)
    }
    expect(connections()).toBe(1)
  })

  it('D-3: a held request takes its connection but sends nothing before its hold resolves', async () => {
    const { url } = await serve((_req, body, res) => res.end(`got ${body}`))
    const connected = new Promise<import('node:net').Socket>(resolve => server!.once('connection', resolve))
    let release!: () => void
    const hold = new Promise<void>(resolve => { release = resolve })
    const pending = post(url, {}, Buffer.from('payload'), new AbortController().signal, hold)
    const socket = await connected
    expect(socket.bytesRead).toBe(0)
    release()
    const exchange = await pending
    expect(await readText(exchange.body)).toBe('got payload')
    exchange.close(true)
  })

  it('D-3: a rejected hold fails the request with its reason, and not one byte of it was sent', async () => {
    const { url } = await serve((_req, _body, res) => res.end('x'))
    const connected = new Promise<import('node:net').Socket>(resolve => server!.once('connection', resolve))
    let refuse!: (reason: Error) => void
    const hold = new Promise<void>((_resolve, reject) => { refuse = reject })
    const pending = post(url, {}, Buffer.from('payload'), new AbortController().signal, hold)
    const socket = await connected
    const closed = new Promise(resolve => socket.once('close', resolve))
    const reason = new Error('flush failed')
    refuse(reason)
    await expect(pending).rejects.toBe(reason)
    // Everything the client wrote before it closed the connection is read before 'close'.
    await closed
    expect(socket.bytesRead).toBe(0)
  })

  it('D-3/L-9: aborting while the request is held rejects it with the abort reason, and nothing is sent when the hold then resolves', async () => {
    const { url } = await serve((_req, _body, res) => res.end('x'))
    const connected = new Promise<import('node:net').Socket>(resolve => server!.once('connection', resolve))
    let release!: () => void
    const hold = new Promise<void>(resolve => { release = resolve })
    const controller = new AbortController()
    const pending = post(url, {}, Buffer.from('payload'), controller.signal, hold)
    const socket = await connected
    const closed = new Promise(resolve => socket.once('close', resolve))
    const reason = new Error('cancelled')
    controller.abort(reason)
    await expect(pending).rejects.toBe(reason)
    release()
    await closed
    expect(socket.bytesRead).toBe(0)
  })

  it('L-9: aborting the signal rejects a pending body read with the abort reason', async () => {
    const { url } = await serve((_req, _body, res) => {
      res.writeHead(200)
      res.write('first')
    })
    const controller = new AbortController()
    const exchange = await post(url, {}, Buffer.alloc(0), controller.signal)
    expect(await exchange.body.next()).toMatchObject({ done: false })
    const pending = exchange.body.next()
    const reason = new Error('stop')
    controller.abort(reason)
    await expect(pending).rejects.toBe(reason)
    exchange.close()
  })

  it('L-9: a refused connection rejects the request', async () => {
    const { url } = await serve(() => {})
    await new Promise(resolve => server!.close(resolve))
    server = undefined
    await expect(post(url, {}, Buffer.alloc(0), new AbortController().signal)).rejects.toMatchObject({ code: 'ECONNREFUSED' })
  })
})
