/**
 * web_search in the browser (#44.8): a real `dsh web` whose settings name a search provider of
 * the user's own (a local fake search API over real HTTP); the model (the fake DeepSeek server)
 * calls web_search. The conversation shows one search card titled by the queries, with the
 * source count, and opened, the sources as links (a non-http "result" is not one).
 */
import { createServer, type Server } from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web search card test: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

describe.skipIf(chromium.path === undefined)('web_search in the web UI (#44.8)', () => {
  let fake: FakeDeepSeek
  let page: Page
  let workspace: BrowserWorkspace | undefined
  let search: Server
  const queries: string[] = []
  const errors: string[] = []

  beforeAll(async () => {
    search = createServer((request, response) => {
      queries.push(new URL(request.url ?? '/', 'http://x').searchParams.get('q') ?? '')
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ hits: [
        { link: 'https://docs.example/start', title: 'Getting started', text: 'Install and run' },
        { link: 'javascript:alert(1)', title: 'Not a link' },
      ] }))
    })
    await new Promise<void>(resolve => search.listen(0, '127.0.0.1', resolve))
    const origin = `http://127.0.0.1:${(search.address() as { port: number }).port}`
    workspace = await openBrowserWorkspace({
      name: 'web-search', newSession: true,
      prepare: ({ home }) => {
        writeFileSync(join(home, 'settings.yaml'), `webSearch:\n  provider: local\n  providers:\n    local:\n      url: "${origin}/s?q={query}"\n      results: hits\n      fields: { url: link, snippet: text }\n`)
      },
    })
    ;({ fake, page } = workspace)
    page.on('console', message => { if (message.type() === 'error') errors.push(message.text()) })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
    await new Promise(resolve => search.close(resolve))
  })

  it('one card titled by the queries, the source count, and the sources as links', async () => {
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'ws1', name: 'web_search', arguments: JSON.stringify({ queries: ['dsh start', 'dsh install'] }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'SEARCH_DONE' }, { finish: 'stop', usage }]),
    )
    await sendFromComposer(page, 'search the web')
    await page.getByTestId('assistant-message').filter({ hasText: 'SEARCH_DONE' }).waitFor()
    expect(queries.sort()).toEqual(['dsh install', 'dsh start'])
    const card = page.getByTestId('card-web-search')
    expect(await card.count()).toBe(1)
    const head = card.locator('.tool-head')
    expect(await head.locator('.tool-title').textContent()).toBe('Search dsh start, dsh install')
    // The two queries found the same sources: merged; the javascript: one is no source.
    expect(await head.locator('.tool-meta').textContent()).toBe('1 source')
    await head.click()
    const link = card.locator('.search-sources a')
    expect(await link.count()).toBe(1)
    expect(await link.getAttribute('href')).toBe('https://docs.example/start')
    expect(await link.textContent()).toBe('Getting started')
    expect(await card.locator('.search-sources li').allTextContents()).toEqual(['Getting started — Install and run'])
    expect(errors).toEqual([])
  })
})
