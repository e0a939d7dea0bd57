/**
 * Background jobs in the browser: headless Chromium against a real `dsh web` whose model is the
 * fake DeepSeek server. The bash card names the job it started and the header counts it while it
 * runs; the job's end shows as a notice when it happens (before the next prompt); a job_output
 * card shows its status and output.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, type BrowserWorkspace } from '../../test-support/browser-workspace.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the background-jobs web test: ${chromium.reason}`)

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const call = (id: string, name: string, args: unknown) => streamResponse([{ toolCall: { id, name, arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])

describe.skipIf(chromium.path === undefined)('background jobs in the web UI', () => {
  let workspace: BrowserWorkspace | undefined
  beforeAll(async () => { workspace = await openBrowserWorkspace({ name: 'jobs', newSession: true }) }, 600_000)
  afterAll(async () => { await workspace?.close() })

  it('the bash card names its job, the end shows as a notice, and job_output shows status and output', async () => {
    const { fake, page, work } = workspace!
    fake.enqueue(
      // It waits for the test's go-ahead, so it ends after the first turn, with the session idle.
      call('c1', 'bash', { command: 'while [ ! -e go ]; do sleep 0.02; done; echo tick 1; echo tick 2; exit 2', description: 'Count two ticks', run_in_background: true }),
      streamResponse([{ text: 'Started it in the background.' }, { finish: 'stop', usage }]),
      call('c2', 'job_output', { job_id: 'bash-1' }),
      streamResponse([{ text: 'It failed with exit code 2.' }, { finish: 'stop', usage }]),
    )
    const send = async (text: string) => {
      await page.getByTestId('composer').fill(text)
      await page.getByTestId('send').click()
    }
    await send('start the ticks')
    await page.getByText('Started it in the background.').waitFor()
    expect(await page.getByTestId('background-job').textContent()).toBe('background job bash-1')
    // The header counts it while it runs.
    await expect.poll(() => page.getByTestId('jobs-pill').textContent()).toBe('1 job running')
    expect(await page.getByTestId('jobs-pill').getAttribute('title')).toContain('bash-1 running: Count two ticks')
    // The job ends on its own while the session is idle: the notice appears without a prompt.
    writeFileSync(join(work, 'go'), '')
    // While the agent is still busy the notice waits in the queue first: either shows it.
    const notice = page.getByText('background job bash-1 (bash: Count two ticks) finished [status: failed, exit code 2].').first()
    await notice.waitFor()
    await page.getByTestId('jobs-pill').waitFor({ state: 'detached' })
    await send('how did it go?')
    await page.getByText('It failed with exit code 2.').waitFor()
    const card = page.getByTestId('card-job-output')
    expect(await card.getByTestId('job-status').textContent()).toBe('failed (exit code 2)')
    expect(await card.locator('.tool-output').textContent()).toContain('tick 1\ntick 2')
    // Shown once, though the model read it again as a message of the second turn.
    expect(await page.getByText('background job bash-1 (bash: Count two ticks) finished [status: failed, exit code 2].').count()).toBe(1)
  })
})
