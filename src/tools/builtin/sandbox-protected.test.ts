/**
 * The protected paths and the kernel's settings under real bubblewrap (security #42.1, #42.3,
 * #42.4), through the bash tool (a sandbox per command and the shell host) and, for an ordinary
 * user, the same argv run under `setpriv` to an unprivileged uid. CI runs as root.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { resultText } from '../../../test-support/builtin-tools.js'
import { bwrapRunner, probeRunner } from '../../sandbox/runner.js'
import { SandboxPlugin, type SandboxConfig } from '../../sandbox/service.js'
import { ToolsPlugin } from '../index.js'
import { BuiltinToolsPlugin } from './index.js'
import { hasSetpriv } from '../../../test-support/processes.js'

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the protected-path sandbox tests: ${bwrapProblem} (install the Debian package bubblewrap)`)
const asRoot = process.getuid?.() === 0
const setpriv = hasSetpriv()
const git = spawnSync('git', ['--version']).status === 0

let root: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-protected-bwrap-'))
  chmodSync(root, 0o777)
})
afterEach(() => { rmSync(root, { recursive: true, force: true }) })

async function agent(config: SandboxConfig = {}) {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  // A home of the test's own: the deny-read masks of the real one are not this test's business.
  await ctx.plugin(SandboxPlugin, { workspaceRoot: root, mode: 'workspace-write', home: root, dshHome: join(root, 'no-dsh-home'), ...config })
  await ctx.plugin(BuiltinToolsPlugin)
  let n = 0
  const bash = async (command: string) => resultText(await ctx.tools.execute(
    { callId: `c${++n}`, name: 'bash', arguments: JSON.stringify({ command, description: 'test' }) },
    { cwd: root, signal: new AbortController().signal },
  ))
  return { ctx, bash }
}

/** A repository with agent configuration at `at` (the top of the workspace unless said). */
function gitRepo(at = root): void {
  execFileSync('git', ['init', '-q', at])
  execFileSync('git', ['-C', at, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'init'])
  mkdirSync(join(at, '.claude'))
  writeFileSync(join(at, '.claude', 'settings.json'), '{}\n')
  writeFileSync(join(at, '.mcp.json'), '{}\n')
}

/** The planted things a hostile command tries; none may land. */
const PLANT = [
  'echo "exec evil" > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit',
  'git config core.fsmonitor "touch pwned"',
  'echo "*.c filter=evil" > .git/info/attributes',
  'echo \'{"hooks":{"PreToolUse":[]}}\' > .claude/settings.json',
  'echo \'{"mcpServers":{}}\' > .mcp.json',
  // Swapping the repository or the folder away for a planted one.
  'mv .git .git-away', 'mv .claude .claude-away', 'rm -f .mcp.json',
].join('; ')

function assertUntouched(at = root): void {
  expect(existsSync(join(at, '.git', 'hooks', 'pre-commit'))).toBe(false)
  expect(readFileSync(join(at, '.git', 'config'), 'utf8')).not.toContain('fsmonitor')
  expect(existsSync(join(at, '.git', 'info', 'attributes'))).toBe(false)
  expect(readFileSync(join(at, '.claude', 'settings.json'), 'utf8')).toBe('{}\n')
  expect(readFileSync(join(at, '.mcp.json'), 'utf8')).toBe('{}\n')
  expect(existsSync(join(at, '.git-away'))).toBe(false)
  expect(existsSync(join(at, '.claude-away'))).toBe(false)
}

describe.skipIf(bwrapProblem !== undefined)('protected paths under real bubblewrap', () => {
  it.skipIf(!git)('security #42.4 #42.3: git config, hooks and info and the agent configuration stay as they were; ordinary git work goes on', async () => {
    gitRepo()
    const { bash } = await agent()
    {
      // Twice: the first runs in a sandbox of its own, the second through the shell host.
      for (let i = 0; i < 2; i++) {
        const text = await bash(PLANT)
        expect(text).toContain('Read-only file system')
        assertUntouched()
      }
      const work = await bash('echo hi > a.txt && git add a.txt && git -c user.email=t@t -c user.name=t commit -q -m a && git branch feature && git checkout -q -b topic && git log --oneline | wc -l')
      expect(work.trim()).toBe('2')
      expect(execFileSync('git', ['-C', root, 'branch', '--list'], { encoding: 'utf8' })).toContain('feature')
    }
  })

  it.skipIf(!git)('security #42.4: a repository and agent configuration in folders below the top are protected as at the top; git work in them goes on', async () => {
    gitRepo()
    const nested = join(root, 'libs', 'pkg')
    mkdirSync(join(root, 'libs'))
    gitRepo(nested)
    const { bash } = await agent()
    // Twice: a sandbox of its own, then the shell host.
    for (let i = 0; i < 2; i++) {
      const text = await bash(`cd libs/pkg && { ${PLANT}; }`)
      expect(text).toContain('Read-only file system')
      assertUntouched(nested)
      // Swapping the repository's folder, or a folder above it, for a planted one.
      const swap = await bash('mv libs/pkg libs/pkg-away; mv libs libs-away; mkdir -p libs/pkg/.git/hooks 2>/dev/null; echo evil > libs/pkg/.git/hooks/pre-commit')
      expect(swap).toContain('Device or resource busy')
      expect(existsSync(join(root, 'libs-away'))).toBe(false)
      expect(existsSync(join(root, 'libs', 'pkg-away'))).toBe(false)
      assertUntouched(nested)
    }
    assertUntouched()
    const work = await bash('cd libs/pkg && echo hi > a.txt && git add a.txt && git -c user.email=t@t -c user.name=t commit -q -m a && git branch feature && git checkout -q -b topic && git log --oneline | wc -l')
    expect(work.trim()).toBe('2')
    expect(execFileSync('git', ['-C', nested, 'branch', '--list'], { encoding: 'utf8' })).toContain('feature')
  })

  it.skipIf(!git)('security #42.4: a nested repository made by one command is protected from the next', async () => {
    const { bash } = await agent()
    await bash('true')
    await bash('mkdir -p tools/gen && git init -q tools/gen && mkdir -p sub/.claude && echo {} > sub/.claude/settings.json')
    const text = await bash('echo evil > tools/gen/.git/hooks/pre-commit; git -C tools/gen config core.fsmonitor "touch pwned"; echo planted > sub/.claude/settings.json')
    expect(text).toContain('Read-only file system')
    expect(existsSync(join(root, 'tools', 'gen', '.git', 'hooks', 'pre-commit'))).toBe(false)
    expect(readFileSync(join(root, 'tools', 'gen', '.git', 'config'), 'utf8')).not.toContain('fsmonitor')
    expect(readFileSync(join(root, 'sub', '.claude', 'settings.json'), 'utf8')).toBe('{}\n')
  })

  it.skipIf(!git)('security #42.4: a .git made by one command is protected from the next (the shell host of the old set is not used)', async () => {
    const { bash } = await agent()
    await bash('true')
    await bash('true')
    await bash('git init -q .')
    const text = await bash('echo evil > .git/hooks/pre-commit')
    expect(text).toContain('Read-only file system')
    expect(existsSync(join(root, '.git', 'hooks', 'pre-commit'))).toBe(false)
  })

  it.skipIf(!git)('security #42.4: a .git file (a separate git folder) cannot be pointed at another repository; git work goes on', async () => {
    execFileSync('git', ['init', '-q', `--separate-git-dir=${join(root, 'repo.git')}`, root])
    execFileSync('git', ['-C', root, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'init'])
    const before = readFileSync(join(root, '.git'), 'utf8')
    const { bash } = await agent()
    for (let i = 0; i < 2; i++) {
      // A planted repository of the command's own, and the .git file pointed at it.
      const text = await bash('git init -q --bare planted && git --git-dir=planted config core.fsmonitor "touch pwned"; echo "gitdir: $PWD/planted" > .git; mv .git .git-away')
      expect(text).toMatch(/Read-only file system/)
      expect(readFileSync(join(root, '.git'), 'utf8')).toBe(before)
      expect(existsSync(join(root, '.git-away'))).toBe(false)
    }
    const work = await bash('rm -rf planted && echo hi > a.txt && git add a.txt && git -c user.email=t@t -c user.name=t commit -q -m a && git log --oneline | wc -l')
    expect(work.trim()).toBe('2')
  })

  it('security #42.1: the kernel settings are read-only in every confined mode (root writes them by ownership, not capability)', async () => {
    for (const mode of ['read-only', 'workspace-write'] as const) {
      const { bash } = await agent({ mode })
      // Writes back the value it reads: harmless if the sandbox ever let it through.
      const text = await bash('v=$(cat /proc/sys/vm/swappiness); echo "$v" > /proc/sys/vm/swappiness && echo WROTE; echo "$v" > /proc/sys/kernel/hostname.none 2>/dev/null; cat /proc/sys/kernel/hostname > /proc/sys/kernel/hostname && echo WROTE')
      expect(text, mode).not.toContain('WROTE')
      expect(text, mode).toMatch(/Read-only file system|Permission denied/)
    }
  })

  it('security #42.1: dsh home inside the workspace is read-only to commands', async () => {
    const home = join(root, 'dsh-home')
    mkdirSync(home)
    writeFileSync(join(home, 'trusted-projects.json'), '{"projects":[]}\n')
    const { bash } = await agent({ protectedPaths: [home] })
    const text = await bash(`echo '{"projects":["/"]}' > ${join(home, 'trusted-projects.json')}`)
    expect(text).toContain('Read-only file system')
    expect(readFileSync(join(home, 'trusted-projects.json'), 'utf8')).toBe('{"projects":[]}\n')
  })

  it.skipIf(!asRoot || !setpriv || !git)('the same argv holds for an ordinary user (setpriv to uid 65534)', async () => {
    gitRepo()
    execFileSync('chown', ['-R', '65534:65534', root])
    const { ctx } = await agent()
    const runner = (await ctx.sandbox.runner()).runner!
    const prefix = ctx.sandbox.prefix!(runner, 'workspace-write', root)
    const run = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...prefix, 'bash', '-c',
      `cd ${root} && { ${PLANT}; } ; v=$(cat /proc/sys/vm/swappiness); echo "$v" > /proc/sys/vm/swappiness && echo WROTE; echo ok > ordinary.txt`], { encoding: 'utf8' })
    expect(run.stderr).not.toMatch(/^bwrap: /m)
    expect(run.stdout).not.toContain('WROTE')
    assertUntouched()
    expect(readFileSync(join(root, 'ordinary.txt'), 'utf8')).toBe('ok\n')
  })
})
