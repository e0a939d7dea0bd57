/**
 * End to end in headless Chromium (Debian `chromium` driven by playwright-core) against a real
 * `dsh web --port 0 --no-open` process whose model is the fake DeepSeek server. Screenshots of the
 * main screens (light and dark) land in test-output/web/.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { FakeDeepSeek, errorResponse, streamResponse } from '../../test-support/fake-deepseek.js'
import { repoRoot } from '../../test-support/run-dsh.js'
import { ensureWebBuild, findChromium } from '../../test-support/chromium.js'
import { startDshWeb, type DshWeb } from '../../test-support/web-process.js'
import { gate, heldCommand } from '../../test-support/gate.js'

const chromium = findChromium()
if (chromium.path === undefined) console.warn(`skipping web e2e tests: ${chromium.reason}`)

const shots = join(repoRoot, 'test-output', 'web')
const usage = { prompt_tokens: 1200, completion_tokens: 85, prompt_cache_hit_tokens: 1000 }

const DICE_CARD = `const { h, registerToolCard, ToolShell } = window.dsh
registerToolCard('roll_dice', ({ call, args, running }) => h('div', { 'data-testid': 'card-dice' },
  h(ToolShell, { icon: '⚄', title: 'd' + (args?.sides ?? '?') + ' rolled: ' + (running ? '…' : call.result.text), state: running ? 'running' : 'ok' })))
`

const DICE_PLUGIN = `export default {
  name: 'dice',
  inject: ['tools', 'webApi'],
  apply(ctx) {
    ctx.tools.register({
      name: 'roll_dice', description: 'Roll a die', parameters: { type: 'object', properties: { sides: { type: 'number' } } },
      execute: args => ({ content: [{ type: 'text', text: String(Math.min(17, args.sides)) }], isError: false }),
    })
    ctx.webApi.registerAsset('dice-card.js', { contentType: 'text/javascript', script: true, body: ${JSON.stringify(DICE_CARD)} })
  },
}
`

describe.skipIf(chromium.path === undefined)('dsh web in a browser', () => {
  let fake: FakeDeepSeek
  let web: DshWeb
  let browser: Browser
  let page: Page
  let home: string
  let work: string

  const start = async () => startDshWeb({
    cwd: work,
    args: ['--patch', join(home, 'test.patch.yml'), '--port', '0', '--token', 'e2e-token-0123456789abcdef'],
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: fake.url, DEEPSEEK_API_KEY: 'test-key' },
  })

  beforeAll(async () => {
    ensureWebBuild(repoRoot)
    mkdirSync(shots, { recursive: true })
    fake = await FakeDeepSeek.start()
    home = mkdtempSync(join(tmpdir(), 'dsh-web-e2e-home-'))
    work = mkdtempSync(join(tmpdir(), 'dsh-web-e2e-work-'))
    // Model titles would take scripted responses out of order: keep the fallback titles only.
    // An out-of-tree plugin that adds a tool and its card (served to the page under /ext/).
    writeFileSync(join(home, 'dice-plugin.mjs'), DICE_PLUGIN)
    writeFileSync(join(home, 'test.patch.yml'), `- id: session-title\n  config:\n    llm: false\n- insert:\n    - id: dice\n      name: ${join(home, 'dice-plugin.mjs')}\n`)
    web = await start()
    const { chromium: launcher } = await import('playwright-core')
    browser = await launcher.launch({ executablePath: chromium.path, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] })
    page = await browser.newPage({ viewport: { width: 1280, height: 820 } })
    // Under the test's own 30 s: a step that never comes fails naming the locator it waited for,
    // not as a bare test timeout (the restart test has timed out so, rarely, on CI).
    page.setDefaultTimeout(20_000)
    page.on('pageerror', error => console.error('page error:', error))
  }, 600_000)

  afterAll(async () => {
    await browser?.close()
    await web?.stop()
    await fake?.close()
  })

  const shoot = async (name: string) => {
    for (const theme of ['light', 'dark'] as const) {
      await page.evaluate(`document.documentElement.dataset.theme = ${JSON.stringify(theme)}`)
      await page.screenshot({ path: join(shots, `${name}-${theme}.png`) })
    }
    await page.evaluate(`document.documentElement.dataset.theme = localStorage.getItem('dsh-theme') ?? 'light'`)
  }

  it('opens with the printed link only, and creates a session', async () => {
    const noToken = await page.goto(web.origin + '/')
    expect(noToken?.status()).toBe(401)
    await page.goto(web.url)
    expect(page.url()).not.toContain('token=')
    await page.getByTestId('create-session').waitFor()
    await shoot('new-session')
    await page.getByTestId('create-session').click()
    await page.getByTestId('composer').waitFor()
    expect(new URL(page.url()).searchParams.get('session')).toBeTruthy()
    await shoot('empty-chat')
  })

  it('streams text as it arrives, then shows a bash card with output and exit code', async () => {
    const hold = gate()
    fake.enqueue(
      streamResponse([{ reasoning: 'The user wants a listing.' }, { text: 'Let me check ' }, { until: hold.promise }, { text: 'the folder.' },
        { toolCall: { id: 'call-1', name: 'bash', arguments: JSON.stringify({ command: 'echo hi-from-bash && printf "line two\\n"', description: 'Print a greeting' }) } },
        { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Done. The command printed:\n\n```bash\nhi-from-bash\nline two\n```\n\nAll **good**.' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('list the folder please')
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('user-message').filter({ hasText: 'list the folder please' }).waitFor()
    // Held mid-stream: the first words are on screen before the model finished.
    await page.locator('.streaming-text', { hasText: 'Let me check' }).waitFor()
    expect(await page.getByTestId('status').textContent()).toBe('running')
    hold.open()
    const card = page.getByTestId('card-bash')
    await card.filter({ hasText: 'hi-from-bash' }).waitFor()
    await expect.poll(() => card.textContent()).toContain('exit 0')
    await page.locator('.markdown', { hasText: 'All good.' }).waitFor()
    await page.getByTestId('turn-end').first().waitFor()
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
    expect(await page.locator('.turn-meta').first().textContent()).toContain('in')
    await shoot('conversation')
  })

  it('a running bash command shows its output live in its card, then the result replaces it', async () => {
    const flag = join(work, 'live-go-on')
    // Computed words, so the command's own text (shown in the card) never matches them.
    const command = heldCommand('echo LIVE_$((6*7))', flag, 'echo END_$((5*5))')
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-live', name: 'bash', arguments: JSON.stringify({ command, description: 'Wait for a flag' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'LIVE_DONE' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('run the waiting command')
    await page.getByTestId('composer').press('Enter')
    const card = page.getByTestId('card-bash').filter({ hasText: 'Wait for a flag' })
    await card.getByTestId('live-output').filter({ hasText: 'LIVE_42' }).waitFor()
    expect(await card.textContent()).not.toContain('END_25')
    writeFileSync(flag, '')
    await page.locator('.markdown', { hasText: 'LIVE_DONE' }).waitFor()
    await expect.poll(() => card.textContent()).toContain('END_25')
    expect(await card.getByTestId('live-output').count()).toBe(0)
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
  })

  it('Ctrl+Enter steers the running step: the next request carries the steer', async () => {
    const hold = gate()
    fake.enqueue(
      streamResponse([{ text: 'Working on it' }, { until: hold.promise },
        { toolCall: { id: 'call-2', name: 'bash', arguments: JSON.stringify({ command: 'echo step-two', description: 'Second step' }) } },
        { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Steered reply: noted.' }, { finish: 'stop', usage }]),
    )
    const before = fake.requests.length
    await page.getByTestId('composer').fill('second task')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.streaming-text', { hasText: 'Working on it' }).waitFor()
    await page.getByTestId('composer').fill('also mention the steer')
    await page.getByTestId('composer').press('Control+Enter')
    await page.getByTestId('queue-item').filter({ hasText: 'also mention the steer' }).waitFor()
    await shoot('queue-steer')
    hold.open()
    await page.locator('.markdown', { hasText: 'Steered reply' }).waitFor()
    await fake.waitForRequests(before + 2)
    const followUp = JSON.stringify(fake.requests[before + 1].body.messages)
    expect(followUp).toContain('also mention the steer')
    await expect.poll(() => page.getByTestId('queue').count()).toBe(0)
  })

  it('write and edit cards show their diffs; code blocks are highlighted', async () => {
    const source = 'export function greet(name: string): string {\n  return `Hello, ${name}`\n}\n'
    fake.enqueue(
      streamResponse([{ text: 'Creating the module.' },
        { toolCall: { id: 'call-w', name: 'write', arguments: JSON.stringify({ file_path: 'src/greet.ts', content: source }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'call-e', name: 'edit', arguments: JSON.stringify({ file_path: 'src/greet.ts', old_string: 'return `Hello, ${name}`', new_string: "const trimmed = name.trim()\n  return `Hello, ${trimmed}!`" }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'Now `greet` trims its input:\n\n```ts\nimport { greet } from "./greet"\n// prints "Hello, Ada!"\nconsole.log(greet("  Ada "))\n```' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('add a greet module, then make it trim')
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('card-edit').filter({ hasText: '1 replacement' }).waitFor()
    await page.locator('.markdown', { hasText: 'trims its input' }).waitFor()
    expect(await page.getByTestId('card-write').locator('.diff-add').count()).toBeGreaterThan(2)
    expect(await page.getByTestId('card-edit').locator('.diff-del').allTextContents()).toEqual(['-  return `Hello, ${name}`'])
    expect(await page.locator('.code-block .hl-k').count()).toBeGreaterThan(0)
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
    await page.getByTestId('card-edit').scrollIntoViewIfNeeded()
    await shoot('diff')
  })

  it('a plugin adds a tool card: its script is served under /ext/ and registers with window.dsh', async () => {
    fake.enqueue(
      streamResponse([{ toolCall: { id: 'call-d', name: 'roll_dice', arguments: '{"sides":20}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'You rolled 17.' }, { finish: 'stop', usage }]),
    )
    await page.getByTestId('composer').fill('roll a d20')
    await page.getByTestId('composer').press('Enter')
    await page.getByTestId('card-dice').filter({ hasText: 'd20 rolled: 17' }).waitFor()
    await page.locator('.markdown', { hasText: 'You rolled 17.' }).waitFor()
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
    await shoot('plugin-card')
  })

  it('Stop cancels a running turn and says so in the conversation', async () => {
    fake.enqueue(streamResponse([{ text: 'Starting a long job' }], { done: false, end: 'hang' }))
    await page.getByTestId('composer').fill('a long one')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.streaming-text', { hasText: 'Starting a long job' }).waitFor()
    await page.getByTestId('stop').click()
    await page.locator('.notice', { hasText: 'Stopped' }).waitFor()
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
  })

  it('a provider error ends the turn and shows in the conversation', async () => {
    fake.enqueue(errorResponse(401, { error: { message: 'Authentication Fails, Your api key is invalid', type: 'authentication_error' } }))
    await page.getByTestId('composer').fill('this one fails')
    await page.getByTestId('composer').press('Enter')
    const notice = page.locator('.notice.error')
    await notice.waitFor()
    expect(await notice.textContent()).toMatch(/invalid/i)
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('idle')
    await shoot('error')
  })

  it('a reload shows the same history from the log', async () => {
    const users = await page.getByTestId('user-message').allTextContents()
    const cards = await page.getByTestId('card-bash').count()
    await page.reload()
    await page.getByTestId('user-message').first().waitFor()
    await expect.poll(() => page.getByTestId('user-message').allTextContents()).toEqual(users)
    expect(await page.getByTestId('card-bash').count()).toBe(cards)
    await page.locator('.notice', { hasText: 'Stopped' }).waitFor()
  })

  it('rename and fork', async () => {
    await page.getByTestId('chat-title').click()
    await page.getByTestId('title-input').fill('Folder listing')
    await page.getByTestId('title-input').press('Enter')
    await page.getByTestId('session-row').filter({ hasText: 'Folder listing' }).waitFor()
    const parent = new URL(page.url()).searchParams.get('session')
    await page.getByTestId('fork').click()
    await expect.poll(() => new URL(page.url()).searchParams.get('session')).not.toBe(parent)
    // A fork is listed under the session it came from (a child row).
    await page.locator('.session-row').filter({ hasText: 'Folder listing (fork)' }).waitFor()
    await page.getByTestId('user-message').filter({ hasText: 'list the folder please' }).waitFor()
    await shoot('fork')
  })

  it('settings: a key is saved and shown as set, never echoed back', async () => {
    await page.getByTestId('open-settings').click()
    await page.getByTestId('settings').waitFor()
    await page.getByTestId('key-DEEPSEEK_API_KEY').fill('sk-from-the-browser')
    await page.getByTestId('save-key-DEEPSEEK_API_KEY').click()
    await page.getByText('DEEPSEEK_API_KEY saved.').waitFor()
    expect(await page.content()).not.toContain('sk-from-the-browser')
    await shoot('settings')
  })

  it('the page catches up after a server restart, also for a session opened while the server was down', async () => {
    await page.getByTestId('session-row').filter({ hasText: 'Folder listing' }).first().click()
    await page.getByTestId('composer').waitFor()
    const port = web.port
    await web.stop()
    await page.locator('.banner').waitFor()
    // Opening another session now: its history cannot load yet; it loads once the server is back.
    await page.locator('.session-row').filter({ hasText: 'Folder listing (fork)' }).click()
    await page.locator('.banner').waitFor()
    web = await startDshWeb({
      cwd: work,
      args: ['--patch', join(home, 'test.patch.yml'), '--port', String(port), '--token', 'e2e-token-0123456789abcdef'],
      env: { DSH_HOME: home, DEEPSEEK_BASE_URL: fake.url, DEEPSEEK_API_KEY: 'test-key' },
    })
    await expect.poll(() => page.locator('.banner').count(), { timeout: 15_000 }).toBe(0)
    await page.getByTestId('user-message').filter({ hasText: 'list the folder please' }).waitFor()
    fake.enqueue(streamResponse([{ text: 'Back after the restart.' }, { finish: 'stop', usage }]))
    await page.getByTestId('composer').fill('are you back?')
    await page.getByTestId('composer').press('Enter')
    await page.locator('.markdown', { hasText: 'Back after the restart.' }).waitFor()
  })
})
