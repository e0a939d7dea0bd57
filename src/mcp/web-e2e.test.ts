/**
 * The MCP parts of the web UI in headless Chromium against a real `dsh web` process: the
 * settings list (state, tools, enable toggle), the one-time trust of the project's `.mcp.json`,
 * and the MCP tool card when the fake model calls an MCP tool.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { writeSettings } from '../config/home.js'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { testServerEntry } from '../../test-support/mcp.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { type DshWeb } from '../../test-support/web-process.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping MCP web e2e tests: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

describe.skipIf(chromium.path === undefined)('MCP in dsh web', () => {
  let fake: FakeDeepSeek
  let web: DshWeb
  let browser: Browser
  let page: Page

  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({
      name: 'mcp',
      prepare: ({ home, work }) => {
        writeSettings(home, { mcpServers: { mine: testServerEntry() } })
        writeFileSync(join(work, '.mcp.json'), JSON.stringify({ mcpServers: { proj: testServerEntry() } }))
      },
    })
    ;({ fake, web, browser, page } = workspace)
    page.on('dialog', dialog => { void dialog.accept() })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  it('settings list servers, trust starts the project servers, the toggle turns one off', async () => {
    await page.goto(web.url)
    await page.getByTestId('open-settings').click()
    const mine = page.getByTestId('mcp-server-mine')
    await mine.waitFor()
    expect(await mine.locator('summary').textContent()).toContain('connected')
    expect(await mine.locator('summary').textContent()).toContain('9 tools')
    expect(await page.getByTestId('mcp-server-proj').locator('summary').textContent()).toContain('untrusted')
    await page.getByTestId('mcp-trust').getByRole('button').click()
    await page.getByTestId('mcp-server-proj').locator('.badge', { hasText: 'connected' }).waitFor()
    expect(await page.getByTestId('mcp-trust').count()).toBe(0)
    await mine.locator('input[type=checkbox]').click()
    await mine.locator('.badge', { hasText: 'disabled' }).waitFor()
    await mine.locator('input[type=checkbox]').click()
    await mine.locator('.badge', { hasText: 'connected' }).waitFor()
  })

  it('an MCP call shows a card with server, tool, arguments and result', async () => {
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-1', name: 'mcp__proj__echo', arguments: '{"text":"card text"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Echoed.' }, { finish: 'stop', usage }]),
    )
    await page.goto(web.url)
    await page.getByTestId('create-session').click()
    await page.getByTestId('composer').fill('echo something')
    await page.getByTestId('composer').press('Enter')
    const card = page.getByTestId('card-mcp')
    await card.waitFor()
    await page.locator('.markdown', { hasText: 'Echoed.' }).waitFor()
    expect(await card.locator('.tool-title').textContent()).toBe('proj echo')
    await card.locator('.tool-head').click()
    const body = await card.locator('.tool-body').textContent()
    expect(body).toContain('"text": "card text"')
    expect(body).toContain('card text')
  })
})
