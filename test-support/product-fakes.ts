/**
 * Local fake model servers for the product-subagent tests: the OpenAI Responses API (Codex) and
 * the Anthropic Messages API (Claude Code), both streaming SSE over real HTTP on 127.0.0.1. Each
 * answer is scripted by the test: a final text, an HTTP failure, or a hang (the request is held
 * open until the client goes away, for cancellation tests).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type FakeAnswer =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'http-error'; readonly status: number; readonly body?: string }
  | { readonly kind: 'hang' }

export interface FakeServer {
  readonly url: string
  /** Requests received (path, headers, parsed body). */
  readonly requests: { path: string; headers: IncomingMessage['headers']; body: unknown }[]
  /** Resolves when a request for the model arrives (the next one after the call). */
  nextRequest(): Promise<void>
  close(): Promise<void>
}

function sse(res: ServerResponse, event: string, data: unknown): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  let text = ''
  for await (const chunk of req) text += String(chunk)
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

function start(handle: (req: IncomingMessage, res: ServerResponse, body: unknown) => void): Promise<FakeServer> {
  const requests: FakeServer['requests'] = []
  let waiters: (() => void)[] = []
  const open = new Set<ServerResponse>()
  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      requests.push({ path: req.url ?? '', headers: req.headers, body })
      open.add(res)
      res.on('close', () => open.delete(res))
      const ready = waiters
      waiters = []
      for (const wake of ready) wake()
      handle(req, res, body)
    })
  })
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo
    resolve({
      url: `http://127.0.0.1:${port}`,
      requests,
      nextRequest: () => new Promise(wake => { waiters.push(wake) }),
      close: () => new Promise(done => {
        for (const res of open) res.destroy()
        server.closeAllConnections()
        server.close(() => done())
      }),
    })
  }))
}

/** The Responses API (`POST …/responses`, `stream: true`): answers in order, the last one repeats. */
export function fakeResponsesServer(answers: readonly FakeAnswer[]): Promise<FakeServer> {
  let n = 0
  return start((req, res) => {
    if (req.method !== 'POST' || !(req.url ?? '').endsWith('/responses')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'not found' } }))
      return
    }
    const answer = answers[Math.min(n++, answers.length - 1)]!
    if (answer.kind === 'http-error') {
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body ?? JSON.stringify({ error: { message: 'scripted failure', type: 'server_error' } }))
      return
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const id = `resp_${n}`
    sse(res, 'response.created', { type: 'response.created', response: { id, object: 'response', status: 'in_progress', output: [] } })
    if (answer.kind === 'hang') return
    const item = { id: `msg_${n}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: answer.text, annotations: [] }] }
    sse(res, 'response.output_item.added', { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } })
    sse(res, 'response.output_text.delta', { type: 'response.output_text.delta', item_id: item.id, output_index: 0, content_index: 0, delta: answer.text })
    sse(res, 'response.output_item.done', { type: 'response.output_item.done', output_index: 0, item })
    sse(res, 'response.completed', {
      type: 'response.completed',
      response: { id, object: 'response', status: 'completed', output: [item], usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 12 } },
    })
    res.end()
  })
}

/** The Messages API (`POST /v1/messages`, `stream: true`): answers in order, the last one repeats. */
export function fakeMessagesServer(answers: readonly FakeAnswer[]): Promise<FakeServer> {
  let n = 0
  return start((req, res, body) => {
    const path = (req.url ?? '').split('?')[0]!
    if (req.method === 'POST' && path.endsWith('/messages/count_tokens')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: 10 }))
      return
    }
    if (req.method !== 'POST' || !path.endsWith('/messages')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'not found' } }))
      return
    }
    const answer = answers[Math.min(n++, answers.length - 1)]!
    if (answer.kind === 'http-error') {
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body ?? JSON.stringify({ type: 'error', error: { type: 'api_error', message: 'scripted failure' } }))
      return
    }
    const model = (body as { model?: string }).model ?? 'claude-fake'
    const streaming = (body as { stream?: boolean }).stream === true
    const text = answer.kind === 'text' ? answer.text : ''
    const message = { id: `msg_${n}`, type: 'message', role: 'assistant', model, content: [] as unknown[], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } }
    if (!streaming) {
      if (answer.kind === 'hang') return
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...message, content: [{ type: 'text', text }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } }))
      return
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    sse(res, 'message_start', { type: 'message_start', message })
    if (answer.kind === 'hang') return
    sse(res, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })
    sse(res, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })
    sse(res, 'content_block_stop', { type: 'content_block_stop', index: 0 })
    sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } })
    sse(res, 'message_stop', { type: 'message_stop' })
    res.end()
  })
}
