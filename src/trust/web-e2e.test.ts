/**
 * Project trust in the web UI, in headless Chromium against a real `dsh web` started in a folder
 * whose `.claude/settings.json` holds hooks and whose `.mcp.json` names a server: the banner says
 * what would run, "Not now" hides it for the page, "Trust and start" trusts the folder as
 * `/trust on` does. Screenshots at 1280 and 390 px in test-output/web.
 */
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { repoRoot } from '../../test-support/run-dsh.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping project trust web e2e tests: ${chromium.reason}`)
const shots = join(repoRoot, 'test-output', 'web')

describe.skipIf(chromium.path === undefined)('project trust in dsh web', () => {
  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({
      name: 'trust',
      prepare: ({ work }) => {
        mkdirSync(join(work, '.claude'))
        writeFileSync(join(work, '.claude', 'settings.json'), JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'true' }] }] } }))
        writeFileSync(join(work, '.mcp.json'), JSON.stringify({ mcpServers: { proj: { command: 'node', args: ['server.js'] } } }))
      },
    })
    mkdirSync(shots, { recursive: true })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  it('the banner lists what waits for trust; Not now hides it for the page; Trust and start trusts the folder', async () => {
    const { web, browser, page, home, work } = workspace!
    await page.goto(web.url)
    const banner = page.getByTestId('trust-banner')
    await banner.waitFor()
    const text = await banner.textContent()
    expect(text).toContain(realpathSync(work))
    expect(text).toContain('hooks   .claude/settings.json (PreToolUse)')
    expect(text).toContain('MCP     proj: node server.js')
    await page.screenshot({ path: join(shots, 'trust-banner-1280.png') })
    const narrow = await browser.newPage({ viewport: { width: 390, height: 760 } })
    try {
      await narrow.goto(web.url)
      await narrow.getByTestId('trust-banner').waitFor()
      await narrow.screenshot({ path: join(shots, 'trust-banner-390.png') })
      await narrow.getByTestId('trust-later').click()
      expect(await narrow.getByTestId('trust-banner').count()).toBe(0)
    } finally {
      await narrow.close()
    }

    // Declined in the confirmation: nothing is trusted.
    page.once('dialog', dialog => { void dialog.dismiss() })
    await page.getByTestId('trust-on').click()
    expect(await banner.count()).toBe(1)
    expect(() => readFileSync(join(home, 'trusted-projects.json'), 'utf8')).toThrow()

    page.once('dialog', dialog => { void dialog.accept() })
    await page.getByTestId('trust-on').click()
    await banner.waitFor({ state: 'detached' })
    expect(JSON.parse(readFileSync(join(home, 'trusted-projects.json'), 'utf8')).projects).toContain(realpathSync(work))
    // Trusted, a new page shows no banner.
    const answered = page.waitForResponse(response => response.url().endsWith('/api/trust.status'))
    await page.reload()
    expect((await (await answered).json()).result.needsTrust).toBe(false)
    await page.getByTestId('new-session').waitFor()
    expect(await page.getByTestId('trust-banner').count()).toBe(0)
  })
})
