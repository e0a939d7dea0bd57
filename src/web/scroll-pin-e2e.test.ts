/**
 * The conversation's pin to the bottom follows the reader (docs/web.md, "Scrolling"): a long
 * stored session that has just opened, its rows still being measured, is left at once by a jump
 * to the top (scrollTop set to 0 in one go, as a scrollbar drag or a "scroll to top" gesture
 * does), by Home and by PageUp; the view stays where the reader took it, so the earlier history
 * page loads; live output does not pull it back, and scrolling back to the bottom follows the
 * output again. Headless Chromium against a real `dsh web`, at 1280, 700 and 390 px;
 * screenshots go to test-output/web/.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { gate } from '../../test-support/gate.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { storeLongSession } from '../../test-support/long-session.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web scroll pin test: ${chromium.reason}`)
const shots = join(repoRoot, 'test-output', 'web')
const TURNS = 400

describe.skipIf(chromium.path === undefined)('the conversation pin follows the reader', () => {
  let page: Page
  let workspace: BrowserWorkspace | undefined
  let id = ''
  /** `before` of every `sessions.history` request: undefined for the newest page. */
  const requests: (number | undefined)[] = []

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({
      name: 'scroll-pin',
      prepare: async ({ home, work }) => { id = await storeLongSession(home, work, { turns: TURNS }) },
    })
    page = workspace.page
    page.on('request', request => {
      if (request.url().endsWith('/api/sessions.history')) requests.push(JSON.parse(request.postData() ?? '{}').before)
    })
    // The token page sets the cookie; later opens use the bare address.
    await page.goto(workspace.web.url)
    // With `jump-at=k` in the address, the page scrolls the conversation to the top in the k-th
    // frame after its first rows are drawn: a reader's jump while the rows are being measured.
    await page.addInitScript({ content: `(() => {
      const at = new URLSearchParams(location.search).get('jump-at')
      if (at === null) return
      let first = -1, frame = 0
      const tick = () => {
        frame += 1
        const scroller = document.querySelector('[data-testid="conversation"]')
        if (first < 0 && scroller && scroller.querySelector('.item-anchor')) first = frame
        if (first >= 0 && frame - first === Number(at)) { scroller.scrollTop = 0; window.jumped = true; return }
        requestAnimationFrame(tick)
      }
      requestAnimationFrame(tick)
    })()` })
    mkdirSync(shots, { recursive: true })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const conversation = () => page.getByTestId('conversation')
  const view = () => conversation().evaluate(element => ({
    top: element.scrollTop, gap: element.scrollHeight - element.scrollTop - element.clientHeight, height: element.clientHeight,
  }))
  const frames = (count: number) => page.evaluate(n => new Promise<void>(resolve => {
    const step = (left: number) => left === 0 ? resolve() : requestAnimationFrame(() => step(left - 1))
    step(n)
  }), count)
  /** Waits until scrollTop has not changed for five frames (a keyboard scroll may be animated). */
  const settled = async () => {
    await expect.poll(() => conversation().evaluate(element => new Promise<boolean>(resolve => {
      const start = element.scrollTop
      let left = 5
      const step = () => element.scrollTop !== start ? resolve(false) : --left === 0 ? resolve(true) : requestAnimationFrame(step)
      requestAnimationFrame(step)
    }))).toBe(true)
    return view()
  }

  /** Opens the session fresh at `width` px; returns as soon as its newest answer is drawn. */
  const open = async (width: number, jumpAt?: number) => {
    await page.setViewportSize({ width, height: 800 })
    await page.goto(`${workspace!.web.origin}/?session=${id}${jumpAt === undefined ? '' : `&jump-at=${jumpAt}`}`)
    await page.getByText(`Answer ${TURNS}:`).waitFor()
    requests.length = 0
  }

  /** Focuses the conversation as a click on it does, so the keyboard scrolls it. */
  const focusConversation = async () => {
    const box = (await conversation().boundingBox())!
    await page.mouse.click(box.x + 6, box.y + box.height / 2)
  }

  for (const width of [1280, 700, 390]) {
    it(`${width} px: scrollTop = 0 in the first frames after opening leaves the bottom and loads the earlier page`, async () => {
      for (let frame = 0; frame <= 5; frame += 1) {
        await open(width, frame)
        await page.waitForFunction(() => (window as unknown as { jumped?: boolean }).jumped === true)
        await frames(6)
        const after = await settled()
        // Not pulled back to the bottom: far from it (more loaded rows may now be drawn above).
        expect(after.gap, `the jump to the top in frame ${frame} was pinned back to the bottom`).toBeGreaterThan(after.height)
      }
      await page.screenshot({ path: join(shots, `scroll-pin-top-${width}.png`) })
      // Jumping to the top again reaches the top of the loaded part: the page before is fetched.
      await expect.poll(async () => {
        await conversation().evaluate(element => { element.scrollTop = 0 })
        await frames(3)
        return requests.filter(before => before !== undefined).length
      }, { timeout: 20_000 }).toBeGreaterThan(0)
      expect((await settled()).gap).toBeGreaterThan((await view()).height)
    }, 120_000)

    it(`${width} px: Home right after opening leaves the bottom and loads the earlier page`, async () => {
      await open(width)
      await focusConversation()
      await page.keyboard.press('Home')
      const after = await settled()
      expect(after.gap, 'Home was pinned back to the bottom').toBeGreaterThan(after.height)
      await expect.poll(async () => {
        await page.keyboard.press('Home')
        await settled()
        return requests.filter(before => before !== undefined).length
      }, { timeout: 20_000 }).toBeGreaterThan(0)
      expect((await settled()).gap).toBeGreaterThan(after.height)
    }, 120_000)

    it(`${width} px: PageUp right after opening moves up a page and stays there`, async () => {
      await open(width)
      await focusConversation()
      let last = await view()
      for (let press = 0; press < 3; press += 1) {
        await page.keyboard.press('PageUp')
        const now = await settled()
        await frames(6)
        expect((await view()).top, 'PageUp was undone').toBe(now.top)
        expect(now.gap, `PageUp ${press + 1} did not move up a page`).toBeGreaterThan(last.gap + now.height / 2)
        last = now
      }
      if (width === 390) await page.screenshot({ path: join(shots, `scroll-pin-pageup-${width}.png`) })
    }, 120_000)
  }

  for (const width of [1280, 390]) {
    it(`${width} px: after PageUp live output does not pull the view down; after End it follows the output again`, async () => {
      await open(width)
      const more = gate()
      const last = gate()
      const lines = (tag: string) => Array.from({ length: 40 }, (_, index) => `${tag} line ${index + 1} of a long streamed answer.`).join('\n\n')
      workspace!.fake.enqueue(streamResponse([
        { text: `LIVE_START_${width}\n\n${lines('first')}\n\n` }, { until: more.promise },
        { text: `${lines('second')}\n\nLIVE_MIDDLE_${width}\n\n` }, { until: last.promise },
        { text: `${lines('third')}\n\nLIVE_END_${width}` }, { finish: 'stop', usage: { prompt_tokens: 10, completion_tokens: 3 } },
      ]))
      await page.getByTestId('composer').fill(`stream a long answer at ${width} px`)
      await page.getByTestId('composer').press('Enter')
      await page.getByText(`LIVE_START_${width}`).waitFor()
      await expect.poll(async () => (await view()).gap).toBeLessThan(4)
      await focusConversation()
      await page.keyboard.press('PageUp')
      const read = await settled()
      expect(read.gap).toBeGreaterThan(read.height / 2)
      more.open()
      await page.getByText(`LIVE_MIDDLE_${width}`).waitFor({ state: 'attached' })
      await frames(6)
      const after = await settled()
      expect(Math.abs(after.top - read.top), 'new output moved the view the reader scrolled to').toBeLessThan(2)
      expect(after.gap).toBeGreaterThan(read.gap)
      // Back at the bottom, the output is followed again.
      await page.keyboard.press('End')
      expect((await settled()).gap).toBeLessThan(4)
      last.open()
      await page.getByText(`LIVE_END_${width}`).waitFor()
      await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
      await frames(3)
      expect((await settled()).gap).toBeLessThan(4)
      expect(await page.getByText(`LIVE_END_${width}`).isVisible()).toBe(true)
      await page.screenshot({ path: join(shots, `scroll-pin-live-${width}.png`) })
    }, 120_000)
  }

  for (const width of [1280, 390]) {
    it(`${width} px: rows measured around a jump into never-drawn rows do not move what the reader looks at`, async () => {
      await open(width)
      await settled()
      // Into the middle of the drawn part, where the rows were never laid out; the row at the top
      // of the first frame drawn there is what the reader looks at while the rows around measure.
      await conversation().evaluate(element => { element.scrollTop = Math.round(element.scrollHeight * 0.4) })
      await frames(2)
      const before = await conversation().evaluate(element => {
        const edge = element.getBoundingClientRect().top
        const row = Array.from(element.querySelectorAll<HTMLElement>('.item-anchor > *')).find(candidate => candidate.getBoundingClientRect().top >= edge)!
        row.dataset.watch = 'measured'
        return { top: row.getBoundingClientRect().top - edge }
      })
      await frames(10)
      const after = await settled()
      const top = await page.locator('[data-watch="measured"]').evaluate(row => row.getBoundingClientRect().top - row.closest('[data-testid="conversation"]')!.getBoundingClientRect().top)
      expect(Math.abs(top - before.top), 'the row in view moved while rows around it were measured').toBeLessThan(2)
      expect(after.gap).toBeGreaterThan(after.height)
    }, 120_000)
  }
})
