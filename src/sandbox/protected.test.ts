import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { checkWritable, fencedWriteFile, SandboxDenied, type WriteFence } from './fence.js'
import { protectedMounts, protectedScan, protectedSegments, protectedTarget } from './protected.js'
import { ProtectedScan } from './protected-scan.js'

let root: string
beforeEach(() => { root = mkdtempSync(join(tmpdir(), 'dsh-protected-')) })
afterEach(() => { rmSync(root, { recursive: true, force: true }) })

const ww = (extra: Partial<WriteFence> = {}): WriteFence => ({ mode: 'workspace-write', root, ...extra })

async function denial(path: string, fence: WriteFence = ww()): Promise<SandboxDenied | undefined> {
  try {
    await fencedWriteFile(path, 'planted', fence, { mkdirs: true })
    return undefined
  } catch (error) {
    if (error instanceof SandboxDenied) return error
    throw error
  }
}

describe('protected paths: the rules (security #42.3, #42.4)', () => {
  it('agent configuration and git code at any depth; ordinary files and look-alikes are not', () => {
    for (const path of ['.claude/settings.json', '.codex/hooks.json', '.dsh/skills/x/SKILL.md', '.mcp.json', 'sub/.mcp.json', 'a/.claude/settings.local.json',
      '.git/config', '.git/hooks/pre-commit', '.git/info/attributes', '.git/modules/m/hooks/post-checkout', '.git/worktrees/w/config.worktree', 'pkg/.git/config', '.git']) {
      expect(protectedSegments(path.split('/')), path).toBeDefined()
    }
    for (const path of ['src/index.ts', 'CLAUDE.md', 'AGENTS.md', '.gitignore', '.github/workflows/ci.yml', '.git/objects/ab/cdef', '.git/refs/heads/main', '.git/index', '.git/HEAD', 'config', 'hooks/x', '.mcp.json.bak', '.claude-notes']) {
      expect(protectedSegments(path.split('/')), path).toBeUndefined()
    }
  })

  it('extra paths (dsh home) are protected at and below themselves', () => {
    expect(protectedTarget('/h/.dsh/sessions/x.jsonl', [], ['/h/.dsh'])).toEqual({ path: '/h/.dsh/sessions/x.jsonl', kind: 'dsh home' })
    expect(protectedTarget('/h/.dsh-other/x', [], ['/h/.dsh'])).toBeUndefined()
  })
})

describe('the write fence refuses protected paths inside the workspace (security #42.3, #42.4)', () => {
  it('a hook file, an MCP file, git config and hooks, existing or not, are refused; the file stays as it was', async () => {
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true })
    writeFileSync(join(root, '.git', 'config'), '[core]\n')
    for (const path of ['.claude/settings.json', '.codex/hooks.json', '.mcp.json', '.git/config', '.git/hooks/pre-commit', '.git/info/exclude', 'nested/.git/hooks/pre-commit', '.dsh/settings.yaml']) {
      const error = await denial(join(root, path))
      expect(error?.protection?.path, path).toBe(path)
      await expect(checkWritable(join(root, path), ww())).rejects.toBeInstanceOf(SandboxDenied)
    }
    expect(readFileSync(join(root, '.git', 'config'), 'utf8')).toBe('[core]\n')
    expect(existsSync(join(root, '.git', 'hooks', 'pre-commit'))).toBe(false)
    expect(existsSync(join(root, '.claude'))).toBe(false)
    // Ordinary work in the workspace goes on.
    await fencedWriteFile(join(root, 'src', 'a.ts'), 'ok', ww(), { mkdirs: true })
    await fencedWriteFile(join(root, '.gitignore'), 'ok', ww())
  })

  it('a link inside the workspace to a protected folder is refused by the real path it reaches', async () => {
    mkdirSync(join(root, '.claude'))
    symlinkSync(join(root, '.claude'), join(root, 'innocent'))
    expect((await denial(join(root, 'innocent', 'settings.json')))?.protection?.kind).toBe('agent configuration')
    // And a protected name that is itself a link elsewhere in the workspace is refused by its name.
    mkdirSync(join(root, 'elsewhere'))
    symlinkSync(join(root, 'elsewhere'), join(root, '.codex'))
    expect((await denial(join(root, '.codex', 'hooks.json')))?.protection?.path).toBe('.codex/hooks.json')
    expect(existsSync(join(root, 'elsewhere', 'hooks.json'))).toBe(false)
  })

  it('dsh home is refused when it lies in the workspace', async () => {
    const home = join(root, 'state')
    mkdirSync(home)
    expect((await denial(join(home, 'trusted-projects.json'), ww({ protectedPaths: [home] })))?.protection?.kind).toBe('dsh home')
    expect(existsSync(join(home, 'trusted-projects.json'))).toBe(false)
  })

  it('danger-full-access lifts it, as it lifts everything', async () => {
    await fencedWriteFile(join(root, '.claude', 'settings.json'), '{}', { mode: 'danger-full-access', root }, { mkdirs: true })
    expect(readFileSync(join(root, '.claude', 'settings.json'), 'utf8')).toBe('{}')
  })

  it('security #42.7: under workspace-write /tmp is outside the workspace for write, as it is for bash (whose /tmp is private)', async () => {
    const target = join(tmpdir(), `dsh-fence-tmp-${process.pid}.txt`)
    const error = await denial(target)
    expect(error).toBeInstanceOf(SandboxDenied)
    expect(error?.protection).toBeUndefined()
    expect(existsSync(target)).toBe(false)
    // A workspace under /tmp stays writable.
    await fencedWriteFile(join(root, 'x.txt'), 'ok', ww())
  })
})

describe('protectedMounts: what the runner mounts read-only (security #42.4)', () => {
  it('existing agent folders, git config, hooks and info, .git pinned; nothing that does not exist', () => {
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true })
    writeFileSync(join(root, '.git', 'config'), '')
    mkdirSync(join(root, '.claude'))
    expect(protectedMounts(root)).toEqual({
      readOnly: [join(root, '.claude'), join(root, '.git', 'config'), join(root, '.git', 'hooks')],
      pinned: [join(root, '.git')],
    })
  })

  it('a .git file (a worktree) is read-only and protects the folder it names when that is in the workspace, and its common folder', () => {
    const main = join(root, 'main.git')
    mkdirSync(join(main, 'worktrees', 'w'), { recursive: true })
    mkdirSync(join(main, 'hooks'))
    writeFileSync(join(main, 'config'), '')
    writeFileSync(join(main, 'worktrees', 'w', 'commondir'), '../..\n')
    writeFileSync(join(root, '.git'), `gitdir: ${join(main, 'worktrees', 'w')}\n`)
    const mounts = protectedMounts(root)
    // The .git file itself is read-only: rewritten, it would point git at another repository.
    expect(mounts.readOnly).toEqual([join(root, '.git'), join(main, 'config'), join(main, 'hooks')])
    expect(mounts.pinned).toEqual([main, join(main, 'worktrees', 'w')].sort())
  })

  it('paths outside the root are left alone (already read-only)', () => {
    const outside = mkdtempSync(join(tmpdir(), 'dsh-protected-out-'))
    try {
      symlinkSync(outside, join(root, '.claude'))
      expect(protectedMounts(root, [outside])).toEqual({ readOnly: [], pinned: [] })
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  })
})

describe('protectedMounts: folders below the top (security #42.4)', () => {
  it('a nested repository, agent folder and MCP file get the top\'s mounts; their folders and the folders above them are pinned', () => {
    mkdirSync(join(root, 'libs', 'pkg', '.git', 'hooks'), { recursive: true })
    writeFileSync(join(root, 'libs', 'pkg', '.git', 'config'), '')
    mkdirSync(join(root, 'sub', '.claude'), { recursive: true })
    mkdirSync(join(root, 'a', 'b', 'c'), { recursive: true })
    writeFileSync(join(root, 'a', 'b', 'c', '.mcp.json'), '{}')
    // Ordinary folders around them are left alone.
    mkdirSync(join(root, 'src', 'deep', 'er'), { recursive: true })
    expect(protectedMounts(root)).toEqual({
      readOnly: [join(root, 'a', 'b', 'c', '.mcp.json'), join(root, 'libs', 'pkg', '.git', 'config'), join(root, 'libs', 'pkg', '.git', 'hooks'), join(root, 'sub', '.claude')],
      pinned: [join(root, 'a'), join(root, 'a', 'b'), join(root, 'a', 'b', 'c'), join(root, 'libs'), join(root, 'libs', 'pkg'), join(root, 'libs', 'pkg', '.git'), join(root, 'sub')],
    })
  })

  it('a submodule\'s .git file protects its git folder inside the top\'s .git; nothing inside a protected folder or an extra path is walked', () => {
    mkdirSync(join(root, '.git', 'modules', 'm', 'hooks'), { recursive: true })
    writeFileSync(join(root, '.git', 'modules', 'm', 'config'), '')
    mkdirSync(join(root, 'm'))
    writeFileSync(join(root, 'm', '.git'), 'gitdir: ../.git/modules/m\n')
    mkdirSync(join(root, '.claude', 'inner', '.git'), { recursive: true })
    const home = join(root, 'state')
    mkdirSync(join(home, 'x', '.git'), { recursive: true })
    const mounts = protectedMounts(root, [home])
    expect(mounts.readOnly).toEqual([join(root, '.claude'), join(root, '.git', 'modules', 'm', 'config'), join(root, '.git', 'modules', 'm', 'hooks'), join(root, 'm', '.git'), home])
    expect(mounts.pinned).toEqual([join(root, '.git'), join(root, '.git', 'modules', 'm'), join(root, 'm')])
  })

  it('links are not followed: a link to a folder holding a .git adds nothing', () => {
    const outside = mkdtempSync(join(tmpdir(), 'dsh-protected-link-'))
    try {
      mkdirSync(join(root, 'real', '.git'), { recursive: true })
      symlinkSync(join(root, 'real'), join(root, 'alias'))
      symlinkSync(outside, join(root, 'away'))
      mkdirSync(join(outside, '.git'))
      expect(protectedMounts(root).pinned).toEqual([join(root, 'real'), join(root, 'real', '.git')])
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  })
})

describe('the scan of protected folders: bounds and cache (security #42.4)', () => {
  const names = new Set(['.git', '.claude'])

  it('folders deeper than the depth bound are not read; the walk says it stopped', () => {
    mkdirSync(join(root, 'a', 'b', '.git'), { recursive: true })
    mkdirSync(join(root, 'a', 'b', 'c', '.git'), { recursive: true })
    const scan = new ProtectedScan(names, { depth: 2, entries: 1000 })
    expect(scan.scan(root)).toMatchObject({ folders: [join(root, 'a', 'b')], complete: false })
    expect(new ProtectedScan(names, { depth: 3, entries: 1000 }).scan(root)).toMatchObject({ folders: [join(root, 'a', 'b'), join(root, 'a', 'b', 'c')], complete: true })
  })

  it('past the entry bound the walk stops, shallow folders first: the top is always read', () => {
    mkdirSync(join(root, '.git'))
    for (let i = 0; i < 20; i++) writeFileSync(join(root, `f${i}`), '')
    mkdirSync(join(root, 'pkg', '.git'), { recursive: true })
    expect(new ProtectedScan(names, { depth: 8, entries: 10 }).scan(root)).toMatchObject({ folders: [root], complete: false })
    expect(new ProtectedScan(names, { depth: 8, entries: 100 }).scan(root)).toMatchObject({ folders: [root, join(root, 'pkg')], complete: true })
  })

  it('an unchanged tree is answered from the cache; a changed folder is read again, even with its mtime set back', async () => {
    for (let i = 0; i < 5; i++) mkdirSync(join(root, `d${i}`, 'x'), { recursive: true })
    const folder = join(root, 'd3', 'x')
    const old = statSync(folder)
    // The file system's clock moves on past the folder's ctime (a coarse tick): polled, not slept.
    const probe = join(root, 'probe')
    for (const deadline = Date.now() + 5000; ;) {
      writeFileSync(probe, '')
      if (statSync(probe).ctimeMs > old.ctimeMs) break
      if (Date.now() > deadline) throw new Error('the file system clock did not move')
      await new Promise(resolve => setImmediate(resolve))
    }
    // Every reading counts as long settled (the clock is read as a minute on).
    const scan = new ProtectedScan(names, { depth: 8, entries: 1000 }, () => Date.now() + 60_000)
    expect(scan.scan(root)).toMatchObject({ folders: [], read: 11 })
    expect(scan.scan(root)).toMatchObject({ folders: [], read: 0 })
    const mtime = statSync(folder, { bigint: true }).mtimeNs
    mkdirSync(join(folder, '.git'))
    // Set back to the nanosecond, as a command hiding its change would.
    execFileSync('touch', ['-m', '-d', `@${mtime / 1_000_000_000n}.${String(mtime % 1_000_000_000n).padStart(9, '0')}`, folder])
    expect(statSync(folder, { bigint: true }).mtimeNs).toBe(mtime)
    expect(scan.scan(root)).toMatchObject({ folders: [folder], read: 1 })
    expect(scan.scan(root)).toMatchObject({ folders: [folder], read: 0 })
  })

  it('a folder changed less than a moment before it was read is read again next time (a change in the same clock tick would not show)', () => {
    mkdirSync(join(root, 'a', 'b'), { recursive: true })
    const scan = protectedScan()
    expect(protectedMounts(root, [], scan).pinned).toEqual([])
    mkdirSync(join(root, 'a', 'b', '.git'))
    expect(protectedMounts(root, [], scan).pinned).toEqual([join(root, 'a'), join(root, 'a', 'b'), join(root, 'a', 'b', '.git')])
    const fresh = new ProtectedScan(names)
    fresh.scan(root)
    expect(fresh.scan(root).read).toBe(3)
  })
})
