/**
 * Sends one provider request under the session's network mode, as `web_fetch` does
 * (docs/security.md, "Network"): `none` sends nothing, `allowlist` goes through the session's
 * gate (its host list, its questions, its `sandbox/connection` records), `full` (or no sandbox,
 * or danger-full-access) goes direct. Redirects are never followed: a key stays with the host it
 * was meant for.
 */
import type { ToolContext } from '../tools/api.js'
import { requestNetwork } from '../tools/builtin/network.js'
import { proxiedFetch, ProxyRefused } from '../tools/builtin/proxied-fetch.js'
import type { Sandboxing } from '../tools/builtin/sandboxing.js'
import { isRecord, text, WebSearchError, WebSearchErrorCode, type ProviderRequest, type SearchProvider } from './api.js'

const MAX_BODY = 4 * 1024 * 1024

/** The provider's own explanation in an error body (`{error: {message}}`, `{message}`, `{detail}`), else its start. */
function explanation(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body)
    if (isRecord(parsed)) {
      const error = parsed.error
      const found = (isRecord(error) ? text(error.message) : text(error)) ?? text(parsed.message) ?? text(parsed.detail)
      if (found !== undefined) return found
    }
  } catch {
    // not JSON: the text itself
  }
  const line = body.trim().replace(/\s+/g, ' ')
  return line === '' ? '(empty body)' : line.length > 300 ? `${line.slice(0, 300)}…` : line
}

export interface SendOptions {
  readonly sandboxing?: Sandboxing
  /** The HTTP client when the network is direct (default the global `fetch`). */
  readonly fetch?: typeof globalThis.fetch
  readonly signal: AbortSignal
}

/** The parsed JSON answer of `provider` to `request`; every failure is a `WebSearchError`. */
export async function send(provider: SearchProvider, request: ProviderRequest, context: ToolContext, options: SendOptions): Promise<unknown> {
  const host = new URL(request.url).host
  const network = options.sandboxing !== undefined ? await requestNetwork(options.sandboxing, context) : undefined
  if (network?.mode === 'none') {
    network.leave()
    throw new WebSearchError(`the network is off for this session (network mode none): nothing was sent to ${host}. The user can allow it with /network or --network`, WebSearchErrorCode.network)
  }
  const client = network?.socket !== undefined ? proxiedFetch(network.socket) : options.fetch ?? globalThis.fetch
  let status: number
  let body: string
  let location: string | null
  try {
    const response = await client(request.url, {
      method: request.method, headers: request.headers, redirect: 'manual', signal: options.signal,
      ...(request.body !== undefined ? { body: request.body } : {}),
    })
    status = response.status
    location = response.headers.get('location')
    body = await response.text()
  } catch (error) {
    if (error instanceof ProxyRefused) throw new WebSearchError(`${provider.label} search was not sent: ${error.message}`, WebSearchErrorCode.network)
    if (options.signal.aborted) throw options.signal.reason instanceof WebSearchError ? options.signal.reason : new WebSearchError(`${provider.label} search was aborted`, WebSearchErrorCode.aborted)
    const cause = (error as { cause?: { message?: string } }).cause?.message
    throw new WebSearchError(`${provider.label} search request to ${host} failed: ${(error as Error).message}${cause ? ` (${cause})` : ''}`, WebSearchErrorCode.provider)
  } finally {
    network?.leave()
  }
  if (status >= 300 && status < 400) {
    throw new WebSearchError(`${provider.label} search answered with a redirect (HTTP ${status}${location ? ` to ${location}` : ''}); redirects are not followed`, WebSearchErrorCode.provider)
  }
  if (status < 200 || status >= 300) throw new WebSearchError(`${provider.label} search failed: HTTP ${status}: ${explanation(body)}`, WebSearchErrorCode.provider)
  if (body.length > MAX_BODY) throw new WebSearchError(`${provider.label} search answered with more than ${MAX_BODY} bytes`, WebSearchErrorCode.provider)
  try {
    return JSON.parse(body)
  } catch {
    throw new WebSearchError(`${provider.label} returned an unexpected response body: not JSON (${explanation(body)})`, WebSearchErrorCode.provider)
  }
}
