/**
 * Going back to an earlier prompt from the web (host/rewind.ts over HTTP): `sessions.rewindPreview`
 * names the files the turns from there changed, `sessions.rewind` forks before the prompt's turn
 * (S-14), hands back the prompt's text, and puts the files back when asked.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { hang, text, toolCalls } from '../../test-support/scripted-model.js'
import { apiClient, startWebApi, type WebApiHarness } from '../../test-support/web-api.js'
import { BuiltinToolsPlugin } from '../tools/builtin/index.js'
import { ApprovalPlugin } from '../approval/service.js'

const TOKEN = 'test-token-0123456789abcdef'

describe('dsh web: going back to an earlier prompt', () => {
  let harness: WebApiHarness
  let home: string
  let port = 0
  const { call, ok } = apiClient(() => port, TOKEN)

  beforeEach(async () => {
    home = mkdtempSync(join(tmpdir(), 'dsh-web-rewind-'))
    harness = await startWebApi({ home, token: TOKEN, plugins: [ctx => ctx.plugin(ApprovalPlugin), ctx => ctx.plugin(BuiltinToolsPlugin, { bash: false })] })
    port = harness.port
  })
  afterEach(async () => {
    await harness.stop()
    rmSync(home, { recursive: true, force: true })
  })

  it('S-14: preview names the changed files; rewind forks before the turn, gives its prompt back, puts the files back; a seq that is no prompt, or a running turn, is refused', async () => {
    const { ctx, model } = harness
    const cwd = mkdtempSync(join(home, 'work-'))
    writeFileSync(join(cwd, 'app.txt'), 'hello\n')
    const created = await ok('sessions.create', { cwd })
    const idle = () => ctx.agents.get(created.id)!.whenIdle()
    model.push(text('first answer'))
    await ok('prompt', { id: created.id, text: 'first question' })
    await idle()
    model.push(
      toolCalls([{ id: 'r1', name: 'read', arguments: '{"file_path":"app.txt"}' }]),
      toolCalls([{ id: 'e1', name: 'edit', arguments: '{"file_path":"app.txt","old_string":"hello","new_string":"HELLO"}' }]),
      toolCalls([{ id: 'w1', name: 'write', arguments: '{"file_path":"new.md","content":"new\\n"}' }]),
      text('second answer'),
    )
    await ok('prompt', { id: created.id, text: 'second question' })
    await idle()
    expect(readFileSync(join(cwd, 'app.txt'), 'utf8')).toBe('HELLO\n')
    const events = ctx.sessions.get(created.id)!.events
    const prompts = events.filter(event => event.type === 'user/message' && (event.data as { source?: { kind?: string } }).source?.kind === 'user')
    const second = prompts[1]!.seq
    expect(await ok('sessions.rewindPreview', { id: created.id, seq: second })).toEqual({ turn: 2, text: 'second question', files: ['app.txt', 'new.md'], otherCalls: [] })
    expect((await call('sessions.rewindPreview', { id: created.id, seq: 0 })).json.error.code).toBe('NOT_A_PROMPT')

    // Made stricter after the second turn: the copy ends before that change, and keeps it.
    await ok('permission.set', { id: created.id, preset: 'read-only' })
    const back = await ok('sessions.rewind', { id: created.id, seq: second, restoreFiles: true })
    expect(back.text).toBe('second question')
    expect(back.files).toEqual({ restored: ['app.txt'], removed: ['new.md'], kept: [] })
    expect(back.session.parentSession).toBe(created.id)
    expect(readFileSync(join(cwd, 'app.txt'), 'utf8')).toBe('hello\n')
    expect(existsSync(join(cwd, 'new.md'))).toBe(false)
    const copy = ctx.sessions.get(back.session.id)!
    expect(ctx.approval.preset(copy)).toBe('read-only')
    expect(copy.events.some(event => event.type === 'turn/start' && (event.data as { turn: number }).turn === 2)).toBe(false)
    expect(copy.events.filter(event => event.type === 'turn/end')).toHaveLength(1)
    // The copy takes the edited prompt as its second turn; the session left keeps its own.
    model.push(text('answer in the copy'))
    await ok('prompt', { id: back.session.id, text: 'second question, edited' })
    await ctx.agents.get(back.session.id)!.whenIdle()
    const request = model.requests.at(-1)!
    const users = request.messages.filter(message => message.role === 'user').map(message => JSON.stringify(message.content))
    expect(users.some(content => content.includes('second question, edited'))).toBe(true)
    expect(users.some(content => content.includes('"second question"'))).toBe(false)
    expect(ctx.sessions.get(created.id)!.events.length).toBe(events.length)

    // Not while a turn runs.
    model.push(hang())
    await ok('prompt', { id: created.id, text: 'a long one' })
    expect((await call('sessions.rewind', { id: created.id, seq: second })).json.error.code).toBe('RUNNING')
    await ok('cancel', { id: created.id })
    await idle()

    // The first prompt: a new session, nothing copied; files left as they are unless asked.
    const first = await ok('sessions.rewind', { id: created.id, seq: prompts[0]!.seq })
    expect(first.text).toBe('first question')
    expect(first.files).toBeUndefined()
    expect(first.session.parentSession).toBeUndefined()
    expect(first.session.turns).toBe(0)
    expect(ctx.approval.preset(ctx.sessions.get(first.session.id)!)).toBe('read-only')
  })
})
