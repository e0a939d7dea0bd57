import { readFile, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SessionsServicePlugin } from '../../session/index.js'
import { resultText, toolsHarness, type ToolsHarness } from '../../../test-support/builtin-tools.js'

let h: ToolsHarness
beforeEach(async () => { h = await toolsHarness() })
afterEach(async () => { await h.cleanup() })

const file = (name: string) => join(h.cwd, name)

describe('write', () => {
  it('creates a new file and its missing parent folders without a prior read', async () => {
    const record = await h.call('write', { file_path: 'deep/er/new.txt', content: 'one\ntwo\n' })
    expect(record.isError).toBe(false)
    expect(resultText(record)).toBe(`Created ${file('deep/er/new.txt')} (2 lines, 8 bytes)`)
    expect(record.meta).toMatchObject({ created: true, lines: 2, bytes: 8 })
    expect(await readFile(file('deep/er/new.txt'), 'utf8')).toBe('one\ntwo\n')
    expect(resultText(await h.call('write', { file_path: 'one.txt', content: 'one\n' }))).toBe(`Created ${file('one.txt')} (1 line, 4 bytes)`)
  })

  it('refuses to overwrite an existing file that was not read in this session', async () => {
    await writeFile(file('a.txt'), 'original\n')
    const record = await h.call('write', { file_path: 'a.txt', content: 'new\n' })
    expect(record.isError).toBe(true)
    expect(record.error).toEqual({ name: 'FsError', code: 'FS_NOT_OBSERVED' })
    expect(resultText(record)).toBe(`Error: write requires reading "${file('a.txt')}" first: read the file, then retry`)
    expect(await readFile(file('a.txt'), 'utf8')).toBe('original\n')
  })

  it('overwrites after a read, with a unified diff in meta, and may write again without re-reading', async () => {
    await writeFile(file('a.txt'), 'keep\nold\n')
    await h.call('read', { file_path: 'a.txt' })
    const record = await h.call('write', { file_path: 'a.txt', content: 'keep\nnew\n' })
    expect(record.isError).toBe(false)
    expect(resultText(record)).toBe(`Overwrote ${file('a.txt')} (2 lines, 9 bytes)`)
    const diff = (record.meta as { diff: string }).diff
    expect(diff).toContain('--- a.txt')
    expect(diff).toContain('-old\n+new')
    expect((await h.call('write', { file_path: 'a.txt', content: 'third\n' })).isError).toBe(false)
    expect(await readFile(file('a.txt'), 'utf8')).toBe('third\n')
  })

  it('detects a file changed since it was read, even at the same size and mtime', async () => {
    await writeFile(file('a.txt'), 'aaaa\n')
    await h.call('read', { file_path: 'a.txt' })
    const before = await stat(file('a.txt'))
    await writeFile(file('a.txt'), 'bbbb\n')
    await utimes(file('a.txt'), before.atime, before.mtime)
    const record = await h.call('write', { file_path: 'a.txt', content: 'mine\n' })
    expect(record.error).toEqual({ name: 'FsError', code: 'FS_STALE' })
    expect(resultText(record)).toContain('changed since it was last read')
    expect(await readFile(file('a.txt'), 'utf8')).toBe('bbbb\n')
  })

  it('the read ledger is per session: a read in one session does not allow a write in another', async () => {
    await h.ctx.plugin(SessionsServicePlugin)
    const a = h.ctx.sessions.create()
    const b = h.ctx.sessions.create()
    await writeFile(file('a.txt'), 'x\n')
    await h.call('read', { file_path: 'a.txt' }, { session: a })
    expect((await h.call('write', { file_path: 'a.txt', content: 'y\n' }, { session: b })).error?.code).toBe('FS_NOT_OBSERVED')
    expect((await h.call('write', { file_path: 'a.txt', content: 'y\n' }, { session: a })).isError).toBe(false)
    expect(h.ctx.readLedger.lookup(a.id, file('a.txt'))?.size).toBe(2)
  })
})

describe('edit', () => {
  async function readFirst(name: string, content: string) {
    await writeFile(file(name), content)
    await h.call('read', { file_path: name })
  }

  it('replaces a unique match and returns a unified diff', async () => {
    await readFirst('e.ts', 'const a = 1\nconst b = 2\nconst c = 3\n')
    const record = await h.call('edit', { file_path: 'e.ts', old_string: 'const b = 2', new_string: 'const b = 20' })
    expect(record.isError).toBe(false)
    const text = resultText(record)
    expect(text.startsWith(`Edited ${file('e.ts')} (1 replacement)\n\n`)).toBe(true)
    expect(text).toContain('@@ -1,3 +1,3 @@')
    expect(text).toContain('-const b = 2\n+const b = 20')
    expect(record.meta).toMatchObject({ replacements: 1 })
    expect(await readFile(file('e.ts'), 'utf8')).toBe('const a = 1\nconst b = 20\nconst c = 3\n')
  })

  it('refuses an ambiguous match unless replace_all, which replaces every occurrence', async () => {
    await readFirst('e.txt', 'x y x y x\n')
    const ambiguous = await h.call('edit', { file_path: 'e.txt', old_string: 'x', new_string: 'z' })
    expect(ambiguous.error).toEqual({ name: 'EditError', code: 'EDIT_AMBIGUOUS' })
    expect(resultText(ambiguous)).toContain('occurs 3 times')
    expect(await readFile(file('e.txt'), 'utf8')).toBe('x y x y x\n')
    const all = await h.call('edit', { file_path: 'e.txt', old_string: 'x', new_string: 'z', replace_all: true })
    expect(all.meta).toMatchObject({ replacements: 3 })
    expect(resultText(all)).toContain('(3 replacements)')
    expect(await readFile(file('e.txt'), 'utf8')).toBe('z y z y z\n')
  })

  it('clear errors for not found, identical strings, an unread file and a missing file', async () => {
    await readFirst('e.txt', 'hello\n')
    expect((await h.call('edit', { file_path: 'e.txt', old_string: 'bye', new_string: 'x' })).error?.code).toBe('EDIT_NOT_FOUND')
    expect((await h.call('edit', { file_path: 'e.txt', old_string: 'hello', new_string: 'hello' })).error?.code).toBe('EDIT_NO_CHANGE')
    await writeFile(file('unread.txt'), 'hello\n')
    const unread = await h.call('edit', { file_path: 'unread.txt', old_string: 'hello', new_string: 'x' })
    expect(unread.error?.code).toBe('FS_NOT_OBSERVED')
    expect(resultText(unread)).toContain('edit requires reading')
    const missing = await h.call('edit', { file_path: 'missing.txt', old_string: 'a', new_string: 'b' })
    expect(missing.error?.code).toBe('FS_NOT_FOUND')
    expect(resultText(missing)).toContain('use write to create')
  })

  it('successive edits need no re-read, but an outside change does', async () => {
    await readFirst('e.txt', 'one two three\n')
    expect((await h.call('edit', { file_path: 'e.txt', old_string: 'one', new_string: '1' })).isError).toBe(false)
    expect((await h.call('edit', { file_path: 'e.txt', old_string: 'two', new_string: '2' })).isError).toBe(false)
    await writeFile(file('e.txt'), '1 2 three!\n')
    expect((await h.call('edit', { file_path: 'e.txt', old_string: 'three', new_string: '3' })).error?.code).toBe('FS_STALE')
  })

  it('new_string is literal ($& and $1 are not replacement patterns)', async () => {
    await readFirst('e.txt', 'price\n')
    await h.call('edit', { file_path: 'e.txt', old_string: 'price', new_string: '$& costs $1' })
    expect(await readFile(file('e.txt'), 'utf8')).toBe('$& costs $1\n')
  })

  it('a CRLF file matches an LF old_string and keeps its CRLF line ends', async () => {
    await readFirst('w.txt', 'a\r\nb\r\nc\r\n')
    const record = await h.call('edit', { file_path: 'w.txt', old_string: 'a\nb', new_string: 'A\nB' })
    expect(record.isError).toBe(false)
    expect(await readFile(file('w.txt'), 'utf8')).toBe('A\r\nB\r\nc\r\n')
  })
})
