/**
 * Images in the browser (issue 16, item 10): headless Chromium against a real `dsh web` with an
 * image-capable OpenAI-compatible route on the fake model server. An image picked with the file
 * picker, one pasted and one dropped reach the model as `image_url` parts, in order, and show in
 * the conversation from the session's attachment store; on a text-only route the prompt is
 * refused with one line and the composer keeps text and images. Screenshots at 1400 and 390 px
 * go to test-output/web/.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { gradientPng, pngImage } from '../../test-support/images.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web image tests: ${chromium.reason}`)

const shots = join(repoRoot, 'test-output', 'web')
const usage = { prompt_tokens: 100, completion_tokens: 10 }
const VISION = 'vision-1'

/** An OpenAI-compatible provider on the fake server whose model takes images. */
const visionRow = (url: string) => `- insert:
  - id: vision
    name: llm-openai
    config:
      provider: vision-test
      baseUrl: ${url}
      models:
        - { model: ${VISION}, contextWindow: 32768, defaultMaxTokens: 1024, imageInput: true }
`

/** Dispatches a paste of `bytes` as a PNG file on the composer (what a browser does for a pasted screenshot). */
async function pasteImage(page: Page, bytes: Buffer, name: string): Promise<void> {
  await page.getByTestId('composer').evaluate((element, { data, name }) => {
    const transfer = new DataTransfer()
    transfer.items.add(new File([Uint8Array.from(atob(data), c => c.charCodeAt(0))], name, { type: 'image/png' }))
    element.dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }))
  }, { data: bytes.toString('base64'), name })
}

/** Drags a PNG file over the composer and drops it there. */
async function dropImage(page: Page, bytes: Buffer, name: string): Promise<void> {
  await page.locator('.composer').evaluate((element, { data, name }) => {
    const transfer = new DataTransfer()
    transfer.items.add(new File([Uint8Array.from(atob(data), c => c.charCodeAt(0))], name, { type: 'image/png' }))
    element.dispatchEvent(new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }))
    element.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }))
  }, { data: bytes.toString('base64'), name })
}

describe.skipIf(chromium.path === undefined)('images in the web UI (browser)', () => {
  /** The file the Export test downloaded, imported back by the next test. */
  let exported: { name: string; text: string } | undefined
  let fake: FakeDeepSeek
  let page: Page
  let workspace: BrowserWorkspace | undefined

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    workspace = await openBrowserWorkspace({
      name: 'images',
      viewport: { width: 1400, height: 860 },
      patchRows: visionRow,
      prepare: ({ home }) => writeFileSync(join(home, 'settings.yaml'), `model:\n  default: ${VISION}\n`),
      newSession: true,
    })
    ;({ fake, page } = workspace)
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const picked = gradientPng(96, 64)
  const pasted = pngImage(40, 40, (x, y) => [40, 120 + y * 3, 80 + x * 4])
  const dropped = pngImage(64, 32, (x) => [250, 200 - x * 2, 40])
  const dataUrl = (bytes: Buffer) => `data:image/png;base64,${bytes.toString('base64')}`

  it('10: picked, pasted and dropped images reach the model as image_url parts and show in the conversation', async () => {
    await expect.poll(() => page.getByTestId('model-picker').inputValue()).toBe(VISION)
    await page.getByTestId('attach-input').setInputFiles({ name: 'picked.png', mimeType: 'image/png', buffer: picked })
    await pasteImage(page, pasted, 'pasted.png')
    await dropImage(page, dropped, 'dropped.png')
    await expect.poll(() => page.getByTestId('attachment-thumb').count()).toBe(3)
    // A file that is not an image is refused in the tray; an extra image can be removed again.
    await page.getByTestId('attach-input').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') })
    await page.getByTestId('attachment-error').filter({ hasText: 'notes.txt is not a PNG, JPEG, GIF or WebP image' }).waitFor()
    await page.getByTestId('attach-input').setInputFiles({ name: 'extra.png', mimeType: 'image/png', buffer: pngImage(8, 8) })
    await expect.poll(() => page.getByTestId('attachment-thumb').count()).toBe(4)
    await page.getByRole('button', { name: 'Remove extra.png' }).click()
    await expect.poll(() => page.getByTestId('attachment-thumb').count()).toBe(3)
    await page.getByTestId('composer').fill('Describe these three pictures.')
    await page.locator('.composer').screenshot({ path: join(shots, 'composer-images-1400.png') })

    fake.enqueue(streamResponse([{ text: 'A gradient, a green square and an orange strip.' }, { finish: 'stop', usage }]))
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('assistant-message').filter({ hasText: 'orange strip' }).waitFor()
    const user = (fake.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] }).messages.find(m => m.role === 'user' && Array.isArray(m.content))
    expect(user?.content).toEqual([
      { type: 'text', text: 'Describe these three pictures.' },
      { type: 'image_url', image_url: { url: dataUrl(picked) } },
      { type: 'image_url', image_url: { url: dataUrl(pasted) } },
      { type: 'image_url', image_url: { url: dataUrl(dropped) } },
    ])
    // Sent: the tray is empty; the conversation shows the three images from the store.
    expect(await page.getByTestId('attachment-thumb').count()).toBe(0)
    const images = page.getByTestId('user-message').last().getByTestId('message-image')
    await expect.poll(() => images.count()).toBe(3)
    await expect.poll(() => images.evaluateAll(list => list.map(img => (img as HTMLImageElement).naturalWidth))).toEqual([96, 40, 64])
    await page.screenshot({ path: join(shots, 'images-1400.png') })
    await page.evaluate(() => { document.documentElement.dataset.theme = 'dark' })
    await page.screenshot({ path: join(shots, 'images-dark-1400.png') })
    await page.evaluate(() => { document.documentElement.dataset.theme = 'light' })
  })

  it('Export of a session with images downloads one self-contained file: the log and the images\' bytes', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export').click()])
    expect(download.suggestedFilename()).toMatch(/\.dsh-export\.json$/)
    const file = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { format: string; version: number; log: string; attachments: { attachmentId: string; mediaType: string; data: string }[]; missingAttachments?: string[] }
    expect(file.format).toBe('dsh-session-export')
    expect(file.version).toBe(1)
    const lines = file.log.trim().split('\n').map(line => JSON.parse(line))
    expect(lines[0]).toMatchObject({ type: 'session', id: download.suggestedFilename().replace(/\.dsh-export\.json$/, '') })
    const referenced = lines.filter(event => event.type === 'user/message').flatMap(event => event.data.content)
      .filter((block: { type: string }) => block.type === 'image').map((block: { attachment: { attachmentId: string } }) => block.attachment.attachmentId)
    expect(referenced).toHaveLength(3)
    expect(file.attachments.map(a => a.attachmentId)).toEqual(referenced)
    expect(file.attachments.map(a => Buffer.from(a.data, 'base64'))).toEqual([picked, pasted, dropped])
    expect(file.attachments.every(a => a.mediaType === 'image/png')).toBe(true)
    expect(file.missingAttachments).toBeUndefined()
    exported = { name: download.suggestedFilename(), text: readFileSync((await download.path())!, 'utf8') }
  })

  it('Import of that file: the session is already here, so it comes in as a copy once the user agrees; the copy opens with its images; a bad file is named in one line', async () => {
    const original = page.url()
    const asked: string[] = []
    const onDialog = (dialog: import('playwright-core').Dialog) => { asked.push(dialog.message()); void dialog.accept() }
    page.on('dialog', onDialog)
    try {
      await page.getByTestId('import-file').setInputFiles({ name: exported!.name, mimeType: 'application/json', buffer: Buffer.from(exported!.text) })
      const note = page.getByTestId('import-note')
      await note.filter({ hasText: 'Imported' }).waitFor()
      expect(asked).toEqual(['This session is already here. Import the file as a copy beside it?'])
      expect(await note.textContent()).toMatch(/^Imported “.+” \(\d+ events, 3 images\)\.×$/)
      const id = exported!.name.replace(/\.dsh-export\.json$/, '')
      await expect.poll(() => new URL(page.url()).searchParams.get('session')).toBe(`${id}-imported`)
      expect(page.url()).not.toBe(original)
      const images = page.getByTestId('user-message').last().getByTestId('message-image')
      await expect.poll(() => images.evaluateAll(list => list.map(img => (img as HTMLImageElement).naturalWidth))).toEqual([96, 40, 64])
      await page.screenshot({ path: join(shots, 'import-1400.png') })
      await page.getByTestId('import-file').setInputFiles({ name: 'broken.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from('{"type":"session"}\nnot json\n') })
      await note.filter({ hasText: 'broken.jsonl' }).waitFor()
      expect(await note.textContent()).toMatch(/^broken\.jsonl: not a valid session log: line 1: /)
      expect(await note.evaluate(element => element.classList.contains('error'))).toBe(true)
      await page.screenshot({ path: join(shots, 'import-error-1400.png') })
    } finally {
      page.off('dialog', onDialog)
    }
  })

  it('10: on a text-only route the prompt is refused with one line; text and images stay in the composer; nothing is sent', async () => {
    await page.getByTestId('model-picker').selectOption('deepseek-v4-flash')
    await expect.poll(() => page.getByTestId('model-picker').inputValue()).toBe('deepseek-v4-flash')
    const requests = fake.requests.length
    const prompts = await page.getByTestId('user-message').count()
    await page.getByTestId('attach-input').setInputFiles({ name: 'refused.png', mimeType: 'image/png', buffer: pngImage(12, 12) })
    await page.getByTestId('composer').fill('Keep me')
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('notice').filter({ hasText: 'deepseek-v4-flash (deepseek-official) does not accept images' }).waitFor()
    expect(await page.getByTestId('composer').inputValue()).toBe('Keep me')
    expect(await page.getByTestId('attachment-thumb').count()).toBe(1)
    expect(fake.requests.length).toBe(requests)
    expect(await page.getByTestId('user-message').count()).toBe(prompts)
  })

  it('narrow screen: the composer tray and the conversation images at 390 px', async () => {
    await page.setViewportSize({ width: 390, height: 800 })
    await page.getByTestId('composer').fill('')
    await page.screenshot({ path: join(shots, 'images-390.png') })
    const tray = await page.getByTestId('attachment-tray').boundingBox()
    expect(tray!.x + tray!.width).toBeLessThanOrEqual(390)
    await page.setViewportSize({ width: 1400, height: 860 })
  })
})
