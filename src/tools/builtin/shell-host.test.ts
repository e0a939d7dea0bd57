/**
 * `bash` through a sandbox's shell host (src/sandbox/shell-host.ts): real bubblewrap, real perl.
 * The host must not change what a command may do or what the tool reports; these tests run
 * commands both ways and compare, then check what only a kept host could get wrong: processes
 * left behind, /tmp carried over, a host killed from inside, no perl.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resultText } from '../../../test-support/builtin-tools.js'
import { bwrapRunner, probeRunner } from '../../sandbox/runner.js'
import { ShellHost } from '../../sandbox/shell-host.js'
import { SandboxPlugin, type SandboxConfig } from '../../sandbox/service.js'
import type { ToolResultRecord } from '../api.js'
import { ToolsPlugin } from '../index.js'
import { BuiltinToolsPlugin } from './index.js'

let root: string
let outside: string
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-host-root-'))
  outside = mkdtempSync(join(homedir(), '.dsh-host-outside-'))
})
const boxes: Box[] = []
afterAll(async () => {
  await Promise.all(boxes.map(b => b.unload()))
  rmSync(root, { recursive: true, force: true })
  rmSync(outside, { recursive: true, force: true })
})

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
const perlProblem = (() => {
  try {
    execFileSync('perl', ['-e', '1'])
    return undefined
  } catch (error) {
    return String(error)
  }
})()
const missing = bwrapProblem ?? perlProblem
if (missing !== undefined) {
  if (process.env.CI === 'true') throw new Error(`the shell host tests cannot run under CI=true: ${missing}`)
  console.warn(`skipping the shell host tests: ${missing} (install the Debian packages bubblewrap and perl-base)`)
}

interface Box {
  readonly ctx: Context
  unload(): Promise<void>
  call(command: string, options?: { timeoutMs?: number; signal?: AbortSignal; workdir?: string; cwd?: string }): Promise<ToolResultRecord>
  hosts(): ReturnType<SandboxPlugin['shellHosts']>
  settled(): Promise<void>
}

async function box(config: SandboxConfig, cwd = root): Promise<Box> {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  const fiber = ctx.plugin(SandboxPlugin, { workspaceRoot: root, ...config })
  await fiber
  await ctx.plugin(BuiltinToolsPlugin)
  const service = ctx.sandbox as SandboxPlugin
  const made: Box = {
    ctx,
    unload: async () => { await fiber.dispose() },
    call: (command, options = {}) => ctx.tools.execute(
      { callId: 'c', name: 'bash', arguments: JSON.stringify({ command, description: 'test', ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}), ...(options.workdir !== undefined ? { workdir: options.workdir } : {}) }) },
      { cwd: options.cwd ?? cwd, signal: options.signal ?? new AbortController().signal },
    ),
    hosts: () => service.shellHosts(),
    settled: () => service.shellHostsSettled(),
  }
  boxes.push(made)
  return made
}

/**
 * A box whose host is running: the first call starts it (and runs in a sandbox of its own, or,
 * as the first confined command of the process, through the host it waited for).
 */
async function hosted(config: SandboxConfig, cwd = root): Promise<Box> {
  const b = await box(config, cwd)
  await b.call('true')
  await b.settled()
  expect(b.hosts()).toMatchObject([{ running: true, starts: 1 }])
  return b
}

const viaHost = (record: ToolResultRecord) => (record.meta as { sandbox?: { shellHost?: boolean } } | undefined)?.sandbox?.shellHost === true

/**
 * The other live processes of the sandbox, by name, listed with shell builtins only (no process
 * of its own). A killed process can linger as a zombie until the sandbox's init reaps it: skipped.
 * One can also vanish between the glob and the read: `2>/dev/null` comes before the `<`, so the
 * failed redirection is silenced too.
 */
const PROCESSES = 'for f in /proc/[0-9]*; do [ "${f#/proc/}" = "$$" ] && continue; read -r stat 2>/dev/null < "$f/stat" || continue; state=${stat##*) }; [ "${state%% *}" = Z ] && continue; read -r name 2>/dev/null < "$f/comm" && echo "$name"; done'
const IDLE = 'bwrap\nperl\n'

describe.skipIf(missing !== undefined)('bash through a shell host (real bubblewrap and perl)', () => {
  it('reports exactly what a sandbox per command reports', async () => {
    const hostBox = await hosted({ mode: 'workspace-write' })
    const commands = [
      'echo hello',
      'echo out; echo err >&2; exit 3',
      'printf "a\\0b\\n"; printf "no newline"',
      'kill -TERM $$',
      'pwd; echo "$HOME"',
      'echo "${DSH_TEST_SECRET_TOKEN:-scrubbed}"',
      'seq 1 40000',
      'printf "%s\\n" "ünïcödé ✓"',
      'cat /nonexistent',
      `touch ${join(outside, 'nope')}`,
      // SIGPIPE has its default disposition (an ignored one would make yes report EPIPE).
      'yes | head -n 2',
      // No descriptor of dsh or of the host leaks into the command.
      'ls /proc/self/fd',
      'umask; ulimit -n; trap',
      // A warm shell (started ahead, src/sandbox/shell-host.pl.ts) must read as a fresh one.
      'echo "[$_] [$SECONDS] [$#] [$-]"; shopt -p | md5sum; set -o | md5sum',
      'read -r line; echo "read: $? [$line]"; cat; echo "cat: $?"',
      'cat <<EOF\n  two  \\x $((1 + 1))\nEOF\n\n\n',
      `echo ${'x'.repeat(20_000)} | wc -c`,
      `echo ${'y'.repeat(70_000)} | wc -c`,
      'echo "$PWD"; cd /tmp; echo "$OLDPWD"',
    ]
    process.env.DSH_TEST_SECRET_TOKEN = 'leaked'
    try {
      for (const command of commands) {
        const direct = await (await box({ mode: 'workspace-write' })).call(command, { workdir: '/' })
        const hosted = await hostBox.call(command, { workdir: '/' })
        expect(viaHost(hosted), command).toBe(true)
        const normal = (text: string) => text.replace(/saved to \S+/g, 'saved to <spill>')
        expect(normal(resultText(hosted)), command).toBe(normal(resultText(direct)))
        expect(hosted.isError, command).toBe(direct.isError)
        const { durationMs: _a, ...hostedMeta } = hosted.meta as Record<string, unknown>
        const { durationMs: _b, ...directMeta } = direct.meta as Record<string, unknown>
        expect({ ...hostedMeta, sandbox: { ...(hostedMeta.sandbox as object), shellHost: undefined }, spilled: undefined }, command)
          .toEqual({ ...directMeta, sandbox: { ...(directMeta.sandbox as object), shellHost: undefined }, spilled: undefined })
      }
    } finally {
      delete process.env.DSH_TEST_SECRET_TOKEN
    }
    expect(existsSync(join(outside, 'nope'))).toBe(false)
    // Every hosted command but the first and the one over 64 KB ran in a warm shell.
    expect(hostBox.hosts()[0]!.warmRuns).toBe(commands.length - 2)
  })

  it('a warm shell serves only a command a fresh one would run alike: same cwd, same directory, same environment', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    const dirA = join(root, 'warm-a')
    const dirB = join(root, 'warm-b')
    mkdirSync(dirA)
    mkdirSync(dirB)
    writeFileSync(join(dirA, 'first'), '')
    writeFileSync(join(dirB, 'other'), '')
    const warm = () => b.hosts()[0]!.warmRuns
    expect(resultText(await b.call('ls', { workdir: dirA }))).toBe('first\n')
    const before = warm()
    // The next shell was started in A: a command for B gets one of its own.
    expect(resultText(await b.call('pwd; ls', { workdir: dirB }))).toBe(`${dirB}\nother\n`)
    expect(warm()).toBe(before)
    expect(resultText(await b.call('pwd; ls', { workdir: dirB }))).toBe(`${dirB}\nother\n`)
    expect(warm()).toBe(before + 1)
    // B is replaced by another directory of the same name: the shell waiting in the old one is not used.
    rmSync(dirB, { recursive: true })
    mkdirSync(dirB)
    writeFileSync(join(dirB, 'replaced'), '')
    expect(resultText(await b.call('pwd -P; ls', { workdir: dirB }))).toBe(`${realpathSync(dirB)}\nreplaced\n`)
    expect(warm()).toBe(before + 1)
    // The environment changes: the shell started under the old one is not used.
    process.env.DSH_TEST_WARM_VALUE = 'changed'
    try {
      expect(resultText(await b.call('echo "$DSH_TEST_WARM_VALUE"', { workdir: dirB }))).toBe('changed\n')
      expect(warm()).toBe(before + 1)
      expect(resultText(await b.call('echo "$DSH_TEST_WARM_VALUE"', { workdir: dirB }))).toBe('changed\n')
      expect(warm()).toBe(before + 2)
    } finally {
      delete process.env.DSH_TEST_WARM_VALUE
    }
    // Removed while a shell waits in it: the command is refused as a fresh one would be.
    rmSync(dirB, { recursive: true })
    const gone = await b.call('echo never', { workdir: dirB })
    expect(resultText(gone)).not.toContain('never')
    expect(warm()).toBe(before + 2)
  })

  it('what a warm shell reports differently from `bash -c`: a syntax error names eval, and a lone command killed by a signal is named', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    await b.call('true')
    const syntax = await b.call('if then')
    expect(b.hosts()[0]!.warmRuns).toBe(1)
    expect(resultText(syntax)).toMatch(/^\[stderr\]\nbash: eval: line 1: syntax error near unexpected token `then'\nbash: eval: line 1: `if then'\n\[exit code: 2\]$/)
    const killed = await b.call("sh -c 'kill -KILL $$'")
    expect(resultText(killed)).toMatch(/Killed\s+sh -c 'kill -KILL \$\$'\n\[exit code: 137\]$/)
  })

  it('SB-2: read-only through the host: no write anywhere, the marker says why', async () => {
    const b = await hosted({ mode: 'read-only' })
    const record = await b.call(`echo x > ${join(root, 'ro.txt')}`)
    expect(viaHost(record)).toBe(true)
    expect(resultText(record)).toMatch(/Read-only file system[\s\S]*\[sandbox: file access denied under read-only mode\]\n\[exit code: 1\]$/)
    expect(existsSync(join(root, 'ro.txt'))).toBe(false)
  })

  it('SB-2: workspace-write through the host: the root is writable, outside is not, and /tmp starts empty for every command', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    const inside = await b.call(`echo in > ${join(root, 'in-host.txt')} && cat ${join(root, 'in-host.txt')}`)
    expect(viaHost(inside)).toBe(true)
    expect(resultText(inside)).toBe('in\n')
    const escape = await b.call(`echo out > ${join(outside, 'out.txt')}`)
    expect(resultText(escape)).toContain('[sandbox: file access denied under workspace-write mode]')
    expect(existsSync(join(outside, 'out.txt'))).toBe(false)
    // The writable root lies under /tmp here: its mount point is in the sandbox's /tmp, and
    // emptying /tmp must leave everything under it alone.
    expect(root.startsWith(`${realpathSync(tmpdir())}/`) || root.startsWith(`${tmpdir()}/`)).toBe(true)
    const mountPoint = relative('/tmp', root).split('/')[0]!
    mkdirSync(join(root, 'kept', 'deep'), { recursive: true })
    writeFileSync(join(root, 'kept', 'deep', 'file'), 'x')
    const marker = `dsh-host-private-${process.pid}`
    const listing = await b.call(`mkdir -p /tmp/d/e && echo t > /tmp/d/e/${marker} && ln -s ${root} /tmp/link && ln -s ${join(root, 'kept')} /tmp/d/kept && ls /tmp`)
    expect(resultText(listing).split('\n')).toEqual(['d', mountPoint, 'link', ''].sort((a, b) => a === '' ? 1 : b === '' ? -1 : a.localeCompare(b)))
    expect(existsSync(join('/tmp', marker))).toBe(false)
    // Emptied when the command ended: links removed, not followed; the root's mount point kept.
    expect(resultText(await b.call('ls -A /tmp'))).toBe(`${mountPoint}\n`)
    expect(readFileSync(join(root, 'in-host.txt'), 'utf8')).toBe('in\n')
    expect(readFileSync(join(root, 'kept', 'deep', 'file'), 'utf8')).toBe('x')
  })

  it('SB-2: the read-only bind cannot be lifted from inside the host, even as root', async () => {
    for (const mode of ['read-only', 'workspace-write'] as const) {
      const b = await hosted({ mode })
      const target = join(outside, `lifted-host-${mode}.txt`)
      const record = await b.call(`mount -o remount,rw / ; mount -o remount,rw ${outside} ; echo x > ${target}; grep CapEff /proc/self/status`)
      expect(viaHost(record)).toBe(true)
      expect(existsSync(target), `${mode}: wrote outside through a remount`).toBe(false)
      expect(resultText(record)).toMatch(/CapEff:\s+0+\n/)
    }
  })

  it('leaves no process behind: background jobs die with their command, and so do orphans that left its group', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    const idle = resultText(await b.call(PROCESSES))
    expect(idle).toBe(IDLE)
    const background = await b.call('sleep 300 & sleep 301 & echo started')
    expect(viaHost(background)).toBe(true)
    expect(resultText(background)).toBe('started\n')
    expect(resultText(await b.call(PROCESSES))).toBe(idle)
    // setsid: a new session and process group, so only the sweep after the command finds it.
    // The command ends only once the orphan has left its group (it writes the file after setsid).
    const ready = join(root, 'setsid-ready')
    const detached = await b.call(`setsid bash -c 'echo up > "$1"; exec sleep 302' _ ${ready} > /dev/null 2>&1 < /dev/null & while [ ! -s ${ready} ]; do :; done; echo detached`)
    expect(resultText(detached)).toBe('detached\n')
    expect(resultText(await b.call(PROCESSES))).toBe(idle)
  })

  it('while another command runs, a finished command\'s background jobs still die with it (its process group)', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    const go = join(root, 'parallel-go')
    const waiting = b.call(`until [ -e ${go} ]; do sleep 0.01; done; echo released`)
    const background = await b.call('(exec -a dsh-straggler sleep 300) & echo started')
    expect(resultText(background)).toBe('started\n')
    // The other command still runs, so no sweep has happened: only the group kill can have ended it.
    // (The other command's own short-lived `sleep`s may vanish between the glob and the read.)
    const count = await b.call(`cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c '[d]sh-straggler'`)
    expect(resultText(count)).toBe('0\n[exit code: 1]')
    writeFileSync(go, '')
    expect(resultText(await waiting)).toBe('released\n')
  })

  it('a timeout kills the command\'s whole group inside the host, and the host stays', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    const record = await b.call('sleep 300 & echo begun; sleep 300', { timeoutMs: 300 })
    expect(viaHost(record)).toBe(true)
    expect(record.isError).toBe(true)
    expect(resultText(record)).toMatch(/^begun\n[\s\S]*\[timed out after 300 ms\]$/)
    expect(resultText(await b.call(PROCESSES))).toBe(IDLE)
    expect(b.hosts()).toMatchObject([{ running: true, starts: 1 }])
  })

  it('an abort ends a hosted command at once', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    const controller = new AbortController()
    const started = join(root, 'abort-started')
    const pending = b.call(`touch ${started}; exec sleep 300`, { signal: controller.signal })
    await expect.poll(() => existsSync(started), { timeout: 10_000 }).toBe(true)
    controller.abort()
    const record = await pending
    expect(record.isError).toBe(true)
    expect(resultText(record)).toMatch(/\[aborted\]$/)
  })

  it('what a command wrote before it ended reaches dsh before its end does (the bash tool stops reading a quiet run some time after its end)', async () => {
    // The host relayed a shell's end as soon as it reaped it, and the last 64 KB of its output
    // (what the pipe still held) after. Under load, a host held up for longer than the bash tool's
    // drain wait cut the output short: 192 KB of `seq 1 40000`'s 229 KB came back, as a success.
    const host = await ShellHost.start([...bwrapRunner().argv('workspace-write', root)], { shell: 'bash', cwd: root, env: process.env, clearTmp: false })
    try {
      for (let i = 0; i < 10; i++) {
        const run = host.run('seq 1 40000', { cwd: '/', env: { PATH: process.env.PATH } })
        let exited = false
        const seen = { bytes: 0, afterExit: 0 }
        run.on('exit', () => { exited = true })
        run.stdout.on('data', (chunk: Buffer) => {
          seen.bytes += chunk.length
          if (exited) seen.afterExit += chunk.length
        })
        run.stderr.resume()
        await new Promise(resolve => run.once('close', resolve))
        expect(seen).toEqual({ bytes: 228894, afterExit: 0 })
      }
      // A job outside the command's group that keeps writing to its output does not hold its end
      // back (it is killed once no command is left).
      const endless = host.run('setsid yes & exit 4', { cwd: '/', env: { PATH: process.env.PATH } })
      endless.stdout.resume()
      endless.stderr.resume()
      // Both heard from the start: the end and the close can come in one read of the host's output.
      const exited = new Promise(resolve => endless.once('exit', resolve))
      const closed = new Promise(resolve => endless.once('close', resolve))
      expect(await exited).toBe(4)
      await closed
    } finally {
      host.close()
    }
  })

  it('runs parallel commands apart: each gets its own output and exit code', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    const results = await Promise.all([1, 2, 3, 4].map(n => b.call(`for i in $(seq 1 200); do echo "${n}-$i"; done; exit ${n}`)))
    results.forEach((record, index) => {
      const n = index + 1
      expect(viaHost(record)).toBe(true)
      expect(resultText(record)).toBe(`${Array.from({ length: 200 }, (_, i) => `${n}-${i + 1}`).join('\n')}\n[exit code: ${n}]`)
    })
  })

  it('a command that kills its host is reported killed, and the next command gets a new host', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    // kill(-1) inside the sandbox reaches every process but the caller and the sandbox's init:
    // the host dies, and with it the sandbox.
    const record = await b.call('kill -9 -1; sleep 5; echo survived')
    expect(resultText(record)).toMatch(/\[killed by SIGKILL\]$/)
    expect(resultText(record)).not.toContain('survived')
    const next = await b.call('echo after')
    expect(resultText(next)).toBe('after\n')
    await b.settled()
    expect(b.hosts()).toMatchObject([{ running: true, starts: 2 }])
    expect(viaHost(await b.call('echo again'))).toBe(true)
  })

  // The runner chain is probed once per process and chain: bwrap named by a path is a chain of
  // its own, not probed yet (each test names it by another path).
  const bwrapDir = () => dirname(execFileSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).trim())

  it('SB-3: the first confined command of a process waits for a shell host instead of the probe, and runs through it', async () => {
    const bwrapCommand = join(bwrapDir(), 'bwrap')
    const b = await box({ mode: 'workspace-write', bwrapCommand })
    const first = await b.call('echo first; echo "$0"')
    expect(viaHost(first)).toBe(true)
    expect(resultText(first)).toBe('first\nbash\n')
    expect(b.hosts()).toMatchObject([{ running: true, starts: 1 }])
    // The runner it proved serves the other modes too (read-only starts a host of its own later).
    const ro = await (await box({ mode: 'read-only', bwrapCommand })).call(`echo x > ${join(root, 'ro-first.txt')}`)
    expect(resultText(ro)).toContain('[sandbox: file access denied under read-only mode]')
  })

  it('SB-3: a first command whose host cannot start (no perl) falls back to the probe and a sandbox of its own', async () => {
    const b = await box({ mode: 'workspace-write', bwrapCommand: `${bwrapDir()}/./bwrap`, perlCommand: join(root, 'no-such-perl') })
    const record = await b.call('echo fine')
    expect(resultText(record)).toBe('fine\n')
    expect(viaHost(record)).toBe(false)
    expect(b.hosts()).toMatchObject([{ running: false, problem: expect.stringMatching(/ended before it was ready/) }])
  })

  it('a spilled output is whole on disk when the hosted call returns', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    for (let i = 0; i < 5; i++) {
      const record = await b.call('head -c 200000 /dev/zero | tr "\\0" a')
      expect(viaHost(record)).toBe(true)
      const spilled = (record.meta as { spilled?: string[] }).spilled
      expect(spilled).toHaveLength(1)
      expect(readFileSync(spilled![0]!, 'utf8')).toBe('a'.repeat(200000))
    }
  })

  it('a host outside a pid namespace of its own refuses to start (its clean-up signals every process it can see)', async () => {
    await expect(ShellHost.start([], { shell: 'bash', cwd: root, env: { PATH: process.env.PATH }, clearTmp: false }))
      .rejects.toThrow(/ended before it was ready \(exit 3\): dsh shell host: not in a pid namespace of its own/)
  })

  it('without perl, commands keep a sandbox each and the reason is kept', async () => {
    const b = await box({ mode: 'workspace-write', perlCommand: join(root, 'no-such-perl') })
    for (let i = 0; i < 3; i++) {
      const record = await b.call('echo fine')
      await b.settled()
      expect(resultText(record)).toBe('fine\n')
      expect(viaHost(record)).toBe(false)
    }
    expect(b.hosts()).toMatchObject([{ running: false, starts: 3, problem: expect.stringMatching(/ended before it was ready/) }])
  })

  it('/tmp is emptied only when it is the sandbox\'s own: never when the writable root covers the real /tmp', () => {
    const { privateTmp } = bwrapRunner().hostable!
    expect(privateTmp('workspace-write', '/home/u/project')).toBe(true)
    expect(privateTmp('workspace-write', '/tmp/project')).toBe(true)
    expect(privateTmp('workspace-write', '/tmpfoo')).toBe(true)
    expect(privateTmp('workspace-write', '/tmp')).toBe(false)
    expect(privateTmp('workspace-write', '/')).toBe(false)
    expect(privateTmp('read-only', '/home/u/project')).toBe(false)
  })

  it('a writable root that covers /tmp: /tmp is the real one, and the host leaves it alone', async () => {
    // The session's folder is the sandbox's writable root.
    const b = await hosted({ mode: 'workspace-write' }, '/tmp')
    const marker = join('/tmp', `dsh-host-real-tmp-${process.pid}`)
    try {
      const record = await b.call(`echo real > ${marker}`)
      expect(viaHost(record)).toBe(true)
      expect(resultText(await b.call('true'))).toBe('(no output)')
      expect(readFileSync(marker, 'utf8')).toBe('real\n')
    } finally {
      rmSync(marker, { force: true })
    }
  })

  it('keeps at most 8 hosts: a ninth root ends the least recently used idle one', async () => {
    const b = await box({ mode: 'workspace-write' })
    const folders = Array.from({ length: 9 }, (_, i) => { const folder = join(root, `many-${i}`); mkdirSync(folder, { recursive: true }); return folder })
    for (const folder of folders.slice(0, 8)) {
      await b.call('true', { cwd: folder })
      await b.settled()
    }
    expect(b.hosts().filter(host => host.running)).toHaveLength(8)
    // The first root used again: the second is now the least recently used.
    expect(viaHost(await b.call('true', { cwd: folders[0] }))).toBe(true)
    await b.call('true', { cwd: folders[8] })
    await b.settled()
    const running = b.hosts().filter(host => host.running).map(host => host.key)
    expect(running).toHaveLength(8)
    expect(running.some(key => key.includes(`${folders[1]} `))).toBe(false)
    expect(running.some(key => key.includes(`${folders[0]} `))).toBe(true)
    expect(running.some(key => key.includes(`${folders[8]} `))).toBe(true)
    // Ended to make room is not a failed start: nine roots in turn, four rounds, and every
    // root still gets a host.
    for (let round = 0; round < 4; round++) {
      for (const folder of folders) {
        await b.call('true', { cwd: folder })
        await b.settled()
        expect(viaHost(await b.call('true', { cwd: folder })), `round ${round}, ${folder}`).toBe(true)
      }
    }
    await b.unload()
  })

  it('a bad shellHost or perlCommand setting is refused with the key named', async () => {
    await expect(box({ shellHost: 'no' as unknown as boolean })).rejects.toThrow(/config\.shellHost must be true or false, got "no"/)
    await expect(box({ perlCommand: '' })).rejects.toThrow(/config\.perlCommand must be a command name or path/)
  })

  it('a host that writes something other than frames is ended, and commands go on in a sandbox each', async () => {
    const fake = join(root, 'fake-perl')
    writeFileSync(fake, '#!/bin/sh\nprintf "0 r 0\\nthis is no frame\\n"\nexec sleep 300\n', { mode: 0o755 })
    const b = await box({ mode: 'workspace-write', perlCommand: fake })
    await b.call('true')
    await b.settled()
    await expect.poll(() => b.hosts()[0]?.running, { timeout: 10_000 }).toBe(false)
    const record = await b.call('echo still fine')
    expect(resultText(record)).toBe('still fine\n')
  })

  it('shellHost: false keeps a sandbox per command', async () => {
    const b = await box({ mode: 'workspace-write', shellHost: false })
    await b.call('true')
    await b.settled()
    expect(viaHost(await b.call('true'))).toBe(false)
    expect(b.hosts()).toEqual([])
  })

  it('unloading the sandbox ends its hosts', async () => {
    const b = await hosted({ mode: 'workspace-write' })
    const pid = b.hosts()[0]!.pid!
    expect(() => process.kill(pid, 0)).not.toThrow()
    await b.unload()
    await expect.poll(() => { try { process.kill(pid, 0); return 'alive' } catch { return 'gone' } }, { timeout: 10_000 }).toBe('gone')
  })
})
