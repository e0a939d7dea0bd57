/**
 * Putting files back from the log: the real `write` and `edit` tools change files, their results
 * become log events, and `restoreFiles` undoes them from what the events hold.
 */
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { toolsHarness, type ToolsHarness } from '../../test-support/builtin-tools.js'
import type { SessionEvent } from '../session/types.js'
import { fileChangesAfter, restoreFiles } from './file-changes.js'

let h: ToolsHarness | undefined
afterEach(async () => { await h?.cleanup() })

/** Runs tool calls for real and logs them as the loop does (a tool/call, then its tool/result). */
function recorder(harness: ToolsHarness) {
  const events: SessionEvent[] = []
  let calls = 0
  const log = (type: string, data: unknown) => events.push({ type, seq: events.length, time: 0, data } as SessionEvent)
  return {
    events,
    mark: () => log('turn/end', { turn: 1, reason: { kind: 'completed' } }),
    async call(name: string, args: unknown, outcome?: { isError: boolean; meta?: unknown }) {
      const callId = `c${++calls}`
      log('tool/call', { turn: 1, step: 1, callId, name, arguments: JSON.stringify(args) })
      const record = outcome ?? await harness.call(name, args)
      log('tool/result', { turn: 1, step: 1, message: { role: 'tool', content: [{ type: 'tool-result', toolCallId: callId, content: [], isError: record.isError }] }, ...record.meta === undefined ? {} : { meta: record.meta } })
      return record
    },
  }
}

describe('file changes from the log', () => {
  it('undoes edits and overwrites newest first and removes created files; other tools are counted', async () => {
    h = await toolsHarness()
    const file = (name: string) => join(h!.cwd, name)
    await writeFile(file('a.txt'), 'one\ntwo\nthree\n')
    await writeFile(file('b.txt'), 'bee\n')
    const r = recorder(h)
    await r.call('read', { file_path: 'a.txt' })
    await r.call('read', { file_path: 'b.txt' })
    await r.call('edit', { file_path: 'a.txt', old_string: 'two', new_string: 'TWO' })
    r.mark()
    const boundary = r.events.length - 1
    await r.call('edit', { file_path: 'a.txt', old_string: 'three', new_string: 'THREE\nfour' })
    await r.call('write', { file_path: 'sub/c.txt', content: 'sea\n' })
    await r.call('edit', { file_path: 'sub/c.txt', old_string: 'sea', new_string: 'ocean' })
    await r.call('write', { file_path: 'b.txt', content: 'bumble\nbee\n' })
    await r.call('edit', { file_path: 'a.txt', old_string: 'one', new_string: 'ONE' })
    await r.call('bash', { command: 'true' }, { isError: false })
    await r.call('bash', { command: 'false' }, { isError: true })
    await r.call('edit', { file_path: 'a.txt', old_string: 'missing', new_string: 'x' })
    const found = fileChangesAfter(r.events, boundary)
    expect(found.paths).toEqual([file('a.txt'), file('sub/c.txt'), file('b.txt')])
    expect(found.changes.map(change => change.kind)).toEqual(['patched', 'created', 'patched', 'patched', 'patched'])
    expect([...found.otherCalls]).toEqual([['bash', 1]])
    const outcome = await restoreFiles(found.changes, h.cwd)
    expect(outcome).toEqual({ restored: [file('a.txt'), file('b.txt')], removed: [file('sub/c.txt')], kept: [] })
    // As at the boundary: the edit before it stays.
    expect(await readFile(file('a.txt'), 'utf8')).toBe('one\nTWO\nthree\n')
    expect(await readFile(file('b.txt'), 'utf8')).toBe('bee\n')
    expect(existsSync(file('sub/c.txt'))).toBe(false)
  })

  it('keeps a file changed since where the change was (undoes it where it still applies), one outside the session folder, and one whose change the log does not hold', async () => {
    h = await toolsHarness({ write: { maxMetaDiffChars: 10 } })
    const file = (name: string) => join(h!.cwd, name)
    await writeFile(file('a.txt'), 'alpha\n')
    await writeFile(file('b.txt'), 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n')
    await writeFile(file('big.txt'), 'small\n')
    const r = recorder(h)
    await r.call('read', { file_path: 'a.txt' })
    await r.call('read', { file_path: 'b.txt' })
    await r.call('read', { file_path: 'big.txt' })
    r.mark()
    await r.call('edit', { file_path: 'a.txt', old_string: 'alpha', new_string: 'beta' })
    await r.call('edit', { file_path: 'b.txt', old_string: 'two', new_string: 'TWO' })
    await r.call('write', { file_path: 'big.txt', content: 'a much longer content than ten characters\n' })
    await r.call('write', { file_path: 'made.txt', content: 'new\n' })
    // Changed by hand afterwards: where the model's change was (a.txt), and away from it (b.txt).
    await writeFile(file('a.txt'), 'gamma\n')
    await writeFile(file('b.txt'), 'one\nTWO\nthree\nfour\nfive\nsix\nseven\nEIGHT BY HAND\n')
    await writeFile(file('made.txt'), 'new, then longer\n')
    const outside = { seq: 99, path: '/etc/hostname', kind: 'created' as const, bytes: 1 }
    const found = fileChangesAfter(r.events, 3)
    const outcome = await restoreFiles([...found.changes, outside], h.cwd)
    // The model's change is undone where it still applies; the hand's change elsewhere stays.
    expect(outcome.restored).toEqual([file('b.txt')])
    expect(await readFile(file('b.txt'), 'utf8')).toBe('one\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT BY HAND\n')
    expect(outcome.removed).toEqual([])
    expect(outcome.kept).toEqual([
      { path: file('a.txt'), why: 'it changed since' },
      { path: file('big.txt'), why: 'a change to it is not in the log (too large, or binary)' },
      { path: file('made.txt'), why: 'it changed since it was written' },
      { path: '/etc/hostname', why: 'outside the session folder' },
    ])
    expect(await readFile(file('a.txt'), 'utf8')).toBe('gamma\n')
    expect(await readFile(file('made.txt'), 'utf8')).toBe('new, then longer\n')
  })

  it('a hunk is undone only where it was, never at a like place elsewhere; a diff that does not parse is named; a name starting with .. is inside', async () => {
    h = await toolsHarness()
    const file = (name: string) => join(h!.cwd, name)
    const block = (v: string) => `  a\n  b\n  c\n  ${v}\n  d\n  e\n  f\n`
    const filler = Array.from({ length: 20 }, (_, i) => `line${i}\n`).join('')
    await writeFile(file('f.txt'), block('X') + filler + block('Y'))
    await writeFile(file('..notes'), 'old\n')
    const r = recorder(h)
    await r.call('read', { file_path: 'f.txt' })
    await r.call('read', { file_path: '..notes' })
    r.mark()
    await r.call('edit', { file_path: 'f.txt', old_string: '  X', new_string: '  Y' })
    await r.call('edit', { file_path: '..notes', old_string: 'old', new_string: 'new' })
    // By hand since: the block the model changed is gone; an identical block further down stays.
    await writeFile(file('f.txt'), filler + block('Y'))
    const found = fileChangesAfter(r.events, 2)
    const damaged = { seq: 50, path: file('g.txt'), kind: 'patched' as const, diff: '--- g\n+++ g\n@@ -1,1 +1,1 @@\n?what\n' }
    await writeFile(file('g.txt'), 'g\n')
    const outcome = await restoreFiles([...found.changes, damaged], h.cwd)
    expect(outcome.kept).toEqual([
      { path: file('f.txt'), why: 'it changed since' },
      { path: file('g.txt'), why: 'its change in the log cannot be read' },
    ])
    expect(outcome.restored).toEqual([file('..notes')])
    expect(await readFile(file('f.txt'), 'utf8')).toBe(filler + block('Y'))
    expect(await readFile(file('..notes'), 'utf8')).toBe('old\n')
  })

  it('never writes through a link: a folder swapped for a link to elsewhere, or the file itself a link, is left alone', async () => {
    h = await toolsHarness()
    const file = (name: string) => join(h!.cwd, name)
    const elsewhere = await mkdtemp(join(tmpdir(), 'dsh-elsewhere-'))
    try {
      await mkdir(file('d'))
      await writeFile(file('d/conf'), 'safe\n')
      await writeFile(file('plain.txt'), 'one\n')
      const r = recorder(h)
      await r.call('read', { file_path: 'd/conf' })
      await r.call('read', { file_path: 'plain.txt' })
      r.mark()
      await r.call('edit', { file_path: 'd/conf', old_string: 'safe', new_string: 'changed' })
      await r.call('edit', { file_path: 'plain.txt', old_string: 'one', new_string: 'two' })
      // Since then: `d` is a link to a folder outside, whose file reads as the model left it;
      // plain.txt is a link to a file outside with the content the model wrote.
      await writeFile(join(elsewhere, 'conf'), 'changed\n')
      await writeFile(join(elsewhere, 'target.txt'), 'two\n')
      await rm(file('d'), { recursive: true })
      await symlink(elsewhere, file('d'))
      await rm(file('plain.txt'))
      await symlink(join(elsewhere, 'target.txt'), file('plain.txt'))
      const outcome = await restoreFiles(fileChangesAfter(r.events, 2).changes, h.cwd)
      expect(outcome.restored).toEqual([])
      expect(outcome.kept).toEqual([
        { path: file('d/conf'), why: 'its folder leads outside the session folder' },
        { path: file('plain.txt'), why: 'it is a link now' },
      ])
      expect(await readFile(join(elsewhere, 'conf'), 'utf8')).toBe('changed\n')
      expect(await readFile(join(elsewhere, 'target.txt'), 'utf8')).toBe('two\n')
    } finally {
      await rm(elsewhere, { recursive: true, force: true })
    }
  })
})
