/**
 * One browser test's workspace: the fake DeepSeek server, a real `dsh web` (bin/dsh.js over
 * dist/) in a fresh home and folder, and a headless Chromium page on it. Titles are the
 * fallback (no extra model call); `patchRows` adds rows to the test patch.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { ensureWebBuild, findChromium } from './chromium.js'
import { FakeDeepSeek } from './fake-deepseek.js'
import { repoRoot } from './run-dsh.js'
import { startDshWeb, type DshWeb } from './web-process.js'

export interface BrowserWorkspace {
  readonly fake: FakeDeepSeek
  readonly web: DshWeb
  readonly browser: Browser
  readonly page: Page
  readonly home: string
  readonly work: string
  close(): Promise<void>
}

export interface BrowserWorkspaceOptions {
  /** Names the temp folders and the token. */
  readonly name: string
  /** YAML rows appended to the test patch (a function gets the fake model server's URL). */
  readonly patchRows?: string | ((fakeUrl: string) => string)
  readonly viewport?: { readonly width: number; readonly height: number }
  /** Runs before `dsh web` starts (settings, project files). */
  readonly prepare?: (dirs: { readonly home: string; readonly work: string }) => void | Promise<void>
  /** Environment of `dsh web` over the defaults (e.g. `DEEPSEEK_API_KEY: undefined` for a first run). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Open the app and start a session, waiting for the composer. */
  readonly newSession?: boolean
}

export async function openBrowserWorkspace(options: BrowserWorkspaceOptions): Promise<BrowserWorkspace> {
  const chromium = findChromium()
  if (chromium.path === undefined) throw new Error(`no Chromium: ${chromium.reason}`)
  ensureWebBuild(repoRoot)
  const home = mkdtempSync(join(tmpdir(), `dsh-web-${options.name}-home-`))
  const work = mkdtempSync(join(tmpdir(), `dsh-web-${options.name}-work-`))
  await options.prepare?.({ home, work })
  const fake = await FakeDeepSeek.start()
  const rows = typeof options.patchRows === 'function' ? options.patchRows(fake.url) : options.patchRows ?? ''
  writeFileSync(join(home, 'test.patch.yml'), `- id: session-title\n  config:\n    llm: false\n${rows}`)
  let web: DshWeb | undefined
  let browser: Browser | undefined
  try {
    web = await startDshWeb({
      cwd: work,
      args: ['--patch', join(home, 'test.patch.yml'), '--port', '0', '--token', `${options.name}-token-0123456789abcdef`],
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: fake.url, DEEPSEEK_API_KEY: 'test-key', DSH_NETWORK: 'full', ...options.env },
    })
    const { chromium: launcher } = await import('playwright-core')
    browser = await launcher.launch({ executablePath: chromium.path, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
    const page = await browser.newPage({ viewport: options.viewport ?? { width: 1280, height: 820 } })
    page.on('pageerror', error => console.error('page error:', error))
    if (options.newSession === true) {
      await page.goto(web.url)
      await page.getByTestId('create-session').click()
      await page.getByTestId('composer').waitFor()
    }
    const opened = { web, browser }
    return {
      fake, web, browser, page, home, work,
      async close() {
        await opened.browser.close()
        await opened.web.stop()
        await fake.close()
      },
    }
  } catch (error) {
    await browser?.close()
    await web?.stop()
    await fake.close()
    throw error
  }
}

/** Types `text` into the composer and sends it with Enter, as a user does. */
export async function sendFromComposer(page: Page, text: string): Promise<void> {
  await page.getByTestId('composer').fill(text)
  await page.getByTestId('composer').press('Enter')
}
