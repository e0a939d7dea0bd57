import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bwrapRunner, probeRunner } from '../sandbox/runner.js'
import { hasSetpriv } from '../../test-support/processes.js'

const child = join(import.meta.dirname, '../../test-support/pty-sandbox-child.ts')
const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the sandboxed terminal tests: ${bwrapProblem} (install the Debian package bubblewrap and allow unprivileged user namespaces)`)
const asRoot = process.getuid?.() === 0
const setpriv = hasSetpriv()
if (asRoot && !setpriv) console.warn('skipping the unprivileged-uid terminal test: it needs setpriv (util-linux) to drop to uid 65534')

let root: string
let outside: string
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-pty-root-'))
  // Outside the writable root and the private /tmp, writable to everyone without the sandbox.
  outside = mkdtempSync(join('/var/tmp', 'dsh-pty-outside-'))
  for (const dir of [root, outside]) chmodSync(dir, 0o777)
})
// The child runs this checkout's sources as uid 65534: a folder above it that others may not
// enter (a checkout in a private temp folder) is opened for the test and closed again after.
const opened: { path: string; mode: number }[] = []
function openCheckoutForOthers(): void {
  for (let dir = join(import.meta.dirname, '../..'); dir !== dirname(dir); dir = dirname(dir)) {
    const mode = statSync(dir).mode & 0o7777
    if ((mode & 0o001) === 0) {
      chmodSync(dir, mode | 0o001)
      opened.push({ path: dir, mode })
    }
  }
}
afterAll(() => {
  for (const { path, mode } of opened.splice(0)) chmodSync(path, mode)
  rmSync(root, { recursive: true, force: true })
  rmSync(outside, { recursive: true, force: true })
})

function run(prefix: readonly string[]): { uid: number; open: { text: string }; inside: { text: string }; escape: { text: string }; who: { text: string }; close: { text: string } } {
  const argv = [...prefix, process.execPath, '--import', 'tsx', child, root, outside]
  const result = spawnSync(argv[0]!, argv.slice(1), { cwd: join(import.meta.dirname, '../..'), encoding: 'utf8', timeout: 60_000, env: { ...process.env, HOME: root } })
  if (result.status !== 0) throw new Error(`the child failed (${result.status}): ${result.stderr}`)
  return JSON.parse(result.stdout.trim().split('\n').pop()!)
}

function expectConfined(outcome: ReturnType<typeof run>, uid: number): void {
  expect(outcome.open.text).toMatch(/^started terminal session pty-1 \[type: shell\]\ndsh> $/)
  expect(outcome.inside.text).toContain('WROTE-IN')
  expect(existsSync(join(root, 'in.txt'))).toBe(true)
  expect(outcome.escape.text).toMatch(/Read-only file system/)
  expect(outcome.escape.text).toContain('DENIED-OUT')
  expect(existsSync(join(outside, 'out.txt'))).toBe(false)
  expect(outcome.who.text).toContain(`\n${uid}\n`)
  expect(outcome.close.text).toBe('closed terminal session pty-1')
  rmSync(join(root, 'in.txt'), { force: true })
}

describe.skipIf(bwrapProblem !== undefined)('terminals under real bubblewrap (workspace-write)', () => {
  it(`writes inside the workspace, not outside it (uid ${process.getuid?.()})`, () => {
    expectConfined(run([]), process.getuid!())
  })

  it.skipIf(!asRoot || !setpriv)('the same for an unprivileged uid (bwrap drops no capabilities it does not have)', () => {
    openCheckoutForOthers()
    expectConfined(run(['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups']), 65534)
  })
})
