import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resultText } from '../../../test-support/builtin-tools.js'
import { bwrapRunner, landlockRunner, LANDLOCK_PARTIAL_NOTICE, probeRunner, type SandboxRunner } from '../../sandbox/runner.js'
import { SandboxPlugin, type SandboxConfig } from '../../sandbox/service.js'
import { ToolsPlugin } from '../index.js'
import { BuiltinToolsPlugin } from './index.js'

let root: string
let outside: string
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-bwrap-root-'))
  // Outside every writable root (workspace-write also allows the temp areas).
  outside = mkdtempSync(join(homedir(), '.dsh-bwrap-outside-'))
})
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
  rmSync(outside, { recursive: true, force: true })
})

async function bash(config: SandboxConfig, command: string) {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  await ctx.plugin(SandboxPlugin, { workspaceRoot: root, ...config })
  await ctx.plugin(BuiltinToolsPlugin)
  const record = await ctx.tools.execute({ callId: 'c', name: 'bash', arguments: JSON.stringify({ command, description: 'test' }) }, { cwd: root, signal: new AbortController().signal })
  return record
}

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the real bubblewrap tests: ${bwrapProblem} (install the Debian package bubblewrap and allow unprivileged user namespaces)`)

describe.skipIf(bwrapProblem !== undefined)('bash under real bubblewrap (SB-2, SB-4)', () => {
  it('SB-2: read-only: no write anywhere, the marker says why, the exit code stays', async () => {
    const record = await bash({ mode: 'read-only' }, `echo x > ${join(root, 'ro.txt')}`)
    const text = resultText(record)
    expect(record.isError).toBe(false)
    expect(text).toMatch(/Read-only file system/)
    // No approval service: no escalation hint (no channel could approve it).
    expect(text).toMatch(/\[sandbox: file access denied under read-only mode\]\n\[exit code: 1\]$/)
    expect(existsSync(join(root, 'ro.txt'))).toBe(false)
  })

  it('SB-2: workspace-write: the root is writable, a folder outside it is not, and /tmp is private to the command', async () => {
    const inside = await bash({ mode: 'workspace-write' }, `echo in > ${join(root, 'in.txt')} && cat ${join(root, 'in.txt')}`)
    expect(resultText(inside)).toBe('in\n')
    expect(readFileSync(join(root, 'in.txt'), 'utf8')).toBe('in\n')
    const escape = await bash({ mode: 'workspace-write' }, `echo out > ${join(outside, 'out.txt')}`)
    expect(resultText(escape)).toContain('[sandbox: file access denied under workspace-write mode]')
    expect(existsSync(join(outside, 'out.txt'))).toBe(false)
    const viaLink = await bash({ mode: 'workspace-write' }, `ln -s ${outside} ${join(root, 'door')} && echo out > ${join(root, 'door', 'out.txt')}`)
    expect(resultText(viaLink)).toContain('[sandbox: file access denied under workspace-write mode]')
    expect(existsSync(join(outside, 'out.txt'))).toBe(false)
    const marker = `dsh-bwrap-private-${process.pid}`
    await bash({ mode: 'workspace-write' }, `echo t > /tmp/${marker}`)
    expect(existsSync(join('/tmp', marker))).toBe(false)
  })

  it('SB-2: the read-only bind cannot be lifted from inside, even when dsh runs as root (no capabilities in the sandbox)', async () => {
    // As root, bwrap keeps its capabilities unless told otherwise: CAP_SYS_ADMIN would remount
    // the read-only bind writable and reach the real file system.
    for (const mode of ['read-only', 'workspace-write'] as const) {
      const target = join(outside, `lifted-${mode}.txt`)
      const record = await bash({ mode }, `mount -o remount,rw / ; mount -o remount,rw ${outside} ; echo x > ${target}; grep CapEff /proc/self/status`)
      expect(existsSync(target), `${mode}: wrote outside through a remount`).toBe(false)
      expect(resultText(record)).toMatch(/CapEff:\s+0+\n/)
    }
  })

  it('SB-2: danger-full-access runs the plain command', async () => {
    const record = await bash({ mode: 'danger-full-access' }, `echo free > ${join(outside, 'free.txt')}`)
    expect(resultText(record)).toBe('(no output)')
    expect(readFileSync(join(outside, 'free.txt'), 'utf8')).toBe('free\n')
  })
})

describe('cancel while the sandbox is prepared (T-6)', () => {
  it('T-6: a cancel that lands after the pre-check, while the runner is being prepared, never starts the command and ends the call at once', async () => {
    const controller = new AbortController()
    // The probe asks for read-only; the call's own argv is built after the probe's await, where a
    // session/cancel can land. This runner cancels right there.
    const cancelling: SandboxRunner = {
      name: 'cancelling', enforcement: 'full',
      argv: mode => { if (mode === 'workspace-write') controller.abort(); return [] },
      failed: () => false, denied: () => false,
    }
    const ctx = new Context()
    await ctx.plugin(ToolsPlugin)
    await ctx.plugin(SandboxPlugin, { workspaceRoot: root, mode: 'workspace-write', runner: cancelling, runners: [] })
    await ctx.plugin(BuiltinToolsPlugin)
    const marker = join(root, 'started-after-cancel')
    const record = await ctx.tools.execute({ callId: 'c', name: 'bash', arguments: JSON.stringify({ command: `touch ${marker}; sleep 30`, description: 'test' }) }, { cwd: root, signal: controller.signal })
    expect(record.isError).toBe(true)
    expect(existsSync(marker)).toBe(false)
  })
})

describe('runner chain (SB-3)', () => {
  it('SB-3: no working runner fails closed with SANDBOX_UNAVAILABLE and the command never runs', async () => {
    const record = await bash({ mode: 'workspace-write', bwrapCommand: join(root, 'no-such-bwrap') }, `touch ${join(root, 'ran.txt')}`)
    expect(record.isError).toBe(true)
    expect(record.error).toEqual({ name: 'BashError', code: 'SANDBOX_UNAVAILABLE' })
    expect(resultText(record)).toMatch(/^Error: sandbox unavailable: no OS sandbox runner works here \(bwrap: .*\); the command was not run$/)
    expect(existsSync(join(root, 'ran.txt'))).toBe(false)
  })

  it('SB-3: a runner failure is classified before a denial', async () => {
    // Probes fine, then fails at set-up on the real call, with a denial-looking line too.
    let calls = 0
    const flaky: SandboxRunner = {
      ...bwrapRunner(),
      name: 'bwrap',
      // Not a shell host's runner: its first argv is the probe's.
      hostable: undefined,
      argv: () => (calls++ === 0 ? [] : ['sh', '-c', 'echo "bwrap: setting up uid map: Read-only file system" >&2; exit 1', 'x']),
    }
    const record = await bash({ mode: 'workspace-write', runner: flaky }, 'true')
    expect(record.error?.code).toBe('SANDBOX_UNAVAILABLE')
    expect(resultText(record)).toContain('sandbox runner bwrap failed')
    expect(resultText(record)).not.toContain('[sandbox: file access denied')
  })

  it('SB-3: a partial-Landlock notice alone is not a runner failure: `false` stays an ordinary exit 1', async () => {
    const launcher = ['sh', '-c', `echo "${LANDLOCK_PARTIAL_NOTICE}" >&2; shift 5; exec "$@"`, 'landlock-run']
    const record = await bash({ mode: 'read-only', runner: landlockRunner(launcher, { enforcement: 'partial' }), runners: [] }, 'false')
    expect(record.isError).toBe(false)
    expect(resultText(record)).toBe(`[stderr]\n${LANDLOCK_PARTIAL_NOTICE}\n[exit code: 1]`)
    expect(record.meta).toMatchObject({ sandbox: { mode: 'read-only', runner: 'landlock', enforcement: 'partial' } })
  })

  it('SB-3: a landlock-run failure (exit 125 and its own line beside the notice) is a runner failure', () => {
    const runner = landlockRunner(['landlock-run'])
    expect(runner.failed(125, `${LANDLOCK_PARTIAL_NOTICE}\nlandlock-run: cannot restrict: Function not implemented\n`)).toBe(true)
    expect(runner.failed(125, `${LANDLOCK_PARTIAL_NOTICE}\n`)).toBe(false)
    expect(runner.failed(1, 'landlock-run: x\n')).toBe(false)
    expect(runner.denied(1, 'touch: cannot touch x: Permission denied')).toBe(true)
  })
})
