/**
 * Terminal cards in the browser (#37 item 1): a real `dsh web` whose model (the fake DeepSeek
 * server) opens a shell in a real PTY and sends it a command that prints colours. The card shows
 * the command sent, how the wait ended, and the rendered screen: the command's output as text,
 * with no escape sequence left. DSH_SCREENSHOTS=DIR saves the cards at two widths.
 */
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web terminal-card test: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

describe.skipIf(chromium.path === undefined)('terminal cards in the web UI', () => {
  let fake: FakeDeepSeek
  let page: Page
  let workspace: BrowserWorkspace | undefined
  const errors: string[] = []

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'terminal-card', newSession: true })
    ;({ fake, page } = workspace)
    page.on('console', message => { if (message.type() === 'error') errors.push(message.text()) })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  it('terminal_open and terminal_send show the keys sent and the rendered screen, escapes gone; a control key is spelled out', async () => {
    const command = "printf '\\033[1;31mRED_%s\\033[0m\\n' $((6*7))"
    fake.enqueue(
      streamResponse([{ toolCall: { id: 't1', name: 'terminal_open', arguments: JSON.stringify({ type: 'shell', name: 'main' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 't2', name: 'terminal_send', arguments: JSON.stringify({ sessionId: 'pty-1', text: command }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 't3', name: 'terminal_send', arguments: JSON.stringify({ sessionId: 'pty-1', text: '\u0003', submit: false }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'TERMINAL_DONE' }, { finish: 'stop', usage }]),
    )
    await sendFromComposer(page, 'use a terminal')
    await page.getByTestId('assistant-message').filter({ hasText: 'TERMINAL_DONE' }).waitFor({ timeout: 60_000 })
    const cards = page.getByTestId('card-terminal')
    expect(await cards.count()).toBe(3)
    expect(await cards.nth(0).locator('.tool-head').textContent()).toContain('terminal open · shell (main)')
    const send = cards.nth(1)
    expect(await send.locator('.tool-head').textContent()).toContain('terminal send · pty-1')
    expect(await send.getByTestId('terminal-sent').textContent()).toBe(`${command} ⏎`)
    expect(await send.getByTestId('terminal-wait').textContent()).toMatch(/^wait: /)
    const screen = (await send.getByTestId('terminal-screen').textContent()) ?? ''
    // The output line is the rendered text alone (the typed command above it shows the escapes as typed).
    expect(screen.split('\n').map(line => line.trimEnd())).toContain('RED_42')
    expect(screen).not.toContain('\u001b')
    expect(await cards.nth(2).getByTestId('terminal-sent').textContent()).toBe('^C')
    const dir = process.env.DSH_SCREENSHOTS
    if (dir !== undefined) {
      for (const width of [1280, 720]) {
        await page.setViewportSize({ width, height: 900 })
        await send.screenshot({ path: join(dir, `terminal-card-${width}.png`) })
      }
    }
    expect(errors).toEqual([])
  })
})
