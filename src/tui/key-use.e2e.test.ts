/**
 * A stored key's first use with an endpoint in the terminal app (security #42.2): the real `dsh`
 * in a real terminal (tmux) against the fake model server, the key in `$DSH_HOME/.credentials.yaml`
 * and the endpoint named by the environment. The app asks before the first request; no request
 * reaches the server before the answer, `n` sends nothing, `y` sends and remembers (the next
 * request and the next run do not ask). Every wait polls the screen with a deadline.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { streamResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, tempHome } from '../../test-support/run-dsh.js'
import { Terminal, terminalTestBed } from '../../test-support/tmux.js'
import { noTitlePatch } from '../../test-support/patches.js'

const bed = terminalTestBed('the terminal key-use tests')
const tmux = !bed.skip

const KEY = 'sk-stored-terminal-key-0123456789'
const usage = { prompt_tokens: 10, completion_tokens: 3 }
const DSH = `${process.execPath} ${dshBin} --patch ${noTitlePatch()}`
const HEADING = 'Send your stored DEEPSEEK_API_KEY to a new endpoint?'
/** Box borders and the wrapping of long lines taken out: what the screen says. */
const squeezed = (screen: string) => screen.replace(/[│\s]+/g, '')

async function openApp(home: string, cwd: string, endpoint: string, width: number): Promise<Terminal> {
  const terminal = Terminal.shell({
    cwd, width, height: 30,
    env: { DSH_HOME: home, DEEPSEEK_BASE_URL: endpoint, DEEPSEEK_API_KEY: undefined, DSH_MODEL: undefined, NO_COLOR: undefined, TERM: 'xterm-256color', DSH_NETWORK: 'full' },
  })
  bed.keep(terminal)
  await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
  terminal.type(`clear; ${DSH}`)
  terminal.keys('Enter')
  await terminal.waitFor('Ask dsh to do something', { what: 'the input box', timeoutMs: 20_000 })
  return terminal
}

async function send(terminal: Terminal, text: string): Promise<void> {
  terminal.type(text)
  await terminal.waitFor(screen => squeezed(screen).includes(text.replace(/\s+/g, '')), { what: `the typed text "${text}"` })
  terminal.keys('Enter')
}

async function quit(terminal: Terminal): Promise<void> {
  terminal.keys('C-c')
  await terminal.waitFor('Press Ctrl-C again to exit')
  terminal.keys('C-c')
  await terminal.waitFor(screen => /(or|Resume): dsh --session/.test(screen) && /\n\$$/.test(screen), { what: 'the resume hint and the prompt', history: true })
}

describe.skipIf(!tmux)('terminal app: a stored key\'s first use with an endpoint (tmux)', () => {
  it('asks before the first request: n sends nothing, y sends and remembers; the next request and the next run do not ask', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, '.credentials.yaml'), `DEEPSEEK_API_KEY: ${KEY}\n`, { mode: 0o600 })
    // Longer than a line at 80 columns: the box shows it in full, wrapped.
    const endpoint = `${bed.server.url.replace(/\/+$/, "")}/v1/a-gateway-path-long-enough-to-wrap-in-the-box/deepseek`
    const record = join(home, 'key-endpoints.json')
    const terminal = await openApp(home, cwd, endpoint, 80)

    await send(terminal, 'hello')
    let box = await terminal.waitFor(HEADING, { what: 'the key-use box' })
    expect(squeezed(box)).toContain(squeezed(endpoint))
    expect(squeezed(box)).toContain(squeezed('It has not been sent there before. DEEPSEEK_BASE_URL from the environment chose it.'))
    expect(squeezed(box)).toContain(squeezed('y send it, and remember this endpoint · n do not send (nothing leaves)'))
    expect(bed.server.requests).toHaveLength(0)
    // Enter (the prompt's, pressed again) answers nothing.
    terminal.keys('Enter')
    await terminal.waitFor(HEADING, { what: 'the box still there after Enter' })
    terminal.keys('n')
    const refused = await terminal.waitFor(/KEY_NOT_SENT: deepseek-official: the stored DEEPSEEK_API_KEY was not sent to/, { what: 'the refusal', history: true })
    expect(squeezed(refused)).toContain(squeezed(`${endpoint} (DEEPSEEK_BASE_URL from the environment): its first use with that endpoint was declined, and the request was not made`))
    expect(terminal.screen()).not.toContain(HEADING)
    expect(bed.server.requests).toHaveLength(0)
    expect(existsSync(record)).toBe(false)

    // Asked again; y sends, with the stored key, and records the pairing.
    bed.server.enqueue(streamResponse([{ text: 'Answer one from the endpoint.' }, { finish: 'stop', usage }]))
    await send(terminal, 'hello again')
    box = await terminal.waitFor(HEADING, { what: 'the key-use box, again' })
    expect(bed.server.requests).toHaveLength(0)
    terminal.keys('y')
    await terminal.waitFor('Answer one from the endpoint.', { what: 'the answer', history: true })
    expect(bed.server.requests).toHaveLength(1)
    expect(bed.server.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(readFileSync(record, 'utf8')).not.toContain(KEY)
    expect(readFileSync(record, 'utf8')).toContain('a-gateway-path-long-enough-to-wrap-in-the-box/deepseek')

    // Known now: the answer comes without a question (a question would hold it back).
    bed.server.enqueue(streamResponse([{ text: 'Answer two, unasked.' }, { finish: 'stop', usage }]))
    await send(terminal, 'and once more')
    await terminal.waitFor('Answer two, unasked.', { what: 'the second answer', history: true })
    expect(terminal.history()).not.toContain('for the first time')
    await quit(terminal)

    // And in the next run.
    const next = await openApp(home, cwd, endpoint, 120)
    bed.server.enqueue(streamResponse([{ text: 'Answer three, next run.' }, { finish: 'stop', usage }]))
    await send(next, 'hello from the next run')
    await next.waitFor('Answer three, next run.', { what: 'the next run\'s answer', history: true })
    expect(bed.server.requests).toHaveLength(3)
    await quit(next)
  })

  it('a key that is not stored in the credentials file (the home\'s .env) is not asked about', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, '.env'), `DEEPSEEK_API_KEY=${KEY}\n`)
    const terminal = await openApp(home, cwd, bed.server.url, 80)
    bed.server.enqueue(streamResponse([{ text: 'Sent without a question.' }, { finish: 'stop', usage }]))
    await send(terminal, 'hello')
    await terminal.waitFor('Sent without a question.', { what: 'the answer', history: true })
    expect(bed.server.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(existsSync(join(home, 'key-endpoints.json'))).toBe(false)
    await quit(terminal)
  })
})
