/**
 * Every recorded web-lane session log of the corpus (../shared/fixtures/dsh/apps/web, HARNESS
 * class: several in older event shapes such as `turn/start.trigger` and
 * `assistant/message.content`) opens in `dsh web` without a console error or a page error: it is
 * drawn, or what cannot be read is named in one notice. The logs are written into a temporary
 * store at test time (test-support/web-fixtures.ts); the test skips when the corpus is absent.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { storeWebFixtures, webFixtureRoot, webFixtures, type WebFixture } from '../../test-support/web-fixtures.js'

const chromium = findChromium()
const fixtures = webFixtures()
if (chromium.path === undefined) console.warn(`skipping the web fixture rendering test: ${chromium.reason}`)
else if (fixtures.length === 0) console.warn(`skipping the web fixture rendering test: no recorded web-lane logs at ${webFixtureRoot} (the shared corpus is absent)`)

describe.skipIf(chromium.path === undefined || fixtures.length === 0)('recorded web-lane session logs in the web UI', () => {
  let page: Page
  let workspace: BrowserWorkspace | undefined
  let stored: { fixture: WebFixture; id: string }[] = []
  const problems: string[] = []

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({
      name: 'fixtures',
      prepare: async ({ home, work }) => { stored = await storeWebFixtures(join(home, 'sessions'), work) },
    })
    page = workspace.page
    await page.goto(workspace.web.url)
    page.on('console', message => { if (message.type() === 'error') problems.push(`console: ${message.text()}`) })
    page.on('pageerror', error => problems.push(`page error: ${error.message}`))
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  it('stores every fixture', () => {
    expect(stored.map(entry => entry.fixture.name)).toEqual(fixtures.map(fixture => fixture.name))
  })

  /** What some of them must show (older shapes included): a text the conversation contains. */
  const shows: Record<string, string> = {
    'fresh-round-trip/session.jsonl': 'WEB_E2E_OK',
    'seeded-history/seed.jsonl': 'DONE',
    'navigation-panes/seed.jsonl': 'NAVIGATION_OK',
    'goal-multi-turn-actions/session.jsonl': 'Goal complete after 2 rounds',
  }

  it.each(fixtures.map(fixture => fixture.name))('%s renders without a console error', async (name) => {
    const { id } = stored.find(entry => entry.fixture.name === name)!
    problems.length = 0
    // The calls a conversation makes when it opens; their answers are in before the console is read.
    const answered = Promise.all(['sessions.history', 'permission.get', 'models.list'].map(method => page.waitForResponse(response => response.url().endsWith(`/api/${method}`))))
    await page.goto(`${workspace!.web.origin}/?session=${id}`)
    await answered
    await page.getByTestId('composer').waitFor()
    await page.locator('.loading').waitFor({ state: 'detached' })
    // Something is drawn: items (each in its anchor), or the empty conversation's note.
    const rows = await page.locator('.conversation-inner .item-anchor, .conversation-inner .row, .conversation-inner .empty-chat').count()
    expect(rows).toBeGreaterThan(0)
    if (shows[name] !== undefined) await page.getByTestId('conversation').filter({ hasText: shows[name] }).waitFor()
    expect(problems).toEqual([])
  })
})
