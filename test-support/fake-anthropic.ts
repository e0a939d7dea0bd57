/**
 * A scripted Anthropic Messages server for tests: a real HTTP server on 127.0.0.1 (port 0) that
 * answers `POST /v1/messages` with the next queued response as real SSE bytes (named events:
 * message_start, content_block_start/delta/stop, message_delta, message_stop, ping, error), and
 * records every request. Before answering it checks a request as the API does (key and version
 * headers, the body's required fields, tool results right after their calls, thinking budgets,
 * at most four cache breakpoints) and answers a violation with the API's 400/401 error shape, so
 * a test whose adapter sends what the API refuses fails.
 *
 *   const server = await FakeAnthropic.start()
 *   server.enqueue(messagesStream([{ thinking: 'hm', signature: 'sig' }, { text: 'Hi' }, { stop: 'end_turn' }]))
 *   // point the adapter at server.url (ANTHROPIC_BASE_URL), then inspect server.requests[0].body
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Segment = string | Uint8Array | { readonly delayMs: number }

export interface ScriptedResponse {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
  readonly segments: readonly Segment[]
  /** `destroy` resets the connection after the last segment. */
  readonly end?: 'close' | 'destroy'
}

export interface AnthropicRequest {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface WireUsage { input_tokens?: number; output_tokens?: number; cache_creation_input_tokens?: number; cache_read_input_tokens?: number }

export type MessagesStep =
  | { readonly text: string }
  | { readonly thinking: string; readonly signature?: string }
  | { readonly redacted: string }
  | { readonly toolUse: { readonly id: string; readonly name: string; readonly json: readonly string[] } }
  | { readonly stop: string; readonly usage?: WireUsage }
  | { readonly error: { readonly type: string; readonly message: string } }
  | { readonly ping: true }
  | { readonly raw: string }
  | { readonly delayMs: number }

export function namedEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
}

/**
 * A streamed message from steps. Each content step is one block (start, deltas, stop); `stop`
 * is the message_delta with its stop reason and output usage, then message_stop. `start` usage
 * rides on message_start.
 */
export function messagesStream(steps: readonly MessagesStep[], options: { start?: WireUsage; chunkBytes?: number; headers?: Record<string, string>; model?: string } = {}): ScriptedResponse {
  const segments: Segment[] = [namedEvent('message_start', {
    type: 'message_start',
    message: { id: 'msg_fake', type: 'message', role: 'assistant', model: options.model ?? 'claude-sonnet-4-5', content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 1, ...options.start } },
  })]
  let index = 0
  for (const step of steps) {
    if ('text' in step) {
      segments.push(namedEvent('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }))
      segments.push(namedEvent('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: step.text } }))
      segments.push(namedEvent('content_block_stop', { type: 'content_block_stop', index: index++ }))
    } else if ('thinking' in step) {
      segments.push(namedEvent('content_block_start', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '' } }))
      if (step.thinking !== '') segments.push(namedEvent('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: step.thinking } }))
      if (step.signature !== undefined) segments.push(namedEvent('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: step.signature } }))
      segments.push(namedEvent('content_block_stop', { type: 'content_block_stop', index: index++ }))
    } else if ('redacted' in step) {
      segments.push(namedEvent('content_block_start', { type: 'content_block_start', index, content_block: { type: 'redacted_thinking', data: step.redacted } }))
      segments.push(namedEvent('content_block_stop', { type: 'content_block_stop', index: index++ }))
    } else if ('toolUse' in step) {
      segments.push(namedEvent('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: step.toolUse.id, name: step.toolUse.name, input: {} } }))
      for (const part of step.toolUse.json) segments.push(namedEvent('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } }))
      segments.push(namedEvent('content_block_stop', { type: 'content_block_stop', index: index++ }))
    } else if ('stop' in step) {
      segments.push(namedEvent('message_delta', { type: 'message_delta', delta: { stop_reason: step.stop, stop_sequence: null }, usage: { output_tokens: 5, ...step.usage } }))
      segments.push(namedEvent('message_stop', { type: 'message_stop' }))
    } else if ('error' in step) segments.push(namedEvent('error', { type: 'error', error: step.error }))
    else if ('ping' in step) segments.push(namedEvent('ping', { type: 'ping' }))
    else if ('raw' in step) segments.push(step.raw)
    else segments.push(step)
  }
  const headers = { 'content-type': 'text/event-stream', ...options.headers }
  if (options.chunkBytes === undefined) return { status: 200, headers, segments }
  // Re-split at arbitrary byte boundaries (through events and UTF-8 sequences).
  const out: Segment[] = []
  for (const segment of segments) {
    if (typeof segment !== 'string' && !(segment instanceof Uint8Array)) { out.push(segment); continue }
    const bytes = typeof segment === 'string' ? Buffer.from(segment) : segment
    for (let i = 0; i < bytes.length; i += options.chunkBytes) out.push(bytes.subarray(i, i + options.chunkBytes))
  }
  return { status: 200, headers, segments: out }
}

/** The API's error body: `{type: 'error', error: {type, message}}`. */
export function apiError(status: number, type: string, message: string, headers: Readonly<Record<string, string>> = {}): ScriptedResponse {
  return { status, headers: { 'content-type': 'application/json', ...headers }, segments: [JSON.stringify({ type: 'error', error: { type, message } })] }
}

/** What the real API refuses about a request, as its error message; undefined when acceptable. */
export function requestProblem(headers: IncomingHttpHeaders, body: any): { status: number; type: string; message: string } | undefined {
  const invalid = (message: string) => ({ status: 400, type: 'invalid_request_error', message })
  if (typeof headers['x-api-key'] !== 'string' || headers['x-api-key'] === '') return { status: 401, type: 'authentication_error', message: 'x-api-key header is required' }
  if (typeof headers['anthropic-version'] !== 'string') return invalid('anthropic-version: header is required')
  if (body === undefined || typeof body !== 'object') return invalid('the body must be JSON')
  if (typeof body.model !== 'string') return invalid('model: Field required')
  if (!Number.isSafeInteger(body.max_tokens) || body.max_tokens < 1) return invalid('max_tokens: Field required')
  if (!Array.isArray(body.messages) || body.messages.length === 0) return invalid('messages: at least one message is required')
  if (body.messages[0].role !== 'user') return invalid('messages: first message must use the "user" role')
  let breakpoints = 0
  const count = (block: any) => { if (block?.cache_control !== undefined) breakpoints++ }
  if (Array.isArray(body.system)) body.system.forEach(count)
  if (Array.isArray(body.tools)) body.tools.forEach(count)
  const thinking = body.thinking?.type === 'enabled'
  if (thinking) {
    if (!Number.isSafeInteger(body.thinking.budget_tokens) || body.thinking.budget_tokens < 1024) return invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024')
    if (body.thinking.budget_tokens >= body.max_tokens) return invalid('`max_tokens` must be greater than `thinking.budget_tokens`')
    if (body.temperature !== undefined && body.temperature !== 1) return invalid('`temperature` may only be set to 1 when thinking is enabled')
  }
  for (let i = 0; i < body.messages.length; i++) {
    const message = body.messages[i]
    if (message.role !== 'user' && message.role !== 'assistant') return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`)
    const content = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content
    if (!Array.isArray(content) || content.length === 0) return invalid(`messages.${i}: all messages must have non-empty content`)
    for (const block of content) {
      count(block)
      if (block.type === 'text' && (typeof block.text !== 'string' || block.text === '')) return invalid(`messages.${i}: text content blocks must be non-empty`)
      if (block.type === 'thinking' && typeof block.signature !== 'string') return invalid(`messages.${i}: thinking blocks need their signature`)
      if (block.type === 'tool_use' && (typeof block.input !== 'object' || block.input === null || Array.isArray(block.input))) return invalid(`messages.${i}: tool_use.input must be an object`)
    }
    const uses = content.filter((block: any) => block.type === 'tool_use').map((block: any) => block.id)
    if (message.role === 'assistant' && uses.length > 0) {
      const next = body.messages[i + 1]
      const results = (Array.isArray(next?.content) ? next.content : []).map((block: any) => block.type === 'tool_result' ? block.tool_use_id : undefined)
      const leading = results.slice(0, uses.length)
      if (next !== undefined && !uses.every((id: string) => leading.includes(id))) {
        return invalid(`messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${uses.join(', ')}`)
      }
      if (thinking && i === body.messages.length - 2 && !['thinking', 'redacted_thinking'].includes(content[0].type)) {
        return invalid(`messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${content[0].type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block`)
      }
    }
  }
  if (breakpoints > 4) return invalid(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`)
  return undefined
}

export class FakeAnthropic {
  readonly requests: AnthropicRequest[] = []
  private readonly queue: ScriptedResponse[] = []
  private readonly open = new Set<ServerResponse>()

  private constructor(private readonly server: Server, readonly url: string) {}

  static async start(): Promise<FakeAnthropic> {
    let fake: FakeAnthropic | undefined
    const server = createServer((req, res) => {
      const parts: Buffer[] = []
      req.on('data', (part: Buffer) => parts.push(part))
      req.on('end', () => { void fake!.respond(req.method ?? 'GET', req.url ?? '/', req.headers, Buffer.concat(parts).toString('utf8'), res) })
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    fake = new FakeAnthropic(server, `http://127.0.0.1:${port}`)
    return fake
  }

  enqueue(...responses: ScriptedResponse[]): this {
    this.queue.push(...responses)
    return this
  }

  get pending(): number {
    return this.queue.length
  }

  /** Drops the responses no request took, so the next test of a shared server starts from its own. */
  discardPending(): number {
    return this.queue.splice(0).length
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy()
    await new Promise<void>(resolve => this.server.close(() => resolve()))
  }

  private async respond(method: string, path: string, headers: IncomingHttpHeaders, raw: string, res: ServerResponse): Promise<void> {
    let body: any
    try { body = JSON.parse(raw) } catch { body = undefined }
    this.requests.push({ path, headers, body })
    const refuse = (status: number, type: string, message: string) => {
      const response = apiError(status, type, message)
      res.writeHead(status, response.headers)
      res.end(response.segments[0] as string)
    }
    if (method !== 'POST' || path !== '/v1/messages') return refuse(404, 'not_found_error', `${method} ${path}: not found`)
    const problem = requestProblem(headers, body)
    if (problem !== undefined) return refuse(problem.status, problem.type, problem.message)
    const next = this.queue.shift()
    if (next === undefined) return refuse(500, 'api_error', 'fake-anthropic: no response queued')
    this.open.add(res)
    res.on('close', () => this.open.delete(res))
    res.writeHead(next.status ?? 200, next.headers)
    for (const segment of next.segments) {
      // The client went away (cancelled, timed out): nothing more to write.
      if (res.destroyed) return
      if (typeof segment === 'string' || segment instanceof Uint8Array) res.write(segment)
      else await new Promise(resolve => setTimeout(resolve, segment.delayMs))
    }
    if (next.end === 'destroy') res.destroy()
    else if (!res.destroyed) res.end()
  }
}
