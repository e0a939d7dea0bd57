import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { toolsHarness, type ToolsHarness } from '../../../test-support/builtin-tools.js'
import { join } from 'node:path'

let h: ToolsHarness
beforeEach(async () => { h = await toolsHarness() })
afterEach(async () => { await h.cleanup() })

describe('canonical values of the built-in tools, as a program sees them (#36)', () => {
  it('write, read, edit and bash give the recorded shapes', async () => {
    const path = join(h.cwd, 'a.txt')
    expect((await h.call('write', { file_path: 'a.txt', content: 'one\ntwo\n' })).value).toEqual({ path, operation: 'create', before: null, after: 'one\ntwo\n' })
    expect((await h.call('read', { file_path: 'a.txt', offset: 2 })).value).toEqual({ path, offset: 2, lines: [{ number: 2, text: 'two' }], totalLines: 2 })
    expect((await h.call('edit', { file_path: 'a.txt', old_string: 'two', new_string: 'three' })).value).toEqual({ path, before: 'one\ntwo\n', after: 'one\nthree\n' })
    expect((await h.call('write', { file_path: 'a.txt', content: 'x' })).value).toEqual({ path, operation: 'update', before: 'one\nthree\n', after: 'x' })
    const bash = (await h.call('bash', { command: 'echo out; echo err >&2; exit 3', description: 'Print and fail' })).value
    expect(bash).toMatchObject({ kind: 'foreground', exitCode: 3, signal: null, timedOut: false, aborted: false, stdout: { text: 'out\n', truncated: false }, stderr: { text: 'err\n', truncated: false } })
    expect(typeof (bash as { timeoutMs: unknown }).timeoutMs).toBe('number')
  })
})
