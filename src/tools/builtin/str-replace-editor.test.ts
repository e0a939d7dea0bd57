import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { loopHarness } from '../../../test-support/agent-harness.js'
import { resultText, toolsHarness, type ToolsHarness } from '../../../test-support/builtin-tools.js'
import { text, toolCalls } from '../../../test-support/scripted-model.js'
import { ApprovalPlugin } from '../../approval/service.js'
import { SandboxPlugin } from '../../sandbox/service.js'
import { fileChangesAfter, restoreFiles } from '../file-changes.js'
import { ToolsPlugin } from '../index.js'
import { BuiltinToolsPlugin } from './index.js'
import { StrReplaceEditorToolPlugin } from './str-replace-editor.js'

let h: ToolsHarness
beforeEach(async () => {
  h = await toolsHarness()
  await h.ctx.plugin(StrReplaceEditorToolPlugin)
})
afterEach(async () => { await h.cleanup() })

const editor = (args: Record<string, unknown>) => h.call('str_replace_editor', args)

describe('str_replace_editor', () => {
  it('create, view, str_replace as recorded (persistent-tools)', async () => {
    const path = join(h.cwd, 'note.txt')
    const created = await editor({ command: 'create', path, file_text: 'target:\n\told\n' })
    expect(resultText(created)).toBe(`New file created successfully at: ${path}`)
    expect(created.meta).toMatchObject({ path, created: true, bytes: 13 })
    const viewed = await editor({ command: 'view', path })
    expect(resultText(viewed)).toBe(`Here's the content of ${path} with line numbers (which has a total of 3 lines):\n     1  target:\n     2  \told\n     3  \n`)
    const replaced = await editor({ command: 'str_replace', path, old_str: '\told', new_str: '\tnew' })
    expect(resultText(replaced)).toBe(`The file ${path} has been edited successfully.`)
    expect(replaced.isError).toBe(false)
    expect(readFileSync(path, 'utf8')).toBe('target:\n\tnew\n')
    expect((replaced.meta as { diff: string }).diff).toContain('-\told\n+\tnew')
  })

  it('view_range shows part of a file; a bad range is a clear error', async () => {
    const path = join(h.cwd, 'lines.txt')
    writeFileSync(path, 'a\nb\nc\nd')
    expect(resultText(await editor({ command: 'view', path, view_range: [2, 3] }))).toBe(`Here's the content of ${path} with line numbers (lines 2 to 3 of 4):\n     2  b\n     3  c\n`)
    expect(resultText(await editor({ command: 'view', path, view_range: [3, -1] }))).toContain('     3  c\n     4  d\n')
    const bad = await editor({ command: 'view', path, view_range: [5, 6] })
    expect(bad.isError).toBe(true)
    expect(resultText(bad)).toContain('view_range starts at 5')
    expect((await editor({ command: 'view', path, view_range: [3, 2] })).isError).toBe(true)
  })

  it('view of a folder lists it two levels deep, hidden entries left out', async () => {
    mkdirSync(join(h.cwd, 'src', 'deep', 'deeper'), { recursive: true })
    writeFileSync(join(h.cwd, 'src', 'a.ts'), '')
    writeFileSync(join(h.cwd, '.secret'), '')
    writeFileSync(join(h.cwd, 'src', 'deep', 'deeper', 'x'), '')
    const listed = resultText(await editor({ command: 'view', path: h.cwd }))
    expect(listed).toBe(`Files and folders up to 2 levels deep in ${h.cwd}, hidden ones left out:\n${join(h.cwd, 'src/')}\n${join(h.cwd, 'src/a.ts')}\n${join(h.cwd, 'src/deep/')}\n`)
  })

  it('str_replace needs exactly one match: none and many are errors that change nothing', async () => {
    const path = join(h.cwd, 'many.txt')
    await editor({ command: 'create', path, file_text: 'x = 1\ny = 2\nx = 1\n' })
    const none = await editor({ command: 'str_replace', path, old_str: 'z = 3', new_str: 'q' })
    expect(none.isError).toBe(true)
    expect(resultText(none)).toContain('old_str does not occur')
    const many = await editor({ command: 'str_replace', path, old_str: 'x = 1', new_str: 'q' })
    expect(many.isError).toBe(true)
    expect(resultText(many)).toContain('occurs 2 times')
    expect(resultText(many)).toContain('lines 1, 3')
    expect(readFileSync(path, 'utf8')).toBe('x = 1\ny = 2\nx = 1\n')
  })

  it('insert puts new_str after insert_line (0: at the top); out of range is an error', async () => {
    const path = join(h.cwd, 'ins.txt')
    await editor({ command: 'create', path, file_text: 'one\ntwo\n' })
    expect(resultText(await editor({ command: 'insert', path, insert_line: 1, new_str: 'between' }))).toBe(`The file ${path} has been edited successfully.`)
    await editor({ command: 'insert', path, insert_line: 0, new_str: 'top' })
    expect(readFileSync(path, 'utf8')).toBe('top\none\nbetween\ntwo\n')
    const out = await editor({ command: 'insert', path, insert_line: 99, new_str: 'x' })
    expect(out.isError).toBe(true)
    expect(resultText(out)).toContain('insert_line 99 is outside the file')
  })

  it('undo_edit takes back changes newest first, a create last (the file goes); with nothing left it is an error', async () => {
    const path = join(h.cwd, 'undo.txt')
    await editor({ command: 'create', path, file_text: 'v1\n' })
    await editor({ command: 'str_replace', path, old_str: 'v1', new_str: 'v2' })
    await editor({ command: 'str_replace', path, old_str: 'v2', new_str: 'v3' })
    expect(resultText(await editor({ command: 'undo_edit', path }))).toBe(`Last edit to ${path} undone.`)
    expect(readFileSync(path, 'utf8')).toBe('v2\n')
    await editor({ command: 'undo_edit', path })
    expect(readFileSync(path, 'utf8')).toBe('v1\n')
    await editor({ command: 'undo_edit', path })
    expect(existsSync(path)).toBe(false)
    const nothing = await editor({ command: 'undo_edit', path })
    expect(nothing.isError).toBe(true)
    expect(resultText(nothing)).toContain(`nothing to undo for ${path}`)
  })

  it('follows the read-before-write rule: an unseen file is not changed, a viewed one is', async () => {
    const path = join(h.cwd, 'theirs.txt')
    writeFileSync(path, 'mine\n')
    const blind = await editor({ command: 'str_replace', path, old_str: 'mine', new_str: 'ours' })
    expect(blind.isError).toBe(true)
    expect(resultText(blind)).toContain('requires reading')
    expect((await editor({ command: 'create', path, file_text: 'x' })).isError).toBe(true)
    await editor({ command: 'view', path })
    expect((await editor({ command: 'str_replace', path, old_str: 'mine', new_str: 'ours' })).isError).toBe(false)
    // Changed behind the session's back: stale.
    writeFileSync(path, 'changed\n')
    expect(resultText(await editor({ command: 'insert', path, insert_line: 0, new_str: 'x' }))).toContain('changed since it was last read')
  })

  it('bad input is a clear error: unknown command, missing argument, missing file', async () => {
    expect(resultText(await editor({ command: 'delete', path: 'x' }))).toContain('invalid arguments')
    expect(resultText(await editor({ command: 'create', path: join(h.cwd, 'y') }))).toContain('create needs file_text')
    expect(resultText(await editor({ command: 'view', path: join(h.cwd, 'missing') }))).toContain('file not found')
  })

  it('its changes are file-change records: the rewind puts the files back', async () => {
    const path = join(h.cwd, 'tracked.txt')
    const events: { seq: number; type: string; data: unknown }[] = []
    let seq = -1
    const record = async (args: Record<string, unknown>, id: string) => {
      events.push({ seq: ++seq, type: 'tool/call', data: { callId: id, name: 'str_replace_editor' } })
      const result = await editor(args)
      events.push({ seq: ++seq, type: 'tool/result', data: { message: { content: [{ toolCallId: id, isError: result.isError }] }, meta: result.meta } })
    }
    await record({ command: 'create', path, file_text: 'a\n' }, 'c1')
    await record({ command: 'view', path }, 'c2')
    await record({ command: 'str_replace', path, old_str: 'a', new_str: 'b' }, 'c3')
    const changes = fileChangesAfter(events as never, -1)
    expect(changes.changes.map(c => c.kind)).toEqual(['created', 'patched'])
    const outcome = await restoreFiles(changes.changes, h.cwd)
    expect(outcome.removed).toEqual([path])
    expect(existsSync(path)).toBe(false)
  })
})

describe('str_replace_editor under the sandbox', () => {
  let root: string
  let outside: string
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'dsh-editor-root-'))
    outside = mkdtempSync(join(homedir(), '.dsh-editor-outside-'))
  })
  afterEach(() => {
    rmSync(root, { recursive: true, force: true })
    rmSync(outside, { recursive: true, force: true })
  })

  async function sandboxed() {
    const ctx = new Context()
    await ctx.plugin(ToolsPlugin)
    await ctx.plugin(SandboxPlugin, { workspaceRoot: root, mode: 'workspace-write' })
    await ctx.plugin(BuiltinToolsPlugin)
    await ctx.plugin(StrReplaceEditorToolPlugin)
    return (args: Record<string, unknown>) => ctx.tools.execute({ callId: 'e', name: 'str_replace_editor', arguments: JSON.stringify(args) }, { cwd: root, signal: new AbortController().signal })
  }

  it('workspace-write: outside the workspace is refused with the marker; a protected path too', async () => {
    const call = await sandboxed()
    const escape = await call({ command: 'create', path: join(outside, 'x.txt'), file_text: 'x' })
    expect(escape.isError).toBe(true)
    expect(resultText(escape)).toContain('[sandbox: file access denied under workspace-write mode]')
    expect(existsSync(join(outside, 'x.txt'))).toBe(false)
    mkdirSync(join(root, '.git'))
    const hook = await call({ command: 'create', path: join(root, '.git', 'config'), file_text: '[core]\n' })
    expect(hook.isError).toBe(true)
    expect(resultText(hook)).toContain('is protected')
    expect(existsSync(join(root, '.git', 'config'))).toBe(false)
    expect((await call({ command: 'create', path: join(root, 'in.txt'), file_text: 'in' })).isError).toBe(false)
  })

  it('an escalation asks the approval channel, and only an approved one writes outside', async () => {
    const target = join(outside, 'approved.txt')
    const run = async (answer: 'allowed-once' | 'rejected') => {
      const lh = await loopHarness({
        cwd: root,
        responses: [toolCalls([{ id: 'c1', name: 'str_replace_editor', arguments: { command: 'create', path: target, file_text: 'ok', sandbox_permissions: 'danger-full-access', justification: 'the user asked for this file' } }]), text('done')],
        setup: async (ctx) => {
          await ctx.plugin(ApprovalPlugin, {}).await()
          await ctx.plugin(SandboxPlugin, { workspaceRoot: root }).await()
          await ctx.plugin(BuiltinToolsPlugin).await()
          await ctx.plugin(StrReplaceEditorToolPlugin).await()
          ctx.approval.answerer(() => answer)
        },
      })
      lh.agent.followup([{ type: 'text', text: 'go' }])
      await lh.agent.whenIdle()
      return lh
    }
    const rejected = await run('rejected')
    expect(rejected.of('approval/asked').map(e => (e.data as { reason: string }).reason)).toEqual(['escalate sandbox to danger-full-access: the user asked for this file'])
    expect(existsSync(target)).toBe(false)
    const approved = await run('allowed-once')
    expect(approved.of('approval/decided').map(e => (e.data as { outcome: string }).outcome)).toEqual(['allowed-once'])
    expect(readFileSync(target, 'utf8')).toBe('ok')
  })
})
