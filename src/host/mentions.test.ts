/**
 * `@path` words of a typed message (the terminal app's mentions) and the blocks they attach.
 */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { isMentionBlock, mentionBlocks, mentionedPaths } from './mentions.js'

function workspace(): string {
  const outside = mkdtempSync(join(tmpdir(), 'dsh-outside-'))
  writeFileSync(join(outside, 'secret.txt'), 'not yours\n')
  const root = mkdtempSync(join(tmpdir(), 'dsh-mentions-'))
  mkdirSync(join(root, 'src'))
  writeFileSync(join(root, 'src', 'app.ts'), 'export const app = 1\n')
  writeFileSync(join(root, 'notes.md'), '# notes\n')
  symlinkSync(join(outside, 'secret.txt'), join(root, 'link.txt'))
  return root
}

describe('mentionedPaths', () => {
  it('takes @words that name files of the workspace; others stay text', () => {
    const root = workspace()
    expect(mentionedPaths(root, 'explain @src/app.ts and @notes.md, then @missing.ts')).toEqual(['src/app.ts', 'notes.md'])
    // Folders, paths that lead out (.. or a symlink), mail addresses and repeats are not mentions.
    expect(mentionedPaths(root, '@src see @../x @link.txt mail me at me@example.com; @notes.md @notes.md')).toEqual(['notes.md'])
    expect(mentionedPaths(root, 'no mentions here')).toEqual([])
  })

  it('the blocks carry the file text; the typed text stays first and is what the user sees', () => {
    const root = workspace()
    const blocks = mentionBlocks(root, mentionedPaths(root, 'look at @src/app.ts'))
    expect(blocks).toEqual([{ type: 'text', text: '<file path="src/app.ts">\nexport const app = 1\n</file>' }])
    expect(isMentionBlock(blocks[0]!.text)).toBe(true)
  })
})
