/**
 * Plan mode in the browser (PM-1, PM-2): a real `dsh web`; `/plan` from the composer turns plan
 * mode on, the model presents a plan with exit_plan_mode, headless Chromium clicks Keep planning
 * on the first card and Approve on the second.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { type DshWeb } from '../../test-support/web-process.js'

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

  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'plan', newSession: true })
    ;({ fake, web, browser, page } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const prompt = (text: string) => sendFromComposer(page, text)

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
    // PM-1: plan mode is on, and the state bar above the composer says so.
    await page.getByTestId('plan-mode').waitFor()
    expect(await first.locator('h1').textContent()).toBe('First plan')
    await first.getByTestId('plan-keep-planning').click()
    await first.getByTestId('plan-outcome').filter({ hasText: 'Kept planning' }).waitFor()
    await page.getByTestId('assistant-message').filter({ hasText: 'REVISING' }).waitFor()
    await prompt('try again')
    const second = page.getByTestId('plan-card').nth(1)
    await second.getByTestId('plan-approve').click()
    await second.getByTestId('plan-outcome').filter({ hasText: 'Plan approved' }).waitFor()
    await page.getByTestId('assistant-message').filter({ hasText: 'CARRYING_OUT' }).waitFor()
    // The approved plan turned plan mode off: the pill is gone.
    await expect.poll(() => page.getByTestId('plan-mode').count()).toBe(0)
    const bodies = fake.requests.map(r => JSON.stringify(r.body))
    expect(bodies[1]).toContain('keep planning')
    expect(bodies[3]).toContain('{\\"approved\\":true}')
    expect(bodies[3]).toContain('Plan mode is off')
  })
})
