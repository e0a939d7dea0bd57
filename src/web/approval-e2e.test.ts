/**
 * Approvals in the browser (AP-3, AP-5): a real `dsh web` whose model asks for a sandbox
 * escalation; headless Chromium clicks Allow once on the first card and rejects the second from
 * the keyboard; the preset picker switches the session to read-only.
 */
import { existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { type DshWeb } from '../../test-support/web-process.js'
import { gate } from '../../test-support/gate.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web approval e2e tests: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

const escalatedWrite = (id: string, file: string) => streamResponse([
  { toolCall: { id, name: 'write', arguments: JSON.stringify({ file_path: file, content: 'x', sandbox_permissions: 'danger-full-access', justification: `the user asked for ${file}` }) } },
  { finish: 'tool_calls', usage },
])

describe.skipIf(chromium.path === undefined)('approvals in the web UI', () => {
  let fake: FakeDeepSeek
  let web: DshWeb
  let browser: Browser
  let page: Page
  let work: string

  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'approval', newSession: true })
    ;({ fake, web, browser, page, work } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const prompt = (text: string) => sendFromComposer(page, text)

  it('AP-3: the card shows what will run and why; Allow once runs that call', async () => {
    fake.enqueue(escalatedWrite('call-a', 'allowed.txt'), streamResponse([{ text: 'AFTER_ALLOW' }, { finish: 'stop', usage }]))
    await prompt('write allowed.txt')
    const card = page.getByTestId('approval-card').first()
    await card.getByTestId('approval-allow').waitFor()
    expect(await card.getByTestId('approval-subject').textContent()).toBe('write allowed.txt')
    expect(await card.getByTestId('approval-reason').textContent()).toBe('escalate sandbox to danger-full-access: the user asked for allowed.txt')
    await card.getByTestId('approval-allow').click()
    await card.getByTestId('approval-outcome').filter({ hasText: 'Allowed once' }).waitFor()
    await page.getByTestId('assistant-message').filter({ hasText: 'AFTER_ALLOW' }).waitFor()
    expect(existsSync(join(work, 'allowed.txt'))).toBe(true)
  })

  it('AP-3: Reject from the keyboard refuses the call', async () => {
    fake.enqueue(escalatedWrite('call-b', 'rejected.txt'), streamResponse([{ text: 'AFTER_REJECT' }, { finish: 'stop', usage }]))
    await prompt('write rejected.txt')
    const card = page.getByTestId('approval-card').nth(1)
    await card.getByTestId('approval-reject').waitFor()
    await card.getByTestId('approval-reject').focus()
    await page.keyboard.press('Enter')
    await card.getByTestId('approval-outcome').filter({ hasText: 'Rejected' }).waitFor()
    await page.getByTestId('assistant-message').filter({ hasText: 'AFTER_REJECT' }).waitFor()
    expect(existsSync(join(work, 'rejected.txt'))).toBe(false)
    expect(await page.getByTestId('card-write').last().textContent()).toContain('the user rejected escalating this operation to "danger-full-access"')
  })

  it('#44: a long command shows whole with its folder; "for this session" adds the rule shown and the decision names it', async () => {
    const tail = join(tmpdir(), `dsh-web-outside-${process.pid}`)
    const command = `cd /tmp && python3 -c 'import sys; print(sys.version)' && ${'echo building the project now && '.repeat(5)}touch ${tail}`
    const escalated = (id: string, text: string) => streamResponse([
      { toolCall: { id, name: 'bash', arguments: JSON.stringify({ command: text, description: 'run', sandbox_permissions: 'danger-full-access', justification: 'outside the folder' }) } },
      { finish: 'tool_calls', usage },
    ])
    fake.enqueue(escalated('call-long', command), streamResponse([{ text: 'AFTER_LONG' }, { finish: 'stop', usage }]))
    await prompt('run the long one')
    const long = page.getByTestId('approval-card').nth(2)
    await long.getByTestId('approval-reject').waitFor()
    expect(await long.getByTestId('approval-subject').textContent()).toBe(command)
    expect(await long.getByTestId('approval-folder').textContent()).toBe(`in ${work}`)
    // A compound command offers no wider rule.
    expect(await long.getByTestId('approval-allow-session').count()).toBe(0)
    await long.getByTestId('approval-reject').click()
    await page.getByTestId('assistant-message').filter({ hasText: 'AFTER_LONG' }).waitFor()
    fake.enqueue(escalated('call-s1', `touch ${tail}-1`), streamResponse([{ text: 'AFTER_S1' }, { finish: 'stop', usage }]))
    await prompt('touch one')
    const card = page.getByTestId('approval-card').nth(3)
    await card.getByTestId('approval-allow-session').waitFor()
    expect(await card.getByTestId('approval-grants').textContent()).toBe(`For this session or always adds the rule Bash(touch ${tail}-1)`)
    await card.getByTestId('approval-allow-session').click()
    await card.getByTestId('approval-decided-by').filter({ hasText: `Bash(touch ${tail}-1) (session)` }).waitFor()
    await page.getByTestId('assistant-message').filter({ hasText: 'AFTER_S1' }).waitFor()
    expect(existsSync(`${tail}-1`)).toBe(true)
    rmSync(`${tail}-1`, { force: true })
  })

  it('AP-5/SB-4: the preset picker switches the session to read-only; the bash card shows the denial marker', async () => {
    const picker = page.getByTestId('preset-picker')
    expect(await picker.inputValue()).toBe('workspace-write')
    await picker.selectOption('read-only')
    // The server confirmed the switch (the select's own value changes before it answers).
    await page.locator('[data-testid="preset-picker"][data-mode="read-only"]').waitFor()
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-c', name: 'bash', arguments: JSON.stringify({ command: 'echo hi > ro.txt', description: 'write in read-only' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'AFTER_READ_ONLY' }, { finish: 'stop', usage }]),
    )
    await prompt('try to write')
    await page.getByTestId('assistant-message').filter({ hasText: 'AFTER_READ_ONLY' }).waitFor()
    expect(existsSync(join(work, 'ro.txt'))).toBe(false)
    expect(await page.getByTestId('sandbox-denial').last().textContent()).toContain('[sandbox: file access denied under read-only mode]')
  })

  it('AP-5: a read of the preset answered before a change, and landing after it, does not put the old preset back', async () => {
    const picker = page.getByTestId('preset-picker')
    await page.locator('[data-testid="preset-picker"][data-mode="read-only"]').waitFor()
    // Every status change reads the preset again; those reads are answered now and held.
    const release = gate()
    let held = 0
    let delivered = 0
    await page.route('**/api/permission.get', async route => {
      held += 1
      const response = await route.fetch()
      await release.promise
      await route.fulfill({ response })
    })
    page.on('response', response => { if (response.url().endsWith('/api/permission.get')) delivered += 1 })
    // A turn that stays running: the page shows `running`, so the read it triggers surely happens
    // (a turn that ends at once can go idle again within one render, with no read at all).
    fake.enqueue(streamResponse([{ text: 'HELD_READS_TURN' }], { done: false, end: 'hang' }))
    await prompt('one more turn')
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 10_000 }).toBe('running')
    await expect.poll(() => held, { timeout: 10_000 }).toBeGreaterThan(0)
    await picker.selectOption('workspace-write')
    await page.locator('[data-testid="preset-picker"][data-mode="workspace-write"]').waitFor()
    release.open()
    await expect.poll(() => delivered).toBe(held)
    await page.unroute('**/api/permission.get')
    await page.evaluate(() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve))))
    expect(await picker.getAttribute('data-mode')).toBe('workspace-write')
    await page.getByTestId('stop').click()
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 10_000 }).toBe('idle')
  })
})
