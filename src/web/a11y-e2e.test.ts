/**
 * Accessibility of the main views (issue #16 quality bar): axe-core runs in headless Chromium
 * against a real `dsh web` (fake model server) on the empty workspace, a conversation with tool
 * cards, Settings, a pending approval card and the narrow-screen drawer, in the light and the
 * dark theme. No serious or critical violation is allowed.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web accessibility tests: ${chromium.reason}`)

function axeSource(): string | undefined {
  try {
    return readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')
  } catch {
    return undefined
  }
}
const axe = axeSource()
if (axe === undefined) console.warn('skipping the web accessibility tests: axe-core is not installed (npm ci installs the devDependency)')

const usage = { prompt_tokens: 10, completion_tokens: 3 }

interface Violation { id: string; impact: string; help: string; nodes: string[] }

describe.skipIf(chromium.path === undefined || axe === undefined)('accessibility of the web UI (axe-core)', () => {
  let fake: FakeDeepSeek
  let page: Page
  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'a11y', viewport: { width: 1400, height: 860 } })
    ;({ fake, page } = workspace)
    // No transitions: a hover fade caught half-way would be measured at half its contrast.
    await page.emulateMedia({ reducedMotion: 'reduce' })
    await page.goto(workspace.web.url)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  /** Serious and critical violations of the page as it is now, in both themes. */
  const audit = async (view: string): Promise<string[]> => {
    const found: string[] = []
    for (const theme of ['light', 'dark']) {
      await page.evaluate(value => { document.documentElement.dataset.theme = value }, theme)
      // The script is evaluated over the DevTools protocol: the page's CSP allows no inline script.
      if (!await page.evaluate('typeof window.axe === "object"')) await page.evaluate(axe!)
      const violations = await page.evaluate(async () => {
        const result = await (window as unknown as { axe: { run(context: unknown, options: unknown): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[]; failureSummary?: string }[] }[] }> } })
          .axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] })
        return result.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map(node => `${node.target.join(' ')}${node.failureSummary ? ` (${node.failureSummary.split('\n').slice(1).join(' ').trim()})` : ''}`) }))
      }) as Violation[]
      for (const violation of violations) {
        if (violation.impact === 'serious' || violation.impact === 'critical') {
          found.push(`${view} (${theme}): ${violation.id} [${violation.impact}] ${violation.help}: ${violation.nodes.slice(0, 12).join(', ')}`)
        }
      }
    }
    return found
  }

  it('the empty workspace (New session, no sessions yet)', async () => {
    await page.getByTestId('create-session').waitFor()
    expect(await audit('empty workspace')).toEqual([])
  })

  it('Settings', async () => {
    await page.getByTestId('open-settings').click()
    await page.getByTestId('settings').waitFor()
    const found = await audit('settings')
    expect(found).toEqual([])
    await page.keyboard.press('Escape')
  })

  it('a conversation with tool cards (bash, write, edit, read, a failed command)', async () => {
    await page.getByTestId('new-session').click()
    await page.getByTestId('create-session').click()
    await page.getByTestId('composer').waitFor()
    fake.enqueue(
      streamResponse([{ reasoning: 'Plan the change.' }, { text: 'I will **write** the file, then edit it.' },
        { toolCall: { index: 0, id: 'c-write', name: 'write', arguments: JSON.stringify({ file_path: 'notes.md', content: '# Notes\nfirst line\n' }) } },
        { toolCall: { index: 1, id: 'c-bash', name: 'bash', arguments: JSON.stringify({ command: 'ls -la && false', description: 'List the folder' }) } },
        { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'c-edit', name: 'edit', arguments: JSON.stringify({ file_path: 'notes.md', old_string: 'first line', new_string: 'second line' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'c-read', name: 'read', arguments: JSON.stringify({ file_path: 'notes.md' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Done:\n\n```ts\nconst x: number = 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('write and edit notes.md')
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('card-read').waitFor()
    await page.locator('.markdown table').waitFor()
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
    expect(await audit('conversation')).toEqual([])
  })

  it('a pending approval card in a goal round (the goal bar above the composer)', async () => {
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'c-esc', name: 'write', arguments: JSON.stringify({ file_path: 'x.txt', content: 'x', sandbox_permissions: 'danger-full-access', justification: 'needed outside' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'after the approval' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('/goal write outside the sandbox')
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('approval-allow').waitFor()
    await page.getByTestId('goal-pause').waitFor()
    expect(await audit('approval card and goal bar')).toEqual([])
    // Paused, so no second round follows the rejection.
    await page.getByTestId('goal-pause').click()
    await page.locator('[data-testid="goal-bar"][data-phase="paused"]').waitFor()
    expect(await audit('paused goal')).toEqual([])
    await page.getByTestId('approval-reject').click()
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
  })

  it('the narrow-screen drawer (390 px)', async () => {
    await page.setViewportSize({ width: 390, height: 820 })
    await page.getByTestId('menu-button').click()
    await page.getByTestId('new-session').waitFor({ state: 'visible' })
    expect(await audit('drawer')).toEqual([])
    await page.keyboard.press('Escape')
    expect(await audit('narrow conversation')).toEqual([])
    await page.setViewportSize({ width: 1400, height: 860 })
  })
})
