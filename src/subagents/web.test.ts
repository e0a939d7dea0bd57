/**
 * Delegation in the browser (issue item 6): headless Chromium against a real `dsh web` whose
 * model is the fake DeepSeek server. A foreground child shows up inline in the parent's
 * conversation as a card with its label, live status and latest line; the sidebar nests it under
 * its parent; the child's own page links back to the parent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { type DshWeb } from '../../test-support/web-process.js'
import { gate } from '../../test-support/gate.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the delegation web test: ${chromium.reason}`)

describe.skipIf(chromium.path === undefined)('delegation in the web UI', () => {
  let fake: FakeDeepSeek
  let web: DshWeb
  let browser: Browser
  let page: Page

  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'subagents' })
    ;({ fake, web, browser, page } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  it('shows a running child as a card in the parent conversation, nests it in the sidebar, and links back from the child', async () => {
    const hold = gate()
    fake.enqueue(
      streamResponse([
        { toolCall: { id: 'call-child', name: 'subagent', arguments: JSON.stringify({ description: 'Count the files', prompt: 'Count the files here.', run_in_background: false }) } },
        { finish: 'tool_calls' },
      ]),
      // The child's first step: a visible line, then held until the card showed it running.
      streamResponse([{ text: 'Looking at the folder' }, { toolCall: { id: 'call-ls', name: 'bash', arguments: JSON.stringify({ command: 'echo scanning', description: 'Scan' }) } }, { finish: 'tool_calls' }]),
      streamResponse([{ until: hold.promise }, { text: 'There are 3 files.' }, { finish: 'stop' }]),
      streamResponse([{ text: 'The child counted 3 files.' }, { finish: 'stop' }]),
    )
    await page.goto(web.url)
    await page.getByTestId('create-session').click()
    await page.getByTestId('composer').waitFor()
    const parentUrl = page.url()
    await page.getByTestId('composer').fill('delegate the counting')
    await page.getByTestId('composer').press('Enter')

    const card = page.getByTestId('card-subagent')
    await card.filter({ hasText: 'Count the files' }).waitFor()
    // Live while the child works: running status and its latest line (its bash call).
    await expect.poll(() => card.getByTestId('subagent-status').textContent()).toBe('running')
    await expect.poll(() => card.getByTestId('subagent-line').textContent()).toBe('→ bash')
    // The sidebar nests the child under the parent.
    await page.getByTestId('child-session-row').filter({ hasText: 'Count the files' }).waitFor()
    hold.open()
    await page.locator('.markdown', { hasText: 'The child counted 3 files.' }).waitFor()
    await expect.poll(() => card.getByTestId('subagent-status').textContent()).toBe('idle')
    await expect.poll(() => card.getByTestId('subagent-line').textContent()).toBe('There are 3 files.')

    // Open the child's own conversation; it links back to the parent.
    await card.getByTestId('open-subagent').click()
    await page.locator('.markdown', { hasText: 'There are 3 files.' }).waitFor()
    expect(page.url()).not.toBe(parentUrl)
    await page.getByTestId('parent-link').click()
    await page.locator('.markdown', { hasText: 'The child counted 3 files.' }).waitFor()
    expect(page.url()).toBe(parentUrl)
  }, 120_000)
})
