/**
 * Typing in the web composer opens the model's connection on the server ahead of the message
 * (the `typing` method; docs/llm.md, "Connections opened ahead"): headless Chromium against a real
 * `dsh web` whose model is the fake DeepSeek server, which counts its connections.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web typing test: ${chromium.reason}`)

describe.skipIf(chromium.path === undefined)('typing in the web composer', () => {
  let workspace: BrowserWorkspace | undefined
  beforeAll(async () => { workspace = await openBrowserWorkspace({ name: 'typing', newSession: true }) }, 600_000)
  afterAll(async () => { await workspace?.close() })

  it('opens the model\'s connection before the message is sent; the request then goes out on it', async () => {
    const { fake, page } = workspace!
    fake.enqueue(streamResponse([{ text: 'Over the open connection.' }, { finish: 'stop', usage: { prompt_tokens: 5, completion_tokens: 2 } }]))
    const before = fake.connections
    await page.getByTestId('composer').pressSequentially('hel')
    // Nothing sent yet: the connection is open and waits for the request.
    await fake.waitForConnections(before + 1)
    expect(fake.requests).toHaveLength(0)
    await page.getByTestId('composer').pressSequentially('lo')
    await page.getByTestId('send').click()
    await page.getByText('Over the open connection.').waitFor()
    expect(fake.requests.map(request => request.connection)).toEqual([before + 1])
    expect(fake.connections).toBe(before + 1)
  })
})
