/**
 * The page server of scenarios whose model fetches a URL (`web-fetch`). The original ran a
 * fixture server that is code and not in the corpus; this one serves, on a real local HTTP port,
 * an HTML page with the content the recording shows (a café menu: a heading, emphasis, a list,
 * a table and a link), so `web_fetch` runs for real: request, status, HTML to text. The result
 * text is product wording and masked by rule; whether the fetch succeeded (`isError`) is compared.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { SessionEvent } from '../session/types.js'

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Menu</title></head>
<body>
<h1>Café menu</h1>
<p>Prices include <strong>service &amp; <em>tax</em></strong> — updated daily.</p>
<ul><li>Espresso</li><li>Flat white</li></ul>
<table><thead><tr><th>Drink</th><th>Price</th></tr></thead>
<tbody><tr><td>Espresso</td><td>€2</td></tr><tr><td>Flat white</td><td>€3</td></tr></tbody></table>
<p>See <a href="https://fixture.invalid/specials">today’s specials</a>.</p>
</body></html>
`

/** The origins (`http://host:port`) of the URLs the recorded `web_fetch` calls name. */
export function fetchedOrigins(events: readonly SessionEvent[]): string[] {
  const origins = new Set<string>()
  for (const event of events) {
    if (event.type !== 'tool/call') continue
    const { name, arguments: raw } = event.data as { name: string; arguments: string }
    if (name !== 'web_fetch') continue
    try {
      const url = new URL((JSON.parse(raw) as { url: string }).url)
      if (url.protocol === 'http:') origins.add(url.origin)
    } catch {
      // An unparsable URL is the tool's own error to report.
    }
  }
  return [...origins]
}

export interface PageServer {
  /** `http://127.0.0.1:PORT` */
  readonly origin: string
  /** A `fetch` that sends requests for the recorded origins to this server. */
  readonly fetch: typeof globalThis.fetch
  close(): Promise<void>
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
}

/**
 * Starts the page server on `port` (0: any free port). Every path answers the page (200,
 * text/html); `fetch` rewrites URLs of the `recorded` origins to this server's origin.
 */
export async function startPageServer(recorded: readonly string[], port = 0): Promise<PageServer> {
  const server = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    response.end(request.method === 'HEAD' ? undefined : PAGE)
  })
  await listen(server, port)
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const rewrite = (url: string) => {
    const from = recorded.find(candidate => url === candidate || url.startsWith(`${candidate}/`))
    return from === undefined ? url : origin + url.slice(from.length)
  }
  return {
    origin,
    fetch: (input, init) => globalThis.fetch(typeof input === 'string' ? rewrite(input) : input instanceof URL ? rewrite(input.href) : new Request(rewrite(input.url), input), init),
    close: () => new Promise<void>(resolve => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

/**
 * For a dsh process (the protocol suite): listens on each recorded port itself. A port another
 * run of this suite already holds serves the same page, so that is not an error.
 */
export async function startRecordedPageServers(recorded: readonly string[]): Promise<{ close(): Promise<void> }> {
  const servers: PageServer[] = []
  for (const origin of recorded) {
    const url = new URL(origin)
    if (url.hostname !== '127.0.0.1') continue
    try {
      servers.push(await startPageServer([], Number(url.port)))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error
    }
  }
  return { close: async () => { await Promise.all(servers.map(server => server.close())) } }
}
