import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Context } from 'cordis'
import { mountsKey } from './protected.js'
import { bwrapRunner } from './runner.js'
import { DEFAULT_DENY_READ, ENV_FILE_RULE, hiddenArgs, hiddenPaths, ReadCheck, readPolicy } from './secrets.js'
import { SandboxPlugin } from './service.js'

let base: string
let home: string
let dshHome: string
beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-secrets-')))
  home = join(base, 'home')
  dshHome = join(home, '.dsh')
  mkdirSync(join(home, '.ssh'), { recursive: true })
  writeFileSync(join(home, '.ssh', 'id_rsa'), 'SECRET\n')
  writeFileSync(join(home, '.netrc'), 'machine x password p\n')
  mkdirSync(join(dshHome, 'tool-output'), { recursive: true })
  writeFileSync(join(dshHome, '.credentials.yaml'), 'KEY: v\n')
})
afterEach(() => { rmSync(base, { recursive: true, force: true }) })

describe('the deny-read list (security #40.3)', () => {
  it('defaults under the home and dsh home; allowRead takes entries off, denyRead adds them', () => {
    const policy = readPolicy({ home, dshHome })
    expect(policy.deny.map(rule => rule.rule)).toEqual([...DEFAULT_DENY_READ.map(entry => `~/${entry}`), '~/.dsh'])
    expect(policy.allow).toEqual([join(dshHome, 'tool-output'), join(dshHome, 'skills')])
    const edited = readPolicy({ home, dshHome, denyRead: ['~/work/.secrets', '/srv/keys'], allowRead: ['~/.npmrc', '~/.config'] })
    const rules = edited.deny.map(rule => rule.rule)
    expect(rules).toContain('~/work/.secrets')
    expect(rules).toContain('/srv/keys')
    expect(rules).not.toContain('~/.npmrc')
    // An allowed folder takes what lies below it off the list.
    expect(rules).not.toContain('~/.config/gcloud')
    expect(rules).not.toContain('~/.config/gh/hosts.yml')
  })

  it("the other coding agents' logins are hidden (Codex, Claude Code, opencode, Copilot), their settings are not", () => {
    const logins = [['.codex', 'auth.json'], ['.claude', '.credentials.json'], ['.local/share/opencode', 'auth.json'], ['.config/github-copilot', 'apps.json']]
    for (const [dir, file] of logins) {
      mkdirSync(join(home, dir!), { recursive: true })
      writeFileSync(join(home, dir!, file!), '{"token":"SECRET"}\n')
    }
    writeFileSync(join(home, '.codex', 'config.toml'), 'model = "x"\n')
    const policy = readPolicy({ home, dshHome })
    const check = new ReadCheck(policy, hiddenPaths(policy), join(base, 'work'))
    for (const [dir, file] of logins) expect(check.denied(join(home, dir!, file!)), `${dir}/${file}`).toBe(`~/${dir}/${file}`)
    expect(check.denied(join(home, '.codex', 'config.toml'))).toBeUndefined()
    const hidden = hiddenPaths(policy).map(entry => entry.path)
    for (const [dir, file] of logins) expect(hidden).toContain(join(home, dir!, file!))
  })

  it('bad values are TypeErrors naming the key', () => {
    expect(() => readPolicy({ home, dshHome, denyRead: '~/.ssh' })).toThrow(/^sandbox: config\.denyRead must be a list of absolute or ~\/ paths, got "~\/.ssh"$/)
    expect(() => readPolicy({ home, dshHome, denyRead: ['relative/path'] })).toThrow(/config\.denyRead .* got the entry "relative\/path"/)
    expect(() => readPolicy({ home, dshHome, allowRead: [3] })).toThrow(/config\.allowRead .* got the entry 3/)
    expect(() => readPolicy({ home, dshHome, denyRead: ['/'] })).toThrow(/would hide everything/)
    expect(() => new SandboxPlugin(new Context(), { home: 'relative' })).toThrow(/config\.home must be an absolute path/)
    expect(() => new SandboxPlugin(new Context(), { home, denyRead: [''] as string[] })).toThrow(TypeError)
  })
})

describe('hiddenPaths and the bubblewrap masks (security #40.3)', () => {
  it('what exists, by real path: folders get an empty read-only tmpfs, files /dev/null, kept paths bound back', () => {
    const hidden = hiddenPaths(readPolicy({ home, dshHome }))
    expect(hidden).toEqual([
      { path: join(home, '.dsh'), dir: true, rule: '~/.dsh', keep: [join(dshHome, 'tool-output')] },
      { path: join(home, '.netrc'), dir: false, rule: '~/.netrc', keep: [] },
      { path: join(home, '.ssh'), dir: true, rule: '~/.ssh', keep: [] },
    ])
    expect(hiddenArgs(hidden)).toEqual([
      '--tmpfs', join(home, '.dsh'), '--ro-bind-try', join(dshHome, 'tool-output'), join(dshHome, 'tool-output'),
      '--ro-bind', '/dev/null', join(home, '.netrc'),
      '--tmpfs', join(home, '.ssh'),
      '--remount-ro', join(home, '.dsh'), '--remount-ro', join(home, '.ssh'),
    ])
  })

  it('a symlinked secret is hidden at its target; an entry inside a hidden folder is not mounted twice', () => {
    const elsewhere = join(base, 'aws-real')
    mkdirSync(elsewhere)
    symlinkSync(elsewhere, join(home, '.aws'))
    const hidden = hiddenPaths(readPolicy({ home, dshHome, denyRead: ['~/.ssh/id_rsa'] }))
    expect(hidden.map(entry => entry.path)).toEqual([elsewhere, join(home, '.dsh'), join(home, '.netrc'), join(home, '.ssh')])
    expect(hidden[0]!.rule).toBe('~/.aws')
  })

  it('the runner puts the masks after the workspace and protected binds, in both confined modes; a private /tmp skips them', () => {
    const runner = bwrapRunner()
    const hidden = hiddenPaths(readPolicy({ home, dshHome }))
    const argv = runner.argv('workspace-write', home, { readOnly: [dshHome], pinned: [], hidden })
    const at = (...args: string[]) => argv.findIndex((_, i) => args.every((arg, j) => argv[i + j] === arg))
    expect(at('--bind', home, home)).toBeGreaterThan(-1)
    expect(at('--ro-bind-try', dshHome, dshHome)).toBeGreaterThan(at('--bind', home, home))
    expect(at('--tmpfs', dshHome)).toBeGreaterThan(at('--ro-bind-try', dshHome, dshHome))
    expect(at('--remount-ro', join(home, '.ssh'))).toBeLessThan(at('--dev', '/dev'))
    expect(runner.argv('read-only', '/', { readOnly: [], pinned: [], hidden }).join(' ')).toContain(hiddenArgs(hidden).join(' '))
    // Under a private /tmp (workspace-write, root elsewhere) a home in /tmp is not there to hide.
    const underTmp = [`/tmp/`, `${realpathSync('/tmp')}/`].some(prefix => base.startsWith(prefix))
    expect(runner.argv('workspace-write', '/srv/none', { readOnly: [], pinned: [], hidden }).includes(join(home, '.ssh'))).toBe(!underTmp)
  })

  it('the shell host key changes with the hidden set', () => {
    const before = mountsKey({ readOnly: [], pinned: [], hidden: hiddenPaths(readPolicy({ home, dshHome })) })
    writeFileSync(join(home, '.npmrc'), '//registry/:_authToken=x\n')
    const after = mountsKey({ readOnly: [], pinned: [], hidden: hiddenPaths(readPolicy({ home, dshHome })) })
    expect(after).not.toBe(before)
    expect(mountsKey({ readOnly: [], pinned: [], hidden: [] })).toBe(mountsKey({ readOnly: [], pinned: [] }))
  })
})

describe('ReadCheck: the tools\' side (security #40.3)', () => {
  const check = (root?: string) => new ReadCheck(readPolicy({ home, dshHome }), hiddenPaths(readPolicy({ home, dshHome })), root)

  it('a path at or under a rule, by name, through .. and through a symlink; the spill folder stays readable', () => {
    const ws = join(home, 'project')
    mkdirSync(ws)
    symlinkSync(join(home, '.ssh', 'id_rsa'), join(ws, 'key'))
    symlinkSync(join(home, '.ssh'), join(ws, 'keys'))
    const c = check(ws)
    expect(c.denied(join(home, '.ssh', 'id_rsa'))).toBe('~/.ssh')
    expect(c.denied(join(home, '.ssh'))).toBe('~/.ssh')
    expect(c.denied(join(home, '.ssh', 'missing'))).toBe('~/.ssh')
    expect(c.denied(join(ws, '..', '.ssh', 'id_rsa'))).toBe('~/.ssh')
    expect(c.denied(join(ws, 'key'))).toBe('~/.ssh')
    expect(c.denied(join(ws, 'keys', 'id_rsa'))).toBe('~/.ssh')
    expect(c.denied(join(home, '.netrc'))).toBe('~/.netrc')
    expect(c.denied(join(dshHome, '.credentials.yaml'))).toBe('~/.dsh')
    expect(c.denied(join(dshHome, 'tool-output', 's', 'bash-1.txt'))).toBeUndefined()
    expect(c.denied(join(dshHome, 'tool-output', '..', '.credentials.yaml'))).toBe('~/.dsh')
    expect(c.denied(join(ws, 'src', 'a.ts'))).toBeUndefined()
    expect(c.denied(join(home, '.sshx'))).toBeUndefined()
  })

  it('.env files outside the workspace are refused by name; the workspace\'s own are not', () => {
    const ws = join(home, 'project')
    mkdirSync(join(home, 'other'), { recursive: true })
    mkdirSync(ws)
    writeFileSync(join(home, 'other', '.env'), 'TOKEN=x\n')
    symlinkSync(join(home, 'other', '.env'), join(ws, 'settings.txt'))
    const c = check(ws)
    expect(c.denied(join(home, 'other', '.env'))).toBe(ENV_FILE_RULE)
    expect(c.denied(join(home, 'other', '.env.local'))).toBe(ENV_FILE_RULE)
    expect(c.denied(join(ws, 'settings.txt'))).toBe(ENV_FILE_RULE)
    expect(c.denied(join(ws, '.env'))).toBeUndefined()
    expect(c.denied(join(home, 'other', 'env.txt'))).toBeUndefined()
    // allowRead lifts it for what it names.
    const lifted = new ReadCheck(readPolicy({ home, dshHome, allowRead: ['~/other'] }), [], ws)
    expect(lifted.denied(join(home, 'other', '.env'))).toBeUndefined()
  })

  it('the service answers the same; allowRead lifts one entry', async () => {
    const ctx = new Context()
    await ctx.plugin(SandboxPlugin, { home, dshHome, allowRead: ['~/.netrc'] })
    expect(ctx.sandbox.readDenied!(join(home, '.ssh', 'id_rsa'))).toBe('~/.ssh')
    expect(ctx.sandbox.readDenied!(join(home, '.netrc'))).toBeUndefined()
  })
})
