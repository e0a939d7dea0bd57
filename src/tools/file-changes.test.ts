/**
 * Putting files back from the log: the real `write` and `edit` tools change files, their results
 * become log events, and `restoreFiles` undoes them from what the events hold.
 */
import { readFile, writeFile } from 'node:fs/promises'
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
})
