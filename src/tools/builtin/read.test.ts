import { spawnSync } from 'node:child_process'
import { mkdir, symlink, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import fc from 'fast-check'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { resultText, toolsHarness, type ToolsHarness } from '../../../test-support/builtin-tools.js'

let h: ToolsHarness
beforeEach(async () => { h = await toolsHarness() })
afterEach(async () => { await h.cleanup() })

const lines = (n: number, make = (i: number) => `line ${i}`) => Array.from({ length: n }, (_, i) => `${make(i + 1)}\n`).join('')

describe('read', () => {
  it('numbers lines cat -n style (1-based, tab-separated) and resolves paths against the cwd', async () => {
    await writeFile(join(h.cwd, 'a.txt'), 'alpha\nbeta\ngamma\n')
    const record = await h.call('read', { file_path: 'a.txt' })
    expect(record.isError).toBe(false)
    expect(resultText(record)).toBe('     1\talpha\n     2\tbeta\n     3\tgamma')
    expect(record.meta).toMatchObject({ path: join(h.cwd, 'a.txt'), firstLine: 1, lastLine: 3, totalLines: 3 })
  })

  it('counts an unterminated last line and hides CR of CRLF line ends', async () => {
    await writeFile(join(h.cwd, 'crlf.txt'), 'one\r\ntwo\r\nthree')
    const record = await h.call('read', { file_path: 'crlf.txt' })
    expect(resultText(record)).toBe('     1\tone\n     2\ttwo\n     3\tthree')
    expect(record.meta).toMatchObject({ totalLines: 3 })
  })

  it('pages at 2000 lines with a footer telling the next offset', async () => {
    await writeFile(join(h.cwd, 'big.txt'), lines(5000))
    const first = resultText(await h.call('read', { file_path: 'big.txt' }))
    const shown = first.split('\n').filter((l) => /^\s+\d+\t/.test(l))
    expect(shown).toHaveLength(2000)
    expect(shown[1999]).toBe('  2000\tline 2000')
    expect(first.endsWith('[showing lines 1-2000 of 5000; continue with offset=2001]')).toBe(true)

    const last = await h.call('read', { file_path: 'big.txt', offset: 4001 })
    const lastText = resultText(last)
    expect(lastText.startsWith('  4001\tline 4001\n')).toBe(true)
    expect(lastText.endsWith('  5000\tline 5000')).toBe(true)
    expect(last.meta).toMatchObject({ firstLine: 4001, lastLine: 5000, totalLines: 5000 })
  })

  it('offset and limit select a window; limit is capped at 2000', async () => {
    await writeFile(join(h.cwd, 'big.txt'), lines(5000))
    const text = resultText(await h.call('read', { file_path: 'big.txt', offset: 100, limit: 3 }))
    expect(text).toBe('   100\tline 100\n   101\tline 101\n   102\tline 102\n\n[showing lines 100-102 of 5000; continue with offset=103]')
    const capped = await h.call('read', { file_path: 'big.txt', limit: 4000 })
    expect(capped.meta).toMatchObject({ lastLine: 2000 })
  })

  it('cuts lines longer than 2000 characters and says so', async () => {
    await writeFile(join(h.cwd, 'long.txt'), `${'x'.repeat(5000)}\nshort\n`)
    const text = resultText(await h.call('read', { file_path: 'long.txt' }))
    const [first, second] = text.split('\n')
    expect(first).toBe(`     1\t${'x'.repeat(2000)}… [line cut: 5000 chars]`)
    expect(second).toBe('     2\tshort')
    expect(text).toContain('[1 line(s) longer than 2000 characters were cut]')
  })

  it('stops at 50 KB per call and continues from the next line', async () => {
    await writeFile(join(h.cwd, 'wide.txt'), lines(2000, (i) => `${i}:${'w'.repeat(200)}`))
    const record = await h.call('read', { file_path: 'wide.txt' })
    const text = resultText(record)
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(50 * 1024 + 200)
    const meta = record.meta as { lastLine: number; totalLines: number }
    expect(meta.lastLine).toBeLessThan(2000)
    expect(meta.totalLines).toBe(2000)
    expect(text).toContain(`(50 KB per call); continue with offset=${meta.lastLine + 1}]`)
    const next = await h.call('read', { file_path: 'wide.txt', offset: meta.lastLine + 1 })
    expect(resultText(next).startsWith(`${String(meta.lastLine + 1).padStart(6)}\t${meta.lastLine + 1}:`)).toBe(true)
  })

  it('files around the 64 KB read-at-once size read alike: every line counted, the same page', async () => {
    for (const size of [64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 64 * 1024 + 2]) {
      // Lines of 16 bytes, the last one cut to fit `size` exactly (unterminated when cut).
      const full = 'x'.repeat(15) + '\n'
      const body = full.repeat(Math.ceil(size / 16)).slice(0, size)
      await writeFile(join(h.cwd, `s${size}.txt`), body)
      const record = await h.call('read', { file_path: `s${size}.txt`, offset: 4000 })
      const expected = body.split('\n').filter((line, i, all) => i < all.length - 1 || line !== '').length
      expect((record.meta as { totalLines: number }).totalLines).toBe(expected)
      expect(resultText(record).split('\n')[0]).toBe(`${String(4000).padStart(6)}\t${'x'.repeat(15)}`)
    }
  })

  it('an empty file reads as (empty file)', async () => {
    await writeFile(join(h.cwd, 'empty.txt'), '')
    expect(resultText(await h.call('read', { file_path: 'empty.txt' }))).toBe('(empty file)')
  })

  it('T-7: missing files, folders, binary files and offsets past the end are error results with codes', async () => {
    await writeFile(join(h.cwd, 'short.txt'), 'a\nb\n')
    await writeFile(join(h.cwd, 'bin.dat'), Buffer.from([0x7f, 0x45, 0x00, 0x01]))
    await mkdir(join(h.cwd, 'dir'))
    const cases: [unknown, string, RegExp][] = [
      [{ file_path: 'nope.txt' }, 'FS_NOT_FOUND', /file not found: .*nope\.txt/],
      [{ file_path: 'dir' }, 'FS_IS_DIRECTORY', /is a directory/],
      [{ file_path: 'bin.dat' }, 'FS_BINARY', /binary/],
      [{ file_path: 'short.txt', offset: 5 }, 'FS_OFFSET_OUT_OF_RANGE', /offset 5 is past the end .* \(2 lines\)/],
      [{ file_path: 'short.txt', offset: 0 }, 'INVALID_ARGUMENTS', /offset/],
    ]
    for (const [args, code, message] of cases) {
      const record = await h.call('read', args)
      expect(record.isError).toBe(true)
      expect(record.error?.code).toBe(code)
      expect(resultText(record)).toMatch(/^Error: /)
      expect(resultText(record)).toMatch(message)
    }
  })
})

describe('read: files that are not regular files', () => {
  const hasMkfifo = spawnSync('mkfifo', ['--version']).status === 0
  it.skipIf(!hasMkfifo)('T-7: read refuses a FIFO, a socket, a device or a link to one at once, without blocking the file-I/O pool', async () => {
    const kinds = ['fifo', 'socket', 'device', 'link-to-fifo'] as const
    const servers: Server[] = []
    try {
      await fc.assert(fc.asyncProperty(fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 8 }), async (picked) => {
        const paths = await Promise.all(picked.map(async (kind, i) => {
          const path = join(h.cwd, `special-${Math.random().toString(36).slice(2)}-${i}`)
          if (kind === 'fifo' || kind === 'link-to-fifo') {
            const target = kind === 'fifo' ? path : `${path}.target`
            expect(spawnSync('mkfifo', [target]).status).toBe(0)
            if (kind === 'link-to-fifo') await symlink(target, path)
          } else if (kind === 'socket') {
            const server = createServer()
            servers.push(server)
            await new Promise<void>(resolve => server.listen(path, resolve))
          } else {
            return '/dev/zero'
          }
          return path
        }))
        // All at once: more than the pool's four threads if any of them blocked.
        const records = await Promise.all(paths.map(file_path => h.call('read', { file_path })))
        for (const record of records) {
          expect(record.isError).toBe(true)
          expect(record.error?.code).toBe('FS_NOT_REGULAR_FILE')
          expect(resultText(record)).toMatch(/is not a regular file/)
        }
        // The pool is free: a plain file still reads.
        await writeFile(join(h.cwd, 'plain.txt'), 'ok\n')
        expect(resultText(await h.call('read', { file_path: 'plain.txt' }))).toBe('     1\tok')
      }), { numRuns: 15 })
    } finally {
      for (const server of servers) server.close()
    }
  }, 20_000)
})
