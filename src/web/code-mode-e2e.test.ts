/**
 * Code mode in the browser (#36 item 4): a real `dsh web` under DSH_TOOLS_MODE=code whose model
 * (the fake DeepSeek server) sends a run_code program calling bash twice. The conversation shows
 * one code card with the program's two calls nested in it, then what the program printed.
 * DSH_SCREENSHOTS=DIR saves the card at two widths.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web code-mode test: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

describe.skipIf(chromium.path === undefined)('code mode in the web UI', () => {
  let fake: FakeDeepSeek
  let page: Page
  let workspace: BrowserWorkspace | undefined
  const errors: string[] = []

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'code-mode', newSession: true, env: { DSH_TOOLS_MODE: 'code' } })
    ;({ fake, page } = workspace)
    page.on('console', message => { if (message.type() === 'error') errors.push(message.text()) })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  it('a run_code card holds the program\'s two bash calls, each its own card, and the program\'s output', async () => {
    const code = 'const a = await tools.bash({ command: "echo CODE_ONE", description: "first" })\nconst b = await tools.bash({ command: "echo CODE_TWO", description: "second" })\nconsole.log("captured output")\nreturn [a.stdout.text.trim(), b.stdout.text.trim()].join("+")'
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'rc1', name: 'run_code', arguments: JSON.stringify({ code, description: 'Print two markers' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'PROGRAM_ANSWERED' }, { finish: 'stop', usage }]),
    )
    await sendFromComposer(page, 'run the program')
    await page.getByTestId('assistant-message').filter({ hasText: 'PROGRAM_ANSWERED' }).waitFor()
    const card = page.getByTestId('code-card')
    expect(await card.count()).toBe(1)
    expect(await card.locator('.tool-head').first().textContent()).toContain('Print two markers')
    const inner = card.locator('.tool-inner [data-testid="card-bash"]')
    expect(await inner.count()).toBe(2)
    expect(await inner.nth(0).textContent()).toContain('echo CODE_ONE')
    expect(await inner.nth(1).textContent()).toContain('echo CODE_TWO')
    expect(await card.locator(':scope > .tool-body > .tool-output').textContent()).toContain('captured output')
    // Only run_code was offered to the model.
    expect((fake.requests[0]!.body as { tools: { function: { name: string } }[] }).tools.map(tool => tool.function.name)).toEqual(['run_code'])
    const dir = process.env.DSH_SCREENSHOTS
    if (dir !== undefined) {
      for (const width of [1280, 720]) {
        await page.setViewportSize({ width, height: 900 })
        await card.screenshot({ path: join(dir, `code-card-${width}.png`) })
      }
    }
    expect(errors).toEqual([])
  })
})
