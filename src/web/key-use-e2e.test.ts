/**
 * A stored key's first use with an endpoint in the browser (security #42.2): a real `dsh web`
 * with the key in `$DSH_HOME/.credentials.yaml` and the endpoint (the fake model server) named by
 * the environment. The page's question card asks before the first request: "Do not send" sends
 * nothing, "Send" sends and remembers.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { streamResponse, type FakeDeepSeek } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { KEEP_KEY, SEND_KEY } from './key-use.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web key-use e2e test: ${chromium.reason}`)
const KEY = 'sk-stored-web-key-0123456789'
const usage = { prompt_tokens: 10, completion_tokens: 3 }

describe.skipIf(chromium.path === undefined)('a stored key\'s first use with an endpoint in the web UI', () => {
  let workspace: BrowserWorkspace | undefined
  let fake: FakeDeepSeek
  let page: Page

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({
      name: 'key-use', newSession: true, env: { DEEPSEEK_API_KEY: undefined },
      prepare: ({ home }) => writeFileSync(join(home, '.credentials.yaml'), `DEEPSEEK_API_KEY: ${KEY}\n`, { mode: 0o600 }),
    })
    ;({ fake, page } = workspace)
  }, 600_000)

  afterAll(async () => { await workspace?.close() })

  it('the card asks before the first request: Do not send sends nothing; Send sends the stored key and remembers the endpoint', async () => {
    const record = join(workspace!.home, 'key-endpoints.json')
    await sendFromComposer(page, 'hello')
    const card = page.getByTestId('question-card')
    await card.waitFor()
    expect(await card.getByTestId('question-text').textContent()).toBe(`Send your stored DEEPSEEK_API_KEY to ${fake.url}? It has not been sent there before. DEEPSEEK_BASE_URL from the environment chose it.`)
    expect(fake.requests).toHaveLength(0)
    await card.getByRole('radio', { name: new RegExp(KEEP_KEY) }).check()
    await card.getByTestId('question-submit').click()
    await page.getByText(/KEY_NOT_SENT/).first().waitFor()
    await card.waitFor({ state: 'detached' })
    expect(fake.requests).toHaveLength(0)
    expect(existsSync(record)).toBe(false)

    fake.enqueue(streamResponse([{ text: 'SENT_AFTER_YES' }, { finish: 'stop', usage }]))
    await sendFromComposer(page, 'hello again')
    await card.waitFor()
    expect(fake.requests).toHaveLength(0)
    await card.getByRole('radio', { name: new RegExp(SEND_KEY) }).check()
    await card.getByTestId('question-submit').click()
    await page.getByTestId('assistant-message').filter({ hasText: 'SENT_AFTER_YES' }).waitFor()
    expect(fake.requests).toHaveLength(1)
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(readFileSync(record, 'utf8')).not.toContain(KEY)

    // Known now: no card.
    fake.enqueue(streamResponse([{ text: 'SENT_UNASKED' }, { finish: 'stop', usage }]))
    await sendFromComposer(page, 'once more')
    await page.getByTestId('assistant-message').filter({ hasText: 'SENT_UNASKED' }).waitFor()
    expect(await card.count()).toBe(0)
    expect(fake.requests).toHaveLength(2)
  })
})
