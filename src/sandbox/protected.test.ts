import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { checkWritable, fencedWriteFile, SandboxDenied, type WriteFence } from './fence.js'
import { protectedMounts, protectedSegments, protectedTarget } from './protected.js'

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
