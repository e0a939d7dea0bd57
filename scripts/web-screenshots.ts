/**
 * Screenshots of the web workspace for docs/web.md: a real `dsh web` against the fake model
 * server (a small coding task with tool cards and a plan, a goal round waiting on an approval),
 * drawn by headless Chromium at 1400 and 390 px in the light and the dark theme, written to
 * docs/web/*.png.
 *
 *   npm run screenshots:web      (needs a built dist/ and the Debian chromium package)
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { streamResponse } from '../test-support/fake-deepseek.js'
import { findChromium } from '../test-support/chromium.js'
import { openBrowserWorkspace } from '../test-support/browser-workspace.js'
import { repoRoot } from '../test-support/run-dsh.js'

const chromium = findChromium()
if (chromium.path === undefined) {
  console.error(`web-screenshots: ${chromium.reason}`)
  process.exit(1)
}
const out = join(repoRoot, 'docs', 'web')
mkdirSync(out, { recursive: true })
const usage = { prompt_tokens: 4200, completion_tokens: 180, prompt_cache_hit_tokens: 3600 }
const wide = { width: 1400, height: 860 }
const phone = { width: 390, height: 780 }

function gate() {
  let open!: () => void
  const promise = new Promise<void>(resolve => { open = resolve })
  return { promise, open }
}

const workspace = await openBrowserWorkspace({
  name: 'screens',
  viewport: wide,
  prepare: ({ work }) => {
    const project = join(work, 'sum-project')
    mkdirSync(join(project, 'src'), { recursive: true })
    writeFileSync(join(project, 'src', 'sum.js'), 'export function sum(values) {\n  let total = 1\n  for (const value of values) total += value\n  return total\n}\n')
    writeFileSync(join(project, 'test.js'), "import assert from 'node:assert/strict'\nimport { sum } from './src/sum.js'\nassert.equal(sum([]), 0)\nassert.equal(sum([2, 3]), 5)\nconsole.log('2 tests passed')\n")
    writeFileSync(join(project, 'package.json'), '{ "type": "module" }\n')
  },
})
const { fake, page } = workspace
const shots: string[] = []

/** Switches the theme with the sidebar's toggle, as a person would (the sidebar must be visible). */
async function theme(wanted: 'light' | 'dark'): Promise<void> {
  if (await page.evaluate(() => document.documentElement.dataset.theme) === wanted) return
  await page.getByTestId('theme-toggle').click()
  await page.locator(`html[data-theme="${wanted}"]`).waitFor({ state: 'attached' })
}

async function shot(name: string): Promise<void> {
  await page.mouse.move(0, 0)
  const path = join(out, `${name}.png`)
  await page.screenshot({ path })
  shots.push(`${name}.png ${Math.round(statSync(path).size / 1024)} KB`)
}

const idle = async (target: Page) => {
  await target.locator('[data-testid="status"]', { hasText: /^idle$/ }).waitFor()
}

try {
  await page.emulateMedia({ reducedMotion: 'reduce' })
  // The empty workspace: a new session in the project folder.
  await page.goto(workspace.web.url)
  await page.getByTestId('new-cwd').fill(join(workspace.work, 'sum-project'))
  await page.getByTestId('create-session').click()
  await page.getByTestId('composer').waitFor()
  const todos = (states: string[]) => JSON.stringify({ todos: [
    { content: 'Run the tests', status: states[0] }, { content: 'Fix sum()', status: states[1] }, { content: 'Run them again', status: states[2] },
  ] })
  fake.enqueue(
    streamResponse([{ reasoning: 'Run the tests first to see the failure.' }, { text: 'Let me run the tests first.' },
      { toolCall: { index: 0, id: 'c1', name: 'todo_write', arguments: todos(['in_progress', 'pending', 'pending']) } },
      { toolCall: { index: 1, id: 'c2', name: 'bash', arguments: JSON.stringify({ command: 'node test.js', description: 'Run the tests' }) } },
      { finish: 'tool_calls', usage }]),
    streamResponse([{ text: '`sum([])` returns 1: the total starts at 1.' },
      { toolCall: { id: 'c3', name: 'read', arguments: JSON.stringify({ file_path: 'src/sum.js' }) } }, { finish: 'tool_calls', usage }]),
    streamResponse([{ toolCall: { index: 0, id: 'c4', name: 'edit', arguments: JSON.stringify({ file_path: 'src/sum.js', old_string: 'let total = 1', new_string: 'let total = 0' }) } },
      { toolCall: { index: 1, id: 'c5', name: 'todo_write', arguments: todos(['completed', 'completed', 'in_progress']) } }, { finish: 'tool_calls', usage }]),
    streamResponse([{ toolCall: { index: 0, id: 'c6', name: 'bash', arguments: JSON.stringify({ command: 'node test.js', description: 'Run the tests again' }) } },
      { toolCall: { index: 1, id: 'c7', name: 'todo_write', arguments: todos(['completed', 'completed', 'completed']) } }, { finish: 'tool_calls', usage }]),
    streamResponse([{ text: 'Fixed. `sum()` started its total at **1**, so every result was one too high:\n\n```js\nexport function sum(values) {\n  let total = 0\n  for (const value of values) total += value\n  return total\n}\n```\n\nBoth tests pass now.' }, { finish: 'stop', usage }]),
  )
  await page.getByTestId('composer').fill('The sum test fails. Find out why and fix it.')
  await page.getByTestId('composer').press('Enter')
  await page.locator('.markdown', { hasText: 'Both tests pass now.' }).waitFor()
  await idle(page)
  // The start of the task (the failing run, the file read, the edit), then its end.
  await theme('light')
  await page.getByTestId('conversation').evaluate(element => { element.scrollTop = 0 })
  await shot('conversation-1400-light')
  await page.getByTestId('conversation').evaluate(element => { element.scrollTop = element.scrollHeight })
  await theme('dark')
  await shot('conversation-1400-dark')

  await page.getByTestId('open-settings').click()
  await page.getByTestId('settings').waitFor()
  await shot('settings-1400-dark')
  await page.keyboard.press('Escape')
  await page.getByTestId('composer').waitFor()

  await page.setViewportSize(phone)
  await page.getByTestId('menu-button').click()
  await page.getByTestId('new-session').waitFor({ state: 'visible' })
  await shot('drawer-390-dark')
  await page.keyboard.press('Escape')
  await page.setViewportSize(wide)
  await theme('light')
  await page.setViewportSize(phone)
  await shot('conversation-390-light')
  await page.setViewportSize(wide)

  // A goal whose first round asks to write outside the sandbox: the goal bar and the approval card.
  const closing = gate()
  fake.enqueue(
    streamResponse([{ text: 'The release notes live outside the workspace, so I need to ask first.' },
      { toolCall: { id: 'c8', name: 'write', arguments: JSON.stringify({ file_path: '/tmp/release-notes.md', content: '- sum() of an empty list is 0\n', sandbox_permissions: 'danger-full-access', justification: 'the release notes are kept outside the workspace' }) } },
      { finish: 'tool_calls', usage }]),
    streamResponse([{ until: closing.promise }, { text: 'Understood, I will leave the notes alone.' }, { finish: 'stop', usage }]),
  )
  await page.getByTestId('composer').fill('/goal ship the sum() fix with release notes')
  await page.getByTestId('composer').press('Enter')
  await page.getByTestId('approval-allow').waitFor()
  await page.getByTestId('goal-pause').waitFor()
  await shot('goal-approval-1400-light')
  await page.getByTestId('goal-pause').click()
  await page.locator('[data-testid="goal-bar"][data-phase="paused"]').waitFor()
  await page.getByTestId('approval-reject').click()
  closing.open()
  await idle(page)
} finally {
  await workspace.close()
}
console.log(shots.join('\n'))
