import { PassThrough } from 'node:stream'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { clip, ErrorCodes, JsonRpcPeer, LineSplitter, MAX_ERROR_MESSAGE_CHARS, method, RpcError } from './jsonrpc.js'

describe('LineSplitter', () => {
  it('splits on \\n only: U+2028, U+2029 and lone \\r stay inside a line; \\r\\n ends one', () => {
    const splitter = new LineSplitter()
    expect(splitter.push('a\u2028b\u2029c\rd\r\ne\nf')).toEqual(['a\u2028b\u2029c\rd', 'e'])
    expect(splitter.end()).toBe('f')
  })

  it('a line over the bound is dropped as it arrives and reported once; the next line is intact', () => {
    let overflows = 0
    const splitter = new LineSplitter(10, () => { overflows++ })
    expect(splitter.push('short\n0123456')).toEqual(['short'])
    expect(splitter.push('789abcdef')).toEqual([])
    expect(splitter.push('more and more')).toEqual([])
    expect(splitter.push('xyz\nok\n')).toEqual(['ok'])
    expect(overflows).toBe(1)
    expect(splitter.push('0123456789abc\n')).toEqual([])
    expect(overflows).toBe(2)
  })

  it('any split of the input into pieces gives the same lines (property)', () => {
    const line = fc.string({ unit: fc.constantFrom('a', 'é', '\u2028', '\u2029', '\r', '{', '"', '😀') })
      .filter(text => !text.endsWith('\r'))
    fc.assert(fc.property(fc.array(line, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 6 }), (lines, cuts) => {
      const text = lines.map(l => `${l}\n`).join('')
      const points = [...new Set(cuts.map(cut => cut % (text.length + 1)))].sort((a, b) => a - b)
      const splitter = new LineSplitter()
      const out: string[] = []
      let from = 0
      for (const point of [...points, text.length]) {
        out.push(...splitter.push(text.slice(from, point)))
        from = point
      }
      expect(out).toEqual(lines)
      expect(splitter.end()).toBeUndefined()
    }))
  })
})

/** Two peers over in-memory streams. */
function pair(methods: ConstructorParameters<typeof JsonRpcPeer>[0]['methods']) {
  const toServer = new PassThrough()
  const toClient = new PassThrough()
  const lines: string[] = []
  const splitter = new LineSplitter()
  toClient.on('data', (chunk: Buffer) => lines.push(...splitter.push(chunk.toString('utf8'))))
  const server = new JsonRpcPeer({ input: toServer, output: toClient, methods })
  const client = new JsonRpcPeer({ input: toClient, output: toServer })
  return { server, client, toServer, lines }
}

describe('JsonRpcPeer', () => {
  it('answers results, RpcError codes, -32602 from the schema and -32603 for other throws', async () => {
    const { client } = pair({
      echo: method(z.object({ text: z.string() }), params => ({ text: params.text })),
      busy: method(z.object({}), () => { throw new RpcError(ErrorCodes.serverError, 'busy now') }),
      broken: method(z.object({}), async () => { throw new Error('kaput') }),
    })
    expect(await client.request('echo', { text: 'line\u2028sep' })).toEqual({ text: 'line\u2028sep' })
    await expect(client.request('echo', { text: 1 })).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('text') })
    await expect(client.request('busy', {})).rejects.toMatchObject({ code: -32000, message: 'busy now' })
    await expect(client.request('broken', {})).rejects.toMatchObject({ code: -32603, message: 'Internal error: kaput' })
    await expect(client.request('toString', {})).rejects.toMatchObject({ code: -32601 })
  })

  it('a frame over maxFrameChars gets -32600 and the peer keeps serving', async () => {
    const toServer = new PassThrough()
    const toClient = new PassThrough()
    const lines: string[] = []
    const splitter = new LineSplitter()
    toClient.on('data', (chunk: Buffer) => lines.push(...splitter.push(chunk.toString('utf8'))))
    const server = new JsonRpcPeer({ input: toServer, output: toClient, maxFrameChars: 100, methods: { ping: method(z.object({}), () => 'pong') } })
    toServer.write(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(200)}"}}\n`)
    toServer.write('{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    await new Promise(resolve => setImmediate(resolve))
    await server.settled()
    expect(lines.map(line => JSON.parse(line))).toEqual([
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: frame longer than 100 characters (dropped)' } },
      { jsonrpc: '2.0', id: 2, result: 'pong' },
    ])
  })

  it('settled() waits for requests in flight; the input ending rejects our own pending requests', async () => {
    let release!: () => void
    const { server, client, toServer } = pair({ slow: method(z.object({}), () => new Promise(resolve => { release = () => resolve('done') })) })
    const answer = client.request('slow', {})
    await new Promise(resolve => setImmediate(resolve))
    let settled = false
    const waiting = server.settled().then(() => { settled = true })
    await new Promise(resolve => setImmediate(resolve))
    expect(settled).toBe(false)
    release()
    await waiting
    expect(await answer).toBe('done')
    toServer.end()
    await server.closed
    // A peer whose other side never answers: its input ending fails what is pending.
    const input = new PassThrough()
    const lonely = new JsonRpcPeer({ input, output: new PassThrough() })
    const pending = lonely.request('never')
    input.end()
    await expect(pending).rejects.toMatchObject({ code: ErrorCodes.internalError, message: expect.stringContaining('closed') })
  })

  it('a request given up through its signal rejects at once with -32800, sends the cancel notification with its id, and its late answer is dropped quietly', async () => {
    let release!: () => void
    const cancels: unknown[] = []
    const logs: string[] = []
    const toServer = new PassThrough()
    const toClient = new PassThrough()
    const server = new JsonRpcPeer({
      input: toServer, output: toClient,
      methods: { slow: method(z.object({}), () => new Promise(resolve => { release = () => resolve('late') })) },
      notifications: { '$/cancel_request': method(z.object({ requestId: z.number() }), params => { cancels.push(params) }) },
    })
    const client = new JsonRpcPeer({ input: toClient, output: toServer, log: message => logs.push(message) })
    const controller = new AbortController()
    const answer = client.request('slow', {}, { signal: controller.signal, cancelNotification: '$/cancel_request' })
    await new Promise(resolve => setImmediate(resolve))
    controller.abort()
    await expect(answer).rejects.toMatchObject({ code: ErrorCodes.requestCancelled })
    await new Promise(resolve => setImmediate(resolve))
    expect(cancels).toEqual([{ requestId: 0 }])
    release()
    await server.settled()
    await new Promise(resolve => setImmediate(resolve))
    expect(logs).toEqual([])
    // An already aborted signal sends nothing at all.
    await expect(client.request('slow', {}, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: ErrorCodes.requestCancelled })
  })
})

describe('#42.7: what errors echo, and the handshake', () => {
  it('#42.7: clip keeps short text and cuts long text to its start and its size in bytes', () => {
    expect(clip('short')).toBe('short')
    expect(clip('x'.repeat(200))).toBe('x'.repeat(200))
    expect(clip('é'.repeat(300))).toBe(`${'é'.repeat(200)}… (600 bytes)`)
  })

  it('#42.7: no error answer quotes a huge value back: method names, schema messages, RpcError and thrown messages are cut', async () => {
    const huge = 'x'.repeat(5 * 1024 * 1024)
    const { client } = pair({
      echo: method(z.object({ text: z.string().max(3, `too long: ${huge}`) }), params => params),
      busy: method(z.object({ text: z.string() }), params => { throw new RpcError(ErrorCodes.serverError, `busy with ${params.text}`) }),
      broken: method(z.object({ text: z.string() }), params => { throw new Error(`kaput: ${params.text}`) }),
    })
    const errors = await Promise.all([
      client.request(huge, {}), client.request('echo', { text: 'four' }), client.request('busy', { text: huge }), client.request('broken', { text: huge }),
    ].map(answer => answer.then(() => undefined, (error: RpcError) => error)))
    expect(errors.map(error => error?.code)).toEqual([-32601, -32602, -32000, -32603])
    for (const error of errors) {
      expect(error!.message.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS + 30)
      expect(error!.message).toMatch(/… \(\d+ bytes\)$/)
    }
    expect(errors[0]!.message).toBe(`Method not found: ${'x'.repeat(200)}… (${huge.length} bytes)`)
  })

  it('#42.7: with initializeFirst, every other request is -32002 until the handshake succeeds; a failed one does not count; one in flight is waited for', async () => {
    const toServer = new PassThrough()
    const toClient = new PassThrough()
    let ran = 0
    const server = new JsonRpcPeer({
      input: toServer, output: toClient, initializeFirst: 'initialize',
      methods: {
        initialize: method(z.object({ ok: z.boolean() }), async params => {
          await new Promise(resolve => setImmediate(resolve))
          if (!params.ok) throw new RpcError(ErrorCodes.invalidParams, 'not like that')
          return { hello: true }
        }),
        work: method(z.object({}), () => ({ ran: ++ran })),
      },
      notifications: { poke: method(z.object({}), () => { ran += 100 }) },
    })
    const client = new JsonRpcPeer({ input: toClient, output: toServer })
    await expect(client.request('work', {})).rejects.toMatchObject({ code: ErrorCodes.serverNotInitialized, message: 'Server not initialized: send initialize before work' })
    client.notify('poke', {})
    await expect(client.request('initialize', { ok: false })).rejects.toMatchObject({ code: -32602 })
    await expect(client.request('work', {})).rejects.toMatchObject({ code: -32002 })
    // Unknown methods stay -32601, whatever the state.
    await expect(client.request('nope', {})).rejects.toMatchObject({ code: -32601 })
    // Sent together: the request after the handshake waits for it and runs.
    const [hello, work] = await Promise.all([client.request('initialize', { ok: true }), client.request('work', {})])
    expect([hello, work]).toEqual([{ hello: true }, { ran: 1 }])
    expect(ran).toBe(1)
    void server
  })
})
