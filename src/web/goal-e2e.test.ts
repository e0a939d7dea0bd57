/**
 * Goals in the browser (GL-1..GL-3, issue #15 item 5): a real `dsh web` whose model is the fake
 * DeepSeek server. `/goal` from the composer starts a goal; the bar above the composer shows its
 * objective, phase and round n of its cap, the conversation a line per round; a goal that runs two
 * rounds and completes shows the completion; Pause stops further rounds and Resume starts the next.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Page } from 'playwright-core'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { findChromium } from '../../test-support/chromium.js'
import { openBrowserWorkspace, sendFromComposer, type BrowserWorkspace } from '../../test-support/browser-workspace.js'
import { gate } from '../../test-support/gate.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping the web goal tests: ${chromium.reason}`)
const usage = { prompt_tokens: 10, completion_tokens: 3 }

describe.skipIf(chromium.path === undefined)('goals in the web UI', () => {
  let fake: FakeDeepSeek
  let page: Page
  let workspace: BrowserWorkspace | undefined
  const errors: string[] = []

  beforeAll(async () => {
    workspace = await openBrowserWorkspace({ name: 'goal', newSession: true })
    ;({ fake, page } = workspace)
    page.on('console', message => { if (message.type() === 'error') errors.push(message.text()) })
  }, 600_000)

  afterAll(async () => {
    await workspace?.close()
  })

  const prompt = (text: string) => sendFromComposer(page, text)
  const idle = () => expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
  const bar = () => page.getByTestId('goal-bar')

  it('GL-2: a goal runs two rounds against the model and completes; the bar and the conversation show the rounds and the completion', async () => {
    const roundOne = gate()
    fake.enqueue(streamResponse([{ until: roundOne.promise }, { text: 'ROUND_ONE_DONE' }, { finish: 'stop', usage }]))
    await prompt('/goal count to two')
    // Round 1 is running: the bar shows the goal, its phase and round 1 of the default cap.
    await bar().waitFor()
    await expect.poll(() => page.getByTestId('goal-round').textContent()).toBe('round 1 of 256')
    expect(await page.getByTestId('goal-phase').textContent()).toBe('active')
    expect(await page.getByTestId('goal-objective').textContent()).toBe('count to two')
    await page.getByTestId('goal-pause').waitFor()
    // The model completes the goal in round 2 with update_goal; the id is known now.
    const goalId = await bar().getAttribute('data-goal-id')
    expect(goalId).toMatch(/^goal-/)
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'u1', name: 'update_goal', arguments: JSON.stringify({ goal_id: goalId, revision: 1, action: 'complete' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'COUNTED_TO_TWO' }, { finish: 'stop', usage }]),
    )
    roundOne.open()
    await page.getByTestId('assistant-message').filter({ hasText: 'COUNTED_TO_TWO' }).waitFor()
    await idle()
    const lines = await page.getByTestId('goal-line').allTextContents()
    expect(lines).toEqual(['◎Goal set: count to two', '↻Goal round 1 of 256', '↻Goal round 2 of 256', '✓Goal complete after 2 rounds: count to two'])
    // The goal line says it once: no second notice repeating the command's text.
    expect(await page.getByTestId('notice').filter({ hasText: 'count to two' }).count()).toBe(0)
    expect(await page.getByTestId('goal-phase').textContent()).toBe('complete')
    expect(await page.getByTestId('goal-round').textContent()).toBe('round 2 of 256')
    // A completed goal has nothing to pause or resume; three model requests, no third round.
    expect(await page.getByTestId('goal-pause').count()).toBe(0)
    expect(await page.getByTestId('goal-resume').count()).toBe(0)
    expect(fake.requests).toHaveLength(3)
    // The completed goal leaves the bar when the next turn starts; its lines stay.
    fake.enqueue(streamResponse([{ text: 'AFTER_GOAL' }, { finish: 'stop', usage }]))
    await prompt('thanks')
    await page.getByTestId('assistant-message').filter({ hasText: 'AFTER_GOAL' }).waitFor()
    await expect.poll(() => bar().count()).toBe(0)
    expect(await page.getByTestId('goal-line').count()).toBe(4)
    await idle()
  })

  it('GL-3: Pause during a round stops further rounds; Resume starts the next round; reload shows the same state', async () => {
    const before = fake.requests.length
    const earlier = await page.getByTestId('goal-line').count()
    const lines = async () => (await page.getByTestId('goal-line').allTextContents()).slice(earlier)
    const roundOne = gate()
    fake.enqueue(streamResponse([{ until: roundOne.promise }, { text: 'PAUSED_ROUND_ONE' }, { finish: 'stop', usage }]))
    await prompt('/goal keep polishing')
    await expect.poll(() => page.getByTestId('goal-objective').textContent()).toBe('keep polishing')
    await page.getByTestId('goal-pause').click()
    await expect.poll(() => page.getByTestId('goal-phase').textContent()).toBe('paused')
    expect(await bar().getAttribute('data-phase')).toBe('paused')
    roundOne.open()
    await page.getByTestId('assistant-message').filter({ hasText: 'PAUSED_ROUND_ONE' }).waitFor()
    await idle()
    // The round driver queues a round at turn end, before the agent goes idle: none was queued.
    expect(fake.requests.length).toBe(before + 1)
    expect(await lines()).toEqual(['◎Goal set: keep polishing', '↻Goal round 1 of 256', '◎Goal paused after 1 round'])
    expect(await page.getByTestId('notice').filter({ hasText: 'keep polishing' }).count()).toBe(0)
    await page.getByTestId('goal-resume').waitFor()

    await page.reload()
    await expect.poll(() => page.getByTestId('goal-phase').textContent()).toBe('paused')
    expect(await page.getByTestId('goal-round').textContent()).toBe('round 1 of 256')

    const roundTwo = gate()
    fake.enqueue(streamResponse([{ until: roundTwo.promise }, { text: 'RESUMED_ROUND_TWO' }, { finish: 'stop', usage }]))
    await page.getByTestId('goal-resume').click()
    await expect.poll(lines).toContain('↻Goal round 2 of 256')
    await expect.poll(() => page.getByTestId('goal-round').textContent()).toBe('round 2 of 256')
    // Pause again while round 2 runs, so no round 3 follows it.
    await page.getByTestId('goal-pause').click()
    await expect.poll(() => page.getByTestId('goal-phase').textContent()).toBe('paused')
    roundTwo.open()
    await page.getByTestId('assistant-message').filter({ hasText: 'RESUMED_ROUND_TWO' }).waitFor()
    await idle()
    expect(fake.requests.length).toBe(before + 2)
    expect(await lines()).toEqual(['◎Goal set: keep polishing', '↻Goal round 1 of 256', '◎Goal paused after 1 round', '◎Goal resumed', '↻Goal round 2 of 256', '◎Goal paused after 2 rounds'])
    expect(errors).toEqual([])
  })
})
