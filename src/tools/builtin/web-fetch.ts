/**
 * `web_fetch`: GET a URL and return its text, HTML converted to markdown-ish text. Not in the
 * default tool set: a deployment enables it by loading `WebFetchToolPlugin`.
 */
import { Context } from 'cordis'
import type { Tool, ToolOutput } from '../api.js'
import type { JsonSchema } from '../json-schema.js'
import { BuiltinErrorCode, WebFetchError } from './errors.js'
import { htmlToMarkdown } from './html.js'
import { requestNetwork } from './network.js'
import { proxiedFetch, ProxyRefused } from './proxied-fetch.js'
import { sandboxingOf, type Sandboxing } from './sandboxing.js'
import { withSpill } from './spill.js'

export interface WebFetchToolConfig {
  readonly timeoutMs?: number
  /** The converted text is cut here (characters). */
  readonly maxChars?: number
  /** Bytes read from the response body at most. */
  readonly maxBodyBytes?: number
  readonly userAgent?: string
  /** The HTTP client (default: the global `fetch`); a test harness may route requests to a local server. */
  readonly fetch?: typeof globalThis.fetch
}

export const WEB_FETCH_DEFAULTS = { timeoutMs: 30_000, maxChars: 200_000, maxBodyBytes: 10 * 1024 * 1024, userAgent: 'dsh-web-fetch' } as const

export interface WebFetchArgs {
  readonly url: string
}

export const webFetchParameters = {
  type: 'object',
  properties: {
    url: { type: 'string', minLength: 1, description: 'The http(s) URL to fetch.' },
  },
  required: ['url'],
} as const satisfies JsonSchema

const TEXTUAL = /^(text\/|application\/(json|xml|javascript|ecmascript|x-javascript|ld\+json|[a-z.+-]*\+(json|xml))\b)/i
const HTML = /^(text\/html|application\/xhtml\+xml)\b/i

async function readBody(response: Response, maxBytes: number): Promise<{ bytes: Uint8Array; cut: boolean }> {
  if (!response.body) return { bytes: new Uint8Array(), cut: false }
  const reader = response.body.getReader()
  const parts: Uint8Array[] = []
  let size = 0
  let cut = false
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    if (size + value.length > maxBytes) {
      parts.push(value.subarray(0, maxBytes - size))
      size = maxBytes
      cut = true
      await reader.cancel()
      break
    }
    parts.push(value)
    size += value.length
  }
  return { bytes: Buffer.concat(parts), cut }
}

function decode(bytes: Uint8Array, contentType: string): string {
  const charset = /charset=["']?([\w-]+)/i.exec(contentType)?.[1]
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(bytes)
  } catch {
    return new TextDecoder('utf-8').decode(bytes)
  }
}

/**
 * `sandboxing`: with a sandbox mounted, the session's network mode applies (docs/security.md,
 * "Network"): `none` refuses, `allowlist` fetches through the session's gate.
 */
export function createWebFetchTool(config: WebFetchToolConfig = {}, sandboxing?: Sandboxing): Tool<WebFetchArgs> {
  const settings = { ...WEB_FETCH_DEFAULTS, ...config }
  const direct = config.fetch ?? globalThis.fetch
  return {
    name: 'web_fetch',
    description: `Fetch a web page or other text resource over http(s) and return its content; HTML is converted to markdown-style text (links kept as [text](url)). At most ${settings.maxChars} characters; times out after ${settings.timeoutMs / 1000} s.`,
    parameters: webFetchParameters,
    timeoutMs: settings.timeoutMs + 5_000,
    isConcurrencySafe: () => true,
    execute: withSpill('web_fetch', async (args, context): Promise<ToolOutput> => {
      let url: URL
      try {
        url = new URL(args.url)
      } catch {
        throw new WebFetchError(`not a valid URL: ${args.url}`, BuiltinErrorCode.fetchFailed)
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new WebFetchError(`only http and https URLs can be fetched, not ${url.protocol}`, BuiltinErrorCode.fetchFailed)
      }
      const network = sandboxing !== undefined ? await requestNetwork(sandboxing, context) : undefined
      if (network?.mode === 'none') throw new WebFetchError(`the network is off for this session (network mode none): ${url.href} was not fetched. The user can allow it with /network or --network`, BuiltinErrorCode.fetchFailed)
      const request = network?.socket !== undefined ? proxiedFetch(network.socket) : direct
      const timeout = AbortSignal.timeout(settings.timeoutMs)
      const signal = AbortSignal.any([context.signal, timeout])
      let response: Response
      let body: { bytes: Uint8Array; cut: boolean }
      try {
        response = await request(url, {
          signal, redirect: 'follow',
          headers: { 'user-agent': settings.userAgent, accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5' },
        })
        body = await readBody(response, settings.maxBodyBytes)
      } catch (error) {
        if (error instanceof ProxyRefused) throw new WebFetchError(`${url.href} was not fetched: ${error.message}`, BuiltinErrorCode.fetchFailed)
        if (timeout.aborted && !context.signal.aborted) {
          throw new WebFetchError(`fetching ${url.href} timed out after ${settings.timeoutMs} ms`, 'TIMEOUT')
        }
        if (context.signal.aborted) throw new WebFetchError(`fetching ${url.href} was aborted`, BuiltinErrorCode.aborted)
        const cause = (error as { cause?: { message?: string } }).cause?.message
        throw new WebFetchError(`fetching ${url.href} failed: ${(error as Error).message}${cause ? ` (${cause})` : ''}`, BuiltinErrorCode.fetchFailed)
      } finally {
        network?.leave()
      }
      const contentType = response.headers.get('content-type') ?? ''
      if (contentType !== '' && !TEXTUAL.test(contentType)) {
        throw new WebFetchError(`${response.url || url.href} returned ${contentType}, which is not text`, BuiltinErrorCode.unsupportedContent)
      }
      const raw = decode(body.bytes, contentType)
      const isHtml = HTML.test(contentType) || (contentType === '' && /^\s*<(!doctype html|html)/i.test(raw))
      const converted = isHtml ? htmlToMarkdown(raw, response.url || url.href) : { text: raw }
      let text = converted.text
      const cut = text.length > settings.maxChars
      if (cut) text = `${text.slice(0, settings.maxChars)}\n\n[truncated at ${settings.maxChars} characters]`
      else if (body.cut) text += `\n\n[body cut at ${settings.maxBodyBytes} bytes]`
      const status = response.ok ? '' : `HTTP ${response.status} ${response.statusText}\n`
      const header = `URL: ${response.url || url.href}\n${status}${converted.title ? `Title: ${converted.title}\n` : ''}\n`
      return {
        content: [{ type: 'text', text: header + text }],
        isError: !response.ok,
        meta: { url: response.url || url.href, status: response.status, contentType, truncated: cut || body.cut },
      }
    }),
  }
}

/** Off by default: load it explicitly to give the model web access. */
export class WebFetchToolPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context, config: WebFetchToolConfig = {}) {
    const tool = createWebFetchTool(config, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(tool))
  }
}
