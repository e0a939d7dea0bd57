import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execFileSync, spawnSync } from 'node:child_process'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startCore } from '../../test-support/agent-harness.js'
import { allGoneWithin, processAlive } from '../../test-support/processes.js'
import type { Agent } from '../agent/api.js'
import type { ToolResultRecord } from '../tools/api.js'
import { JobsPlugin } from '../jobs/service.js'
import type { PtyConfig } from './config.js'
import { PtyPlugin } from './index.js'
import { procStat } from './proc.js'

const python = (() => {
  try {
    execFileSync('python3', ['-c', 'pass'])
    return true
  } catch {
    return false
  }
})()

let cwd: string
let ctx: Context
let agent: Agent
let calls = 0
let fiber: { dispose(): unknown } | undefined
beforeEach(() => { cwd = mkdtempSync(join(tmpdir(), 'dsh-pty-')) })
afterEach(async () => {
  await agent?.dispose()
  await fiber?.dispose()
  fiber = undefined
  rmSync(cwd, { recursive: true, force: true })
})

async function start(config: PtyConfig = {}, jobs = false): Promise<void> {
  ctx = new Context()
  await startCore(ctx)
  if (jobs) await ctx.plugin(JobsPlugin).await()
  const loaded = ctx.plugin(PtyPlugin, { silenceMs: 1500, waitTimeoutMs: 10_000, killGraceMs: 500, ...config })
  fiber = loaded
  await loaded.await()
  agent = ctx.agents.create({ cwd })
}

function call(name: string, args: unknown, options: { agent?: Agent; signal?: AbortSignal } = {}): Promise<ToolResultRecord> {
  const owner = options.agent ?? agent
  return ctx.tools.execute({ callId: `c${++calls}`, name, arguments: JSON.stringify(args) }, { cwd, signal: options.signal ?? new AbortController().signal, session: owner.session })
}

const text = (record: ToolResultRecord) => record.content.map(part => part.type === 'text' ? part.text : '').join('')

/** The pid of the first process of the terminal (from its log event and /proc). */
function terminalPid(id: string): number {
  const found = ctx.pty.list(agent.session.id).find(t => t.id === id)
  if (found === undefined) throw new Error(`no terminal ${id}`)
  return found.pid
}

describe('terminals in a real PTY', () => {
  it('opens a shell at the dsh> prompt, sends, reads, lists and closes, with the recorded wording', async () => {
    await start()
    const open = await call('terminal_open', { type: 'shell', name: 'main' })
    expect(open.isError).toBe(false)
    expect(text(open)).toBe('started terminal session pty-1 (main) [type: shell]\ndsh> ')
    const send = await call('terminal_send', { sessionId: 'pty-1', text: "printf 'PTY_OK\\n'" })
    expect(send.isError).toBe(false)
    expect(text(send)).toBe("printf 'PTY_OK\\n'\nPTY_OK\ndsh> \n[wait: stdin_read]\n[session: running]")
    expect(send.meta).toMatchObject({ viewport: "printf 'PTY_OK\\n'\nPTY_OK\ndsh> ", waitReason: 'stdin_read', sessionStatus: { kind: 'running' }, truncated: false })
    const read = await call('terminal_read', { sessionId: 'pty-1', offset: 0, count: 20 })
    expect(text(read)).toBe("dsh> printf 'PTY_OK\\n'\nPTY_OK\ndsh> \n[lines: 0-3 of 3]")
    const page = await call('terminal_read', { sessionId: 'pty-1', offset: 1, count: 1 })
    expect(text(page)).toBe('PTY_OK\n[lines: 1-2 of 3]')
    expect(text(await call('terminal_list', {}))).toMatch(/^pty-1 \(main\) \[type: shell\] \[session: running\] cwd: /)
    const missing = await call('terminal_signal', { sessionId: 'pty-missing', signal: 'SIGINT' })
    expect(missing.isError).toBe(true)
    expect(text(missing)).toBe('Error: unknown PTY session pty-missing')
    const pid = terminalPid('pty-1')
    const close = await call('terminal_close', { sessionId: 'pty-1' })
    expect(text(close)).toBe('closed terminal session pty-1')
    expect(processAlive(pid) && procStat(pid)?.state !== 'Z').toBe(false)
    expect(text(await call('terminal_list', {}))).toBe('(no terminal sessions)')
    expect(agent.session.events.filter(e => e.type.startsWith('pty/')).map(e => [e.type, (e.data as { id: string }).id])).toEqual([['pty/opened', 'pty-1'], ['pty/closed', 'pty-1']])
  })

  it('keeps shell state across sends, renders clears and colours as text, and passes control characters', async () => {
    await start()
    await call('terminal_open', { type: 'shell' })
    await call('terminal_send', { sessionId: 'pty-1', text: 'X=42; cd /' })
    expect(text(await call('terminal_send', { sessionId: 'pty-1', text: 'echo "$X in $PWD"' }))).toContain('42 in /\n')
    const coloured = await call('terminal_send', { sessionId: 'pty-1', text: "clear; printf '\\033[31mRED\\033[0m plain\\n'" })
    expect(text(coloured)).toContain('RED plain')
    expect(text(coloured)).not.toContain('\u001b')
    // A line without Enter, then Ctrl-U erases it: nothing runs.
    const typed = await call('terminal_send', { sessionId: 'pty-1', text: 'echo never', submit: false })
    expect(text(typed)).toContain('echo never')
    const erased = await call('terminal_send', { sessionId: 'pty-1', text: '\u0015echo after' })
    expect(text(erased)).toContain('after')
    expect(text(erased)).not.toMatch(/^never$/m)
  })

  it('SIGINT stops a running sleep: the send ends on silence, the signal brings the prompt back', async () => {
    await start({ silenceMs: 400 })
    await call('terminal_open', { type: 'shell' })
    const started = performance.now()
    const sleeping = await call('terminal_send', { sessionId: 'pty-1', text: 'sleep 30' })
    expect(text(sleeping)).toMatch(/\[wait: silence\]\n\[session: running\]$/)
    expect(performance.now() - started).toBeLessThan(10_000)
    const list = await call('terminal_list', {})
    expect(text(list)).toContain('foreground: sleep')
    const refused = await call('terminal_signal', { sessionId: 'pty-1', signal: 'SIGINT' })
    expect(refused.isError).toBe(false)
    expect(text(refused)).toMatch(/^sent SIGINT to the foreground process group of terminal session pty-1 \(sleep\)\n/)
    expect(text(refused)).toMatch(/dsh> \n\[wait: stdin_read\]\n\[session: running\]$/)
    // The shell itself is in the foreground again: SIGKILL at it is refused.
    const kill = await call('terminal_signal', { sessionId: 'pty-1', signal: 'SIGKILL' })
    expect(kill.isError).toBe(true)
    expect(text(kill)).toContain('use terminal_close')
    expect(text(await call('terminal_send', { sessionId: 'pty-1', text: 'echo alive' }))).toContain('alive')
  })

  it.skipIf(!python)('a python3 REPL keeps its state; SIGINT interrupts a loop', async () => {
    await start({ silenceMs: 1000 })
    const open = await call('terminal_open', { type: 'python' })
    expect(text(open)).toMatch(/\[type: python\]\n>>> $/)
    await call('terminal_send', { sessionId: 'pty-1', text: 'x = 6 * 7' })
    const shown = await call('terminal_send', { sessionId: 'pty-1', text: 'print(x)' })
    expect(text(shown)).toBe('print(x)\n42\n>>> \n[wait: stdin_read]\n[session: running]')
    await call('terminal_send', { sessionId: 'pty-1', text: 'import time\nwhile True: time.sleep(0.05)\n' })
    const stopped = await call('terminal_signal', { sessionId: 'pty-1', signal: 'SIGINT' })
    expect(text(stopped)).toContain('KeyboardInterrupt')
    expect(text(await call('terminal_send', { sessionId: 'pty-1', text: 'print(x + 1)' }))).toContain('43')
    const exit = await call('terminal_send', { sessionId: 'pty-1', text: 'exit()' })
    expect(text(exit)).toMatch(/\[wait: exit\]\n\[session: exited \(exit code 0\)\]$/)
    await call('terminal_close', { sessionId: 'pty-1' })
  })

  it('an unknown type names the registered ones; bad arguments lose nothing', async () => {
    await start({ backends: { cat: { command: 'cat' } }, openTimeoutMs: 1000 })
    const unknown = await call('terminal_open', { type: 'fish' })
    expect(unknown.isError).toBe(true)
    expect(text(unknown)).toBe('Error: unknown terminal type "fish"; registered types: cat, python, shell')
    expect((await call('terminal_open', { type: 'shell', cwd: 'no/such/dir' })).isError).toBe(true)
    expect((await call('terminal_open', {})).isError).toBe(true)
    await call('terminal_open', { type: 'shell' })
    expect(text(await call('terminal_read', { sessionId: 'pty-1', offset: -1 }))).toContain('offset must be a whole number')
    expect(text(await call('terminal_send', { sessionId: 'pty-1', text: 'echo still here' }))).toContain('still here')
    // The numbering goes on: a refused open used no id.
    expect(text(await call('terminal_open', { type: 'cat' }))).toMatch(/^started terminal session pty-2 \[type: cat\]/)
  })

  it('a flood stays bounded: the result is cut, the scrollback capped, the event loop keeps turning', async () => {
    await start({ scrollback: 500, maxResultLines: 50, maxResultBytes: 4096, waitTimeoutMs: 1500 })
    await call('terminal_open', { type: 'shell' })
    let ticks = 0
    const ticker = setInterval(() => { ticks++ }, 10)
    const before = process.memoryUsage().rss
    const flood = await call('terminal_send', { sessionId: 'pty-1', text: 'cat /dev/urandom | base64' })
    clearInterval(ticker)
    expect(text(flood)).toMatch(/\[wait: timeout\]\n\[session: running\]\n\[output truncated\]$/)
    expect(Buffer.byteLength(text(flood))).toBeLessThan(4096 + 200)
    expect(ticks).toBeGreaterThan(20)
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024)
    const read = await call('terminal_read', { sessionId: 'pty-1', count: 100000 })
    expect(text(read)).toMatch(/\[lines: 0-\d+ of \d+\]\n\[output truncated\]$/)
    const total = Number(/of (\d+)\]/.exec(text(read))![1])
    expect(total).toBeLessThanOrEqual(500 + 30)
    const stop = await call('terminal_signal', { sessionId: 'pty-1', signal: 'SIGINT' })
    expect(stop.isError).toBe(false)
    await call('terminal_close', { sessionId: 'pty-1' })
  })

  it('closes a program that ignores SIGTERM and SIGHUP, and everything it started', async () => {
    await start({ killGraceMs: 300 })
    await call('terminal_open', { type: 'shell' })
    await call('terminal_send', { sessionId: 'pty-1', text: "(trap '' TERM HUP; setsid sleep 300 & trap '' TERM HUP INT; exec sleep 301)", submit: true })
    const pids = ctx.pty.list(agent.session.id).map(t => t.pid)
    const started = performance.now()
    const close = await call('terminal_close', { sessionId: 'pty-1' })
    expect(text(close)).toBe('closed terminal session pty-1')
    expect(performance.now() - started).toBeGreaterThanOrEqual(300)
    expect(await allGoneWithin(pids, 0)).toBe(true)
    const left = execFileSync('ps', ['-eo', 'args']).toString().split('\n').filter(line => /^sleep 30[01]$/.test(line.trim()))
    expect(left).toEqual([])
  })

  it('another session cannot see or use a terminal', async () => {
    await start()
    await call('terminal_open', { type: 'shell' })
    const other = ctx.agents.create({ cwd })
    try {
      for (const [name, args] of [['terminal_send', { sessionId: 'pty-1', text: 'echo x' }], ['terminal_read', { sessionId: 'pty-1' }], ['terminal_close', { sessionId: 'pty-1' }], ['terminal_signal', { sessionId: 'pty-1', signal: 'SIGINT' }]] as const) {
        const record = await call(name, args, { agent: other })
        expect(record.isError).toBe(true)
        expect(text(record)).toBe('Error: unknown PTY session pty-1')
      }
      expect(text(await call('terminal_list', {}, { agent: other }))).toBe('(no terminal sessions)')
      expect(text(await call('terminal_send', { sessionId: 'pty-1', text: 'echo mine' }))).toContain('mine')
    } finally {
      await other.dispose()
    }
  })

  it('a cancel mid-send returns at once and leaves the terminal running', async () => {
    await start({ silenceMs: 60_000, waitTimeoutMs: 60_000 })
    await call('terminal_open', { type: 'shell' })
    const controller = new AbortController()
    const sending = call('terminal_send', { sessionId: 'pty-1', text: 'sleep 60' }, { signal: controller.signal })
    // Cancel once the sleep is in the foreground.
    const deadline = performance.now() + 5000
    while (!text(await call('terminal_list', {})).includes('foreground: sleep') && performance.now() < deadline) await new Promise(resolve => setImmediate(resolve))
    const cancelled = performance.now()
    controller.abort()
    const record = await sending
    expect(performance.now() - cancelled).toBeLessThan(1000)
    expect(record.isError).toBe(true)
    expect(text(await call('terminal_list', {}))).toContain('foreground: sleep')
  })

  it('run_in_background answers with a job id; job_output gives the screen', async () => {
    await start({}, true)
    await call('terminal_open', { type: 'shell' })
    const started = await call('terminal_send', { sessionId: 'pty-1', text: 'echo from-the-job', run_in_background: true })
    expect(text(started)).toBe('started background job terminal-1')
    const output = await call('job_output', { job_id: 'terminal-1', wait: true })
    expect(text(output)).toContain('from-the-job')
    expect(text(output)).toContain('[wait: stdin_read]')
  })

  it('disposing the agent ends its terminals: no process is left', async () => {
    await start()
    await call('terminal_open', { type: 'shell' })
    await call('terminal_send', { sessionId: 'pty-1', text: 'sleep 300 &' })
    const pid = terminalPid('pty-1')
    const session = agent.session
    await agent.dispose()
    await ctx.pty.closeAll(session.id)
    expect(await allGoneWithin([pid], 5000)).toBe(true)
    expect(execFileSync('ps', ['-eo', 'args']).toString().split('\n').filter(line => line.trim() === 'sleep 300')).toEqual([])
    expect(session.events.filter(e => e.type === 'pty/closed').map(e => e.data)).toMatchObject([{ id: 'pty-1', reason: 'agent-closed' }])
  })

  it('a session loaded again with terminals its log shows open records them lost and tells the model', async () => {
    await start()
    await call('terminal_open', { type: 'shell', name: 'main' })
    await call('terminal_open', { type: 'shell' })
    await call('terminal_close', { sessionId: 'pty-2' })
    // What a crash leaves: the log as written, the processes gone with dsh.
    const events = [...agent.session.events]
    const header = { ...agent.session.header, id: 'resumed-after-crash' }
    const resumed = ctx.agents.create({ sessionId: ctx.sessions.hydrate(header, events).id })
    try {
      const lost = resumed.session.events.filter(e => e.type === 'pty/lost')
      expect(lost.map(e => e.data)).toEqual([{ terminals: [{ id: 'pty-1', type: 'shell', name: 'main' }] }])
      const notices = resumed.session.events.filter(e => e.type === 'agent/inbox/spliced')
        .flatMap(e => ((e.data as { inserted?: { source: { plugin?: string }; content: { text: string }[] }[] }).inserted ?? []))
        .filter(message => message.source.plugin === 'pty')
      expect(notices.map(message => message.content[0]!.text)).toEqual(['Terminal session pty-1 (main) was lost when dsh stopped; its processes are gone and its id no longer works. Open a new terminal with terminal_open if you still need one.'])
      expect(text(await call('terminal_send', { sessionId: 'pty-1', text: 'echo x' }, { agent: resumed }))).toBe('Error: unknown PTY session pty-1')
      // The next terminal does not reuse a lost id.
      expect(text(await call('terminal_open', { type: 'shell' }, { agent: resumed }))).toMatch(/^started terminal session pty-3 /)
    } finally {
      await resumed.dispose()
    }
  })

  it('dsh exiting with terminals open leaves none of their processes', async () => {
    const result = spawnSync(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../../test-support/pty-exit-child.ts')], { cwd: join(import.meta.dirname, '../..'), encoding: 'utf8', timeout: 60_000 })
    expect(result.status).toBe(0)
    const pids = JSON.parse(result.stdout.trim().split('\n').pop()!) as number[]
    // The shell, the three sleeps (one detached from the shell by a subshell).
    expect(pids.length).toBeGreaterThanOrEqual(4)
    expect(await allGoneWithin(pids, 5000)).toBe(true)
  })

  it('loading the row imports neither node-pty nor the emulator; the first open does', () => {
    const loaded = (open: boolean) => {
      const script = `const { builtinPlugin } = await import('./src/cli/catalogue.ts'); await builtinPlugin('pty');
${open ? "const { Terminal } = await import('./src/pty/terminal.ts'); await Terminal.open({ id: 'pty-1', type: 'shell', argv: ['true'], runnerWords: 0, cwd: '/', env: {}, cols: 80, rows: 24, scrollback: 10 });" : ''}
const { createRequire } = await import('node:module'); const cache = createRequire(import.meta.url).cache;
console.log(JSON.stringify(Object.keys(cache).filter(k => /node-pty|@xterm/.test(k)).length)); process.exit(0)`
      const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: join(import.meta.dirname, '../..'), encoding: 'utf8', timeout: 60_000 })
      if (result.status !== 0) throw new Error(result.stderr)
      return Number(result.stdout.trim())
    }
    expect(loaded(false)).toBe(0)
    expect(loaded(true)).toBeGreaterThan(0)
  })
})
