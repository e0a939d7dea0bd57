import { existsSync, readFileSync, writeFileSync, chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { allGoneWithin, processRunning } from '../../test-support/processes.js'
import { resultText } from '../../test-support/builtin-tools.js'
import type { Session } from '../session/api.js'
import type { ToolResultRecord } from '../tools/api.js'
import { ToolsPlugin } from '../tools/index.js'
import { BuiltinToolsPlugin } from '../tools/builtin/index.js'
import { bwrapRunner, probeRunner } from '../sandbox/runner.js'
import { SandboxPlugin, type SandboxConfig } from '../sandbox/service.js'
import { PersistentBashPlugin, PersistentPwshPlugin, PwshToolPlugin, onPath, resetLine } from './index.js'


interface Harness {
  ctx: Context
  cwd: string
  fork: { dispose(): unknown }
  call(args: Record<string, unknown>, options?: { signal?: AbortSignal; name?: string }): Promise<ToolResultRecord>
}

let calls = 0
async function harness(config: Record<string, unknown> = {}, sandbox?: SandboxConfig, cwd?: string): Promise<Harness> {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  if (sandbox !== undefined) await ctx.plugin(SandboxPlugin, sandbox)
  await ctx.plugin(BuiltinToolsPlugin, { bash: false })
  const fork = ctx.plugin(PersistentBashPlugin, { killGraceMs: 300, ...config })
  await fork
  const dir = cwd ?? await mkdtemp(join(tmpdir(), 'dsh-shell-test-'))
  return {
    ctx, cwd: dir, fork,
    call: (args, options = {}) => ctx.tools.execute(
      { callId: `c${++calls}`, name: options.name ?? 'bash', arguments: JSON.stringify({ description: 'test', ...args }) },
      { cwd: dir, signal: options.signal ?? new AbortController().signal },
    ),
  }
}

let h: Harness
beforeEach(async () => { h = await harness() })
afterEach(async () => {
  h.fork.dispose()
  await rm(h.cwd, { recursive: true, force: true })
})

const pidOf = async () => Number(resultText(await h.call({ command: 'echo $$' })))

/** Whether `pid` is gone within 5 s (a killed process may need a moment to be reaped). */
const goneSoon = (pid: number): Promise<boolean> => allGoneWithin([pid], 5000)

describe('persistent bash', () => {
  it('keeps the current directory and exported variables across calls (the recorded persistent-tools calls)', async () => {
    const first = await h.call({ command: 'cd /tmp && export DSH_EXAMPLE_COUNT=1 && printf "COUNT=%s CWD=%s\\n" "$DSH_EXAMPLE_COUNT" "$PWD"' })
    expect(resultText(first)).toBe('COUNT=1 CWD=/tmp')
    expect(first.isError).toBe(false)
    const second = await h.call({ command: 'DSH_EXAMPLE_COUNT=$((DSH_EXAMPLE_COUNT + 1)); printf "COUNT=%s CWD=%s\\n" "$DSH_EXAMPLE_COUNT" "$PWD"' })
    expect(resultText(second)).toBe('COUNT=2 CWD=/tmp')
    // Functions too, and the same process answers.
    const pid = await pidOf()
    await h.call({ command: 'greet() { echo "hi $1"; }' })
    expect(resultText(await h.call({ command: 'greet there' }))).toBe('hi there')
    expect(await pidOf()).toBe(pid)
  })

  it('starts in the workspace; output without a final newline, stderr and a non-zero status are reported as bash reports them', async () => {
    expect(resultText(await h.call({ command: 'pwd' }))).toBe(h.cwd)
    expect(resultText(await h.call({ command: 'printf no-newline' }))).toBe('no-newline')
    expect(resultText(await h.call({ command: 'printf out; echo err >&2; false' }))).toBe('out\n[stderr]\nerr\n[exit code: 1]')
    expect(resultText(await h.call({ command: 'true' }))).toBe('(no output)')
    // A quote, a backslash, a trailing comment and UTF-8 reach the shell as written.
    expect(resultText(await h.call({ command: `echo 'it''s' "a\\\\b" ünï # comment` }))).toBe('its a\\b ünï')
  })

  it('exit N ends the shell with the recorded wording; the next call starts fresh in the workspace', async () => {
    await h.call({ command: 'cd / && export KEPT=1' })
    const pid = await pidOf()
    const exit = await h.call({ command: 'exit 9' })
    expect(resultText(exit)).toBe(`exit\n[shell exited: code 9]\n${resetLine('bash')}`)
    expect(exit.isError).toBe(false)
    expect(await goneSoon(pid)).toBe(true)
    expect(resultText(await h.call({ command: 'echo "${KEPT:-unset} $PWD"' }))).toBe(`unset ${h.cwd}`)
    expect(await pidOf()).not.toBe(pid)
  })

  it("a subshell's exit is quiet and keeps the shell; a bare exit keeps the last status", async () => {
    const pid = await pidOf()
    expect(resultText(await h.call({ command: '(exit 3); echo "status $?"; echo "$(exit 4; echo no)" $?' }))).toBe('status 3\n 4')
    expect(await pidOf()).toBe(pid)
    const bare = await h.call({ command: 'false; exit' })
    expect(resultText(bare)).toBe(`exit\n[shell exited: code 1]\n${resetLine('bash')}`)
  })

  it('a command that never ends times out; its group is killed, the shell reset, and the next call works', async () => {
    const pid = await pidOf()
    const record = await h.call({ command: 'echo started; sleep 1000', timeoutMs: 300 })
    expect(record.isError).toBe(true)
    expect(resultText(record)).toBe(`started\n[timed out after 300 ms]\n${resetLine('bash')}`)
    expect(await goneSoon(pid)).toBe(true)
    expect(resultText(await h.call({ command: 'echo again' }))).toBe('again')
  })

  it('a cancel mid-command kills it and resets the shell', async () => {
    const controller = new AbortController()
    const pending = h.call({ command: 'touch started; sleep 1000' }, { signal: controller.signal })
    // Wait (with a deadline) for the command to have started: it leaves a file.
    const until = Date.now() + 10_000
    while (!existsSync(join(h.cwd, 'started')) && Date.now() < until) await new Promise(resolve => setImmediate(resolve))
    controller.abort()
    const record = await pending
    expect(record.isError).toBe(true)
    expect(resultText(record)).toContain('[aborted]')
    expect(resultText(await h.call({ command: 'echo after' }))).toBe('after')
  })

  it('a command that reads stdin gets end of file at once, and a background process does not hold the call', async () => {
    expect(resultText(await h.call({ command: 'cat; read -r line; echo "read=$?"', timeoutMs: 10_000 }))).toBe('read=1')
    const record = await h.call({ command: 'sleep 1000 & echo bg', timeoutMs: 10_000 })
    expect(resultText(record)).toBe('bg')
    expect(record.isError).toBe(false)
  })

  it('output over the limit is cut to head and tail, the whole of it spilled to a file', async () => {
    h.fork.dispose()
    h = await harness({ maxOutputBytes: 1000, headBytes: 100, tailBytes: 100 }, undefined, h.cwd)
    const record = await h.call({ command: 'seq 1 5000' })
    const text = resultText(record)
    expect(text.startsWith('1\n2\n3\n')).toBe(true)
    expect(text).toMatch(/\[\.\.\. \d+ bytes of stdout omitted \(\d+ in total\); the full stdout is saved to (\S+) \.\.\.\]/)
    const path = /saved to (\S+) \.\.\./.exec(text)![1]!
    const full = readFileSync(path, 'utf8')
    expect(full.split('\n').filter(Boolean)).toHaveLength(5000)
    expect(full).not.toContain('__DSH_END_')
    expect((record.meta as { spilled: string[] }).spilled).toEqual([path])
  })

  it('the shell dies when its session is closed and when the plugin is unloaded (no orphan)', async () => {
    const pid = await pidOf()
    h.ctx.emit('session/closed', { id: '' } as Session)
    expect(await goneSoon(pid)).toBe(true)
    const next = await pidOf()
    const background = Number(resultText(await h.call({ command: 'sleep 1000 >/dev/null 2>&1 & echo $!' })))
    expect(processRunning(background)).toBe(true)
    h.fork.dispose()
    expect(await goneSoon(next)).toBe(true)
    expect(await goneSoon(background)).toBe(true)
  })

  it('a workdir outside the shell runs the command there (and stays, as a cd would); a missing one is refused', async () => {
    expect(resultText(await h.call({ command: 'pwd', workdir: '/' }))).toBe('/')
    expect(resultText(await h.call({ command: 'pwd' }))).toBe('/')
    const missing = await h.call({ command: 'pwd', workdir: join(h.cwd, 'nope') })
    expect(missing.isError).toBe(true)
  })

  it('the schema is bash\'s and the description says state persists', () => {
    const tool = h.ctx.tools.list().find(t => t.name === 'bash')!
    expect(tool.description).toMatch(/persist/)
    expect(Object.keys((tool.parameters as { properties: object }).properties)).toEqual(['command', 'description', 'timeoutMs', 'workdir'])
  })
})

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the persistent bash bubblewrap tests: ${bwrapProblem} (install the Debian package bubblewrap and allow unprivileged user namespaces)`)

describe.skipIf(bwrapProblem !== undefined)('persistent bash under real bubblewrap', () => {
  it('workspace-write: the workspace is writable, a folder outside it is not, in the same persistent shell', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-shell-bwrap-'))
    const outside = mkdtempSync(join(homedir(), '.dsh-shell-outside-'))
    const s = await harness({}, { workspaceRoot: root, mode: 'workspace-write' }, root)
    try {
      const inside = await s.call({ command: 'echo in > in.txt && export SEEN=1 && cat in.txt' })
      expect(resultText(inside)).toBe('in')
      const escape = await s.call({ command: `echo out > ${join(outside, 'out.txt')}` })
      expect(resultText(escape)).toContain('[sandbox: file access denied under workspace-write mode]')
      expect(existsSync(join(outside, 'out.txt'))).toBe(false)
      // Still the same shell: the denial did not end it.
      expect(resultText(await s.call({ command: 'echo $SEEN' }))).toBe('1')
      // As root, the capabilities are dropped inside: a remount cannot lift the fence.
      const remount = await s.call({ command: `mount -o remount,rw / 2>&1; echo out > ${join(outside, 'out2.txt')}` })
      expect(resultText(remount)).toContain('[sandbox: file access denied under workspace-write mode]')
      expect(existsSync(join(outside, 'out2.txt'))).toBe(false)
    } finally {
      s.fork.dispose()
      rmSync(root, { recursive: true, force: true })
      rmSync(outside, { recursive: true, force: true })
    }
  })
})

const pwsh = onPath('pwsh')
if (pwsh === undefined) console.warn('skipping the real pwsh tests: no pwsh on PATH (install PowerShell from Microsoft\'s packages, https://learn.microsoft.com/powershell/scripting/install/installing-powershell-on-linux)')

describe('pwsh plumbing (a stand-in pwsh on PATH)', () => {
  let dir: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-fake-pwsh-'))
    // Speaks the persistent protocol: decodes the command and the token, answers with the markers.
    writeFileSync(join(dir, 'pwsh'), `#!/usr/bin/env python3
import sys, re, base64
args = sys.argv[1:]
if '-c' in args:
    print('one-shot:' + args[args.index('-c') + 1]); sys.exit(0)
print('args:' + ' '.join(args), file=sys.stderr, flush=True)
for line in sys.stdin:
    blobs = re.findall(r"FromBase64String\\('([^']*)'\\)", line)
    token = re.search(r"__DSH_END_([0-9a-f]+)_", line).group(1)
    command = base64.b64decode(blobs[-1]).decode()
    if command.startswith('exit '):
        sys.exit(int(command[5:]))
    sys.stdout.write('ran:' + command + '\\n__DSH_END_' + token + '_0__\\n'); sys.stdout.flush()
    sys.stderr.write('__DSH_END_' + token + '__\\n'); sys.stderr.flush()
`)
    chmodSync(join(dir, 'pwsh'), 0o755)
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('is offered only where pwsh is on PATH; the one-shot tool runs pwsh -c with the recorded schema', async () => {
    const ctx = new Context()
    await ctx.plugin(ToolsPlugin)
    const none = ctx.plugin(PwshToolPlugin, { path: join(dir, 'empty') })
    await none
    expect(ctx.tools.list().some(t => t.name === 'pwsh')).toBe(false)
    none.dispose()
    await ctx.plugin(PwshToolPlugin, { path: dir })
    const tool = ctx.tools.list().find(t => t.name === 'pwsh')!
    expect(Object.keys((tool.parameters as { properties: object }).properties)).toEqual(['command', 'description', 'timeoutMs', 'workdir'])
    const record = await ctx.tools.execute({ callId: 'p', name: 'pwsh', arguments: JSON.stringify({ command: "[Console]::Out.Write('PWSH_OK')", description: 'd' }) }, { cwd: dir, signal: new AbortController().signal })
    expect(resultText(record)).toBe("one-shot:[Console]::Out.Write('PWSH_OK')\n")
  })

  it('the persistent pwsh shares the completion protocol: one process answers every call, exit resets it', async () => {
    const ctx = new Context()
    await ctx.plugin(ToolsPlugin)
    await ctx.plugin(PersistentPwshPlugin, { path: dir })
    const call = (command: string) => ctx.tools.execute({ callId: `q${++calls}`, name: 'pwsh', arguments: JSON.stringify({ command, description: 'd' }) }, { cwd: dir, signal: new AbortController().signal })
    const first = await call('Get-Location')
    expect(resultText(first)).toBe('ran:Get-Location\n[stderr]\nargs:-NoLogo -NoProfile -NonInteractive -Command -')
    expect(resultText(await call('$x = 1'))).toBe('ran:$x = 1')
    expect(resultText(await call('exit 4'))).toBe(`[shell exited: code 4]\n${resetLine('pwsh')}`)
  })
})

describe.skipIf(pwsh === undefined)('real pwsh', () => {
  it('persists variables and location between calls', async () => {
    const ctx = new Context()
    await ctx.plugin(ToolsPlugin)
    await ctx.plugin(PersistentPwshPlugin)
    const call = (command: string) => ctx.tools.execute({ callId: `r${++calls}`, name: 'pwsh', arguments: JSON.stringify({ command, description: 'd' }) }, { cwd: tmpdir(), signal: new AbortController().signal })
    await call('$global:n = 41; Set-Location /')
    expect(resultText(await call('Write-Output ($n + 1); (Get-Location).Path'))).toBe('42\n/')
  })
})
