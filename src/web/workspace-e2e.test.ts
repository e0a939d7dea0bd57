/**
 * The folder picker and Archive in the browser (issue 16, item 12): headless Chromium against a
 * real `dsh web`. Browse opens the server's folders (hidden ones only on request), navigates in
 * and up, and a session starts in the chosen folder, which then shows among the recent folders.
 * Archive hides a session from the list, the Archived view shows it, Restore brings it back.
 * Screenshots at 1400 and 390 px go to test-output/web/.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { type DshWeb } from '../../test-support/web-process.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web workspace tests: ${chromium.reason}`)

const shots = join(repoRoot, 'test-output', 'web')
const usage = { prompt_tokens: 100, completion_tokens: 10 }

describe.skipIf(chromium.path === undefined)('folder picker and archive (browser)', () => {
  let fake: FakeDeepSeek
  let web: DshWeb
  let page: Page
  let work: string
  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    workspace = await openBrowserWorkspace({
      name: 'folders',
      viewport: { width: 1400, height: 860 },
      prepare: ({ work }) => {
        for (const folder of ['projects/alpha/src', 'projects/beta', '.hidden-one', 'notes']) mkdirSync(join(work, folder), { recursive: true })
      },
    })
    ;({ fake, web, page } = workspace)
    work = realpathSync(workspace.work)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const entries = () => page.getByTestId('folder-entry').allTextContents()
  const folderPath = () => page.getByTestId('folder-path').textContent()

  it('12: Browse navigates the server\'s folders and the session starts in the chosen one', async () => {
    await page.goto(web.url)
    await page.getByTestId('browse-folders').click()
    await expect.poll(folderPath).toBe(work)
    await expect.poll(entries).toEqual(['▸notes', '▸projects'])
    await page.getByTestId('folder-hidden').check()
    await expect.poll(entries).toEqual(['▸.hidden-one', '▸notes', '▸projects'])
    await page.getByTestId('folder-hidden').uncheck()
    await page.getByTestId('folder-entry').filter({ hasText: 'projects' }).click()
    await expect.poll(folderPath).toBe(join(work, 'projects'))
    await page.getByTestId('folder-entry').filter({ hasText: 'alpha' }).click()
    await expect.poll(folderPath).toBe(join(work, 'projects', 'alpha'))
    await page.getByTestId('folder-up').click()
    await expect.poll(folderPath).toBe(join(work, 'projects'))
    await page.getByTestId('folder-entry').filter({ hasText: 'alpha' }).click()
    await expect.poll(entries).toEqual(['▸src'])
    await page.screenshot({ path: join(shots, 'folder-picker-1400.png') })
    await page.setViewportSize({ width: 390, height: 800 })
    await page.screenshot({ path: join(shots, 'folder-picker-390.png') })
    const box = await page.getByTestId('folder-browser').boundingBox()
    expect(box!.x + box!.width).toBeLessThanOrEqual(390)
    await page.setViewportSize({ width: 1400, height: 860 })
    await page.getByTestId('folder-use').click()
    expect(await page.getByTestId('new-cwd').inputValue()).toBe(join(work, 'projects', 'alpha'))
    await page.getByTestId('create-session').click()
    await page.getByTestId('composer').waitFor()
    await page.locator('.chat-sub').getByText(join(work, 'projects', 'alpha'), { exact: true }).waitFor()
    fake.enqueue(streamResponse([{ text: 'Ready in alpha.' }, { finish: 'stop', usage }]))
    await page.getByTestId('composer').fill('Where am I?')
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('assistant-message').filter({ hasText: 'Ready in alpha.' }).waitFor()
    // The folder is now a recent one on the New session page.
    await page.getByTestId('new-session').click()
    await page.getByTestId('recent-folder').filter({ hasText: 'alpha' }).click()
    expect(await page.getByTestId('new-cwd').inputValue()).toBe(join(work, 'projects', 'alpha'))
  })

  it('12: a bad typed path shows why and the browser opens the default folder instead', async () => {
    await page.getByTestId('new-cwd').fill('relative/path')
    await page.getByTestId('browse-folders').click()
    await expect.poll(folderPath).toBe(work)
    await page.getByTestId('browse-folders').click()
  })

  it('12: Archive hides a session from the list; the Archived view lists it; Restore brings it back', async () => {
    const title = 'Where am I?'
    const row = () => page.getByTestId('session-row').filter({ hasText: title })
    await row().click()
    await page.getByTestId('archive').click()
    await expect.poll(() => row().count()).toBe(0)
    await page.getByTestId('archived-toggle').filter({ hasText: 'Archived (1)' }).click()
    await row().waitFor()
    await page.screenshot({ path: join(shots, 'archived-1400.png') })
    // The default list of the API leaves it out; asking for archived sessions shows it.
    const listed = await page.evaluate(async () => {
      const list = async (params: object) => (await (await fetch('/api/sessions.list', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(params) })).json()).result
      return { plain: (await list({})).length, archived: (await list({ archived: 'only' })).map((s: { title: string }) => s.title) }
    })
    expect(listed).toEqual({ plain: 0, archived: [title] })
    // On a phone the Archived view is in the drawer.
    await page.setViewportSize({ width: 390, height: 800 })
    await page.getByTestId('menu-button').click()
    await row().waitFor()
    await page.screenshot({ path: join(shots, 'archived-390.png') })
    await page.keyboard.press('Escape')
    await page.setViewportSize({ width: 1400, height: 860 })
    await row().click()
    await page.getByTestId('restore').click()
    await expect.poll(() => page.getByTestId('archived-toggle').textContent()).toBe('← Back to sessions')
    await page.getByTestId('archived-toggle').click()
    await row().waitFor()
    await expect.poll(() => page.getByTestId('archived-toggle').count()).toBe(0)
    // After a reload (state from the server), it is still in the list.
    await page.reload()
    await row().waitFor()
  })
})
