import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { mkdir, readFile, realpath } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { allGoneWithin, processRunning } from '../../../test-support/processes.js'
import { resultText, toolsHarness, type ToolsHarness } from '../../../test-support/builtin-tools.js'

/** True while `pid` is a live (non-zombie) process. Linux /proc. */

/** Runs one bash tool call in a child process whose stdin the test holds (over dist/). */
const stdinChild = new URL('../../../test-support/bash-stdin-child.mjs', import.meta.url).pathname

let h: ToolsHarness
beforeEach(async () => { h = await toolsHarness({ bash: { killGraceMs: 500 } }) })
afterEach(async () => { await h.cleanup() })

const bash = (args: Record<string, unknown>, options?: Parameters<ToolsHarness['call']>[2]) =>
  h.call('bash', { description: 'test', ...args }, options)

/** Whether `pid` is gone within 5 s (a killed process may need a moment to be reaped). */
const goneSoon = (pid: number): Promise<boolean> => allGoneWithin([pid], 5000)

describe('bash output format', () => {
  it('a successful command gives exactly its stdout', async () => {
    const record = await bash({ command: 'echo X' })
    expect(resultText(record)).toBe('X\n')
    expect(record.isError).toBe(false)
    expect(record.meta).toMatchObject({ exitCode: 0, timedOut: false, aborted: false })
    expect(typeof (record.meta as { durationMs: unknown }).durationMs).toBe('number')
  })

  it('stderr follows in a [stderr] section, then [exit code: N]; a non-zero exit is not an error result', async () => {
    const record = await bash({ command: 'printf out; echo err >&2; exit 3' })
    expect(resultText(record)).toBe('out\n[stderr]\nerr\n[exit code: 3]')
    expect(record.isError).toBe(false)
    expect(record.meta).toMatchObject({ exitCode: 3 })
  })

  it('(no output) when both streams are empty, with the exit code marker when non-zero', async () => {
    expect(resultText(await bash({ command: 'true' }))).toBe('(no output)')
    expect(resultText(await bash({ command: 'exit 1' }))).toBe('(no output)\n[exit code: 1]')
    expect(resultText(await bash({ command: 'echo only-err >&2' }))).toBe('[stderr]\nonly-err\n')
  })

  it('runs in the session cwd by default and in workdir (relative to it) when given; each call is a fresh shell', async () => {
    await mkdir(join(h.cwd, 'sub'))
    expect(resultText(await bash({ command: 'pwd' }))).toBe(`${await realpath(h.cwd)}\n`)
    expect(resultText(await bash({ command: 'pwd', workdir: 'sub' }))).toBe(`${await realpath(join(h.cwd, 'sub'))}\n`)
    await bash({ command: 'export DSH_TEST_VAR=1' })
    expect(resultText(await bash({ command: 'echo "[${DSH_TEST_VAR:-unset}]"' }))).toBe('[unset]\n')
  })

  it('T-7: a missing workdir is an error result naming it', async () => {
    const record = await bash({ command: 'pwd', workdir: 'missing' })
    expect(record.isError).toBe(true)
    expect(resultText(record)).toContain(join(h.cwd, 'missing'))
    expect(record.error).toEqual({ name: 'FsError', code: 'FS_NOT_FOUND' })
  })

  it('stdin is closed, so a command reading it sees end of input instead of hanging', async () => {
    // Run where the tool's own stdin is a pipe holding a line and never closed: a command given
    // that stdin would read the line, one given a pipe of its own would wait for it until the timeout.
    const child = spawn(process.execPath, [stdinChild, h.cwd, 'if read -r line; then echo "read: $line"; else echo "end of input"; fi'], { stdio: ['pipe', 'pipe', 'pipe'] })
    child.stdin.write('a line for whoever reads this stdin\n')
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (data: Buffer) => { stdout += data.toString() })
    child.stderr.on('data', (data: Buffer) => { stderr += data.toString() })
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
    child.stdin.end()
    expect(code, stderr).toBe(0)
    expect(JSON.parse(stdout)).toBe('end of input\n')
  })

  it('bad arguments are a validation error naming the field', async () => {
    const record = await h.call('bash', { description: 'x' })
    expect(record.isError).toBe(true)
    expect(resultText(record)).toContain('command')
  })
})

describe('bash timeout and abort', () => {
  it('a timeout kills the whole process group and reports [timed out after N ms]', async () => {
    const record = await bash({ command: 'sleep 30 & echo $!; wait', timeoutMs: 300 })
    const text = resultText(record)
    const pid = Number(text.split('\n')[0])
    expect(pid).toBeGreaterThan(0)
    expect(text).toBe(`${pid}\n[timed out after 300 ms]`)
    expect(record.isError).toBe(true)
    expect(record.meta).toMatchObject({ timedOut: true })
    expect(await goneSoon(pid)).toBe(true)
  })

  it('#43.1: a writer that left the group (setsid) cannot hold the call past its timeout; it is killed and named', async () => {
    const pidFile = join(h.cwd, 'writer.pid')
    // It ignores SIGPIPE, so closing the pipes alone would not end it.
    const record = await bash({ command: `setsid sh -c 'trap "" PIPE; echo $$ > ${pidFile}; while :; do echo tick 2>/dev/null; sleep 0.02; done' & sleep 0.2; exit 0`, timeoutMs: 800 })
    const text = resultText(record)
    const pid = Number(readFileSync(pidFile, 'utf8'))
    expect(text).toContain('tick\n')
    expect(text).toContain('[timed out after 800 ms]')
    // The writer, and maybe the sleep it was running at that moment.
    expect(text).toMatch(new RegExp(`\\[killed \\d+ process(es)? the command left outside its group: .*\\b${pid} \\(sh\\).*\\]$`))
    expect(record.meta).toMatchObject({ timedOut: true, exitCode: 0 })
    expect(await goneSoon(pid)).toBe(true)
  })

  it('#43.1: a cancel ends the call while a detached writer keeps the pipes busy', async () => {
    const pidFile = join(h.cwd, 'writer2.pid')
    const controller = new AbortController()
    const pending = bash({ command: `setsid sh -c 'trap "" PIPE; echo $$ > ${pidFile}; while :; do echo tick 2>/dev/null; sleep 0.02; done' & exit 0`, timeoutMs: 600_000 }, { signal: controller.signal })
    while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '') await new Promise(resolve => setTimeout(resolve, 10))
    const pid = Number(readFileSync(pidFile, 'utf8'))
    controller.abort()
    const record = await pending
    expect(record.isError).toBe(true)
    expect(resultText(record)).toContain(`${pid} (sh)`)
    expect(await goneSoon(pid)).toBe(true)
  })

  it('timeoutMs is capped at maxTimeoutMs', async () => {
    const capped = await toolsHarness({ bash: { maxTimeoutMs: 200, killGraceMs: 100 } })
    try {
      const record = await capped.call('bash', { command: 'sleep 30', description: 'x', timeoutMs: 999_999 })
      expect(resultText(record)).toBe('(no output)\n[timed out after 200 ms]')
    } finally {
      await capped.cleanup()
    }
  })

  it('T-6: abort ends the started body promptly: the process group (shell and background children) is killed', async () => {
    const fifo = join(h.cwd, 'started')
    execFileSync('mkfifo', [fifo])
    const controller = new AbortController()
    const pending = bash({ command: `sleep 30 & echo $! > ${fifo}; wait` }, { signal: controller.signal })
    // Opening the FIFO for reading blocks until the command has written the child's pid.
    const pid = Number((await readFile(fifo, 'utf8')).trim())
    expect(processRunning(pid)).toBe(true)
    controller.abort()
    const record = await pending
    expect(record.isError).toBe(true)
    expect(await goneSoon(pid)).toBe(true)
  })

  it('an already aborted call never starts the command', async () => {
    const controller = new AbortController()
    controller.abort()
    const record = await bash({ command: 'touch ran' }, { signal: controller.signal })
    expect(record.isError).toBe(true)
    expect(existsSync(join(h.cwd, 'ran'))).toBe(false)
  })

  it('a background child holding the pipes does not hold the call open after the shell exits', async () => {
    const record = await bash({ command: 'sleep 30 & echo $!' })
    const pid = Number(resultText(record).trim())
    expect(record.isError).toBe(false)
    expect(processRunning(pid)).toBe(true) // not ours to kill: the shell ended normally
    process.kill(pid, 'SIGKILL')
  })
})

describe('bash start failures', () => {
  it('a shell that cannot be started is an error result, not a crash', async () => {
    const broken = await toolsHarness({ bash: { shell: 'dsh-no-such-shell' } })
    try {
      const record = await broken.call('bash', { command: 'echo hi', description: 'x' })
      expect(record.isError).toBe(true)
      expect(record.error).toEqual({ name: 'BashError', code: 'SPAWN_FAILED' })
      expect(resultText(record)).toContain('could not start dsh-no-such-shell')
    } finally {
      await broken.cleanup()
    }
  })
})

describe('bash large output', () => {
  it('stdout over 64 KB keeps head and tail inline and spills all of it to a private 0600 file', async () => {
    const record = await bash({ command: 'seq 1 30000' })
    const text = resultText(record)
    const full = Array.from({ length: 30000 }, (_, i) => `${i + 1}\n`).join('')
    expect(text.startsWith('1\n2\n3\n')).toBe(true)
    expect(text.endsWith('29999\n30000\n')).toBe(true)
    expect(Buffer.byteLength(text)).toBeLessThan(50 * 1024)
    const match = /the full stdout is saved to (\S+)/.exec(text)
    expect(match).not.toBeNull()
    const path = match![1]
    expect(readFileSync(path, 'utf8')).toBe(full)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(statSync(join(path, '..')).mode & 0o777).toBe(0o700)
    expect(record.meta).toMatchObject({ exitCode: 0, spilled: [path] })
  })

  it('output still flowing from a background child after the shell exits is read to the end', async () => {
    const record = await bash({ command: '(seq 1 20000; exec >&-) & exit 0' })
    const text = resultText(record)
    expect(text.endsWith('19999\n20000\n')).toBe(true)
    const path = /the full stdout is saved to (\S+)/.exec(text)![1]
    expect(readFileSync(path, 'utf8')).toBe(Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join(''))
  })

  it('a large stderr is spilled on its own and the exit code still follows', async () => {
    const record = await bash({ command: "head -c 100000 /dev/zero | tr '\\0' e >&2; echo ok; exit 2" })
    const text = resultText(record)
    expect(text.startsWith('ok\n[stderr]\neee')).toBe(true)
    expect(text.endsWith('eee\n[exit code: 2]')).toBe(true)
    const path = /the full stderr is saved to (\S+)/.exec(text)![1]
    expect(statSync(path).size).toBe(100000)
  })
})

describe('bash environment (security)', () => {
  it('a command never sees API keys or tokens from the process environment; ordinary variables pass', async () => {
    const names = ['DEEPSEEK_API_KEY', 'OPENAI_API_KEY', 'DSH_WEB_TOKEN', 'GITHUB_TOKEN']
    const previous = names.map(name => process.env[name])
    process.env.DSH_TEST_PLAIN = 'visible'
    for (const name of names) process.env[name] = `secret-${name}`
    try {
      const record = await bash({ command: `printf '%s|' ${names.map(name => `"$${name}"`).join(' ')} "$DSH_TEST_PLAIN"; env` })
      const output = resultText(record)
      expect(output.startsWith('||||visible|')).toBe(true)
      for (const name of names) expect(output).not.toContain(`secret-${name}`)
    } finally {
      names.forEach((name, i) => { if (previous[i] === undefined) delete process.env[name]; else process.env[name] = previous[i] })
      delete process.env.DSH_TEST_PLAIN
    }
  })
})
