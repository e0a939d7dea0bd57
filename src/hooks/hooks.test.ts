import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { defineTool } from '../tools/index.js'
import { compileMatcher, decodeHookRun, discoverHookFiles, HooksPlugin, mergeHooks, parseHookFile, type HookFileSource } from './index.js'

const echo = defineTool({
  name: 'bash',
  description: 'pretend bash: echoes its command',
  schema: z.object({ command: z.string() }),
  execute: ({ command }) => ({ content: [{ type: 'text', text: `ran ${command}` }] }),
})

function workspace(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-hooks-'))
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content))
  return dir
}

async function harness(cwd: string, files: HookFileSource[], responses: NonNullable<Parameters<typeof loopHarness>[0]>['responses']) {
  return loopHarness({
    cwd,
    responses,
    tools: [echo],
    setup: async (ctx) => { await ctx.plugin(HooksPlugin, { cwd, files, discover: false }).await() },
  })
}

const hooksFile = (event: string, command: string, matcher?: string) => ({ hooks: { [event]: [{ ...(matcher !== undefined ? { matcher } : {}), hooks: [{ type: 'command', command }] }] } })

describe('hooks: config and matchers (HK-1, HK-2)', () => {
  it('HK-2: Claude Code literal lists match exactly, and its tool names match the dsh tools', () => {
    const test = compileMatcher('claude-code', 'Bash|Write')
    expect(['bash', 'write', 'Bash', 'edit', 'bashful'].map(test)).toEqual([true, true, true, false, false])
    expect(compileMatcher('claude-code', 'Edit|Write')('edit')).toBe(true)
    expect(compileMatcher('claude-code', '*')('anything')).toBe(true)
    expect(compileMatcher('claude-code', 'ba.*')('bash')).toBe(true)
  })

  it('HK-2 (#44.8): Claude Code\'s WebSearch names web_search, in lists and in regexes', () => {
    expect(['web_search', 'web_fetch'].map(compileMatcher('claude-code', 'WebSearch'))).toEqual([true, false])
    expect(compileMatcher('claude-code', 'Web.*')('web_search')).toBe(true)
  })

  it('HK-2: Codex matchers are unanchored regexes', () => {
    expect(compileMatcher('codex', 'as')('bash')).toBe(true)
    expect(compileMatcher('codex', '^read$')('read')).toBe(true)
    expect(compileMatcher('codex', '^read$')('bash')).toBe(false)
  })

  it('HK-1: an invalid consumed matcher rejects the whole file; UserPromptSubmit/Stop discard theirs', () => {
    const bad = { hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'exit 2' }] }], PreToolUse: [{ matcher: '[', hooks: [{ type: 'command', command: 'true' }] }] } }
    expect(() => parseHookFile(JSON.stringify(bad), 'claude-code')).toThrow(/not a valid regular expression/)
    const ignored = { hooks: { UserPromptSubmit: [{ matcher: '[', hooks: [{ type: 'command', command: 'exit 2' }] }] } }
    expect(parseHookFile(JSON.stringify(ignored), 'codex').groups).toHaveLength(1)
  })

  it('HK-1: non-command hook types are skipped with a warning, not rejected', () => {
    const file = { hooks: { Stop: [{ hooks: [{ type: 'prompt', prompt: 'x' }, { type: 'command', command: 'true', timeout: 5 }] }] } }
    const parsed = parseHookFile(JSON.stringify(file), 'claude-code')
    expect(parsed.groups[0]!.hooks).toEqual([{ command: 'true', timeoutSec: 5 }])
    expect(parsed.warnings[0]).toMatch(/not supported/)
  })
})

describe('hooks: discovery', () => {
  it('started in the home folder, the user\'s .claude/settings.json is found once, as the user\'s file (no trust step, no double run)', () => {
    const home = workspace({})
    mkdirSync(join(home, '.claude'))
    writeFileSync(join(home, '.claude', 'settings.json'), JSON.stringify(hooksFile('Stop', 'true')))
    expect(discoverHookFiles(home, home)).toEqual([{ dialect: 'claude-code', path: join(home, '.claude', 'settings.json'), origin: 'user' }])
    const project = workspace({})
    mkdirSync(join(project, '.claude'))
    writeFileSync(join(project, '.claude', 'settings.json'), '{}')
    expect(discoverHookFiles(project, home).map(source => source.origin)).toEqual(['user', 'project'])
  })
})

describe('hooks: output protocol (HK-4) and merging', () => {
  it('HK-4: exit 2 blocks with stderr, other non-zero exits pass, exit 0 parses JSON', () => {
    expect(decodeHookRun({ exitCode: 2, stdout: '', stderr: ' no \n' }, 'PreToolUse', 'claude-code')).toEqual({ decision: 'block', reason: 'no' })
    expect(decodeHookRun({ exitCode: 1, stdout: '', stderr: 'boom' }, 'PreToolUse', 'claude-code')).toEqual({ decision: 'pass' })
    const ask = JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'ask', permissionDecisionReason: 'why' } })
    expect(decodeHookRun({ exitCode: 0, stdout: ask, stderr: '' }, 'PreToolUse', 'claude-code')).toEqual({ decision: 'ask', reason: 'why' })
    // Output naming another event is ignored.
    expect(decodeHookRun({ exitCode: 0, stdout: ask, stderr: '' }, 'PostToolUse', 'claude-code')).toEqual({ decision: 'pass' })
    expect(decodeHookRun({ exitCode: 0, stdout: 'plain', stderr: '' }, 'UserPromptSubmit', 'codex')).toEqual({ decision: 'pass', context: 'plain' })
    // Claude Code adds a UserPromptSubmit or SessionStart hook's plain stdout to the context too (#44.3); other points drop it.
    expect(decodeHookRun({ exitCode: 0, stdout: 'plain', stderr: '' }, 'UserPromptSubmit', 'claude-code')).toEqual({ decision: 'pass', context: 'plain' })
    expect(decodeHookRun({ exitCode: 0, stdout: 'plain', stderr: '' }, 'SessionStart', 'claude-code')).toEqual({ decision: 'pass', context: 'plain' })
    expect(decodeHookRun({ exitCode: 0, stdout: 'plain', stderr: '' }, 'PreToolUse', 'claude-code')).toEqual({ decision: 'pass' })
  })

  it('most restrictive wins: deny > ask > allow; reasons and contexts joined in order', () => {
    expect(mergeHooks([{ decision: 'allow' }, { decision: 'ask', reason: 'a' }, { decision: 'deny', reason: 'd1' }, { decision: 'block', reason: 'd2', context: 'c' }]))
      .toEqual({ decision: 'deny', reason: 'd1\n\nd2', context: 'c' })
    expect(mergeHooks([{ decision: 'allow' }, { decision: 'ask' }]).decision).toBe('ask')
  })
})

describe('hooks: the bridge on a live agent', () => {
  it('HK-3, HK-5: a PreToolUse block stops the body; the pair sits between tool/call and tool/result', async () => {
    const cwd = workspace({ 'hooks.json': hooksFile('PreToolUse', "echo 'bash is disabled' >&2; exit 2", 'Bash') })
    const h = await harness(cwd, [{ dialect: 'claude-code', path: 'hooks.json' }], [toolCalls([{ id: 'c1', name: 'bash', arguments: { command: 'echo hi' } }]), text('ok')])
    h.agent.followup('go')
    await h.agent.whenIdle()
    const types = h.types()
    const call = types.indexOf('tool/call')
    expect(types.slice(call, call + 4)).toEqual(['tool/call', 'hook/invoked', 'hook/result', 'tool/result'])
    expect(h.of('hook/invoked')[0]!.data).toEqual({ turn: 1, point: 'PreToolUse', dialect: 'claude-code', handlerId: 'claude-code:PreToolUse:1', matcher: 'Bash' })
    expect(h.of('hook/result')[0]!.data).toMatchObject({ decision: 'block', exitCode: 2, stderrSummary: 'bash is disabled' })
    const result = h.of('tool/result')[0]!.data.message.content[0]
    expect(result.isError).toBe(true)
    expect(result.content).toEqual([{ type: 'text', text: 'Error: bash is disabled' }])
    await h.dispose()
  })

  it('HK-10: hooks run in the session cwd with the Claude Code stdin payload', async () => {
    const cwd = workspace({ 'hooks.json': hooksFile('PreToolUse', 'cat > payload.json; pwd > where.txt') })
    const h = await harness(cwd, [{ dialect: 'claude-code', path: join(cwd, 'hooks.json') }], [toolCalls([{ id: 'c1', name: 'bash', arguments: { command: 'ls' } }]), text('ok')])
    h.agent.followup('go')
    await h.agent.whenIdle()
    const raw = readFileSync(join(cwd, 'payload.json'), 'utf8')
    expect(raw.endsWith('\n')).toBe(true)
    expect(JSON.parse(raw)).toEqual({ session_id: h.session.id, transcript_path: '', cwd, hook_event_name: 'PreToolUse', tool_name: 'bash', tool_input: { command: 'ls' }, tool_use_id: 'c1' })
    expect(readFileSync(join(cwd, 'where.txt'), 'utf8').trim()).toBe(cwd)
    expect(h.of('tool/result')[0]!.data.message.content[0].isError).toBe(false)
    await h.dispose()
  })

  it('HK-7: PostToolUse context is queued next-step after the tool/result; block replaces the content', async () => {
    const context = JSON.stringify({ hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: 'audited' } })
    const cwd = workspace({
      'cc.json': hooksFile('PostToolUse', `echo '${context}'`, 'bash'),
      'codex.json': hooksFile('PostToolUse', "echo 'rejected output' >&2; exit 2", 'ba'),
    })
    const h = await harness(cwd, [{ dialect: 'claude-code', path: 'cc.json' }, { dialect: 'codex', path: 'codex.json' }],
      [toolCalls([{ id: 'c1', name: 'bash', arguments: { command: 'x' } }]), text('ok')])
    h.agent.followup('go')
    await h.agent.whenIdle()
    const types = h.types()
    const result = types.indexOf('tool/result')
    expect(types.slice(result - 4, result + 2)).toEqual(['hook/invoked', 'hook/result', 'hook/invoked', 'hook/result', 'tool/result', 'agent/inbox/spliced'])
    expect(h.of('tool/result')[0]!.data.message.content[0]).toMatchObject({ isError: true, content: [{ type: 'text', text: 'rejected output' }] })
    const claimed = h.of('user/message').map(e => e.data).filter(m => m.source.kind === 'plugin')
    expect(claimed).toEqual([expect.objectContaining({ content: [{ type: 'text', text: 'audited' }], source: { kind: 'plugin', plugin: 'hooks-claude-code' } })])
    await h.dispose()
  })

  it('HK-8: UserPromptSubmit context follows the entered messages; a block rejects the step', async () => {
    const cwd = workspace({ 'ctx.json': hooksFile('UserPromptSubmit', 'echo "favourite colour: teal"') })
    const h = await harness(cwd, [{ dialect: 'codex', path: 'ctx.json' }], [text('teal')])
    h.agent.followup('colour?')
    await h.agent.whenIdle()
    const messages = h.of('user/message').map(e => e.data)
    expect(messages.map(m => (m.content[0] as { text: string }).text)).toEqual(['colour?', 'favourite colour: teal'])
    expect(h.types().indexOf('hook/result')).toBeLessThan(h.types().indexOf('step/start'))
    await h.dispose()

    const blocking = workspace({ 'block.json': hooksFile('UserPromptSubmit', "echo 'no prompts today' >&2; exit 2", '[') })
    const b = await harness(blocking, [{ dialect: 'claude-code', path: 'block.json' }], [])
    b.agent.followup('hello')
    await b.agent.whenIdle()
    expect(b.of('turn/end')[0]!.data.reason).toEqual({ kind: 'blocked', message: 'no prompts today' })
    expect(b.types()).not.toContain('step/start')
    await b.dispose()
  })

  it('HK-9: a Stop block steers one more step; stop_hook_active is reported and blocks are capped', async () => {
    const cwd = workspace({ 'stop.json': hooksFile('Stop', "cat >> stdin.log; echo >> stdin.log; echo 'say SECOND' >&2; exit 2") })
    const h = await loopHarness({
      cwd, responses: [text('FIRST'), text('SECOND'), text('THIRD')],
      setup: async (ctx) => { await ctx.plugin(HooksPlugin, { cwd, files: [{ dialect: 'codex', path: 'stop.json' }], discover: false, maxStopBlocks: 2 }).await() },
    })
    h.agent.followup('go')
    await h.agent.whenIdle()
    expect(h.of('step/start')).toHaveLength(3)
    expect(h.of('hook/invoked').map(e => e.data.handlerId)).toEqual(['codex:Stop:1', 'codex:Stop:2'])
    const payloads = readFileSync(join(cwd, 'stdin.log'), 'utf8').trim().split('\n').map(line => JSON.parse(line) as Record<string, unknown>)
    expect(payloads.map(p => p.stop_hook_active)).toEqual([false, true])
    expect(payloads[0]).toMatchObject({ hook_event_name: 'Stop', transcript_path: null, permission_mode: 'default', turn_id: '1', last_assistant_message: null })
    const steer = h.of('user/message').map(e => e.data).find(m => m.source.kind === 'plugin')
    expect(steer).toMatchObject({ content: [{ type: 'text', text: 'say SECOND' }], source: { kind: 'plugin', plugin: 'hooks-codex' } })
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'completed' })
    await h.dispose()
  })

  it('HK-10: cancelling the turn kills a running hook', async () => {
    const cwd = workspace({ 'slow.json': hooksFile('PreToolUse', 'touch started; sleep 30') })
    const h = await harness(cwd, [{ dialect: 'claude-code', path: 'slow.json' }], [toolCalls([{ id: 'c1', name: 'bash', arguments: { command: 'x' } }])])
    const started = new Promise<void>(resolve => {
      const off = h.ctx.on('session/event', (_session, event) => { if (event.type === 'hook/invoked') { off(); resolve() } })
    })
    h.agent.followup('go')
    await started
    h.agent.cancel()
    await h.agent.whenIdle()
    expect(h.of('hook/result')[0]!.data.decision).toBe('pass')
    expect(h.of('turn/end')[0]!.data.reason).toMatchObject({ kind: 'aborted' })
    await h.dispose()
  })

  it('HK-1: a rejected file registers nothing and the agent still works', async () => {
    const cwd = workspace({ 'bad.json': { hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'exit 2' }] }], PreToolUse: [{ matcher: '[', hooks: [{ type: 'command', command: 'exit 2' }] }] } } })
    const h = await harness(cwd, [{ dialect: 'codex', path: 'bad.json' }, { dialect: 'codex', path: 'missing.json' }], [text('PONG')])
    h.agent.followup('ping')
    await h.agent.whenIdle()
    expect(h.types().filter(t => t.startsWith('hook/'))).toEqual([])
    expect(h.of('turn/end')[0]!.data.reason).toEqual({ kind: 'completed' })
    await h.dispose()
  })

  it('HK-1: a hook file that cannot be read is one formatted line on the host\'s stderr', async () => {
    const { Context } = await import('cordis')
    const { SessionsServicePlugin } = await import('../session/index.js')
    const ctx = new Context()
    let stderr = ''
    ctx.provide('host', { stderr: { write: (text: string) => { stderr += text; return true } } } as never)
    await ctx.plugin(SessionsServicePlugin)
    const cwd = workspace({})
    await ctx.plugin(HooksPlugin, { cwd, discover: false, files: [{ dialect: 'codex', path: 'missing.json' }] })
    expect(stderr).toMatch(new RegExp(`^dsh hooks: hook file ${join(cwd, 'missing.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not readable \\(.*ENOENT.*\\); no hooks from it\\n$`))
  })

  it('project hooks need the trust step; explicit rows do not', async () => {
    const cwd = workspace({})
    const { mkdirSync } = await import('node:fs')
    mkdirSync(join(cwd, '.claude'))
    writeFileSync(join(cwd, '.claude', 'settings.json'), JSON.stringify(hooksFile('UserPromptSubmit', 'exit 2')))
    const home = mkdtempSync(join(tmpdir(), 'dsh-hooks-home-'))
    const load = async (trusted: string[]) => {
      const h = await loopHarness({ cwd, responses: [text('PONG')], setup: async (ctx) => { await ctx.plugin(HooksPlugin, { cwd, userHome: home, dshHome: home, trustedProjects: trusted }).await() } })
      h.agent.followup('ping')
      await h.agent.whenIdle()
      const reason = h.of('turn/end')[0]!.data.reason.kind
      await h.dispose()
      return reason
    }
    expect(await load([])).toBe('completed')
    expect(await load([cwd])).toBe('blocked')
  })
})
