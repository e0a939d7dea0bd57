/**
 * Plan mode in the browser (PM-1, PM-2): a real `dsh web`; `/plan` from the composer turns plan
 * mode on, the model presents a plan with exit_plan_mode, headless Chromium clicks Keep planning
 * on the first card and Approve on the second.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { ensureWebBuild, findChromium } from '../../test-support/chromium.js'
import { startDshWeb, type DshWeb } from '../../test-support/web-process.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web plan-mode e2e tests: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

const presentPlan = (id: string, plan: string) => streamResponse([
  { toolCall: { id, name: 'exit_plan_mode', arguments: JSON.stringify({ plan }) } },
  { finish: 'tool_calls', usage },
])

describe.skipIf(chromium.path === undefined)('plan mode in the web UI', () => {
  let fake: FakeDeepSeek
  let web: DshWeb
  let browser: Browser
  let page: Page

  beforeAll(async () => {
    ensureWebBuild(repoRoot)
    fake = await FakeDeepSeek.start()
    const home = mkdtempSync(join(tmpdir(), 'dsh-web-plan-home-'))
    const work = mkdtempSync(join(tmpdir(), 'dsh-web-plan-work-'))
    writeFileSync(join(home, 'test.patch.yml'), '- id: session-title\n  config:\n    llm: false\n')
    web = await startDshWeb({
      cwd: work,
      args: ['--patch', join(home, 'test.patch.yml'), '--port', '0', '--token', 'plan-token-0123456789abcdef0123'],
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: fake.url, DEEPSEEK_API_KEY: 'test-key' },
    })
    const { chromium: launcher } = await import('playwright-core')
    browser = await launcher.launch({ executablePath: chromium.path, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
    page = await browser.newPage({ viewport: { width: 1280, height: 820 } })
    page.on('pageerror', error => console.error('page error:', error))
    await page.goto(web.url)
    await page.getByTestId('create-session').click()
    await page.getByTestId('composer').waitFor()
  }, 600_000)

  afterAll(async () => {
    await browser?.close()
    await web?.stop()
    await fake?.close()
  })

  const prompt = async (text: string) => {
    await page.getByTestId('composer').fill(text)
    await page.getByTestId('composer').press('Enter')
  }

  it('PM-2: the plan shows as a card; Keep planning keeps plan mode, Approve leaves it', async () => {
    fake.enqueue(
      presentPlan('p1', '# First plan\n\n- step one'),
      streamResponse([{ text: 'REVISING' }, { finish: 'stop', usage }]),
      presentPlan('p2', '# Second plan\n\n- better step'),
      streamResponse([{ text: 'CARRYING_OUT' }, { finish: 'stop', usage }]),
    )
    await prompt('/plan design the change')
    const first = page.getByTestId('plan-card').first()
    await first.getByTestId('plan-keep-planning').waitFor()
    expect(await first.locator('h1').textContent()).toBe('First plan')
    await first.getByTestId('plan-keep-planning').click()
    await first.getByTestId('plan-outcome').filter({ hasText: 'Kept planning' }).waitFor()
    await page.getByTestId('assistant-message').filter({ hasText: 'REVISING' }).waitFor()
    await prompt('try again')
    const second = page.getByTestId('plan-card').nth(1)
    await second.getByTestId('plan-approve').click()
    await second.getByTestId('plan-outcome').filter({ hasText: 'Plan approved' }).waitFor()
    await page.getByTestId('assistant-message').filter({ hasText: 'CARRYING_OUT' }).waitFor()
    const bodies = fake.requests.map(r => JSON.stringify(r.body))
    expect(bodies[1]).toContain('keep planning')
    expect(bodies[3]).toContain('{\\"approved\\":true}')
    expect(bodies[3]).toContain('Plan mode is off')
  })
})
