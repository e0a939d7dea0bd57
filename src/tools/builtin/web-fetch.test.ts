import { EventEmitter, once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { htmlToMarkdown, decodeEntities } from './html.js'
import { resultText, toolsHarness, type ToolsHarness } from '../../../test-support/builtin-tools.js'

const PAGE = `<!doctype html><html><head><title>Test &amp; Page</title><style>body{color:red}</style>
<script>document.write("<p>hidden</p>")</script></head><body>
<nav><a href="/home">Home</a></nav>
<h1>Main   title</h1>
<p>First paragraph with a <a href="docs/intro.html">relative link</a> and <strong>bold</strong> text.</p>
<ul><li>one</li><li>two</li></ul>
<pre><code>if (a &lt; b) {
  return 1
}</code></pre>
<script>var secret = "do not show"</script>
</body></html>`

let server: Server
let base: string
/** Requests the server holds open (the timeout test); answered at teardown. */
const held: ServerResponse[] = []
const hangs = new EventEmitter()

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    switch (request.url) {
      case '/page/index.html':
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE)
        break
      case '/plain':
        response.writeHead(200, { 'content-type': 'text/plain' }).end('just text\n')
        break
      case '/json':
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"a":1}')
        break
      case '/big':
        response.writeHead(200, { 'content-type': 'text/plain' }).end('z'.repeat(300_000))
        break
      case '/image':
        response.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47]))
        break
      case '/redirect':
        response.writeHead(302, { location: '/plain' }).end()
        break
      case '/hang':
        held.push(response)
        hangs.emit('request')
        break
      default:
        response.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not here</h1>')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  for (const response of held) response.destroy()
  await new Promise((resolve) => server.close(resolve))
})

let h: ToolsHarness
beforeEach(async () => { h = await toolsHarness({}, { timeoutMs: 300, maxChars: 200_000 }) })
afterEach(async () => { await h.cleanup() })

describe('web_fetch', () => {
  it('is not in the default tool set; loading WebFetchToolPlugin enables it', async () => {
    const plain = await toolsHarness()
    try {
      expect(plain.ctx.tools.get('web_fetch')).toBeUndefined()
      expect(h.ctx.tools.get('web_fetch')).toBeDefined()
      expect(h.ctx.tools.executionMode({ callId: 'c', name: 'web_fetch', arguments: '{"url":"http://127.0.0.1/"}' })).toEqual({ kind: 'parallel' })
    } finally {
      await plain.cleanup()
    }
  })

  it('converts HTML to markdown-ish text: title, headings, resolved links, lists, code; scripts and styles dropped', async () => {
    const record = await h.call('web_fetch', { url: `${base}/page/index.html` })
    expect(record.isError).toBe(false)
    const text = resultText(record)
    expect(text.startsWith(`URL: ${base}/page/index.html\nTitle: Test & Page\n\n`)).toBe(true)
    expect(text).toContain('# Main title')
    expect(text).toContain(`[relative link](${base}/page/docs/intro.html)`)
    expect(text).toContain(`[Home](${base}/home)`)
    expect(text).toContain('**bold**')
    expect(text).toContain('- one\n- two')
    expect(text).toContain('```\nif (a < b) {\n  return 1\n}\n```')
    expect(text).not.toContain('secret')
    expect(text).not.toContain('hidden')
    expect(text).not.toContain('color:red')
    expect(record.meta).toMatchObject({ status: 200, truncated: false })
  })

  it('returns plain text and JSON as they are, following redirects', async () => {
    expect(resultText(await h.call('web_fetch', { url: `${base}/plain` }))).toBe(`URL: ${base}/plain\n\njust text\n`)
    expect(resultText(await h.call('web_fetch', { url: `${base}/json` }))).toBe(`URL: ${base}/json\n\n{"a":1}`)
    expect(resultText(await h.call('web_fetch', { url: `${base}/redirect` }))).toBe(`URL: ${base}/plain\n\njust text\n`)
  })

  it('an HTTP error status is an error result that still shows the body', async () => {
    const record = await h.call('web_fetch', { url: `${base}/missing` })
    expect(record.isError).toBe(true)
    expect(resultText(record)).toBe(`URL: ${base}/missing\nHTTP 404 Not Found\n\n# Not here`)
  })

  it('truncates at maxChars and spills the result over 50 KB', async () => {
    const record = await h.call('web_fetch', { url: `${base}/big` })
    const text = resultText(record)
    expect(Buffer.byteLength(text)).toBeLessThan(50 * 1024)
    const path = (record.meta as { spilled: string[] }).spilled[0]
    expect(text).toContain(path)
    const full = readFileSync(path, 'utf8')
    expect(full.endsWith(`${'z'.repeat(10)}\n\n[truncated at 200000 characters]`)).toBe(true)
    expect(full.length).toBe(`URL: ${base}/big\n\n`.length + 200_000 + '\n\n[truncated at 200000 characters]'.length)
  })

  it('the call signal aborts a fetch in flight', async () => {
    const controller = new AbortController()
    const arrived = once(hangs, 'request')
    const pending = h.call('web_fetch', { url: `${base}/hang` }, { signal: controller.signal })
    await arrived
    controller.abort()
    const record = await pending
    expect(record.error).toEqual({ name: 'WebFetchError', code: 'ABORTED' })
    expect(resultText(record)).toContain('was aborted')
  })

  it('times out, refuses non-text content and non-http URLs with clear errors', async () => {
    const slow = await h.call('web_fetch', { url: `${base}/hang` })
    expect(slow.error).toEqual({ name: 'WebFetchError', code: 'TIMEOUT' })
    expect(resultText(slow)).toContain('timed out after 300 ms')
    const image = await h.call('web_fetch', { url: `${base}/image` })
    expect(image.error?.code).toBe('UNSUPPORTED_CONTENT')
    expect(resultText(image)).toContain('image/png')
    expect(resultText(await h.call('web_fetch', { url: 'file:///etc/passwd' }))).toContain('only http and https')
    expect(resultText(await h.call('web_fetch', { url: 'not a url' }))).toContain('not a valid URL')
  })
})

describe('htmlToMarkdown', () => {
  it('decodes named and numeric entities, leaving unknown ones', () => {
    expect(decodeEntities('&lt;a&gt; &amp; &#65;&#x42; &nbsp;&bogus;')).toBe('<a> & AB  &bogus;')
  })

  it('numbers ordered lists, nests lists, keeps line breaks and table cells', () => {
    const { text } = htmlToMarkdown('<ol start="3"><li>c</li><li>d<ul><li>inner</li></ul></li></ol><p>a<br>b</p><table><tr><td>1</td><td>2</td></tr></table>')
    expect(text).toBe('3. c\n4. d\n  - inner\n\na\nb\n\n1 | 2 |')
  })

  it('never throws on malformed markup', () => {
    expect(htmlToMarkdown('<p>open <a href="x">never closed <script>still').text).toBe('open [never closed')
    expect(htmlToMarkdown('<<>>< p>text').text).toContain('text')
  })
})
