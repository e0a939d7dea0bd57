/**
 * The conversation stays on its newest message when the window changes size (a narrower
 * window or a turned phone reflows every row): headless Chromium against a real `dsh web`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web layout test: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

describe.skipIf(chromium.path === undefined)('conversation layout in the web UI', () => {
  let fake: FakeDeepSeek
  let page: Page
  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'layout', viewport: { width: 1400, height: 860 }, newSession: true })
    ;({ fake, page } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const gap = () => page.getByTestId('conversation').evaluate(element => element.scrollHeight - element.scrollTop - element.clientHeight)

  it('narrowing the window from 1400 to 390 px keeps the newest message in view', async () => {
    const paragraph = 'This paragraph is long enough to wrap onto several lines once the window is as narrow as a phone, so every row grows taller. '
    const answer = Array.from({ length: 30 }, (_, index) => `${index + 1}. ${paragraph.repeat(2)}`).join('\n\n') + '\n\nLAST_LINE_OF_THE_ANSWER'
    fake.enqueue(streamResponse([{ text: answer }, { finish: 'stop', usage }]))
    await page.getByTestId('composer').fill('write a long answer')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'LAST_LINE_OF_THE_ANSWER' }).waitFor()
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
    await expect.poll(gap).toBeLessThan(2)
    for (const width of [390, 1400, 700]) {
      await page.setViewportSize({ width, height: 820 })
      await expect.poll(gap).toBeLessThan(2)
    }
    expect(await page.getByText('LAST_LINE_OF_THE_ANSWER').isVisible()).toBe(true)
  })
  it('at 390 px a wide table and a long unbroken line scroll inside the answer, not the page', async () => {
    await page.setViewportSize({ width: 390, height: 820 })
    const row = (n: number) => `| ${n} | src/some/deeply/nested/folder/file-${n}.ts | ${'a long cell of prose '.repeat(3)} | ${n * 100} | ok |`
    const table = ['| # | file | notes | lines | state |', '|---|---|---|---:|---|', ...[1, 2, 3].map(row)].join('\n')
    const url = `https://example.com/${'a-very-long-path-segment-'.repeat(8)}end`
    fake.enqueue(streamResponse([{ text: `WIDE_TABLE_ANSWER\n\n${table}\n\n${url}` }, { finish: 'stop', usage }]))
    await page.getByTestId('composer').fill('a wide table please')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'WIDE_TABLE_ANSWER' }).waitFor()
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
    const overflow = await page.evaluate(() => {
      const conversation = document.querySelector('[data-testid="conversation"]')!
      const table = Array.from(document.querySelectorAll('.markdown table')).at(-1) as HTMLElement
      // No cell is narrower than its longest word: "300" stays on one line.
      const cells = Array.from(table.querySelectorAll('td'))
      const number = cells.find(cell => cell.textContent === '300')!
      const lines = (cell: Element) => { const range = document.createRange(); range.selectNodeContents(cell); return new Set(Array.from(range.getClientRects()).map(rect => Math.round(rect.top))).size }
      // The prose column keeps room to wrap in: a few words a line, not one.
      const prose = cells.find(cell => cell.textContent!.startsWith('a long cell'))!
      return {
        page: document.documentElement.scrollWidth - window.innerWidth,
        conversation: conversation.scrollWidth - conversation.clientWidth,
        tableScrolls: table.scrollWidth > table.clientWidth && getComputedStyle(table).overflowX === 'auto',
        numberOnOneLine: lines(number) === 1,
        proseLines: lines(prose) <= 5,
      }
    })
    expect(overflow).toEqual({ page: 0, conversation: 0, tableScrolls: true, numberOnOneLine: true, proseLines: true })
  })

  it('at 390 px the header keeps the model, permission and network pickers and the folder on screen (they wrap, none is cut off)', async () => {
    await page.setViewportSize({ width: 390, height: 820 })
    const placement = await page.evaluate(() => {
      const shown = (element: Element | null) => {
        if (element === null) return 'missing'
        const box = element.getBoundingClientRect()
        // Inside the window and not clipped by an ancestor that hides its overflow.
        if (box.width === 0 || box.left < 0 || box.right > window.innerWidth + 0.5) return `outside (${Math.round(box.left)}..${Math.round(box.right)})`
        for (let parent = element.parentElement; parent !== null; parent = parent.parentElement) {
          const clip = parent.getBoundingClientRect()
          if (getComputedStyle(parent).overflow !== 'visible' && (box.right > clip.right + 0.5 || box.left < clip.left - 0.5)) return `clipped by .${parent.className}`
        }
        return 'shown'
      }
      return {
        model: shown(document.querySelector('[data-testid="model-picker"]')),
        preset: shown(document.querySelector('[data-testid="preset-picker"]')),
        network: shown(document.querySelector('[data-testid="network-picker"]')),
        status: shown(document.querySelector('[data-testid="status"]')),
      }
    })
    expect(placement).toEqual({ model: 'shown', preset: 'shown', network: 'shown', status: 'shown' })
  })
})
