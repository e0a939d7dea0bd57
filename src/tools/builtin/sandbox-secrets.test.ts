/**
 * Secret reads (security #40.3) under real bubblewrap: a temp home with SSH, AWS and netrc
 * credentials and a dsh home, hidden from confined commands in both confined modes (a sandbox per
 * command and through the shell host; as root and, through `setpriv`, as uid 65534) and from
 * read/grep/glob. The home lies outside /tmp where it can: workspace-write gives a command a
 * /tmp of its own, which would hide a home there for a reason that is not the one under test.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { spawnSync, execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { resultText } from '../../../test-support/builtin-tools.js'
import type { ConfinedMode } from '../../sandbox/runner.js'
import { bwrapRunner, probeRunner } from '../../sandbox/runner.js'
import { SandboxPlugin, type SandboxConfig } from '../../sandbox/service.js'
import { ToolsPlugin } from '../index.js'
import { BuiltinToolsPlugin } from './index.js'
import { openedPath } from './hidden.js'
import { READ_DEFAULTS, readPage } from './read.js'
import { hasSetpriv } from '../../../test-support/processes.js'

const bwrapProblem = await probeRunner(bwrapRunner(), { root: '/', timeoutMs: 10_000 })
if (bwrapProblem !== undefined) console.warn(`skipping the secret-read sandbox tests: ${bwrapProblem} (install the Debian package bubblewrap)`)
const asRoot = process.getuid?.() === 0
const setpriv = hasSetpriv()
const CONFINED: readonly ConfinedMode[] = ['read-only', 'workspace-write']

let base: string
let home: string
let dshHome: string
let ws: string
beforeEach(() => {
  base = mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'dsh-secrets-bwrap-'))
  home = join(base, 'home')
  dshHome = join(home, '.dsh')
  ws = join(home, 'project')
  const files: Record<string, string> = {
    '.ssh/id_rsa': 'TOPSECRET ssh key\n',
    '.ssh/known_hosts': 'example.com ssh-ed25519 AAAA\n',
    '.aws/credentials': '[default]\naws_secret_access_key = TOPSECRET-aws\n',
    '.netrc': 'machine example.com password TOPSECRET-netrc\n',
    '.dsh/credentials.yaml': 'DEEPSEEK_API_KEY: TOPSECRET-dsh\n',
    '.dsh/.credentials.yaml': 'DEEPSEEK_API_KEY: TOPSECRET-dsh\n',
    '.dsh/tool-output/s1/bash-1.txt': 'spilled output\n',
    'other/.env': 'TOKEN=TOPSECRET-env\n',
    'project/readme.txt': 'TOPSECRET is a word this project uses\n',
  }
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(home, path, '..'), { recursive: true })
    writeFileSync(join(home, path), text)
  }
  symlinkSync(join(home, '.ssh', 'id_rsa'), join(ws, 'key-link'))
  // Everything readable by anyone: what hides a secret below is the sandbox, not its mode bits.
  execFileSync('chmod', ['-R', 'a+rwX', base])
})
afterEach(() => { rmSync(base, { recursive: true, force: true }) })

async function agent(config: SandboxConfig = {}) {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  await ctx.plugin(SandboxPlugin, { workspaceRoot: ws, mode: 'workspace-write', home, dshHome, ...config })
  await ctx.plugin(BuiltinToolsPlugin)
  let n = 0
  const call = async (name: string, args: unknown, cwd = ws) => ctx.tools.execute(
    { callId: `c${++n}`, name, arguments: JSON.stringify(args) },
    { cwd, signal: new AbortController().signal },
  )
  const bash = async (command: string, cwd = ws) => resultText(await call('bash', { command, description: 'test' }, cwd))
  return { ctx, call, bash }
}

/** What a command tries; prints one line per secret it could read. */
function probe(): string {
  return [
    `cat ${home}/.ssh/id_rsa`, `cat ${home}/.aws/credentials`, `cat ${home}/.netrc`,
    `cat ${dshHome}/credentials.yaml`, `cat ${dshHome}/.credentials.yaml`, `cat ${ws}/key-link`,
    `echo "ssh folder: [$(ls -A ${home}/.ssh)]"`, `cat ${dshHome}/tool-output/s1/bash-1.txt`, `cat ${ws}/readme.txt`,
  ].join('; ')
}

function assertHidden(text: string, label: string): void {
  // Only the workspace's own file carries the word: no secret's content came through.
  expect(text.split('\n').filter(line => line.includes('TOPSECRET')), label).toEqual(['TOPSECRET is a word this project uses'])
  expect(text, label).toContain('ssh folder: []')
  expect(text, label).toContain(`cat: ${home}/.ssh/id_rsa: No such file or directory`)
  expect(text, label).toMatch(new RegExp(`cat: ${home}/\\.netrc: (Permission denied|No such)`))
  // The spill folder stays readable (the tools and commands read spilled output there).
  expect(text, label).toContain('spilled output')
}

describe.skipIf(bwrapProblem !== undefined)('secret reads under real bubblewrap (security #40.3)', () => {
  it('confined commands see none of the secrets in either mode, per command and through the shell host; the workspace stays usable', async () => {
    for (const mode of CONFINED) {
      const { bash } = await agent({ mode })
      // Twice: the first runs in a sandbox of its own, the second through the shell host.
      for (let i = 0; i < 2; i++) assertHidden(await bash(probe()), `${mode} #${i}`)
      const planted = await bash(`touch ${home}/.ssh/authorized_keys; echo x > ${home}/.netrc; echo y > ${dshHome}/tool-output/x`)
      expect(planted, mode).toMatch(/Read-only file system|Permission denied/)
      expect(existsSync(join(home, '.ssh', 'authorized_keys')), mode).toBe(false)
      expect(readFileSync(join(home, '.netrc'), 'utf8'), mode).toContain('TOPSECRET-netrc')
      if (mode === 'workspace-write') {
        expect(await bash(`echo made > ${ws}/made.txt && cat ${ws}/made.txt`)).toBe('made\n')
        expect(readFileSync(join(ws, 'made.txt'), 'utf8')).toBe('made\n')
      }
    }
  })

  it('a workspace that contains the secrets (the home itself) does not show them; a secret made since the last command is hidden from the next', async () => {
    const { bash } = await agent({ workspaceRoot: home })
    for (let i = 0; i < 2; i++) assertHidden(await bash(probe(), home), `root = home #${i}`)
    expect(await bash(`echo ok > ${home}/notes.txt && cat ${home}/notes.txt`, home)).toBe('ok\n')
    const moved = await bash(`mv ${home}/.ssh ${home}/ssh-away; rm -rf ${home}/.aws; ls -A ${home}/.ssh`, home)
    expect(moved).toMatch(/busy/i)
    expect(existsSync(join(home, '.ssh', 'id_rsa'))).toBe(true)
    writeFileSync(join(home, '.pypirc'), '[pypi]\npassword = TOPSECRET-pypi\n')
    expect(await bash(`cat ${home}/.pypirc`, home)).not.toContain('TOPSECRET')
  })

  it('allowRead lifts one entry, or keeps one readable inside a hidden folder; danger-full-access lifts all', async () => {
    const { bash } = await agent({ mode: 'read-only', allowRead: ['~/.netrc', '~/.ssh/known_hosts'] })
    const text = await bash(`cat ${home}/.netrc; cat ${home}/.ssh/id_rsa; cat ${home}/.ssh/known_hosts; ls -A ${home}/.ssh`)
    expect(text).toContain('TOPSECRET-netrc')
    expect(text).not.toContain('TOPSECRET ssh key')
    expect(text).toContain('example.com ssh-ed25519 AAAA\nknown_hosts\n')
    const free = await agent({ mode: 'danger-full-access' })
    expect(await free.bash(`cat ${home}/.ssh/id_rsa`)).toBe('TOPSECRET ssh key\n')
  })

  it.skipIf(!asRoot || !setpriv)('the same argv holds for an ordinary user (setpriv to uid 65534)', async () => {
    execFileSync('chown', ['-R', '65534:65534', base])
    const as65534 = (argv: readonly string[]) => spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...argv], { encoding: 'utf8', cwd: ws })
    // Outside the sandbox that user reads every secret: the masks are what hide them below.
    expect(as65534(['cat', join(home, '.ssh', 'id_rsa')]).stdout).toBe('TOPSECRET ssh key\n')
    for (const mode of CONFINED) {
      for (const root of [ws, home]) {
        const { ctx } = await agent({ mode, workspaceRoot: root })
        const runner = (await ctx.sandbox.runner()).runner!
        const run = as65534([...ctx.sandbox.prefix!(runner, mode, root), 'bash', '-c', `${probe()}; echo w > ${root}/w.txt && echo wrote`])
        expect(run.stderr, `${mode} ${root}`).not.toMatch(/^bwrap: /m)
        assertHidden(`${run.stdout}${run.stderr}`, `65534 ${mode} ${root}`)
        expect(run.stdout.includes('wrote'), `${mode} ${root}`).toBe(mode === 'workspace-write')
        rmSync(join(root, 'w.txt'), { force: true })
      }
    }
  })
})

describe('secret reads and the read/grep/glob tools (security #40.3)', () => {
  const hidden = (tool: string, shown: string, rule: string) =>
    `Error: ${tool}: ${shown} is hidden from tools by the sandbox's deny-read list (rule ${rule}; sandbox.denyRead / sandbox.allowRead in settings.yaml; danger-full-access lifts it)`

  it('read refuses a secret by its path, through .., and through a link in the workspace; spilled output and the workspace stay readable', async () => {
    for (const mode of CONFINED) {
      const { call } = await agent({ mode })
      const secret = join(home, '.ssh', 'id_rsa')
      const record = await call('read', { file_path: secret })
      expect(record.isError).toBe(true)
      expect(record.error).toEqual({ name: 'FsError', code: 'FS_READ_DENIED' })
      expect(resultText(record)).toBe(hidden('read', secret, '~/.ssh'))
      expect(resultText(await call('read', { file_path: '../.ssh/id_rsa' }))).toBe(hidden('read', '../.ssh/id_rsa', '~/.ssh'))
      expect(resultText(await call('read', { file_path: 'key-link' }))).toBe(hidden('read', 'key-link', '~/.ssh'))
      expect(resultText(await call('read', { file_path: join(dshHome, 'credentials.yaml') }))).toBe(hidden('read', join(dshHome, 'credentials.yaml'), '~/.dsh'))
      expect(resultText(await call('read', { file_path: join(home, 'other', '.env') }))).toBe(hidden('read', join(home, 'other', '.env'), '.env files outside the workspace'))
      expect(resultText(await call('read', { file_path: join(dshHome, 'tool-output', 's1', 'bash-1.txt') }))).toContain('spilled output')
      expect(resultText(await call('read', { file_path: 'readme.txt' }))).toContain('TOPSECRET is a word')
    }
  })

  it('read checks what it opened: the descriptor\'s real path, whatever name led there', async () => {
    const { ctx } = await agent({ mode: 'read-only' })
    const check = ctx.sandbox.readCheck!(ws)
    let opened: string | undefined
    await readPage(join(ws, 'key-link'), 1, 10, READ_DEFAULTS, undefined, undefined, fd => { opened = openedPath(fd) })
    expect(opened).toBe(realpathSync(join(home, '.ssh', 'id_rsa')))
    // A name that says nothing (a link swapped in after the first check) is caught by it.
    expect(check.denied(join(ws, 'innocent.txt'))).toBeUndefined()
    expect(check.denied(join(ws, 'innocent.txt'), opened)).toBe('~/.ssh')
  })

  it('grep and glob over the home skip the secrets silently; a search of a hidden folder is refused', async () => {
    const { call } = await agent({ mode: 'workspace-write' })
    const grep = await call('grep', { pattern: 'TOPSECRET', path: home })
    expect(grep.isError).toBe(false)
    expect(resultText(grep).split('\n')).toEqual(['readme.txt:1: TOPSECRET is a word this project uses'])
    const glob = resultText(await call('glob', { pattern: '**/*', path: home }))
    expect(glob).toContain('readme.txt')
    expect(glob).toContain('bash-1.txt')
    for (const name of ['id_rsa', 'credentials', '.netrc', '.env']) expect(glob).not.toContain(name)
    // Through a fixed folder of the pattern that is a link to a hidden one.
    symlinkSync(join(home, '.aws'), join(ws, 'aws-link'))
    expect(resultText(await call('glob', { pattern: 'aws-link/*' }))).toBe('No files found')
    expect(resultText(await call('grep', { pattern: 'TOPSECRET', include: 'aws-link/*' }))).toBe('No matches found')
    expect(resultText(await call('grep', { pattern: 'x', path: join(home, '.ssh') }))).toBe(hidden('grep', join(home, '.ssh'), '~/.ssh'))
    expect(resultText(await call('glob', { pattern: '*', path: join(home, '.aws') }))).toBe(hidden('glob', join(home, '.aws'), '~/.aws'))
  })

  it('allowRead lifts one entry; danger-full-access reads anything; without a sandbox nothing is hidden', async () => {
    const lifted = await agent({ mode: 'read-only', allowRead: [join(home, '.netrc'), '~/.ssh/known_hosts'] })
    expect(resultText(await lifted.call('read', { file_path: join(home, '.netrc') }))).toContain('TOPSECRET-netrc')
    expect(resultText(await lifted.call('read', { file_path: join(home, '.ssh', 'known_hosts') }))).toContain('example.com')
    expect((await lifted.call('read', { file_path: join(home, '.ssh', 'id_rsa') })).isError).toBe(true)
    const free = await agent({ mode: 'danger-full-access' })
    expect(resultText(await free.call('read', { file_path: join(home, '.ssh', 'id_rsa') }))).toContain('TOPSECRET ssh key')
    expect(resultText(await free.call('grep', { pattern: 'TOPSECRET', path: home }))).toContain('id_rsa')
    const ctx = new Context()
    await ctx.plugin(ToolsPlugin)
    await ctx.plugin(BuiltinToolsPlugin)
    const plain = await ctx.tools.execute({ callId: 'c', name: 'read', arguments: JSON.stringify({ file_path: join(home, '.ssh', 'id_rsa') }) }, { cwd: ws, signal: new AbortController().signal })
    expect(resultText(plain)).toContain('TOPSECRET ssh key')
  })

  it('write and edit refuse a secret inside the workspace (the home), as bubblewrap does', async () => {
    const { call } = await agent({ workspaceRoot: home })
    const record = await call('write', { file_path: join(home, '.ssh', 'authorized_keys'), content: 'ssh-ed25519 planted\n' }, home)
    expect(resultText(record)).toBe(hidden('write', join(home, '.ssh', 'authorized_keys'), '~/.ssh'))
    expect(existsSync(join(home, '.ssh', 'authorized_keys'))).toBe(false)
    expect(resultText(await call('edit', { file_path: join(home, '.netrc'), old_string: 'a', new_string: 'b' }, home))).toBe(hidden('edit', join(home, '.netrc'), '~/.netrc'))
    expect(resultText(await call('write', { file_path: join(home, 'notes.txt'), content: 'ok\n' }, home))).toMatch(/^Created /)
  })
})
