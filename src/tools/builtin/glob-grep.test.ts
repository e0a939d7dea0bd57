import { readFileSync } from 'node:fs'
import { mkdir, utimes, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { resultText, toolsHarness, type ToolsHarness } from '../../../test-support/builtin-tools.js'

let h: ToolsHarness
beforeEach(async () => { h = await toolsHarness() })
afterEach(async () => { await h.cleanup() })

/** Creates `name` with `content` and an mtime of `seconds` after the epoch (deterministic order). */
async function put(name: string, content = 'x\n', seconds?: number) {
  const path = join(h.cwd, name)
  await mkdir(dirname(path), { recursive: true })
  await writeFile(path, content)
  if (seconds !== undefined) await utimes(path, seconds, seconds)
}

describe('glob', () => {
  it('lists matches newest first, relative to the cwd, skipping node_modules and .git', async () => {
    await put('old.ts', 'x', 1000)
    await put('src/newest.ts', 'x', 3000)
    await put('src/middle.ts', 'x', 2000)
    await put('readme.md', 'x', 4000)
    await put('node_modules/pkg/index.ts', 'x', 5000)
    await put('.git/hooks/x.ts', 'x', 5000)
    const record = await h.call('glob', { pattern: '**/*.ts' })
    expect(resultText(record)).toBe('src/newest.ts\nsrc/middle.ts\nold.ts')
    expect(record.meta).toEqual({ count: 3 })
  })

  it('searches under path, and says when nothing matched', async () => {
    await put('a/one.txt')
    await put('b/two.txt')
    expect(resultText(await h.call('glob', { pattern: '*.txt', path: 'b' }))).toBe('b/two.txt')
    expect(resultText(await h.call('glob', { pattern: '**/*.none' }))).toBe('No files found')
    expect((await h.call('glob', { pattern: '*', path: 'missing' })).error?.code).toBe('FS_NOT_FOUND')
  })

  it('shows the 100 newest inline and spills the full list', async () => {
    for (let i = 0; i < 105; i++) await put(`f/${String(i).padStart(3, '0')}.txt`, 'x', 1000 + i)
    const record = await h.call('glob', { pattern: 'f/*.txt' })
    const text = resultText(record)
    const listed = text.split('\n\n')[0].split('\n')
    expect(listed).toHaveLength(100)
    expect(listed[0]).toBe('f/104.txt')
    expect(listed[99]).toBe('f/005.txt')
    const listPath = (record.meta as { listPath: string }).listPath
    expect(text).toContain(`[105 files matched; showing the 100 newest. The full list is saved to ${listPath}]`)
    const full = readFileSync(listPath, 'utf8').trim().split('\n')
    expect(full).toHaveLength(105)
    expect(full[104]).toBe(join(h.cwd, 'f/000.txt'))
  })
})

describe('grep', () => {
  it('prints path:line: text for each matching line, files in path order', async () => {
    await put('src/b.ts', 'const x = 1\nfunction foo() {}\n')
    await put('src/a.ts', 'function bar() {}\nconst y = 2\nfunction baz() {}\n')
    const record = await h.call('grep', { pattern: 'function \\w+' })
    expect(resultText(record)).toBe('src/a.ts:1: function bar() {}\nsrc/a.ts:3: function baz() {}\nsrc/b.ts:2: function foo() {}')
    expect(record.meta).toMatchObject({ matches: 3, limitReached: false })
  })

  it('include filters file names at any depth; path narrows to a folder or a single file', async () => {
    await put('top.ts', 'needle\n')
    await put('deep/er/x.ts', 'needle\n')
    await put('deep/er/x.md', 'needle\n')
    expect(resultText(await h.call('grep', { pattern: 'needle', include: '*.ts' }))).toBe('deep/er/x.ts:1: needle\ntop.ts:1: needle')
    expect(resultText(await h.call('grep', { pattern: 'needle', include: '*.{md,ts}', path: 'deep' }))).toBe('deep/er/x.md:1: needle\ndeep/er/x.ts:1: needle')
    expect(resultText(await h.call('grep', { pattern: 'needle', path: 'deep/er/x.md' }))).toBe('deep/er/x.md:1: needle')
  })

  it('skips binary files, node_modules and .git', async () => {
    await put('text.txt', 'needle\n')
    await writeFile(join(h.cwd, 'blob.bin'), Buffer.concat([Buffer.from('needle\n'), Buffer.from([0, 1, 2])]))
    await put('node_modules/m/i.js', 'needle\n')
    await put('.git/config', 'needle\n')
    expect(resultText(await h.call('grep', { pattern: 'needle' }))).toBe('text.txt:1: needle')
  })

  it('stops at 250 matches and says how to see the rest', async () => {
    await put('many.txt', Array.from({ length: 300 }, (_, i) => `hit ${i + 1}`).join('\n'))
    const record = await h.call('grep', { pattern: '^hit' })
    const text = resultText(record)
    const hits = text.split('\n').filter((line) => line.startsWith('many.txt:'))
    expect(hits).toHaveLength(250)
    expect(hits[249]).toBe('many.txt:250: hit 250')
    expect(text).toContain('[match limit of 250 reached')
    expect(record.meta).toMatchObject({ matches: 250, limitReached: true })
  })

  it('a result over 50 KB is spilled: a preview inline, every match in the file', async () => {
    await put('wide.txt', Array.from({ length: 200 }, (_, i) => `hit ${i + 1} ${'w'.repeat(400)}`).join('\n'))
    const record = await h.call('grep', { pattern: '^hit' })
    const text = resultText(record)
    expect(Buffer.byteLength(text)).toBeLessThan(50 * 1024)
    const path = (record.meta as { spilled: string[] }).spilled[0]
    expect(text).toContain(`the full output is saved to ${path}`)
    const full = readFileSync(path, 'utf8').split('\n')
    expect(full).toHaveLength(200)
    expect(full[199]).toBe(`wide.txt:200: hit 200 ${'w'.repeat(400)}`)
  })

  it('no match and an invalid regular expression', async () => {
    await put('a.txt', 'abc\n')
    expect(resultText(await h.call('grep', { pattern: 'zzz' }))).toBe('No matches found')
    const bad = await h.call('grep', { pattern: '(unclosed' })
    expect(bad.isError).toBe(true)
    expect(bad.error?.code).toBe('INVALID_PATTERN')
    expect(resultText(bad)).toContain('invalid regular expression "(unclosed"')
  })
})
