import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { checkWritable, fencedWriteFile, realTarget, SandboxDenied, writableRoots } from './fence.js'

// The workspace lives under the temp folder; "outside" must be outside every writable root
// (workspace-write also allows the temp areas), so it is made under the home folder.
let root: string
let outside: string

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dsh-fence-root-'))
  outside = mkdtempSync(join(homedir(), '.dsh-fence-outside-'))
})
afterEach(() => {
  rmSync(root, { recursive: true, force: true })
  rmSync(outside, { recursive: true, force: true })
})

const ww = () => ({ mode: 'workspace-write' as const, root })
const ro = () => ({ mode: 'read-only' as const, root })

describe('file fence (SB-1, SB-2)', () => {
  it('SB-2: workspace-write writes under the root (not /tmp, private to commands); read-only writes nowhere but /dev/null', async () => {
    await fencedWriteFile(join(root, 'a', 'b.txt'), 'hi', ww(), { mkdirs: true })
    expect(readFileSync(join(root, 'a', 'b.txt'), 'utf8')).toBe('hi')
    await expect(checkWritable(join(tmpdir(), 'x'), ww())).rejects.toThrow('[sandbox: file access denied under workspace-write mode]')
    await expect(fencedWriteFile(join(root, 'c.txt'), 'no', ro())).rejects.toThrow('[sandbox: file access denied under read-only mode]')
    expect(existsSync(join(root, 'c.txt'))).toBe(false)
    await expect(checkWritable('/dev/null', ro())).resolves.toBeUndefined()
    expect(await writableRoots('danger-full-access', root)).toBe('any')
  })

  it('SB-2: an absolute path and a `..` path outside the roots are denied and nothing is written', async () => {
    await expect(fencedWriteFile(join(outside, 'abs.txt'), 'x', ww())).rejects.toBeInstanceOf(SandboxDenied)
    await expect(fencedWriteFile(join(root, '..', '..', outside.slice(1), 'dots.txt'), 'x', ww())).rejects.toBeInstanceOf(SandboxDenied)
    await expect(fencedWriteFile(join(root, 'new', '..', '..', '..', outside.slice(1), 'deep', 'x.txt'), 'x', ww(), { mkdirs: true })).rejects.toBeInstanceOf(SandboxDenied)
    expect(existsSync(join(outside, 'abs.txt'))).toBe(false)
    expect(existsSync(join(outside, 'dots.txt'))).toBe(false)
    expect(existsSync(join(outside, 'deep'))).toBe(false)
  })

  it('SB-1: a symlinked file, a symlinked folder and a dangling symlink cannot lead outside', async () => {
    writeFileSync(join(outside, 'target.txt'), 'original')
    symlinkSync(join(outside, 'target.txt'), join(root, 'link.txt'))
    symlinkSync(outside, join(root, 'dir'))
    symlinkSync(join(outside, 'not-yet.txt'), join(root, 'dangling.txt'))
    symlinkSync(join(outside, 'nope'), join(root, 'dangling-dir'))
    await expect(fencedWriteFile(join(root, 'link.txt'), 'pwned', ww())).rejects.toBeInstanceOf(SandboxDenied)
    await expect(fencedWriteFile(join(root, 'dir', 'new.txt'), 'pwned', ww())).rejects.toBeInstanceOf(SandboxDenied)
    await expect(fencedWriteFile(join(root, 'dangling.txt'), 'pwned', ww())).rejects.toBeInstanceOf(SandboxDenied)
    await expect(fencedWriteFile(join(root, 'dangling-dir', 'a', 'b.txt'), 'pwned', ww(), { mkdirs: true })).rejects.toBeInstanceOf(SandboxDenied)
    expect(readFileSync(join(outside, 'target.txt'), 'utf8')).toBe('original')
    expect(existsSync(join(outside, 'new.txt'))).toBe(false)
    expect(existsSync(join(outside, 'not-yet.txt'))).toBe(false)
    expect(existsSync(join(outside, 'nope'))).toBe(false)
    // A symlink that stays inside the root is fine.
    writeFileSync(join(root, 'real.txt'), 'a')
    symlinkSync(join(root, 'real.txt'), join(root, 'inner-link.txt'))
    await fencedWriteFile(join(root, 'inner-link.txt'), 'b', ww())
    expect(readFileSync(join(root, 'real.txt'), 'utf8')).toBe('b')
  })

  it('SB-1: a hard link to a file outside is refused (writing it would change the outside file)', async () => {
    writeFileSync(join(outside, 'shared.txt'), 'original')
    try {
      linkSync(join(outside, 'shared.txt'), join(root, 'hard.txt'))
    } catch (error) {
      // Different file systems (home and temp) cannot share an inode: link inside the root instead.
      expect((error as { code?: string }).code).toBe('EXDEV')
      writeFileSync(join(root, 'one.txt'), 'original')
      linkSync(join(root, 'one.txt'), join(root, 'hard.txt'))
    }
    await expect(fencedWriteFile(join(root, 'hard.txt'), 'pwned', ww())).rejects.toBeInstanceOf(SandboxDenied)
    expect(readFileSync(join(root, 'hard.txt'), 'utf8')).toBe('original')
  })

  it('SB-1: a name swapped for a symlink after an earlier check is denied at write time', async () => {
    // The check passes on a plain name, then the name becomes a symlink before the write.
    writeFileSync(join(outside, 'victim.txt'), 'original')
    const path = join(root, 'swap.txt')
    await checkWritable(path, ww())
    symlinkSync(join(outside, 'victim.txt'), path)
    await expect(fencedWriteFile(path, 'pwned', ww())).rejects.toBeInstanceOf(SandboxDenied)
    expect(readFileSync(join(outside, 'victim.txt'), 'utf8')).toBe('original')
  })

  it('realTarget resolves missing trailing components against the real parent', async () => {
    mkdirSync(join(root, 'sub'))
    symlinkSync(join(root, 'sub'), join(root, 'alias'))
    expect(await realTarget(join(root, 'alias', 'x', 'y.txt'))).toBe(join(await realTarget(root) as string, 'sub', 'x', 'y.txt'))
  })
})
