/**
 * The workspace file list behind `@` completion: git's files in a work tree, a capped
 * breadth-first walk elsewhere.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { searchFiles, workspaceFiles } from './workspace-files.js'

function tree(files: readonly string[]): string {
  const root = mkdtempSync(join(tmpdir(), 'dsh-files-'))
  for (const file of files) {
    mkdirSync(join(root, file, '..'), { recursive: true })
    writeFileSync(join(root, file), 'x')
  }
  return root
}

let hasGit = true
try { execFileSync('git', ['--version'], { stdio: 'ignore' }) } catch { hasGit = false }
if (!hasGit) console.warn('skipping the git half of the @ completion tests: git is missing (apt-get install -y git)')

describe('workspace files', () => {
  it.skipIf(!hasGit)('in a git work tree: tracked and untracked files, not what .gitignore leaves out; paths relative to a subfolder', async () => {
    const root = tree(['.gitignore', 'src/app.ts', 'src/new.ts', 'build/out.js', 'src/gen/big.bin', 'docs/readme.md'])
    writeFileSync(join(root, '.gitignore'), 'build/\n*.bin\n')
    execFileSync('git', ['init', '-q'], { cwd: root })
    execFileSync('git', ['add', '.gitignore', 'src/app.ts', 'docs/readme.md'], { cwd: root })
    expect(await workspaceFiles(root)).toEqual(['.gitignore', 'docs/readme.md', 'src/app.ts', 'src/new.ts'])
    expect(await workspaceFiles(join(root, 'src'))).toEqual(['app.ts', 'new.ts'])
    expect(searchFiles(await workspaceFiles(root), 'new', 5)).toEqual(['src/new.ts'])
  })

  it('outside a work tree: a walk that skips .git, node_modules and build output, and stops at the cap with the shallow files kept', async () => {
    const deep = Array.from({ length: 50 }, (_, n) => `a/b/c/deep-${n}.txt`)
    const root = tree(['top.md', 'node_modules/x/index.js', 'dist/main.js', 'lib/util.ts', ...deep])
    expect(await workspaceFiles(root)).toEqual([...deep, 'lib/util.ts', 'top.md'].sort())
    const capped = await workspaceFiles(root, { max: 10 })
    expect(capped).toHaveLength(10)
    expect(capped).toContain('top.md')
    expect(capped).toContain('lib/util.ts')
  })
})
