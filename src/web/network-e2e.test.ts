/**
 * The network knob and wider approval grants in the browser: a real `dsh web` with a tool that
 * asks as the network proxy does (test-support/patches.ts), headless Chromium. The header's
 * network switch changes the mode and follows `/network` typed in the composer; a card for a
 * request with scopes offers Allow for this session and Always allow, one without them does not.
 * Screenshots at 1280 and 390 px go to test-output/web/.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { askNetworkPlugin } from '../../test-support/patches.js'
import { repoRoot } from '../../test-support/run-dsh.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web network e2e tests: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }
const shots = join(repoRoot, 'test-output', 'web')

const fetchHost = (id: string, host: string, scoped = true) => streamResponse([
  { toolCall: { id, name: 'fetch_host', arguments: JSON.stringify(scoped ? { host } : { host, scoped: false }) } },
  { finish: 'tool_calls', usage },
])

describe.skipIf(chromium.path === undefined)('the network switch and scoped approvals in the web UI', () => {
  let fake: FakeDeepSeek
  let page: Page
  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    const plugin = askNetworkPlugin()
    workspace = await openBrowserWorkspace({ name: 'network', newSession: true, patchRows: `- insert:\n    - id: ask-network\n      name: ${plugin}\n` })
    ;({ fake, page } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const network = () => page.getByTestId('network-picker')
  /** What the tool answered the model, from the session's log as the server has it. */
  const toolResults = () => page.evaluate(async () => {
    const id = new URLSearchParams(location.search).get('session')
    const reply = await fetch('/api/sessions.history', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ id }) })
    const events: { type: string; data: any }[] = (await reply.json()).result.events
    return events.filter(event => event.type === 'tool/result').map(event => event.data.message.content[0].content[0].text as string)
  })

  it('the switch shows the mode beside the preset, changes it, and follows /network typed in the composer', async () => {
    await page.locator('[data-testid="network-picker"][data-network="full"]').waitFor()
    expect(await network().inputValue()).toBe('full')
    expect(await network().locator('option').allTextContents()).toEqual(['net full', 'net allowlist', 'net none'])
    await network().selectOption('none')
    await page.locator('[data-testid="network-picker"][data-network="none"]').waitFor()
    expect(await network().getAttribute('title')).toBe('Sandboxed commands have no network at all')
    await sendFromComposer(page, '/network allowlist')
    await page.getByTestId('notice').filter({ hasText: 'Network of sandboxed commands: allowlist' }).waitFor()
    await page.locator('[data-testid="network-picker"][data-network="allowlist"]').waitFor()
    await sendFromComposer(page, '/network open')
    await page.getByTestId('notice').filter({ hasText: 'Unknown network mode "open". Modes: full, allowlist, none' }).waitFor()
    // The preset picker is a separate knob: switching it keeps the network mode.
    await page.getByTestId('preset-picker').selectOption('read-only')
    await page.locator('[data-testid="preset-picker"][data-mode="read-only"]').waitFor()
    expect(await network().inputValue()).toBe('allowlist')
    await page.getByTestId('preset-picker').selectOption('workspace-write')
    await page.locator('[data-testid="preset-picker"][data-mode="workspace-write"]').waitFor()
  })

  it('a request with scopes offers Allow for this session and Always allow; the card says which was given', async () => {
    fake.enqueue(fetchHost('n1', 'registry.example.org'), streamResponse([{ text: 'AFTER_SESSION_GRANT' }, { finish: 'stop', usage }]))
    await sendFromComposer(page, 'reach the registry')
    const card = page.getByTestId('approval-card').first()
    await card.getByTestId('approval-allow-session').waitFor()
    expect(await card.getByTestId('approval-reason').textContent()).toBe('connect to registry.example.org:443 (not in sandbox.allowedHosts)')
    expect(await card.locator('.approval-actions button').allTextContents()).toEqual(['Allow once', 'Allow for this session', 'Always allow (add to settings)', 'Reject'])
    await page.screenshot({ path: join(shots, 'network-approval-1280.png') })
    await page.setViewportSize({ width: 390, height: 820 })
    // Narrow: the four buttons wrap inside the card, none runs off the screen.
    await expect.poll(() => card.locator('.approval-actions button').evaluateAll(buttons => buttons.every(button => button.getBoundingClientRect().right <= window.innerWidth))).toBe(true)
    await page.screenshot({ path: join(shots, 'network-approval-390.png') })
    await page.setViewportSize({ width: 1280, height: 820 })
    await card.getByTestId('approval-allow-session').click()
    await card.getByTestId('approval-outcome').filter({ hasText: 'Allowed for this session' }).waitFor()
    await page.getByTestId('assistant-message').filter({ hasText: 'AFTER_SESSION_GRANT' }).waitFor()
    expect(await toolResults()).toEqual(['network approval: allowed-session'])
  })

  it('Always allow answers allowed-always; a request without scopes shows Allow once and Reject only', async () => {
    fake.enqueue(fetchHost('n2', 'pypi.example.org'), fetchHost('n3', 'plain.example.org', false), streamResponse([{ text: 'AFTER_BOTH' }, { finish: 'stop', usage }]))
    await sendFromComposer(page, 'reach two more hosts')
    const always = page.getByTestId('approval-card').nth(1)
    await always.getByTestId('approval-allow-always').click()
    await always.getByTestId('approval-outcome').filter({ hasText: 'Always allowed (added to settings)' }).waitFor()
    const plain = page.getByTestId('approval-card').nth(2)
    await plain.getByTestId('approval-allow').waitFor()
    expect(await plain.getByTestId('approval-reason').textContent()).toBe('connect to plain.example.org:443 (not in sandbox.allowedHosts)')
    expect(await plain.locator('.approval-actions button').allTextContents()).toEqual(['Allow once', 'Reject'])
    await plain.getByTestId('approval-reject').click()
    await page.getByTestId('assistant-message').filter({ hasText: 'AFTER_BOTH' }).waitFor()
    expect(await toolResults()).toEqual(['network approval: allowed-session', 'network approval: allowed-always', 'network approval: rejected'])
  })
})
