/**
 * The terminal app driven as a user drives it: the real `dsh` binary in a real terminal (tmux,
 * 80x24 unless said otherwise), keys sent with send-keys, the screen read with capture-pane,
 * against the fake model server over real HTTP. Every wait polls the screen with a deadline.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { errorResponse, streamResponse, type FakeResponse } from '../../test-support/fake-deepseek.js'
import { dshBin, runDsh, tempHome } from '../../test-support/run-dsh.js'
import { Terminal, terminalTestBed } from '../../test-support/tmux.js'
import { noTitlePatch } from '../../test-support/patches.js'
import { gate, heldCommand } from '../../test-support/gate.js'
import { testServerEntry } from '../../test-support/mcp.js'
import { processAlive } from '../../test-support/processes.js'

const bed = terminalTestBed('terminal app tests')
const tmux = !bed.skip

const usage = { prompt_tokens: 1200, completion_tokens: 40 }
const patch = noTitlePatch()
const DSH = `${process.execPath} ${dshBin} --patch ${patch}`

function env(home: string, extra: Record<string, string> = {}): Record<string, string | undefined> {
  return bed.env(home, { DSH_NETWORK: 'full', ...extra })
}

/** A shell in a fresh terminal, in `cwd`, with the fake server configured. */
function shell(home: string, cwd: string, options: { width?: number; height?: number; env?: Record<string, string> } = {}): Terminal {
  const terminal = Terminal.shell({ cwd, env: env(home, options.env), width: options.width ?? 80, height: options.height ?? 24 })
  bed.keep(terminal)
  return terminal
}

/** Starts the app in the shell; `pollMs: 0` returns within milliseconds of its first frame. */
async function openApp(terminal: Terminal, args = '', wrap = (command: string) => command, options: { pollMs?: number } = {}): Promise<void> {
  await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
  terminal.type(`clear; ${wrap(`${DSH}${args ? ` ${args}` : ''}`)}`)
  terminal.keys('Enter')
  await terminal.waitFor('Ask dsh to do something', { what: 'the input box', timeoutMs: 20_000, ...options })
}

async function send(terminal: Terminal, text: string): Promise<void> {
  terminal.type(text)
  const squeezed = text.replace(/\s+/g, '')
  await terminal.waitFor(screen => screen.replace(/[│\s]+/g, '').includes(squeezed), { what: `the typed text "${text}"` })
  terminal.keys('Enter')
}

/** Ctrl-C twice; waits for the shell prompt after the resume hint. */
async function quit(terminal: Terminal): Promise<string> {
  terminal.keys('C-c')
  await terminal.waitFor('Press Ctrl-C again to exit')
  terminal.keys('C-c')
  return exited(terminal)
}

/** Waits for the app to have exited: its resume hint, then the shell prompt. */
function exited(terminal: Terminal): Promise<string> {
  return terminal.waitFor(screen => /(or|Resume): dsh --session/.test(screen) && /\n\$$/.test(screen), { what: 'the resume hint and the prompt', history: true })
}

function sessionLog(home: string): { type: string; data: any }[] {
  const root = join(home, 'sessions')
  for (const project of readdirSync(root)) {
    for (const id of readdirSync(join(root, project))) {
      const file = join(root, project, id, 'session.jsonl')
      if (existsSync(file)) return readFileSync(file, 'utf8').trim().split('\n').slice(1).map(line => JSON.parse(line))
    }
  }
  throw new Error('no stored session')
}

/** Every stored session's log, by session id. */
function logs(home: string): Map<string, string> {
  const root = join(home, 'sessions')
  const found = new Map<string, string>()
  for (const project of readdirSync(root).filter(name => !name.startsWith('.'))) {
    for (const id of readdirSync(join(root, project))) found.set(id, readFileSync(join(root, project, id, 'session.jsonl'), 'utf8'))
  }
  return found
}

function toolCall(id: string, name: string, args: unknown): FakeResponse {
  return streamResponse([{ toolCall: { id, name, arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])
}

describe.skipIf(!tmux)('dsh terminal app (tmux)', () => {
  it('a whole coding task: write, edit and run a file; cards, answer, per-turn tokens, status bar; exit restores the terminal', async () => {
    const { home, cwd } = tempHome()
    // With a price in settings the turn summary says what the turn cost.
    writeFileSync(join(home, 'settings.yaml'), 'model:\n  prices:\n    deepseek-v4-flash: { input: 1000, output: 2000 }\n')
    bed.server.enqueue(
      streamResponse([{ reasoning: 'I will create the script first.' }, { text: 'Creating the script.' }, { toolCall: { id: 'w1', name: 'write', arguments: JSON.stringify({ file_path: 'greet.sh', content: 'echo hello\n' }) } }, { finish: 'tool_calls', usage }]),
      toolCall('e1', 'edit', { file_path: 'greet.sh', old_string: 'echo hello', new_string: 'echo hello, terminal' }),
      toolCall('b1', 'bash', { command: 'bash greet.sh', description: 'run it' }),
      streamResponse([{ text: 'Done: `greet.sh` prints **hello, terminal**.\n\n```sh\nbash greet.sh\n```' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    let screen = terminal.screen()
    expect(screen).toMatch(/deepseek-v4-flash · .* · ctx 0%/)
    await send(terminal, 'write greet.sh that says hello, then make it say hello, terminal and run it')
    screen = await terminal.waitFor(/── 4 steps · .* in · .* out/, { what: 'the turn summary', history: true })
    // 4 requests of 1200 in and 40 out: 4 × (1200 × 1000 + 40 × 2000) / 1e6.
    expect(terminal.history()).toMatch(/── 4 steps · 4\.8k in · 160 out · [\d.]+m?s · \$5\.1200/)
    const history = terminal.history()
    expect(history).toContain('› write greet.sh')
    expect(history).toMatch(/▸ thought · 6 words/)
    expect(history).toMatch(/✓ write greet\.sh · created, 1 line\b/)
    expect(history).toMatch(/✓ edit greet\.sh · 1 replacement/)
    expect(history).toMatch(/^\s+-echo hello$/m)
    expect(history).toMatch(/^\s+\+echo hello, terminal$/m)
    expect(history).toMatch(/✓ \$ bash greet\.sh · exit 0\n\s+hello, terminal/)
    expect(history).toContain('Done: greet.sh prints hello, terminal.')
    expect(history).toMatch(/│ bash greet\.sh/)
    expect(readFileSync(join(cwd, 'greet.sh'), 'utf8')).toBe('echo hello, terminal\n')
    expect(terminal.screen()).toMatch(/ctx (<1|\d+)% \(1\.\dk\/1\.0M\)/)
    const after = await quit(terminal)
    const id = /Session ([0-9a-f-]{36})/.exec(after)?.[1]
    expect(id).toBeDefined()
    expect(after).toContain(`dsh --session ${id}`)
    // The terminal is back in cooked mode with echo: the shell's line discipline works again.
    terminal.type('stty -a | tr " " "\\n" | grep -E "^-?(icanon|echo)$" | tr "\\n" " "; echo')
    terminal.keys('Enter')
    await terminal.waitFor(/^icanon echo\s*$/m, { what: 'stty showing icanon and echo' })
    expect(sessionLog(home).at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
  })

  it('typing a prompt opens the model\'s connection ahead; the request then goes out on it', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(streamResponse([{ text: 'Over the open connection.' }, { finish: 'stop', usage }]))
    const terminal = shell(home, cwd)
    await openApp(terminal)
    const before = bed.server.connections
    terminal.type('hel')
    // No request yet: the connection is open and waits for one.
    await bed.server.waitForConnections(before + 1)
    expect(bed.server.requests).toHaveLength(0)
    await send(terminal, 'lo there')
    await terminal.waitFor('Over the open connection.', { history: true, what: 'the answer' })
    expect(bed.server.requests.map(request => request.connection)).toEqual([before + 1])
    expect(bed.server.connections).toBe(before + 1)
    await quit(terminal)
  })

  it('a markdown table in an answer is drawn as a grid that fits a 60-column terminal, its columns lined up', async () => {
    const { home, cwd } = tempHome()
    const table = '| file | lines | notes |\n|---|---:|---|\n| src/agent/loop.ts | 812 | the default loop, with a long note that has to wrap here |\n| 中文.md | 7 | wide characters |'
    bed.server.enqueue(streamResponse([{ text: `Here:\n\n${table}` }, { finish: 'stop', usage }]))
    const terminal = shell(home, cwd, { width: 60 })
    await openApp(terminal)
    await send(terminal, 'count the lines')
    await terminal.waitFor(/── 1 step · /, { what: 'the turn summary', history: true })
    const lines = terminal.history().split('\n')
    const top = lines.findIndex(line => /^file\s+│ lines │ notes/.test(line))
    expect(top, terminal.history()).toBeGreaterThan(0)
    const end = lines.findIndex((line, n) => n > top && !/[│┼]/.test(line))
    const grid = lines.slice(top, end)
    expect(grid.length).toBeGreaterThan(4)
    expect(grid[1]).toMatch(/^─+┼─+┼─+$/)
    // Every line of the grid has its rules in the same two columns (中文 is two columns wide each).
    const rules = (line: string) => [...line].reduce<{ at: number[]; column: number }>((acc, char) => {
      if (char === '│' || char === '┼') acc.at.push(acc.column)
      acc.column += /[\u4e00-\u9fff]/.test(char) ? 2 : 1
      return acc
    }, { at: [], column: 0 }).at
    for (const line of grid) expect(rules(line), line).toEqual(rules(grid[0]))
    expect(grid.join('\n')).toMatch(/src\/agent\/loop\.ts │ {3}812 │ the default loop/)
    expect(grid.join('\n')).toMatch(/中文\.md\s+│ {5}7 │ wide characters/)
    await quit(terminal)
  })

  it('first run without a key: the app asks for it, hides it, stores it (0600) and uses it; Esc leaves with the one-line reason', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(streamResponse([{ text: 'Hello with a stored key.' }, { finish: 'stop', usage }]))
    const before = bed.server.requests.length
    const terminal = shell(home, cwd, { env: { DEEPSEEK_API_KEY: '' } })
    await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
    terminal.type(`clear; ${DSH}`)
    terminal.keys('Enter')
    await terminal.waitFor('DEEPSEEK_API_KEY is not set.', { what: 'the key prompt', timeoutMs: 20_000 })
    terminal.type('sk-first-run-1234')
    const typed = await terminal.waitFor('17 characters', { what: 'the typed key, hidden' })
    expect(typed).not.toContain('sk-first-run')
    terminal.keys('Enter')
    await terminal.waitFor('Ask dsh to do something', { what: 'the input box after the key', timeoutMs: 20_000 })
    const credentials = join(home, '.credentials.yaml')
    expect(readFileSync(credentials, 'utf8')).toMatch(/^DEEPSEEK_API_KEY: sk-first-run-1234$/m)
    expect(statSync(credentials).mode & 0o777).toBe(0o600)
    await send(terminal, 'hello')
    await terminal.waitFor('Hello with a stored key.', { history: true, what: 'the answer' })
    expect(bed.server.requests[before].headers.authorization).toBe('Bearer sk-first-run-1234')
    await quit(terminal)

    // Another home without a key: Esc leaves, saying what is missing, and stores nothing.
    const other = tempHome()
    const again = shell(other.home, other.cwd, { env: { DEEPSEEK_API_KEY: '' } })
    await again.waitFor(/^\$$/m, { what: 'the shell prompt' })
    again.type(`clear; ${DSH}; echo "exit $?"`)
    again.keys('Enter')
    await again.waitFor('DEEPSEEK_API_KEY is not set.', { what: 'the key prompt', timeoutMs: 20_000 })
    again.keys('Escape')
    const left = await again.waitFor(/^exit 1$/m, { what: 'the exit status', timeoutMs: 20_000 })
    expect(left).toMatch(/dsh: DEEPSEEK_API_KEY is not set: export DEEPSEEK_API_KEY=/)
    expect(existsSync(join(other.home, '.credentials.yaml'))).toBe(false)
  })

  it('Esc cancels the turn mid-stream: the log records turn/end aborted and the app takes the next message', async () => {
    const { home, cwd } = tempHome()
    const held = gate()
    bed.server.enqueue(
      { segments: [...streamResponse([{ text: 'Counting: one two three' }], { done: false }).segments!, { until: held.promise }], end: 'close' },
      streamResponse([{ text: 'Second answer.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'count slowly')
    await terminal.waitFor('Counting: one two three', { what: 'the streamed text' })
    expect(terminal.screen()).toMatch(/writing · \d+s · Esc to cancel/)
    terminal.keys('Escape')
    await terminal.waitFor('■ cancelled', { what: 'the cancelled line' })
    held.open()
    await send(terminal, 'again')
    await terminal.waitFor('Second answer.', { history: true })
    await quit(terminal)
    const ends = sessionLog(home).filter(event => event.type === 'turn/end').map(event => event.data.reason)
    expect(ends).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }, { kind: 'completed' }])
  })

  it('closing the terminal mid-turn (SIGHUP) closes the turn in the log and gives the session back, as Ctrl-C does', async () => {
    const { home, cwd } = tempHome()
    const held = gate()
    bed.server.enqueue({ segments: [...streamResponse([{ text: 'Counting: one two three' }], { done: false }).segments!, { until: held.promise }], end: 'close' })
    const terminal = shell(home, cwd)
    // dsh runs as the shell's foreground job under a wrapper that outlives the hangup and keeps
    // its exit status. The shell still hangs up on the job, so dsh hears SIGHUP twice: from the
    // terminal, and from the shell a few ms later.
    const status = join(cwd, 'exit-status')
    await openApp(terminal, '', command => `sh -c 'trap "" HUP; ${command}; echo $? > ${status}'`)
    await send(terminal, 'count slowly')
    await terminal.waitFor('Counting: one two three', { what: 'the streamed text' })
    // The terminal goes away: tmux hangs up on the programs in it, and their terminal is gone.
    terminal.close()
    await expect.poll(() => sessionLog(home).filter(event => event.type === 'turn/end').map(event => event.data.reason.kind), { timeout: 15_000 }).toEqual(['aborted'])
    // The writer lock is given back: the session opens again at once.
    await expect.poll(() => readdirSync(join(home, 'sessions', '.locks')).filter(name => name.endsWith('.lock')), { timeout: 15_000 }).toEqual([])
    // It ended as a hangup ends a program (129), not in an abort on the dead terminal (134).
    await expect.poll(() => existsSync(status) ? readFileSync(status, 'utf8').trim() : undefined, { timeout: 15_000 }).toBe('129')
    held.open()
  })

  it('Enter queues while a turn runs and Ctrl-S steers into the running step', async () => {
    const { home, cwd } = tempHome()
    const held = gate()
    const first = toolCall('b1', 'bash', { command: 'echo working', description: 'work' })
    bed.server.enqueue(
      { segments: [{ until: held.promise }, ...first.segments!] },
      streamResponse([{ text: 'Steered answer.' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'Queued answer.' }, { finish: 'stop', usage }]),
    )
    const before = bed.server.requests.length
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'start working')
    await terminal.waitFor('Esc to cancel', { what: 'the running turn' })
    await send(terminal, 'then summarise')
    await terminal.waitFor('↳ queued: then summarise')
    terminal.type('also use uppercase')
    await terminal.waitFor('also use uppercase')
    terminal.keys('C-s')
    await terminal.waitFor('↳ queued: also use uppercase')
    held.open()
    await terminal.waitFor('Queued answer.', { history: true, what: 'the second turn' })
    const users = (index: number) => bed.server.requests[before + index].body.messages.filter((message: { role: string }) => message.role === 'user').map((message: { content: unknown }) => JSON.stringify(message.content))
    // Step 2 of turn 1 carries the steer; turn 2 starts with the queued message.
    expect(users(1).some((text: string) => text.includes('also use uppercase'))).toBe(true)
    expect(users(1).some((text: string) => text.includes('then summarise'))).toBe(false)
    expect(users(2).some((text: string) => text.includes('then summarise'))).toBe(true)
    await quit(terminal)
  })

  it('dsh -c resumes the latest session of the folder: the history is on screen and the model sees it', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(streamResponse([{ text: 'The first answer is 42.' }, { finish: 'stop', usage }]))
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'what is the answer')
    await terminal.waitFor(/── 1 step/, { history: true })
    const out = await quit(terminal)
    const id = /Session ([0-9a-f-]{36})/.exec(out)![1]
    bed.server.enqueue(streamResponse([{ text: 'Still 42.' }, { finish: 'stop', usage }]))
    await openApp(terminal, '-c')
    const screen = terminal.screen()
    expect(screen).toContain('The first answer is 42.')
    expect(screen).toContain(`Resumed session ${id}.`)
    await send(terminal, 'and now')
    await terminal.waitFor('Still 42.', { history: true })
    const messages = bed.server.requests.at(-1)!.body.messages.map((message: { content: unknown }) => JSON.stringify(message.content))
    expect(messages.some((text: string) => text.includes('The first answer is 42.'))).toBe(true)
    const again = await quit(terminal)
    expect(again).toContain(`Session ${id}`)
  })

  it('dsh -c, --resume and /resume pass over sessions opened and left without a prompt', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(streamResponse([{ text: 'THE_REAL_WORK' }, { finish: 'stop', usage }]))
    const stored = await runDsh(['--profile', 'headless', '--patch', patch, '--cwd', cwd, 'real work'], { env: env(home) })
    expect(stored.code, stored.stderr).toBe(0)
    const terminal = shell(home, cwd, { height: 30 })
    // Opened by mistake and left: a newer session with nothing in it.
    await openApp(terminal)
    await quit(terminal)
    await openApp(terminal, '-c')
    expect(terminal.screen()).toContain('THE_REAL_WORK')
    terminal.type('/new')
    terminal.keys('Enter')
    await terminal.waitFor(/New session\s+[0-9a-f-]{36}/, { history: true })
    terminal.type('/resume')
    terminal.keys('Enter')
    const listed = await terminal.waitFor('Resume a session', { what: '/resume\'s picker' })
    expect(listed).toMatch(/› real work · /)
    expect(listed).toContain('1/1')
    terminal.keys('Escape')
    await terminal.waitFor(screen => !screen.includes('Resume a session'), { what: 'the picker closed by Esc' })
    await quit(terminal)
    terminal.type(`clear; ${DSH} --resume`)
    terminal.keys('Enter')
    const picker = await terminal.waitFor('Resume a session', { timeoutMs: 20_000 })
    expect(picker).toContain('1/1')
    terminal.keys('Escape')
    await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
  })

  it('dsh --resume lists stored sessions with title, folder, age and turns; Enter opens one', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(streamResponse([{ text: 'Picked from the list.' }, { finish: 'stop', usage }]))
    const headless = await runDsh(['--profile', 'headless', 'remember the picker'], { cwd, env: env(home) as Record<string, string> })
    expect(headless.code).toBe(0)
    bed.server.enqueue(streamResponse([{ text: 'The newer session.' }, { finish: 'stop', usage }]))
    expect((await runDsh(['--profile', 'headless', 'a newer one'], { cwd, env: env(home) as Record<string, string> })).code).toBe(0)
    const terminal = shell(home, cwd)
    await terminal.waitFor(/^\$$/m)
    terminal.type(`clear; ${DSH} --resume`)
    terminal.keys('Enter')
    const list = await terminal.waitFor('Resume a session', { timeoutMs: 20_000 })
    expect(list).toMatch(/› .* · \/tmp\/dsh-work-\w+ · \d+s ago · 1 turn/)
    expect(list).toContain('1/2')
    // Down and Enter in one read: Enter opens the row Down moved to, the older session.
    terminal.keys('Down', 'Enter')
    await terminal.waitFor('Ask dsh to do something', { timeoutMs: 20_000 })
    expect(terminal.screen()).toContain('Picked from the list.')
    expect(terminal.screen()).not.toContain('The newer session.')
    await quit(terminal)
  })

  it('resizes: the live part redraws at the new width, and 160x48 and a narrow 50 columns both fit', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(streamResponse([{ text: 'A reply long enough to wrap when the terminal becomes narrow, which it will in a moment.' }, { finish: 'stop', usage }]))
    const terminal = shell(home, cwd, { width: 160, height: 48 })
    await openApp(terminal)
    await send(terminal, 'say something long')
    await terminal.waitFor(/── 1 step/)
    const wide = terminal.screen()
    expect(wide.split('\n').find(line => line.startsWith('╭'))!.length).toBe(160)
    terminal.resize(50, 20)
    // Ink redraws its live part at the new width first, over the terminal's reflowed copy; the app
    // then clears the screen and prints the conversation again. Wait for that second picture.
    const boxes = (screen: string) => screen.split('\n').filter(line => line.startsWith('╭'))
    const narrow = await terminal.waitFor(screen => boxes(screen).length === 1 && boxes(screen)[0].length === 50 && screen.includes('A reply long enough'), { what: 'the conversation printed again at 50 columns' })
    // One input box, drawn at the new width: no reflowed copy of the wide one is left behind.
    expect(narrow.split('\n').filter(line => line.startsWith('╭'))).toHaveLength(1)
    expect(narrow).toContain('A reply long enough to wrap when the terminal')
    expect(narrow).toMatch(/deepseek-v4-flash/)
    await quit(terminal)
  })

  it('a provider error is one status line, the app stays usable; NO_COLOR drops colours', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(errorResponse(401, { error: { message: 'bad key' } }), streamResponse([{ text: 'Recovered.' }, { finish: 'stop', usage }]))
    const terminal = shell(home, cwd, { env: { NO_COLOR: '1' } })
    await openApp(terminal)
    await send(terminal, 'hello')
    await terminal.waitFor(/✗ AUTH: .*bad key/)
    await send(terminal, 'hello again')
    await terminal.waitFor('Recovered.', { history: true })
    const styled = terminal.screenWithStyles()
    expect(styled).not.toMatch(/\x1b\[(?:3[0-7]|9[0-7]|38;[25];[\d;]+)m/)
    await quit(terminal)
  })

  it('the model server dropping the connection mid-stream is retried (llm/retry) and the answer still arrives', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(
      { segments: streamResponse([{ text: 'Half an ans' }], { done: false }).segments, end: 'destroy' },
      streamResponse([{ text: 'Whole answer after the retry.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'answer me')
    await terminal.waitFor('Whole answer after the retry.', { history: true, timeoutMs: 20_000 })
    await quit(terminal)
    expect(sessionLog(home).some(event => event.type === 'llm/retry')).toBe(true)
    expect(sessionLog(home).at(-1)).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
  })

  it('a subagent shows as a nested live card while it runs, and goes when it finishes', async () => {
    const { home, cwd } = tempHome()
    const held = gate()
    const childFirst = toolCall('cb1', 'bash', { command: 'echo CHILD_STEP', description: 'child step' })
    bed.server.enqueue(
      toolCall('s1', 'subagent', { description: 'helper', prompt: 'Run one echo, then reply CHILD_DONE.', run_in_background: false }),
      { segments: [{ until: held.promise }, ...childFirst.segments!] },
      streamResponse([{ text: 'CHILD_DONE' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'The helper finished.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'delegate to a helper')
    await terminal.waitFor(/⎿ helper · subagent · step 1 · waiting for the model/, { what: 'the nested card' })
    held.open()
    await terminal.waitFor('The helper finished.', { history: true })
    expect(terminal.screen()).not.toContain('⎿ helper')
    await quit(terminal)
  })

  it('the second Ctrl-C sent the moment "again to exit" shows exits (the key handler reads the armed state, not the last render\'s)', async () => {
    const { home, cwd } = tempHome()
    const terminal = shell(home, cwd)
    // Right after the first frame, as a quick user would, while the app still warms up.
    await openApp(terminal, '', undefined, { pollMs: 0 })
    terminal.keys('C-c')
    await terminal.waitFor('Press Ctrl-C again to exit', { pollMs: 0 })
    terminal.keys('C-c')
    await exited(terminal)
  })

  it('two Ctrl-C in one read exit: the second is not lost while the frame that armed exit has not re-bound the key handler yet', async () => {
    const { home, cwd } = tempHome()
    const terminal = shell(home, cwd)
    await openApp(terminal)
    // One send-keys call: both bytes reach the app in one chunk, and ink hands them to the
    // handler back to back, before React has rendered the first one's state.
    terminal.keys('C-c', 'C-c')
    await exited(terminal)
  })

  it('colours are on by default (the user prompt marker is cyan)', async () => {
    const { home, cwd } = tempHome()
    const terminal = shell(home, cwd)
    await openApp(terminal)
    expect(terminal.screenWithStyles()).toMatch(/\x1b\[(?:36|38;5;6)m/)
    await quit(terminal)
  })

  it('a running bash command shows its output as it comes, before the command ends', async () => {
    const { home, cwd } = tempHome()
    const flag = join(cwd, 'go-on')
    // The command prints a line, then waits for a file the test writes once the line is on the
    // screen. The printed words are computed, so the command's own text never matches them.
    const command = heldCommand('echo LIVE_$((6*7))', flag, 'echo END_$((5*5))')
    bed.server.enqueue(toolCall('b1', 'bash', { command, description: 'wait' }), streamResponse([{ text: 'Both lines seen.' }, { finish: 'stop', usage }]))
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'run it')
    const running = await terminal.waitFor('LIVE_42', { what: 'the live output of the running command' })
    expect(running).toMatch(/… \$ echo LIVE_/)
    expect(running).not.toContain('END_25')
    writeFileSync(flag, '')
    await terminal.waitFor('Both lines seen.', { history: true })
    expect(terminal.history()).toMatch(/✓ \$ echo LIVE_[^\n]*\n\s+LIVE_42\n\s+END_25/)
    await quit(terminal)
  })

  it('an @path naming a workspace file attaches the file to the message (as the web does); the conversation shows only what was typed', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(cwd, 'plan.md'), '# Plan\nstep one: MENTIONED_FILE_BODY\n')
    bed.server.enqueue(streamResponse([{ text: 'I read the plan.' }, { finish: 'stop', usage }]))
    const before = bed.server.requests.length
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'summarise @plan.md, and @nothing-here')
    await terminal.waitFor('I read the plan.', { history: true })
    const user = bed.server.requests[before].body.messages.find((message: { role: string }) => message.role === 'user')
    const content = typeof user.content === 'string' ? user.content : user.content.map((part: { text?: string }) => part.text ?? '').join('\n')
    expect(content).toContain('summarise @plan.md, and @nothing-here')
    expect(content).toContain('<file path="plan.md">\n# Plan\nstep one: MENTIONED_FILE_BODY\n</file>')
    const history = terminal.history()
    expect(history).toContain('› summarise @plan.md, and @nothing-here')
    expect(history).not.toContain('MENTIONED_FILE_BODY')
    await quit(terminal)
  })

  it('/ opens the command list; /help prints keys; /new starts a new session; @ completes a file path', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(cwd, 'notes-for-completion.md'), 'x\n')
    const terminal = shell(home, cwd)
    await openApp(terminal)
    terminal.type('/')
    const menu = await terminal.waitFor('/exit')
    expect(menu).toMatch(/\/exit Leave dsh/)
    // The list shows eight at a time; typing narrows it.
    terminal.type('n')
    await terminal.waitFor(/\/new .*new session/, { what: '/new in the narrowed list' })
    terminal.keys('BSpace')
    const list = await terminal.waitFor('/exit Leave dsh', { what: 'the whole list again' })
    // Down Down Enter in one read move twice and take the third command.
    const third = [...list.matchAll(/^ {2}\/([\w:-]+) /gm)][2][1]
    terminal.keys('Down', 'Down', 'Enter')
    await terminal.waitFor(new RegExp(`│ › /${third} +│`), { what: `/${third} taken from the list` })
    terminal.keys('C-u')
    await terminal.waitFor(/│ › +Ask dsh/)
    terminal.type('/')
    await terminal.waitFor('/exit Leave dsh')
    terminal.type('he')
    terminal.keys('Enter')
    await terminal.waitFor(/│ › \/help +│/)
    terminal.keys('Enter')
    await terminal.waitFor('Ctrl-S steer into the running step', { history: true })
    // The same keys in one chunk (fast typing, or a paste ending in Enter) take the completion too.
    terminal.type('/he\r')
    await terminal.waitFor(/│ › \/help +│/)
    expect(terminal.screen()).not.toContain('unknown command')
    terminal.keys('C-u')
    await terminal.waitFor(/│ › +Ask dsh/)
    terminal.type('look at @notes-for')
    await terminal.waitFor('@notes-for-completion.md')
    terminal.keys('Tab')
    await terminal.waitFor('look at @notes-for-completion.md ')
    terminal.keys('C-u')
    await terminal.waitFor('Ask dsh to do something')
    terminal.type('/new')
    terminal.keys('Enter')
    await terminal.waitFor(/New session [0-9a-f-]{36}/, { history: true })
    terminal.type('/exit')
    terminal.keys('Enter')
    await terminal.waitFor(/(or|Resume): dsh --session/, { history: true })
  })
})

describe.skipIf(!tmux)('dsh terminal app: /resume (tmux)', () => {
  it('/resume opens the picker over this folder\'s other sessions (Esc leaves it, Enter opens one in place, its conversation shown, and the next message goes to it); /resume ID opens one too (#44.6)', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(
      streamResponse([{ text: 'FIRST_SESSION_ANSWER' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'SECOND_SESSION_ANSWER' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'BACK_IN_THE_FIRST' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd, { height: 40 })
    await openApp(terminal)
    await send(terminal, 'first question')
    await terminal.waitFor('FIRST_SESSION_ANSWER', { history: true })
    terminal.type('/new')
    terminal.keys('Enter')
    const opened = await terminal.waitFor(/New session [0-9a-f-]{36}/, { history: true })
    const second = /New session ([0-9a-f-]{36})/.exec(opened)![1]!
    await send(terminal, 'second question')
    await terminal.waitFor('SECOND_SESSION_ANSWER', { history: true })
    terminal.type('/resume')
    terminal.keys('Enter')
    const picker = await terminal.waitFor('Resume a session', { what: '/resume\'s picker' })
    expect(picker).toMatch(/› first question · .* · 1 turn/)
    expect(picker).toContain('1/1')
    terminal.keys('Escape')
    await terminal.waitFor(screen => !screen.includes('Resume a session'), { what: 'the picker closed by Esc' })
    terminal.type('/resume')
    terminal.keys('Enter')
    await terminal.waitFor('Resume a session', { what: '/resume\'s picker again' })
    terminal.keys('Enter')
    const resumed = await terminal.waitFor(/Resumed session [0-9a-f-]{36}/, { history: true })
    const id = /Resumed session ([0-9a-f-]{36})/.exec(resumed.slice(resumed.lastIndexOf('Resumed session')))![1]!
    expect(resumed.slice(resumed.lastIndexOf('Resumed session'))).toContain('FIRST_SESSION_ANSWER')
    await send(terminal, 'and again')
    await terminal.waitFor('BACK_IN_THE_FIRST', { history: true })
    terminal.type(`/resume ${second.slice(0, 8)}`)
    terminal.keys('Enter')
    const back = await terminal.waitFor(new RegExp(`Resumed session ${second}`), { history: true })
    expect(back.slice(back.lastIndexOf('Resumed session'))).toContain('SECOND_SESSION_ANSWER')
    await quit(terminal)
    const stored = [...logs(home).values()]
    expect(stored).toHaveLength(2)
    const first = stored.find(log => log.includes('FIRST_SESSION_ANSWER'))!
    expect(first).toContain('BACK_IN_THE_FIRST')
    expect(first).toContain(id)
  })
})

describe.skipIf(!tmux)('dsh terminal app: going back to an earlier prompt, forking (tmux)', () => {
  const userTexts = (body: any): string[] => body.messages.filter((message: any) => message.role === 'user')
    .map((message: any) => typeof message.content === 'string' ? message.content : message.content.map((part: any) => part.text ?? '').join(''))
    .filter((text: string) => !text.startsWith('Current runtime context'))

  it('S-14: Esc Esc lists the earlier prompts; Enter forks before the chosen turn, puts its text in the input, and the model sees the conversation from there', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(
      streamResponse([{ text: 'ANSWER_ONE' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'ANSWER_TWO' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'ANSWER_REPHRASED' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd, { height: 40 })
    await openApp(terminal)
    await send(terminal, 'first question')
    await terminal.waitFor('ANSWER_ONE', { history: true })
    await send(terminal, 'second question')
    await terminal.waitFor('ANSWER_TWO', { history: true })
    await terminal.waitFor(/│ › +Ask dsh/, { what: 'the idle input box' })
    terminal.keys('Escape')
    await terminal.waitFor('Esc again to go back to an earlier prompt')
    terminal.keys('Escape')
    const list = await terminal.waitFor('Go back to before an earlier prompt')
    expect(list).toMatch(/› turn 2 · .* · second question/)
    expect(list).toMatch(/ {2}turn 1 · .* · first question/)
    terminal.keys('Enter')
    const back = await terminal.waitFor(/Back to before turn 2, in a copy: session\s+[0-9a-f-]{36}/, { history: true })
    const [, copy, original] = /session\s+([0-9a-f-]{36})\s+\(the previous one,\s+([0-9a-f-]{36}), stays stored\)/.exec(back)!
    await terminal.waitFor(/│ › second question +│/, { what: 'the prompt back in the input box' })
    // The copy's conversation is drawn again: the first turn, not the second.
    const shown = terminal.history()
    const after = shown.slice(shown.lastIndexOf('Back to before turn 2'))
    expect(after).toContain('ANSWER_ONE')
    expect(after).not.toContain('ANSWER_TWO')
    terminal.keys('C-u')
    await send(terminal, 'second, rephrased')
    await terminal.waitFor('ANSWER_REPHRASED', { history: true })
    expect(userTexts(bed.server.requests[2].body)).toEqual(['first question', 'second, rephrased'])
    await quit(terminal)
    const stored = logs(home)
    expect([...stored.keys()].sort()).toEqual([copy, original].sort())
    expect(stored.get(original)).toContain('ANSWER_TWO')
    expect(stored.get(original)).not.toContain('rephrased')
    expect(stored.get(copy)).toContain('ANSWER_REPHRASED')
    expect(stored.get(copy)).not.toContain('second question')
    expect(stored.get(copy)).toContain(`"parentSession":"${original}"`)
  })

  it('going back over turns that wrote and edited files asks first; "put back" undoes them from the log, a bash run is named and left', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(cwd, 'app.txt'), 'hello\n')
    bed.server.enqueue(
      toolCall('w1', 'write', { file_path: 'plan.md', content: 'plan v1\n' }),
      streamResponse([{ text: 'PLAN_WRITTEN' }, { finish: 'stop', usage }]),
      toolCall('r1', 'read', { file_path: 'app.txt' }),
      toolCall('e1', 'edit', { file_path: 'app.txt', old_string: 'hello', new_string: 'HELLO, CHANGED' }),
      toolCall('w2', 'write', { file_path: 'notes/new.md', content: 'a note\n' }),
      toolCall('b1', 'bash', { command: 'true', description: 'nothing' }),
      streamResponse([{ text: 'ALL_CHANGED' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd, { height: 40 })
    await openApp(terminal)
    await send(terminal, 'write the plan')
    await terminal.waitFor('PLAN_WRITTEN', { history: true })
    await send(terminal, 'change the app')
    await terminal.waitFor('ALL_CHANGED', { history: true })
    expect(readFileSync(join(cwd, 'app.txt'), 'utf8')).toBe('HELLO, CHANGED\n')
    await terminal.waitFor(/│ › +Ask dsh/, { what: 'the idle input box' })
    terminal.keys('Escape')
    await terminal.waitFor('Esc again to go back')
    terminal.keys('Escape')
    await terminal.waitFor(/› turn 2 · .* · change the app/)
    terminal.keys('Enter')
    const asked = await terminal.waitFor('Go back to before turn 2')
    expect(asked.replace(/[│\s]+/g, ' ')).toContain('write and edit changed 2 files: app.txt, notes/new.md.')
    expect(asked.replace(/[│\s]+/g, ' ')).toContain('Also bash ran 1 time: what it changed is not put back.')
    expect(asked).toMatch(/› Go back and put those files back as they were/)
    // Esc goes back to the list, Enter asks again.
    terminal.keys('Escape')
    await terminal.waitFor(/› turn 2 · .* · change the app/)
    terminal.keys('Enter')
    await terminal.waitFor('› Go back and put those files back')
    terminal.keys('Enter')
    await terminal.waitFor(/Files as they were before turn 2: put back app\.txt; removed\s+notes\/new\.md\s+\(written since\)\./, { history: true })
    await terminal.waitFor(/│ › change the app +│/, { what: 'the prompt back in the input box' })
    expect(readFileSync(join(cwd, 'app.txt'), 'utf8')).toBe('hello\n')
    expect(existsSync(join(cwd, 'notes', 'new.md'))).toBe(false)
    expect(readFileSync(join(cwd, 'plan.md'), 'utf8')).toBe('plan v1\n')
    await quit(terminal)
  })

  it('going back to the first prompt of a session from another folder opens the new session in that folder', async () => {
    const { home, cwd } = tempHome()
    const other = mkdtempSync(join(tmpdir(), 'dsh-tui-other-'))
    bed.server.enqueue(streamResponse([{ text: 'STORED_THERE' }, { finish: 'stop', usage }]))
    const stored = await runDsh(['--profile', 'headless', '--patch', patch, '--output', 'json', '--cwd', other, 'asked over there'], { env: env(home) })
    expect(stored.code, stored.stderr).toBe(0)
    const id = JSON.parse(stored.stdout).sessionId as string
    const terminal = shell(home, cwd, { height: 30 })
    await openApp(terminal, `--session ${id}`)
    await terminal.waitFor('STORED_THERE', { history: true })
    terminal.type('/rewind')
    terminal.keys('Enter')
    await terminal.waitFor(/› turn 1 · .* · asked over there/)
    terminal.keys('Enter')
    const opened = await terminal.waitFor(/Back to before your first prompt: new session\s+[0-9a-f-]{36}/, { history: true })
    const fresh = /new session\s+([0-9a-f-]{36})/.exec(opened)![1]
    await quit(terminal)
    const header = JSON.parse(logs(home).get(fresh)!.split('\n')[0]) as { cwd?: string }
    expect(header.cwd).toBe(other)
  })

  it('/rewind to the first prompt opens a new session; /fork continues in a copy; Esc closes the list; a quick second Esc opens it', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(
      streamResponse([{ text: 'ONLY_ANSWER' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'IN_THE_FORK' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd, { height: 40 })
    await openApp(terminal)
    terminal.keys('Escape')
    await terminal.waitFor('Esc again to go back')
    terminal.keys('Escape')
    await terminal.waitFor('No earlier prompt in this session to go back to.', { history: true })
    await send(terminal, 'the only question')
    await terminal.waitFor('ONLY_ANSWER', { history: true })
    await terminal.waitFor(/│ › +Ask dsh/, { what: 'the idle input box' })
    // The second Esc sent the moment the hint shows (the screen polled without pause).
    terminal.keys('Escape')
    await terminal.waitFor('Esc again to go back', { pollMs: 0 })
    terminal.keys('Escape')
    await terminal.waitFor('Go back to before an earlier prompt')
    terminal.keys('Escape')
    await terminal.waitFor(screen => !screen.includes('Go back to before an earlier prompt'), { what: 'the list closed' })
    terminal.type('/fork')
    terminal.keys('Enter')
    const forked = await terminal.waitFor(/Forked into session\s+[0-9a-f-]{36}/, { history: true })
    const fork = /Forked into session\s+([0-9a-f-]{36})/.exec(forked)![1]
    await send(terminal, 'in the fork')
    await terminal.waitFor('IN_THE_FORK', { history: true })
    expect(userTexts(bed.server.requests[1].body)).toEqual(['the only question', 'in the fork'])
    terminal.type('/rewind')
    terminal.keys('Enter')
    await terminal.waitFor(/› turn 2 · .* · in the fork/)
    terminal.keys('Down')
    await terminal.waitFor(/› turn 1 · .* · the only question/)
    terminal.keys('Enter')
    await terminal.waitFor(/Back to before your first prompt: new session\s+[0-9a-f-]{36}/, { history: true })
    await terminal.waitFor(/│ › the only question +│/, { what: 'the first prompt back in the input box' })
    await quit(terminal)
    // The first session, its fork, and the new session the rewind opened (nothing in it yet).
    const stored = logs(home)
    expect(stored.size).toBe(3)
    expect(stored.get(fork)).toContain('IN_THE_FORK')
    expect(stored.get(fork)).toContain('"title":"the only question (fork)"')
  })
})

describe.skipIf(!tmux)('dsh terminal app: --permission-mode holds for every session it opens (tmux)', () => {
  it('AP-5: a session opened by /new or /resume runs under the --permission-mode the app was started with', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(streamResponse([{ text: 'STORED_ANSWER' }, { finish: 'stop', usage }]))
    // A session stored under the default preset, to be resumed by the read-only app.
    const stored = await runDsh(['--profile', 'headless', '--patch', patch, '--cwd', cwd, 'a stored question'], { env: env(home) })
    expect(stored.code, stored.stderr).toBe(0)
    const terminal = shell(home, cwd)
    await openApp(terminal, '--permission-mode read-only')
    await terminal.waitFor(/· read-only · ctx/, { what: 'the read-only preset in the status bar' })
    terminal.type('/new')
    terminal.keys('Enter')
    await terminal.waitFor(/New session [0-9a-f-]{36}/, { history: true })
    await terminal.waitFor(/· read-only · ctx/, { what: 'the read-only preset after /new' })
    const listing = (await runDsh(['sessions'], { env: env(home) })).stdout
    const id = /^[0-9a-f-]{36}/m.exec(listing.split('\n').find(line => line.includes('a stored question')) ?? '')?.[0]
    expect(id).toBeDefined()
    terminal.type(`/resume ${id}`)
    terminal.keys('Enter')
    await terminal.waitFor(new RegExp(`Resumed session ${id}`), { history: true })
    await terminal.waitFor(/· read-only · ctx/, { what: 'the read-only preset after /resume' })
    await quit(terminal)
  })
})

describe.skipIf(!tmux)('dsh terminal app approvals (tmux)', () => {
  it('AP-3: an escalation asks inline; y allows that one call, n rejects the next; the status bar shows the preset', async () => {
    const { home, cwd } = tempHome()
    const escalate = (id: string, text: string) => toolCall(id, 'bash', { command: `echo ${text}`, description: 'echo', sandbox_permissions: 'danger-full-access', justification: 'needs the network' })
    bed.server.enqueue(
      escalate('b1', 'allowed-run'),
      escalate('b2', 'rejected-run'),
      streamResponse([{ text: 'One ran, one was refused.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    expect(terminal.screen()).toContain('workspace-write')
    await send(terminal, 'run two escalated commands')
    const ask = await terminal.waitFor('Allow bash?', { what: 'the approval box' })
    expect(ask).toContain('escalate sandbox to danger-full-access: needs the network')
    // The narrowest rule that covers the command is offered for the session or for good (#44).
    expect(ask).toMatch(/y allow once · s for this session · a always \(settings\.yaml\) · n reject/)
    expect(ask).toContain('s / a add the rule Bash(echo allowed-run:*)')
    terminal.keys('y')
    await terminal.waitFor(/✓ \$ echo allowed-run · exit 0/, { history: true })
    await terminal.waitFor('Allow bash?')
    terminal.keys('n')
    await terminal.waitFor('One ran, one was refused.', { history: true })
    expect(terminal.history()).toMatch(/✗ \$ echo rejected-run/)
    await quit(terminal)
    const decided = sessionLog(home).filter(event => event.type === 'approval/decided').map(event => event.data.outcome)
    expect(decided).toEqual(['allowed-once', 'rejected'])
  })
})

describe.skipIf(!tmux)('dsh terminal app: the whole command before approval (#44.2)', () => {
  it('at 80x24 a long escalated command shows in full, wrapped, the touch outside the folder at its end included', async () => {
    const { home, cwd } = tempHome()
    const command = 'cd /tmp && python3 -c \'import sys; print(sys.version)\' && echo building the project now && touch /tmp/outside-the-workspace-marker'
    bed.server.enqueue(
      toolCall('b1', 'bash', { command, description: 'build', sandbox_permissions: 'danger-full-access', justification: 'needs to write outside' }),
      streamResponse([{ text: 'Refused, as asked.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'run the long command')
    const ask = await terminal.waitFor('Allow bash?', { what: 'the approval box' })
    if (process.env.DSH_CAPTURES !== undefined) console.log(ask)
    // The box's rows, from its title to its keys.
    const lines = ask.split('\n')
    const box = lines.slice(lines.findIndex(line => line.includes('Allow bash?')), lines.findIndex(line => line.includes('y allow once')) + 1)
    const rows = box.map(line => line.replace(/^│ ?|\s*│$/g, '').trim())
    expect(rows.join(' ').replace(/\s+/g, ' ')).toContain(`$ ${command}`)
    expect(box.join('\n')).not.toContain('…')
    terminal.keys('n')
    await terminal.waitFor('Refused, as asked.', { history: true })
    await quit(terminal)
  })
})

describe.skipIf(!tmux)('dsh terminal app: permission rules (#44)', () => {
  it('s allows for the session: the rule shown is logged, and the same command later runs without a box', async () => {
    const { home, cwd } = tempHome()
    const escalate = (id: string) => toolCall(id, 'bash', { command: 'git status --short', description: 'status', sandbox_permissions: 'danger-full-access', justification: 'needs it' })
    bed.server.enqueue(
      escalate('g1'), streamResponse([{ text: 'First done.' }, { finish: 'stop', usage }]),
      escalate('g2'), streamResponse([{ text: 'Second done.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'status once')
    const ask = await terminal.waitFor('Allow bash?', { what: 'the approval box' })
    expect(ask).toContain('s / a add the rule Bash(git status:*)')
    terminal.keys('s')
    await terminal.waitFor('First done.', { history: true })
    await send(terminal, 'status again')
    await terminal.waitFor('Second done.', { history: true })
    await quit(terminal)
    const decided = sessionLog(home).filter(event => event.type === 'approval/decided').map(event => [event.data.outcome, event.data.rule])
    expect(decided).toEqual([
      ['allowed-session', { text: 'Bash(git status:*)', kind: 'allow', source: 'session' }],
      ['allowed-once', { text: 'Bash(git status:*)', kind: 'allow', source: 'session' }],
    ])
  })
})

describe.skipIf(!tmux)('dsh terminal app: a command taller than the screen (#44.2)', () => {
  it('at 80x24 the box scrolls: y does nothing until the end, the touch outside the folder, has been on screen', async () => {
    const { home, cwd } = tempHome()
    const command = [...Array.from({ length: 30 }, (_, i) => `echo step ${i + 1}`), 'touch /tmp/outside-the-workspace-tall'].join(' &&\n')
    bed.server.enqueue(
      toolCall('t1', 'bash', { command, description: 'build', sandbox_permissions: 'danger-full-access', justification: 'needs to write outside' }),
      streamResponse([{ text: 'Refused after reading it.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'run the tall command')
    const top = await terminal.waitFor('y works once you have seen the end', { what: 'the scrolling approval box' })
    if (process.env.DSH_CAPTURES !== undefined) console.log(top)
    expect(top).toContain('$ echo step 1 &&')
    // 31 command rows, then description, sandbox_permissions and justification.
    expect(top).toMatch(/lines 1–\d+ of 34/)
    expect(top).not.toContain('touch /tmp/outside-the-workspace-tall')
    // The whole box is on the 24 rows: its title and its keys.
    expect(top).toContain('Allow bash?')
    expect(top).toContain('y allow once')
    terminal.keys('y')
    terminal.keys('End')
    const bottom = await terminal.waitFor('touch /tmp/outside-the-workspace-tall', { what: 'the end of the command' })
    if (process.env.DSH_CAPTURES !== undefined) console.log(bottom)
    expect(bottom).toMatch(/lines \d+–34 of 34/)
    expect(bottom).not.toContain('y works once')
    // The y pressed before the end was shown did nothing.
    expect(sessionLog(home).filter(event => event.type === 'approval/decided')).toEqual([])
    terminal.keys('n')
    await terminal.waitFor('Refused after reading it.', { history: true })
    await quit(terminal)
    expect(sessionLog(home).filter(event => event.type === 'approval/decided').map(event => event.data.outcome)).toEqual(['rejected'])
  })
})

describe.skipIf(!tmux)('dsh terminal app: !command (tmux)', () => {
  it('!command runs in the folder, shows its output, and reaches the model with the next prompt; Esc stops one; dsh -c shows them again', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(cwd, 'shell-marker.txt'), 'x\n')
    bed.server.enqueue(streamResponse([{ text: 'I see the listing.' }, { finish: 'stop', usage }]))
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, '!ls; exit 4')
    await terminal.waitFor(/✗ ! ls; exit 4 · exit 4 · for the model's next step\n\s+shell-marker\.txt/, { what: 'the command and its output', history: true })
    // While it ran, a live line said so; once it ended nothing says it is still running.
    expect(terminal.history()).not.toMatch(/running \$ ls; exit 4|\$ ls; exit 4 · running/)
    await send(terminal, '!sleep 60')
    await terminal.waitFor(/\$ sleep 60 · running · \d+s · Esc stops it/)
    terminal.keys('Escape')
    await terminal.waitFor('✗ ! sleep 60 · stopped', { history: true })
    await terminal.waitFor(screen => !screen.includes('$ sleep 60 · running'), { what: 'the live line gone' })
    // No model request yet: the output waits for the next prompt.
    expect(bed.server.requests.length).toBe(0)
    await send(terminal, 'what is in the folder?')
    await terminal.waitFor('I see the listing.', { history: true })
    const users = bed.server.requests[0]!.body.messages.filter((message: { role: string }) => message.role === 'user').map((message: { content: string }) => message.content)
    expect(users[0]).toBe('The user ran `ls; exit 4` in their shell, in the workspace (exit code 4); its output is below, for context. It was not a tool call.\n\nshell-marker.txt\n')
    expect(users[1]).toMatch(/^The user ran `sleep 60` in their shell, in the workspace \(stopped\)/)
    expect(users[2]).toBe('what is in the folder?')
    await quit(terminal)
    terminal.type(`clear; ${DSH} -c`)
    terminal.keys('Enter')
    // The screen alone (not the scrollback of the first run): the resumed conversation draws them again.
    const resumed = await terminal.waitFor(screen => screen.includes('Ask dsh to do something') && screen.includes('Resumed session'), { what: 'the resumed conversation', timeoutMs: 20_000 })
    expect(resumed).toMatch(/✗ ! ls; exit 4 · exit 4/)
    expect(resumed).toMatch(/✗ ! sleep 60 · stopped/)
    // Leaving the app stops a command still running.
    await send(terminal, '!echo $$ > shell.pid; sleep 60')
    await terminal.waitFor('$ echo $$ > shell.pid; sleep 60 · running')
    const pidFile = join(cwd, 'shell.pid')
    await terminal.waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', { what: 'the command\'s pid file' })
    const pid = Number(readFileSync(pidFile, 'utf8'))
    await send(terminal, '/exit')
    await terminal.waitFor(screen => /(or|Resume): dsh --session/.test(screen) && /\n\$$/.test(screen), { what: 'the resume hint and the prompt' })
    await terminal.waitFor(() => !processAlive(pid), { what: `the shell command (pid ${pid}) gone` })
  })
})

describe.skipIf(!tmux)('dsh terminal app: project trust (tmux)', () => {
  it('a folder with hooks and .mcp.json asks first: n starts without them; y trusts, the server starts, the hook guards bash, the server\'s stderr stays off the screen; then no question', async () => {
    const { home, cwd } = tempHome()
    mkdirSync(join(cwd, '.claude'))
    writeFileSync(join(cwd, '.claude', 'settings.json'), JSON.stringify({
      hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'grep -q "rm " && { echo "rm is not allowed here" >&2; exit 2; }; exit 0' }] }] },
    }))
    writeFileSync(join(cwd, '.mcp.json'), JSON.stringify({ mcpServers: { proj: testServerEntry() } }))
    const terminal = shell(home, cwd, { width: 100, height: 40 })
    await terminal.waitFor(/^\$$/m, { what: 'the shell prompt' })
    terminal.type(`clear; ${DSH}`)
    terminal.keys('Enter')
    const question = await terminal.waitFor('Do you trust the files in this folder?', { what: 'the trust question', timeoutMs: 20_000 })
    expect(question).toContain('  hooks   .claude/settings.json (PreToolUse)')
    expect(question).toContain(`  MCP     proj: ${process.execPath}`)
    // No one-line notices on stderr: the question says it all.
    expect(question).not.toContain('not trusted')
    terminal.keys('n')
    await terminal.waitFor(screen => screen.includes('This folder is not trusted: its hooks and .mcp.json servers do not run (/trust on trusts it).') && screen.includes('Ask dsh to do something'), { what: 'the notice and the input box' })
    await quit(terminal)

    bed.server.enqueue(
      toolCall('b1', 'bash', { command: 'rm -rf build', description: 'clean' }),
      toolCall('m1', 'mcp__proj__crash', {}),
      streamResponse([{ text: 'Both refused.' }, { finish: 'stop', usage }]),
    )
    terminal.type(`clear; ${DSH}`)
    terminal.keys('Enter')
    await terminal.waitFor('Do you trust the files in this folder?', { timeoutMs: 20_000 })
    terminal.keys('y')
    const trusted = await terminal.waitFor('Ask dsh to do something', { what: 'the input box' })
    expect(trusted).toMatch(/MCP {5}proj: connected, 9 tools/)
    await send(terminal, 'clean up')
    await terminal.waitFor('Both refused.', { history: true })
    await terminal.waitFor('MCP server "proj" is reconnecting', { history: true, what: 'the reconnect notice in the conversation' })
    const screen = terminal.screen()
    expect(terminal.history()).toContain('rm is not allowed here')
    expect(terminal.history()).not.toContain('[mcp proj]')
    // Nothing was written under the status bar: it is still the last line drawn.
    expect(screen.trimEnd().split('\n').at(-1)).toMatch(/deepseek-v4-flash · .* · workspace-write/)
    await quit(terminal)

    terminal.type(`clear; ${DSH}`)
    terminal.keys('Enter')
    const third = await terminal.waitFor('Ask dsh to do something', { what: 'the input box, without a question', timeoutMs: 20_000 })
    expect(third).not.toContain('Do you trust')
    await quit(terminal)
  })
})

describe.skipIf(!tmux)('dsh terminal app questions (tmux)', () => {
  /** The tool message the model received for `callId`. */
  const toolResult = (callId: string): string => {
    for (const request of [...bed.server.requests].reverse()) {
      const message = (request.body as { messages?: { role: string; tool_call_id?: string; content: unknown }[] }).messages?.find(m => m.role === 'tool' && m.tool_call_id === callId)
      if (message !== undefined) return typeof message.content === 'string' ? message.content : JSON.stringify(message.content)
    }
    throw new Error(`no tool result for ${callId}`)
  }

  it('ask_user_question asks inline: arrows and Enter pick an option, a number toggles, typing gives a free answer, Esc dismisses', async () => {
    const { home, cwd } = tempHome()
    bed.server.enqueue(
      toolCall('q1', 'ask_user_question', { questions: [
        { id: 'db', header: 'Database', question: 'Which database?', options: [{ label: 'PostgreSQL', description: 'already in the stack' }, { label: 'SQLite' }] },
        { id: 'langs', question: 'Which languages?', multi_select: true, options: [{ label: 'Go' }, { label: 'Rust' }, { label: 'Zig' }] },
      ] }),
      toolCall('q2', 'ask_user_question', { questions: [{ id: 'name', question: 'What should it be called?' }] }),
      streamResponse([{ text: 'Thanks for the answers.' }, { finish: 'stop', usage }]),
      streamResponse([{ text: 'Back to the input box.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd)
    await openApp(terminal)
    await send(terminal, 'set up the project')
    const first = await terminal.waitFor('Which database?', { what: 'the question box' })
    expect(first).toContain('Database')
    expect(first).toMatch(/1\. PostgreSQL — already in the stack/)
    expect(first).toMatch(/2\. SQLite/)
    expect(first).toContain('Enter answers · Esc dismisses')
    // Esc dismisses the question here; the activity line does not offer it for cancelling.
    expect(first).toContain('waiting for your answer')
    expect(first).not.toContain('Esc to cancel')
    terminal.keys('Down')
    await terminal.waitFor(/› 2\. SQLite/, { what: 'the cursor on SQLite' })
    terminal.keys('Enter')
    await terminal.waitFor('Which languages?', { what: 'the second question' })
    terminal.keys('1')
    terminal.keys('3')
    await terminal.waitFor(/\[x\] 3\. Zig/, { what: 'Zig toggled' })
    terminal.type('and C')
    await terminal.waitFor('Other: and C', { what: 'the free answer' })
    terminal.keys('Enter')
    await terminal.waitFor('What should it be called?', { what: 'the third question' })
    terminal.keys('Escape')
    await terminal.waitFor('Thanks for the answers.', { history: true })
    expect(JSON.parse(toolResult('q1'))).toEqual({ answers: [{ id: 'db', selected: ['SQLite'] }, { id: 'langs', selected: ['Go', 'Zig'], text: 'and C' }] })
    expect(toolResult('q2')).toMatch(/^Error: the user dismissed the question/)
    // The input box has the keys again.
    await send(terminal, 'ok')
    await terminal.waitFor('Back to the input box.', { history: true })
    await quit(terminal)
  })
})

describe('dsh without a terminal', () => {
  it('no task and no terminal keeps the headless usage error (exit 2)', async () => {
    const { home, cwd } = tempHome()
    const result = await runDsh([], { cwd, env: env(home) as Record<string, string> })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('no task given')
  })

  it('-c without a terminal is a usage error, not a task called "-c"', async () => {
    const { home, cwd } = tempHome()
    const before = bed.server.requests.length
    const result = await runDsh(['-c'], { cwd, env: env(home) as Record<string, string> })
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/need a terminal/)
    expect(bed.server.requests.length).toBe(before)
  })
})

describe.skipIf(!tmux)('dsh terminal app: background jobs (tmux)', () => {
  it('the status bar counts running jobs, a job ending on its own shows at once, /jobs lists them, and leaving the app stops the rest', async () => {
    const { home, cwd } = tempHome()
    const call = (id: string, args: unknown) => streamResponse([{ toolCall: { id, name: 'bash', arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])
    bed.server.enqueue(
      call('c1', { command: 'exec sleep 6123', description: 'serve the site', run_in_background: true }),
      // Ends when the test says so (after the first turn), with exit code 3.
      call('c2', { command: 'while [ ! -e go ]; do sleep 0.02; done; exit 3', description: 'run the checks', run_in_background: true }),
      streamResponse([{ text: 'Both are running.' }, { finish: 'stop', usage }]),
    )
    const terminal = shell(home, cwd, { width: 100 })
    await openApp(terminal)
    await send(terminal, 'start the site and the checks')
    await terminal.waitFor('Both are running.', { history: true })
    await terminal.waitFor('· 2 jobs running · ctx')
    writeFileSync(join(cwd, 'go'), '')
    await terminal.waitFor('background job bash-2 (bash: run the checks) finished [status: failed, exit code 3].', { history: true })
    await terminal.waitFor('· 1 job running · ctx')
    await send(terminal, '/jobs')
    await terminal.waitFor(/bash-1 {2}running {2}serve the site {2}\d+ s\n\s*bash-2 {2}failed \(exit code 3\) {2}run the checks/, { history: true })
    // Found by its command line: in the sandbox's pid namespace `$$` is not the host's pid.
    const alive = () => readdirSync('/proc').filter(name => /^\d+$/.test(name)).some(pid => {
      try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === 'sleep\u00006123\u0000' } catch { return false }
    })
    expect(alive()).toBe(true)
    await send(terminal, '/exit')
    await terminal.waitFor(screen => /(or|Resume): dsh --session/.test(screen) && /\n\$$/.test(screen), { what: 'the resume hint and the prompt' })
    await terminal.waitFor(() => !alive(), { what: 'the job\'s process (sleep 6123) gone' })
  })
})
