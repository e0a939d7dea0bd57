import { createTwoFilesPatch } from 'diff'
import { describe, expect, it } from 'vitest'
import { liveUpdates, replayUpdates, storedChanges, toolKind, toolTitle } from './updates.js'

const patch = (before: string, after: string) => createTwoFilesPatch('f.txt', 'f.txt', before, after, '', '', { context: 3 })

describe('storedChanges: the diffs of a stored write or edit (session/load)', () => {
  it('a new file is its whole content; an overwrite or edit is one block per hunk, with context', () => {
    expect(storedChanges({ name: 'write', arguments: JSON.stringify({ file_path: 'f.txt', content: 'a\n' }) }, { path: '/w/f.txt', created: true }, '/w'))
      .toEqual([{ path: '/w/f.txt', oldText: null, newText: 'a\n' }])
    const before = Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join('')
    const after = before.replace('line 1\n', 'LINE 1\n').replace('line 18\n', 'LINE 18\n')
    const changes = storedChanges({ name: 'edit', arguments: '{}' }, { path: '/w/f.txt', diff: patch(before, after) }, '/w')
    expect(changes).toEqual([
      { path: '/w/f.txt', oldText: 'line 0\nline 1\nline 2\nline 3\nline 4\n', newText: 'line 0\nLINE 1\nline 2\nline 3\nline 4\n' },
      { path: '/w/f.txt', oldText: 'line 15\nline 16\nline 17\nline 18\nline 19\n', newText: 'line 15\nline 16\nline 17\nLINE 18\nline 19\n' },
    ])
  })

  it('a missing final newline stays missing; no diff stored (too large, binary, other tools) gives no block', () => {
    expect(storedChanges({ name: 'write', arguments: '{}' }, { path: '/w/f.txt', created: false, diff: patch('a\nb', 'a\nc') }, '/w'))
      .toEqual([{ path: '/w/f.txt', oldText: 'a\nb', newText: 'a\nc' }])
    expect(storedChanges({ name: 'write', arguments: '{}' }, { path: '/w/f.txt', created: false, diffOmitted: true }, '/w')).toEqual([])
    expect(storedChanges({ name: 'bash', arguments: '{}' }, { exitCode: 0 }, '/w')).toEqual([])
    expect(storedChanges({ name: 'edit', arguments: '{}' }, undefined, '/w')).toEqual([])
  })
})

describe('code mode over ACP: a program\'s inner calls nest under their run_code call', () => {
  const ev = (type: string, data: unknown) => ({ type, seq: 0, time: 0, data }) as never
  const start = { rootCallId: 'c1', parentCallId: 'c1', subCallId: 'c1:code:1', name: 'read', arguments: { file_path: 'a.txt' } }
  it('dispatch-start is a tool_call in progress with _meta.parentToolCallId; dispatch finishes it (live and on session/load alike)', () => {
    const live = [...liveUpdates(ev('tool/code-dispatch-start', start), 'full', '/w'), ...liveUpdates(ev('tool/code-dispatch', { ...start, isError: true, content: [{ type: 'text', text: 'no such file' }] }), 'full', '/w')]
    expect(live).toEqual([
      expect.objectContaining({ sessionUpdate: 'tool_call', toolCallId: 'c1:code:1', status: 'in_progress', kind: 'read', _meta: { parentToolCallId: 'c1' }, rawInput: { file_path: 'a.txt' } }),
      { sessionUpdate: 'tool_call_update', toolCallId: 'c1:code:1', status: 'failed', content: [{ type: 'content', content: { type: 'text', text: 'no such file' } }], _meta: { parentToolCallId: 'c1' } },
    ])
    const replayed = replayUpdates([ev('tool/code-dispatch-start', start), ev('tool/code-dispatch', { ...start, isError: true, content: [{ type: 'text', text: 'no such file' }] })], '/w')
    expect(replayed).toEqual(live)
    // The recorded mode sends none of it (the original's frames).
    expect(liveUpdates(ev('tool/code-dispatch-start', start), 'recorded', '/w')).toEqual([])
  })
})

describe('web_search over ACP (#44.8)', () => {
  it('is a fetch titled by its queries', () => {
    expect(toolKind('web_search')).toBe('fetch')
    expect(toolTitle('web_search', { queries: ['node lts', 'bun\n1.2'] }, '/w')).toBe('Search node lts, bun 1.2')
    expect(toolTitle('web_search', {}, '/w')).toBe('web_search')
  })
})
