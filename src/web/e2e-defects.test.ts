/**
 * Browser tests for the defects found using `dsh web` for a day (headless Chromium against a real
 * `dsh web` whose model is the fake DeepSeek server). Each test failed before its fix. Screenshots
 * of the main view at 1400, 700 and 390 px land in test-output/web/.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { FakeDeepSeek, errorResponse, streamResponse } from '../../test-support/fake-deepseek.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { type DshWeb } from '../../test-support/web-process.js'
import { gate } from '../../test-support/gate.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web defect tests: ${chromium.reason}`)

const shots = join(repoRoot, 'test-output', 'web')
const usage = { prompt_tokens: 100, completion_tokens: 10 }

describe.skipIf(chromium.path === undefined)('dsh web defects (browser)', () => {
  let fake: FakeDeepSeek
  let web: DshWeb
  let browser: Browser
  let page: Page
  let home: string
  let work: string

  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    workspace = await openBrowserWorkspace({
      name: 'defects',
      viewport: { width: 1400, height: 860 },
      // Short, bounded retries so a model-server outage ends the turn quickly.
      patchRows: '- id: llm-retry\n  config:\n    maxRetries: 2\n    baseDelayMs: 20\n    maxDelayMs: 40\n    jitter: 0\n',
      newSession: true,
    })
    ;({ fake, web, browser, page, home, work } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const idle = () => expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')

  it('4: a bash card whose command exits non-zero is marked failed, not with a tick', async () => {
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-x', name: 'bash', arguments: JSON.stringify({ command: 'echo before-failing; exit 3', description: 'Fail on purpose' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'It failed with 3.' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('run a failing command')
    await page.getByTestId('composer').press('Enter')
    const card = page.getByTestId('card-bash').filter({ hasText: 'Fail on purpose' })
    await card.filter({ hasText: 'exit 3' }).waitFor()
    await page.locator('.markdown', { hasText: 'It failed with 3.' }).waitFor()
    expect(await card.locator('.tool-state').getAttribute('class')).toContain('error')
    expect(await card.locator('.tool-state').textContent()).not.toBe('✓')
    await idle()
  })

  it('9: Escape closes Settings; the favicon is served', async () => {
    const favicon = await page.request.get(web.origin + '/favicon.ico')
    expect(favicon.status()).toBe(200)
    const icon = await page.locator('link[rel="icon"]').getAttribute('href')
    expect(icon).toBeTruthy()
    expect((await page.request.get(new URL(icon!, page.url()).href)).status()).toBe(200)
    await page.getByTestId('open-settings').click()
    await page.getByTestId('settings').waitFor()
    await page.keyboard.press('Escape')
    await expect.poll(() => page.getByTestId('settings').count()).toBe(0)
    await page.getByTestId('composer').waitFor()
  })

  it('1: below 760 px a menu button opens a drawer with sessions, New session, search, settings and theme', async () => {
    for (const width of [700, 390]) {
      await page.setViewportSize({ width, height: 820 })
      const menu = page.getByTestId('menu-button')
      await menu.waitFor({ state: 'visible' })
      expect(await page.getByTestId('new-session').isVisible()).toBe(false)
      await page.screenshot({ path: join(shots, `main-${width}.png`) })
      await menu.click()
      await page.getByTestId('new-session').waitFor({ state: 'visible' })
      expect(await page.getByTestId('session-row').first().isVisible()).toBe(true)
      expect(await page.getByTestId('open-settings').isVisible()).toBe(true)
      expect(await page.getByTestId('theme-toggle').isVisible()).toBe(true)
      expect(await page.getByLabel('Search sessions').isVisible()).toBe(true)
      await page.screenshot({ path: join(shots, `drawer-${width}.png`) })
      // Escape closes the drawer; choosing a session closes it too.
      await page.keyboard.press('Escape')
      await page.getByTestId('new-session').waitFor({ state: 'hidden' })
      await menu.click()
      await page.getByTestId('session-row').first().click()
      await page.getByTestId('new-session').waitFor({ state: 'hidden' })
      await page.getByTestId('composer').waitFor()
    }
    await page.setViewportSize({ width: 1400, height: 860 })
    await page.getByTestId('new-session').waitFor({ state: 'visible' })
    expect(await page.getByTestId('menu-button').isVisible()).toBe(false)
    await page.screenshot({ path: join(shots, 'main-1400.png') })
  })

  it('5: while tool arguments stream, the bash card shows the command parsed so far, not raw JSON', async () => {
    const hold = gate()
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-s', name: 'bash', arguments: '{"command":"echo stream' } }, { until: hold.promise },
        { toolCall: { arguments: 'ing-args", "description": "Streamed"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Streamed call done.' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('stream a tool call')
    await page.getByTestId('composer').press('Enter')
    const cmd = page.getByTestId('card-bash').last().locator('.terminal-cmd')
    await expect.poll(() => cmd.textContent()).toContain('echo stream')
    expect(await cmd.textContent()).not.toContain('{')
    hold.open()
    await page.locator('.markdown', { hasText: 'Streamed call done.' }).waitFor()
    expect(await page.getByTestId('card-bash').last().locator('.terminal-cmd').textContent()).toContain('echo streaming-args')
    await idle()
  })

  /** A turn that hangs on `working`, a message queued behind it, then Stop: the session is idle again. */
  const queueAndStop = async (working: string, queued: string) => {
    fake.enqueue(streamResponse([{ text: working }], { done: false, end: 'hang' }))
    await page.getByTestId('composer').fill(`a turn to stop: ${working}`)
    await page.getByTestId('composer').press('Enter')
    await page.locator('.streaming-text', { hasText: working }).waitFor()
    await page.getByTestId('composer').fill(queued)
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('queue-item').filter({ hasText: queued }).waitFor()
    await page.getByTestId('stop').click()
    await page.locator('.notice', { hasText: 'Stopped' }).last().waitFor()
    await idle()
  }

  it('3: Stop keeps the messages queued during the turn, visibly, and they run with the next message', async () => {
    await queueAndStop('Working for a long time', 'queued while running')
    await page.getByTestId('queue-item').filter({ hasText: 'queued while running' }).waitFor()
    expect(await page.getByTestId('queue').textContent()).toMatch(/kept after stop/i)
    const before = fake.requests.length
    // Each queued message is its own turn: the kept one first, then the new one.
    fake.enqueue(streamResponse([{ text: 'Kept one handled.' }, { finish: 'stop', usage }]), streamResponse([{ text: 'Both handled.' }, { finish: 'stop', usage }]))
    await page.getByTestId('composer').fill('and this one')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'Both handled.' }).waitFor()
    await fake.waitForRequests(before + 2)
    expect(JSON.stringify(fake.requests[before].body.messages)).toContain('queued while running')
    expect(JSON.stringify(fake.requests[before + 1].body.messages)).toContain('and this one')
    await expect.poll(() => page.getByTestId('queue').count()).toBe(0)
    await idle()
  })

  it('3b: an answer to a send that arrives after the queue ran does not bring the queued items back', async () => {
    // The send's answer carries the queue as it was then; the live stream has newer ones. Its
    // HTTP answer and the stream travel on two connections: here the answer is held until the
    // turns it started have run and the page went idle.
    await queueAndStop('Working again', 'kept for later')
    fake.enqueue(streamResponse([{ text: 'Kept one ran.' }, { finish: 'stop', usage }]), streamResponse([{ text: 'Late one ran.' }, { finish: 'stop', usage }]))
    const ran = gate()
    await page.route('**/api/prompt', async route => {
      const response = await route.fetch()
      await ran.promise
      await route.fulfill({ response })
    })
    const answered = page.waitForResponse(response => response.url().endsWith('/api/prompt'))
    await page.getByTestId('composer').fill('sent with a late answer')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'Late one ran.' }).waitFor()
    await idle()
    await expect.poll(() => page.getByTestId('queue').count()).toBe(0)
    ran.open()
    await answered
    await page.unroute('**/api/prompt')
    // Two frames: the answer handled and React's render done.
    await page.evaluate(() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve))))
    expect(await page.getByTestId('queue').count()).toBe(0)
  })

  it('6: a finished plan is not pinned above the composer once its turn ends, nor in later turns', async () => {
    const plan = (status: string) => JSON.stringify({ todos: [{ content: 'Write the module', status }, { content: 'Test the module', status }] })
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-p1', name: 'todo_write', arguments: plan('in_progress') } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'call-p2', name: 'todo_write', arguments: plan('completed') } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Plan finished.' }, { finish: 'stop', usage }]),
    )
    const pinned = page.locator('.dock [data-testid="todo-strip"]')
    await page.getByTestId('composer').fill('make a plan and do it')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'Plan finished.' }).waitFor()
    await idle()
    // Finished and idle: the plan is read inline in the conversation, not pinned a second time.
    await expect.poll(() => pinned.count()).toBe(0)
    const hold = gate()
    fake.enqueue(streamResponse([{ text: 'A later turn' }, { until: hold.promise }, { text: ' ends.' }, { finish: 'stop', usage }]))
    await page.getByTestId('composer').fill('something else')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.streaming-text', { hasText: 'A later turn' }).waitFor()
    expect(await pinned.count()).toBe(0)
    hold.open()
    await page.locator('.markdown', { hasText: 'A later turn ends.' }).waitFor()
    await idle()
    // A plan with open items stays pinned across turns.
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-p3', name: 'todo_write', arguments: plan('pending') } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Planned only.' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('plan only')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'Planned only.' }).waitFor()
    await idle()
    expect(await pinned.count()).toBe(1)
  })

  it('7: sessions that never got a prompt are not listed', async () => {
    const untitled = page.getByTestId('session-row').filter({ hasText: 'Untitled session' })
    for (let i = 0; i < 2; i++) {
      await page.getByTestId('new-session').click()
      await page.getByTestId('create-session').click()
      await page.getByTestId('composer').waitFor()
    }
    // The open one may show while it is open; the one left before it is gone.
    expect(await untitled.count()).toBeLessThanOrEqual(1)
    await page.reload()
    await page.getByTestId('composer').waitFor()
    await page.getByTestId('session-row').first().waitFor()
    expect(await untitled.count()).toBeLessThanOrEqual(1)
    await page.getByTestId('session-row').filter({ hasText: 'run a failing command' }).click()
    await page.getByTestId('user-message').first().waitFor()
    await expect.poll(() => untitled.count()).toBe(0)
    const listed = await page.request.post(web.origin + '/api/sessions.list', { data: {}, headers: { 'X-Dsh-Token': 'defects-token-0123456789abcdef' } })
    const sessions = (await listed.json()).result as { turns: number }[]
    expect(sessions.length).toBeGreaterThan(0)
    expect(sessions.filter(session => session.turns === 0)).toEqual([])
  })

  it('8: a model server outage shows one live retry line, marks the partial text interrupted, and offers Retry', async () => {
    const hold = gate()
    const down = { error: { message: 'Service Unavailable', type: 'server_error' } }
    fake.enqueue(
      streamResponse([{ text: 'Half a sen' }], { done: false, end: 'destroy' }),
      { status: 503, segments: [{ until: hold.promise }, JSON.stringify(down)] },
      errorResponse(503, down),
    )
    await page.getByTestId('composer').fill('the server goes down')
    await page.getByTestId('composer').press('Enter')
    const line = page.getByTestId('retry-line')
    await line.filter({ hasText: /attempt 1 of 2/ }).waitFor()
    expect(await line.count()).toBe(1)
    hold.open()
    await page.getByTestId('retry-button').waitFor()
    expect(await line.count()).toBe(1)
    expect(await line.textContent()).toMatch(/2 retries/)
    expect(await page.getByTestId('interrupted').count()).toBeGreaterThan(0)
    expect(await page.locator('.assistant-row', { hasText: 'Half a sen' }).getByTestId('interrupted').count()).toBe(1)
    await idle()
    fake.enqueue(streamResponse([{ text: 'Back online.' }, { finish: 'stop', usage }]))
    await page.getByTestId('retry-button').click()
    await page.locator('.markdown', { hasText: 'Back online.' }).waitFor()
    await idle()
  })

  it('2: a long finished session opens on its newest message', async () => {
    const token = { 'X-Dsh-Token': 'defects-token-0123456789abcdef' }
    const api = async (method: string, params: object) => (await (await page.request.post(`${web.origin}/api/${method}`, { data: params, headers: token })).json()).result
    const { id } = await api('sessions.create', { cwd: '' })
    const long = Array.from({ length: 30 }, (_, index) => `Paragraph ${index}: ${'words that wrap across the line '.repeat(6)}`).join('\n\n')
    const turns = 40
    for (let turn = 1; turn <= turns; turn++) {
      fake.enqueue(streamResponse([{ text: `${long}\n\nEnd of answer ${turn}.` }, { finish: 'stop', usage }]))
      await api('prompt', { id, text: `question ${turn}` })
      await expect.poll(async () => (await api('sessions.history', { id })).summary.status === 'idle' && (await api('sessions.history', { id })).summary.turns === turn).toBe(true)
    }
    await page.goto(`${web.origin}/?session=${id}`)
    const last = page.locator('.markdown', { hasText: `End of answer ${turns}.` })
    await last.waitFor()
    const gap = () => page.getByTestId('conversation').evaluate(element => element.scrollHeight - element.scrollTop - element.clientHeight)
    await expect.poll(gap).toBeLessThan(4)
    // Two frames later it is still at the bottom (no late jump from rows measured after the scroll).
    await page.evaluate(() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve))))
    expect(await gap()).toBeLessThan(4)
    expect(await last.isVisible()).toBe(true)
    const box = await last.boundingBox()
    const view = await page.getByTestId('conversation').boundingBox()
    expect(box!.y + box!.height).toBeLessThanOrEqual(view!.y + view!.height + 1)
  }, 120_000)
})
