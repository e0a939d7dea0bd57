/**
 * Browser tests for the workspace capabilities of `dsh web` (issue items 11, 13, 14, 15): headless
 * Chromium against a real `dsh web` whose model is the fake DeepSeek server over HTTP.
 * `@` mentions reach the model request; `/` completion works from the keyboard; the trajectory
 * panel shows the numbers of the log; content search finds a tool's output in another session
 * and opens it there; a first run without a key shows the onboarding, and a provider added there
 * (models discovered from its `/models`) takes the next prompt. Screenshots at 1400 and 390 px
 * go to test-output/web/workspace-*.png.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { streamResponse, type FakeDeepSeek } from '../../test-support/fake-deepseek.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web workspace tests: ${chromium.reason}`)

const shots = join(repoRoot, 'test-output', 'web')
const PRICE = { input: 0.5, output: 2, cacheRead: 0.1 }

/** The same rendering as the page's (cards.tsx formatMs, trajectory.tsx money). */
function ms(value: number): string {
  if (value < 1000) return `${Math.round(value)} ms`
  if (value < 60_000) return `${(value / 1000).toFixed(1)} s`
  return `${Math.floor(value / 60_000)}m ${Math.round((value % 60_000) / 1000)}s`
}
function money(usd: number): string {
  return usd === 0 ? '$0' : usd < 0.01 ? `$${usd.toPrecision(2)}` : `$${usd.toFixed(2)}`
}

async function api(page: Page, origin: string, method: string, params: Record<string, unknown>): Promise<any> {
  const response = await page.request.post(`${origin}/api/${method}`, { data: params, headers: { 'Content-Type': 'application/json' } })
  expect(response.status()).toBe(200)
  return (await response.json()).result
}

describe.skipIf(chromium.path === undefined)('dsh web workspace (browser)', () => {
  let workspace: BrowserWorkspace | undefined
  let fake: FakeDeepSeek
  let page: Page

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    workspace = await openBrowserWorkspace({
      name: 'workspace',
      viewport: { width: 1400, height: 860 },
      newSession: true,
      prepare: ({ home, work }) => {
        mkdirSync(join(work, 'notes'), { recursive: true })
        mkdirSync(join(work, 'src'), { recursive: true })
        writeFileSync(join(work, 'notes', 'meeting-minutes.md'), '# Minutes\nThe launch code word is marmalade-7781.\n')
        writeFileSync(join(work, 'src', 'app.ts'), 'export const app = 1\n')
        writeFileSync(join(home, 'settings.yaml'), `model:\n  prices:\n    deepseek-v4-flash: { input: ${PRICE.input}, output: ${PRICE.output}, cacheRead: ${PRICE.cacheRead} }\n`)
      },
    })
    ;({ fake, page } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const idle = () => expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
  const sessionId = () => new URL(page.url()).searchParams.get('session')!

  it('11: an @ mention is completed from the workspace files and its content reaches the model request', async () => {
    fake.enqueue(streamResponse([{ text: 'The code word is marmalade-7781.' }, { finish: 'stop', usage: { prompt_tokens: 50, completion_tokens: 8 } }]))
    const composer = page.getByTestId('composer')
    await composer.fill('what do @meet')
    const menu = page.getByTestId('mention-menu')
    await menu.waitFor()
    expect(await menu.getByRole('option').first().textContent()).toContain('meeting-minutes.md')
    await page.screenshot({ path: join(shots, 'workspace-mention-1400.png') })
    await composer.press('Enter')
    await expect.poll(() => composer.inputValue()).toBe('what do @notes/meeting-minutes.md ')
    await composer.pressSequentially('say?')
    const requests = fake.requests.length
    await composer.press('Enter')
    await page.locator('.markdown', { hasText: 'The code word is marmalade-7781.' }).waitFor()
    const body = JSON.stringify(fake.requests[requests]!.body.messages)
    expect(body).toContain('what do @notes/meeting-minutes.md say?')
    expect(body).toContain('<file path=\\"notes/meeting-minutes.md\\">\\n# Minutes\\nThe launch code word is marmalade-7781.\\n</file>')
    // The bubble shows what was typed and the attached file by name, not the file's text.
    const bubble = page.getByTestId('user-message').last()
    expect(await bubble.locator('.bubble').textContent()).toBe('what do @notes/meeting-minutes.md say?')
    expect(await bubble.getByTestId('references').textContent()).toContain('notes/meeting-minutes.md')
    // The fallback title is made of the typed words, not the attached file.
    await expect.poll(() => page.getByTestId('chat-title').textContent()).toBe('what do @notes/meeting-minutes.md say?')
    await page.screenshot({ path: join(shots, 'workspace-references-1400.png') })
    await idle()
  })

  it('11: / completes commands from the registry with arrows, Enter/Tab and Escape', async () => {
    const composer = page.getByTestId('composer')
    await composer.fill('/')
    const menu = page.getByTestId('command-menu')
    await menu.waitFor()
    const names = await menu.locator('code').allTextContents()
    expect(names).toContain('/model')
    expect(names).toContain('/compact')
    expect(await menu.getByRole('option').first().getAttribute('aria-selected')).toBe('true')
    await composer.press('ArrowDown')
    expect(await menu.getByRole('option').nth(1).getAttribute('aria-selected')).toBe('true')
    await composer.press('Escape')
    await menu.waitFor({ state: 'detached' })
    expect(await composer.inputValue()).toBe('/')
    await composer.fill('/mod')
    await menu.waitFor()
    await composer.press('Tab')
    await expect.poll(() => composer.inputValue()).toBe('/model ')
    await composer.fill('/comp')
    await menu.waitFor()
    await composer.press('Enter')
    await expect.poll(() => composer.inputValue()).toBe('/compact ')
    // With the menu closed, Enter sends: /model without a name shows the current route.
    await composer.fill('/model')
    await menu.waitFor()
    await composer.press('Escape')
    await composer.press('Enter')
    const outcome = page.getByTestId('notice').filter({ hasText: 'deepseek-v4-flash' }).first()
    await outcome.waitFor()
    // A command's text is drawn as a terminal would: spaces kept (tables such as /mcp line up), monospace.
    expect(await outcome.evaluate(node => [getComputedStyle(node).whiteSpace, node.className])).toEqual(['pre-wrap', 'notice info output'])
  })

  it('13: the trajectory shows each step\'s model time, tokens, tool time and the cost, as the log says', async () => {
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-t', name: 'bash', arguments: JSON.stringify({ command: 'echo trajectory-run', description: 'Echo' }) } },
        { finish: 'tool_calls', usage: { prompt_tokens: 1200, completion_tokens: 30, prompt_cache_hit_tokens: 1000 } }]),
      streamResponse([{ text: 'Done with the trajectory.' }, { finish: 'stop', usage: { prompt_tokens: 1500, completion_tokens: 20 } }]),
    )
    await page.getByTestId('composer').fill('run something for the trajectory')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'Done with the trajectory.' }).waitFor()
    await idle()

    // Expected numbers, from the exported log.
    const { jsonl } = await api(page, workspace!.web.origin, 'sessions.export', { id: sessionId() })
    const events = (jsonl as string).trim().split('\n').slice(1).map(line => JSON.parse(line))
    const lastTurn = Math.max(...events.filter(event => event.type === 'turn/start').map(event => event.data.turn))
    const inTurn = events.filter(event => event.data?.turn === lastTurn)
    const steps = inTurn.filter(event => event.type === 'step/start').map(start => {
      const own = inTurn.filter(event => event.data.step === start.data.step)
      const chunks = own.filter(event => event.type === 'assistant/chunk')
      const message = own.find(event => event.type === 'assistant/message')
      const call = own.find(event => event.type === 'tool/call')
      const result = call && events.find(event => event.type === 'tool/result' && event.data.message.content[0].toolCallId === call.data.callId)
      return { modelMs: (chunks.at(-1) ?? message).time - start.time, usage: message.data.usage, toolMs: result ? result.time - call.time : undefined }
    })
    expect(steps).toHaveLength(2)

    await page.getByTestId('session-totals').click()
    const panel = page.getByTestId('trajectory')
    await panel.waitFor()
    const turn = panel.getByTestId('trajectory-turn').last()
    const rows = turn.getByTestId('trajectory-step')
    expect(await rows.count()).toBe(2)
    for (const [index, step] of steps.entries()) {
      const row = rows.nth(index)
      expect(await row.getByTestId('step-model-ms').textContent()).toBe(ms(step.modelMs))
      expect(await row.getByTestId('step-in').textContent()).toBe(String(step.usage.inputTokens ?? 0))
      expect(await row.getByTestId('step-out').textContent()).toBe(String(step.usage.outputTokens ?? 0))
      expect(await row.getByTestId('step-cached').textContent()).toBe(String(step.usage.cacheReadTokens ?? 0))
      expect(await row.getByTestId('step-tools').textContent()).toBe(step.toolMs === undefined ? '—' : `bash ${ms(step.toolMs)}`)
      expect(await row.getByTestId('step-retries').textContent()).toBe('0')
    }
    // The header's cost: every priced step of the session, from the log's usage.
    const all = events.filter(event => event.type === 'assistant/message' && event.data.usage)
    const cost = all.reduce((sum, event) => sum + ((event.data.usage.inputTokens ?? 0) * PRICE.input + (event.data.usage.cacheReadTokens ?? 0) * PRICE.cacheRead + (event.data.usage.outputTokens ?? 0) * PRICE.output) / 1e6, 0)
    expect(await page.getByTestId('totals-cost').textContent()).toBe(money(cost))
    await page.screenshot({ path: join(shots, 'workspace-trajectory-1400.png') })
    await page.keyboard.press('Escape')
    await panel.waitFor({ state: 'detached' })
    // A turn's "Steps" link opens the panel at that turn.
    await page.getByTestId('turn-steps').last().click({ force: true })
    await expect.poll(() => panel.locator('.trajectory-turn.focused').getAttribute('data-turn')).toBe(String(lastTurn))
    await page.keyboard.press('Escape')
  })

  it('14: content search finds text in a tool output of another session and opens that session at it', async () => {
    await page.getByTestId('new-session').click()
    await page.getByTestId('create-session').click()
    await page.getByTestId('composer').waitFor()
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-z', name: 'bash', arguments: JSON.stringify({ command: 'printf "%s-%s\\n" zebra crossing', description: 'Print' }) } }, { finish: 'tool_calls' }]),
      streamResponse([{ text: 'Printed it.' }, { finish: 'stop' }]),
    )
    await page.getByTestId('composer').fill('print the words')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'Printed it.' }).waitFor()
    await idle()
    const target = sessionId()
    // Another session is open when searching.
    await page.getByTestId('new-session').click()
    await page.getByTestId('create-session').click()
    await page.getByTestId('composer').waitFor()
    expect(sessionId()).not.toBe(target)

    await page.getByLabel('Search sessions').fill('zebra-crossing')
    const hit = page.getByTestId('content-hit').filter({ hasText: 'bash tool output' })
    await hit.waitFor()
    expect(await hit.locator('mark').textContent()).toBe('zebra-crossing')
    await page.screenshot({ path: join(shots, 'workspace-search-1400.png') })
    await hit.click()
    await expect.poll(sessionId).toBe(target)
    const focused = page.locator('[data-search-hit]')
    await focused.waitFor()
    expect(await focused.getByTestId('card-bash').count()).toBe(1)
    expect(await focused.isVisible()).toBe(true)
    await page.getByLabel('Search sessions').fill('')
  })

  it('looks right at 390 px: mention menu, trajectory panel and search', async () => {
    await page.setViewportSize({ width: 390, height: 820 })
    const composer = page.getByTestId('composer')
    await composer.fill('see @app')
    await page.getByTestId('mention-menu').waitFor()
    await page.screenshot({ path: join(shots, 'workspace-mention-390.png') })
    await composer.fill('')
    await page.getByTestId('session-totals').click()
    await page.getByTestId('trajectory').waitFor()
    await page.screenshot({ path: join(shots, 'workspace-trajectory-390.png') })
    await page.keyboard.press('Escape')
    await page.getByTestId('menu-button').click()
    await page.getByLabel('Search sessions').fill('zebra-crossing')
    await page.getByTestId('content-hit').first().waitFor()
    await page.screenshot({ path: join(shots, 'workspace-search-390.png') })
    await page.keyboard.press('Escape')
    await page.setViewportSize({ width: 1400, height: 860 })
    // The dark theme: the same panels.
    await page.getByTestId('theme-toggle').click()
    await page.getByLabel('Search sessions').fill('zebra-crossing')
    await page.getByTestId('content-hit').first().waitFor()
    await page.getByTestId('composer').fill('see @app')
    await page.getByTestId('mention-menu').waitFor()
    await page.screenshot({ path: join(shots, 'workspace-dark-1400.png') })
    await page.getByTestId('composer').fill('')
    await page.getByTestId('session-totals').click()
    await page.getByTestId('trajectory').waitFor()
    await page.screenshot({ path: join(shots, 'workspace-trajectory-dark-1400.png') })
    await page.keyboard.press('Escape')
    await page.getByTestId('theme-toggle').click()
    await page.getByLabel('Search sessions').fill('')
  })
})

describe.skipIf(chromium.path === undefined)('dsh web first run (browser)', () => {
  let workspace: BrowserWorkspace | undefined
  let fake: FakeDeepSeek
  let page: Page

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    workspace = await openBrowserWorkspace({ name: 'firstrun', viewport: { width: 1400, height: 860 }, env: { DEEPSEEK_API_KEY: undefined } })
    ;({ fake, page } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  it('15: with no key, the first page is the onboarding instead of a session that would fail', async () => {
    await page.goto(workspace!.web.url)
    const onboarding = page.getByTestId('onboarding')
    await onboarding.waitFor()
    expect(await onboarding.textContent()).toContain('DEEPSEEK_API_KEY')
    expect(await page.getByTestId('create-session').count()).toBe(0)
    await page.screenshot({ path: join(shots, 'workspace-onboarding-1400.png') })
    await page.setViewportSize({ width: 390, height: 820 })
    await page.screenshot({ path: join(shots, 'workspace-onboarding-390.png') })
    await page.setViewportSize({ width: 1400, height: 860 })
  })

  it('15: a provider added there discovers its models from /models, becomes the default, and takes the prompt', async () => {
    fake.models = { object: 'list', data: [{ id: 'local-coder', max_model_len: 32768 }, { id: 'local-small' }] }
    await page.getByTestId('onboarding-other').click()
    await page.getByTestId('provider-url').fill(`${fake.url}/v1`)
    await page.getByTestId('provider-key').fill('sk-e2e-local-key')
    await page.getByTestId('provider-discover').click()
    const models = page.getByTestId('provider-models')
    await models.waitFor()
    expect(await models.textContent()).toContain('local-coder')
    expect(await models.textContent()).toContain('32k context')
    expect(fake.modelRequests.at(-1)?.headers.authorization).toBe('Bearer sk-e2e-local-key')
    await page.screenshot({ path: join(shots, 'workspace-provider-1400.png') })
    await page.getByTestId('provider-name').fill('gpu-box')
    // The user says which models take images (a /models listing does not).
    await page.getByLabel('local-coder takes images').check()
    await page.getByTestId('provider-add').click()
    await page.getByTestId('create-session').waitFor()
    // The New session page loads its model list after it appears: wait for the default to arrive.
    await expect.poll(() => page.getByTestId('new-model').inputValue()).toBe('local-coder')
    const settings = readFileSync(join(workspace!.home, 'settings.yaml'), 'utf8')
    expect(settings).toMatch(/model: local-coder\n\s+contextWindow: 32768\n\s+imageInput: true/)
    expect(settings).not.toMatch(/model: local-small\n\s+imageInput/)
    await page.getByTestId('create-session').click()
    fake.enqueue(streamResponse([{ text: 'Hello from the local server.' }, { finish: 'stop' }]))
    const before = fake.requests.length
    await page.getByTestId('composer').fill('hello provider')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'Hello from the local server.' }).waitFor()
    const request = fake.requests[before]!
    expect(request.path).toBe('/v1/chat/completions')
    expect(request.body.model).toBe('local-coder')
    expect(request.headers.authorization).toBe('Bearer sk-e2e-local-key')

    // Settings list the provider with "key set"; the key itself never reaches the page.
    await page.getByTestId('open-settings').click()
    const row = page.getByTestId('provider-gpu-box')
    await row.waitFor()
    expect(await row.getByTestId('provider-key-state').textContent()).toBe('key set')
    expect(await page.content()).not.toContain('sk-e2e-local-key')
    await page.screenshot({ path: join(shots, 'workspace-settings-1400.png'), fullPage: true })
    await page.setViewportSize({ width: 390, height: 820 })
    await page.screenshot({ path: join(shots, 'workspace-settings-390.png'), fullPage: true })
    await page.setViewportSize({ width: 1400, height: 860 })
  })
})
