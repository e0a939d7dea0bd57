/**
 * Editing an earlier message in the browser (docs/web.md, "Edit a message"): a real `dsh web`,
 * the fake model server writing and editing files, headless Chromium. Edit under the second
 * message asks whether to put back the files its turn changed, then opens a copy of the session
 * before that turn with the message in the composer; the files are as they were and the model's
 * next request holds the edited message, not the old one.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web rewind e2e tests: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }
const toolCall = (id: string, name: string, args: unknown) => streamResponse([{ toolCall: { id, name, arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])

describe.skipIf(chromium.path === undefined)('editing an earlier message in the web UI', () => {
  let fake: FakeDeepSeek
  let page: Page
  let work: string
  let workspace: BrowserWorkspace | undefined
  const shots = join(repoRoot, 'test-output', 'web')

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'rewind', newSession: true, prepare: ({ work }) => writeFileSync(join(work, 'app.txt'), 'hello\n') })
    ;({ fake, page, work } = workspace)
    await page.emulateMedia({ reducedMotion: 'reduce' })
    mkdirSync(shots, { recursive: true })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const prompt = (text: string) => sendFromComposer(page, text)

  it('S-14: Edit asks about the changed files, puts them back, and opens a copy before that turn with the message to edit', async () => {
    fake.enqueue(
      streamResponse([{ text: 'FIRST_ANSWER' }, { finish: 'stop', usage }]),
      toolCall('r1', 'read', { file_path: 'app.txt' }),
      toolCall('e1', 'edit', { file_path: 'app.txt', old_string: 'hello', new_string: 'HELLO, CHANGED' }),
      toolCall('w1', 'write', { file_path: 'notes/new.md', content: 'a note\n' }),
      streamResponse([{ text: 'SECOND_ANSWER' }, { finish: 'stop', usage }]),
    )
    await prompt('first question')
    await page.getByText('FIRST_ANSWER').waitFor()
    await prompt('second question')
    await page.getByText('SECOND_ANSWER').waitFor()
    expect(readFileSync(join(work, 'app.txt'), 'utf8')).toBe('HELLO, CHANGED\n')
    const original = new URL(page.url()).searchParams.get('session')

    const second = page.getByTestId('user-message').filter({ hasText: 'second question' })
    await second.hover()
    await second.getByTestId('edit-message').click()
    const asked = second.getByTestId('rewind-files')
    await asked.waitFor()
    expect(await asked.textContent()).toContain('write and edit changed 2 files: app.txt, notes/new.md.')
    await second.screenshot({ path: join(shots, 'rewind-files.png') })
    await asked.getByTestId('rewind-restore').click()

    await expect.poll(() => new URL(page.url()).searchParams.get('session')).not.toBe(original)
    await expect.poll(() => page.getByTestId('composer').inputValue()).toBe('second question')
    await page.getByText('FIRST_ANSWER').waitFor()
    expect(await page.getByText('SECOND_ANSWER').count()).toBe(0)
    expect(readFileSync(join(work, 'app.txt'), 'utf8')).toBe('hello\n')
    expect(existsSync(join(work, 'notes', 'new.md'))).toBe(false)
    await page.getByText('Files as they were before turn 2: put back app.txt; removed notes/new.md (written since).').waitFor()
    await page.locator('.session-row').filter({ hasText: '(fork)' }).waitFor()
    await page.screenshot({ path: join(shots, 'rewind-copy.png') })

    fake.enqueue(streamResponse([{ text: 'EDITED_ANSWER' }, { finish: 'stop', usage }]))
    await page.getByTestId('composer').fill('second question, edited')
    await page.getByTestId('composer').press('Enter')
    await page.getByText('EDITED_ANSWER').waitFor()
    const body = fake.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] }
    const users = body.messages.filter(message => message.role === 'user').map(message => JSON.stringify(message.content))
    expect(users.some(content => content.includes('second question, edited'))).toBe(true)
    expect(users.some(content => content.includes('"second question"'))).toBe(false)
  })

  it('a message whose turn changed no file goes back at once; at 390 px the Edit button and the copy fit', async () => {
    await page.setViewportSize({ width: 390, height: 760 })
    fake.enqueue(streamResponse([{ text: 'THIRD_ANSWER' }, { finish: 'stop', usage }]))
    await prompt('third question')
    await page.getByText('THIRD_ANSWER').waitFor()
    const before = new URL(page.url()).searchParams.get('session')
    const third = page.getByTestId('user-message').filter({ hasText: 'third question' })
    await third.hover()
    await third.getByTestId('edit-message').click()
    await expect.poll(() => new URL(page.url()).searchParams.get('session')).not.toBe(before)
    await expect.poll(() => page.getByTestId('composer').inputValue()).toBe('third question')
    expect(await page.getByText('THIRD_ANSWER').count()).toBe(0)
    // A copy of a copy is marked once.
    expect(await page.getByTestId('chat-title').textContent()).toBe('first question (fork)')
    await page.screenshot({ path: join(shots, 'rewind-390.png') })
    await page.setViewportSize({ width: 1280, height: 820 })
  })
})
