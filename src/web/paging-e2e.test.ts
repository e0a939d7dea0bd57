/**
 * History pages in the browser (docs/web.md, "History pages"): a long stored session opens at its
 * newest page with the state set long before it (goal, plan mode, plan), scrolling to the top
 * loads the earlier pages without moving the view, down to the "Beginning of the session"
 * marker, and live updates keep arriving meanwhile. Headless Chromium against a real `dsh web`;
 * screenshots at 1280 and 390 px go to test-output/web/.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { storeLongSession } from '../../test-support/long-session.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web paging test: ${chromium.reason}`)
const shots = join(repoRoot, 'test-output', 'web')
const TURNS = 400

describe.skipIf(chromium.path === undefined)('a long session in pages in the web UI', () => {
  let page: Page
  let workspace: BrowserWorkspace | undefined
  let id = ''
  const history: { params: any; more: boolean; from: number; events: number }[] = []

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({
      name: 'paging',
      // Goal, plan mode and the last plan are set 300 turns before the end: far before the newest page.
      prepare: async ({ home, work }) => { id = await storeLongSession(home, work, { turns: TURNS, goalTurn: 100, planModeTurn: 100, plansUntil: 95 }) },
    })
    page = workspace.page
    page.on('response', response => {
      if (!response.url().endsWith('/api/sessions.history')) return
      void response.json().then(body => history.push({ params: JSON.parse(response.request().postData() ?? '{}'), more: body.result.more, from: body.result.from, events: body.result.events.length }), () => {})
    })
    mkdirSync(shots, { recursive: true })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const conversation = () => page.getByTestId('conversation')

  it('opens at the newest page with the state from before it, and one request', async () => {
    await page.goto(`${workspace!.web.url}&session=${id}`)
    await page.getByText(`Answer ${TURNS}:`).waitFor()
    await expect.poll(() => history.length).toBe(1)
    expect(history[0]).toMatchObject({ params: { id, limit: expect.any(Number) }, more: true })
    expect(history[0]!.from).toBeGreaterThan(0)
    // Only the newest page came: the early turns are not on the page.
    expect(await page.getByText('Question 1:', { exact: false }).count()).toBe(0)
    await expect.poll(() => page.getByTestId('chat-title').textContent()).toBe('A very long session')
    expect(await page.getByTestId('goal-objective').textContent()).toBe('finish the long task')
    expect(await page.getByTestId('goal-phase').textContent()).toMatch(/paused/i)
    expect(await page.getByTestId('goal-round').textContent()).toBe(`round ${TURNS - 100} of 1000`)
    expect(await page.getByTestId('plan-mode').isVisible()).toBe(true)
    expect(await page.getByTestId('todo-strip').textContent()).toContain('Plan step B of turn 90')
    await page.screenshot({ path: join(shots, 'paging-tail-1280.png') })
  })

  it('live updates arrive while only the newest page is loaded', async () => {
    workspace!.fake.enqueue(streamResponse([{ text: 'LIVE_ANSWER_AFTER_PAGING' }, { finish: 'stop', usage: { prompt_tokens: 10, completion_tokens: 3 } }]))
    await page.getByTestId('composer').fill('one more question')
    await page.getByTestId('composer').press('Enter')
    await page.getByText('LIVE_ANSWER_AFTER_PAGING').waitFor()
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
    expect(history).toHaveLength(1)
  })

  it('scrolling to the top loads earlier pages without moving the view, down to the beginning', async () => {
    let loads = 0
    for (let guard = 0; guard < 200 && await page.getByTestId('session-start').count() === 0; guard += 1) {
      const pages = history.length
      // The top row now, and where it is on screen.
      const before = await conversation().evaluate(element => {
        element.scrollTop = 0
        const row = element.querySelector('.item-anchor > *') as HTMLElement
        row.dataset.watch = String(Date.now())
        return { watch: row.dataset.watch, top: row.getBoundingClientRect().top }
      })
      await conversation().evaluate(element => element.dispatchEvent(new Event('scroll')))
      // Either more loaded rows are drawn above or the page before is fetched; both keep the watched row in place.
      await expect.poll(() => conversation().evaluate((element, watch) => {
        const first = element.querySelector('.item-anchor > *') as HTMLElement
        return first.dataset.watch !== watch || element.querySelector('[data-testid="session-start"]') !== null
      }, before.watch)).toBe(true)
      const after = await page.locator(`[data-watch="${before.watch}"]`).evaluate(row => row.getBoundingClientRect().top)
      expect(Math.abs(after - before.top), `row moved when rows were added above (${history.length > pages ? 'page loaded' : 'rows shown'})`).toBeLessThan(4)
      if (history.length > pages) loads += 1
      if (loads === 1 && history.length > pages) await page.screenshot({ path: join(shots, 'paging-earlier-1280.png') })
    }
    expect(loads).toBeGreaterThan(0)
    for (const request of history.slice(1)) expect(request.params).toMatchObject({ id, before: expect.any(Number), limit: expect.any(Number) })
    expect(history.at(-1)).toMatchObject({ from: 0, more: false })
    // The early turns are drawn as folding the whole log draws them.
    expect(await page.getByText('Question 1: what does module 1 do?').count()).toBe(1)
    expect(await page.getByTestId('goal-line').filter({ hasText: 'Goal set: ship part g1' }).count()).toBe(1)
    expect(await page.getByTestId('goal-line').filter({ hasText: 'Goal complete after 10 rounds: ship part g1' }).count()).toBe(1)
    expect(await page.getByTestId('user-message').filter({ hasText: 'Question 99:' }).count()).toBe(1)
    // The state is still the newest one.
    expect(await page.getByTestId('goal-round').textContent()).toBe(`round ${TURNS - 100} of 1000`)
    expect(await page.getByTestId('todo-strip').textContent()).toContain('Plan step B of turn 90')
    await conversation().evaluate(element => { element.scrollTop = 0 })
    expect(await page.getByTestId('session-start').isVisible()).toBe(true)
    await page.screenshot({ path: join(shots, 'paging-start-1280.png') })
    await page.setViewportSize({ width: 390, height: 780 })
    await conversation().evaluate(element => { element.scrollTop = 0 })
    await page.screenshot({ path: join(shots, 'paging-start-390.png') })
  })

  it('at 390 px a fresh open shows the newest page and loads the page before on scroll', async () => {
    const seen = history.length
    await page.goto(`${workspace!.web.origin}/?session=${id}`)
    await page.getByText('LIVE_ANSWER_AFTER_PAGING').waitFor()
    await page.screenshot({ path: join(shots, 'paging-tail-390.png') })
    // The goal bar wraps on a phone: its Resume button stays on screen.
    const resume = await page.getByTestId('goal-resume').boundingBox()
    expect(resume!.x + resume!.width).toBeLessThanOrEqual(page.viewportSize()!.width)
    // Scrolled up with the mouse wheel, as a reader does.
    await conversation().hover()
    await expect.poll(async () => {
      await page.mouse.wheel(0, -3000)
      return history.length
    }, { timeout: 30_000 }).toBeGreaterThan(seen + 1)
    expect(history.at(-1)!.params).toMatchObject({ before: history[seen]!.from })
  })

  it('a content-search hit in an earlier page loads the pages down to it in one request and scrolls there', async () => {
    await page.setViewportSize({ width: 1280, height: 820 })
    const seen = history.length
    await page.goto(`${workspace!.web.origin}/?session=${id}`)
    await page.getByText('LIVE_ANSWER_AFTER_PAGING').waitFor()
    await expect.poll(() => history.length).toBe(seen + 1)
    await page.getByLabel('Search sessions').fill('what does module 5 do')
    await page.getByTestId('content-hit').filter({ hasText: 'module 5 do' }).first().click()
    const target = page.getByTestId('user-message').filter({ hasText: 'Question 5: what does module 5 do?' })
    await target.waitFor()
    await expect.poll(() => target.evaluate(element => {
      const box = element.getBoundingClientRect()
      return box.top >= 0 && box.bottom <= window.innerHeight
    })).toBe(true)
    // The newest page, then one request for everything down to the hit.
    expect(history.slice(seen).map(request => request.params.before === undefined ? 'newest' : 'down to the hit')).toEqual(['newest', 'down to the hit'])
    expect(history.at(-1)).toMatchObject({ from: 0, more: false })
  })

  it('rows below the top that change height while an earlier page is drawn do not move the view', async () => {
    // Rows get their real heights (content-visibility) when first drawn, and a frame can come after
    // the page arrived and before it is put above (a flake seen in CI, a jump of 474 px). Made
    // deterministic: the page's body is handed on, then 50 microtasks later (after the code that
    // takes it, before React's render task) the row under the top one grows by 300 px.
    await page.goto(`${workspace!.web.origin}/?session=${id}`)
    await page.getByText('LIVE_ANSWER_AFTER_PAGING').waitFor()
    await page.evaluate(() => {
      const real = window.fetch.bind(window)
      const w = window as unknown as { grown?: boolean }
      window.fetch = async (input, init) => {
        const response = await real(input, init)
        if (w.grown !== undefined || !String(input).endsWith('/api/sessions.history') || !String(init?.body).includes('"before"')) return response
        const body = await response.json()
        w.grown = false
        let ticks: Promise<unknown> = Promise.resolve(body)
        for (let tick = 0; tick < 50; tick += 1) ticks = ticks.then(() => undefined)
        void ticks.then(() => {
          const below = document.querySelectorAll<HTMLElement>('[data-testid="conversation"] .item-anchor')[1]!
          const grow = below.firstElementChild as HTMLElement
          grow.style.marginTop = '300px'
          w.grown = true
        })
        return { ok: true, status: 200, json: async () => body } as unknown as Response
      }
    })
    for (let guard = 0; guard < 50; guard += 1) {
      const before = await conversation().evaluate(element => {
        element.scrollTop = 0
        const row = element.querySelector('.item-anchor > *') as HTMLElement
        row.dataset.watch = `grow-${Date.now()}`
        return { watch: row.dataset.watch, top: row.getBoundingClientRect().top }
      })
      await conversation().evaluate(element => element.dispatchEvent(new Event('scroll')))
      await expect.poll(() => conversation().evaluate((element, watch) => (element.querySelector('.item-anchor > *') as HTMLElement).dataset.watch !== watch, before.watch)).toBe(true)
      const grown = await page.evaluate(() => (window as unknown as { grown?: boolean }).grown)
      if (grown === undefined) continue
      expect(grown).toBe(true)
      const after = await page.locator(`[data-watch="${before.watch}"]`).evaluate(row => row.getBoundingClientRect().top)
      expect(Math.abs(after - before.top)).toBeLessThan(4)
      return
    }
    throw new Error('no earlier page was loaded')
  })
})
