/**
 * What the browser benchmarks share: a fresh home seeded with one stored session, a real
 * `dsh web` on it, headless Chromium, and a page that has traded the token for the cookie, so a
 * timed load is the app alone. `close` stops both and removes the home.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { findChromium, ensureWebBuild } from '../../test-support/chromium.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { startDshWeb } from '../../test-support/web-process.js'

export interface WebBench {
  readonly home: string
  /** The seeded session. */
  readonly id: string
  readonly web: Awaited<ReturnType<typeof startDshWeb>>
  readonly browser: Browser
  readonly page: Page
  close(): Promise<void>
}

/** Undefined, after printing why, when there is no Chromium. */
export async function openWebBench(name: string, seed: (home: string) => Promise<string>): Promise<WebBench | undefined> {
  const browserPath = findChromium()
  if (browserPath.path === undefined) {
    console.log(`skipped: ${browserPath.reason}`)
    return undefined
  }
  ensureWebBuild(repoRoot)
  const home = mkdtempSync(join(tmpdir(), `dsh-${name}-bench-`))
  const id = await seed(home)
  const web = await startDshWeb({ cwd: home, args: ['--port', '0'], env: { DSH_HOME: home } })
  const browser = await chromium.launch({ executablePath: browserPath.path, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
  const close = async () => {
    await browser.close()
    await web.stop()
    rmSync(home, { recursive: true, force: true })
  }
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 820 } })
    await page.goto(web.url)
    return { home, id, web, browser, page, close }
  } catch (error) {
    await close()
    throw error
  }
}
