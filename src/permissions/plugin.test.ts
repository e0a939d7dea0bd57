import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls, type ScriptedCall } from '../../test-support/scripted-model.js'
import type { PendingApproval } from '../approval/api.js'
import { ApprovalPlugin } from '../approval/service.js'
import type { Tool } from '../tools/api.js'
import { trustProject } from '../trust/index.js'
import { PermissionRules, PermissionRulesPlugin, type PermissionsConfig } from './plugin.js'
import { loadRules } from './sources.js'
import { suggestRule } from './suggest.js'

/** A stand-in `bash` that records what it ran; `probe` always asks (a hook's `ask`). */
function tools(ran: string[]): Tool[] {
  const tool = (name: string): Tool => ({
    name, description: name, parameters: { type: 'object', properties: { command: { type: 'string' } } },
    execute: (args) => { ran.push(`${name}:${(args as { command?: string }).command ?? ''}`); return { content: [{ type: 'text', text: 'ran' }] } },
  })
  return [tool('bash'), tool('probe'), tool('read')]
}

async function harness(options: Omit<PermissionsConfig, 'root'> & { root?: string; sessionCwd?: string }, calls: ScriptedCall[][], ran: string[] = []): Promise<LoopHarness> {
  const { sessionCwd, ...config } = options
  const root = config.root ?? mkdtempSync(join(tmpdir(), 'dsh-perm-'))
  return loopHarness({
    cwd: sessionCwd ?? root,
    responses: calls.flatMap(group => [toolCalls(group), text('done')]),
    tools: tools(ran),
    setup: async (ctx) => {
      await ctx.plugin(ApprovalPlugin, {}).await()
      ctx.on('tools/pre-execute', async (execution, next) => execution.name === 'probe' ? { kind: 'ask', reason: 'probe asks' } : next())
      await ctx.plugin(PermissionRulesPlugin, { ...config, root }).await()
    },
  })
}

async function turn(h: LoopHarness): Promise<void> {
  h.agent.followup([{ type: 'text', text: 'go' }])
  await h.agent.whenIdle()
}

const results = (h: LoopHarness) => h.of('tool/result').map(e => {
  const message = e.data.message as unknown as { content: [{ content: { text: string }[] }] }
  return message.content[0].content.map(block => block.text).join('')
})
const data = (h: LoopHarness, type: string) => h.of(type).map(e => e.data as Record<string, unknown>)

describe('permission rules on the tool pipeline and the approval seam', () => {
  it('a deny rule refuses before anything runs, naming the rule; the other part of a compound command does not run either', async () => {
    const ran: string[] = []
    const h = await harness({ flags: { deny: ['Bash(rm:*)'] } }, [[{ id: 'c1', name: 'bash', arguments: { command: 'echo hi && rm -rf victim' } }, { id: 'c2', name: 'bash', arguments: { command: 'echo fine' } }]], ran)
    await turn(h)
    expect(ran).toEqual(['bash:echo fine'])
    expect(results(h)[0]).toBe('Error: bash was refused by the permission rule Bash(rm:*) (command line); nothing was run')
    expect(h.of('approval/asked')).toHaveLength(0)
    await h.dispose()
  })

  it('an allow rule grants a request without asking anyone; the decision names the rule', async () => {
    const ran: string[] = []
    const h = await harness({ flags: { allow: ['probe'] } }, [[{ id: 'c1', name: 'probe' }]], ran)
    const asked: PendingApproval[] = []
    h.ctx.approval.answerer(request => { asked.push(request); return 'rejected' })
    await turn(h)
    expect(asked).toEqual([])
    expect(ran).toEqual(['probe:'])
    expect(data(h, 'approval/decided')).toEqual([{ id: expect.any(String), outcome: 'allowed-once', rule: { text: 'probe', kind: 'allow', source: 'command line' } }])
    await h.dispose()
  })

  it('an ask rule asks even where nothing else would, names itself in the request and the log, and offers this session only', async () => {
    const ran: string[] = []
    const h = await harness({ user: { ask: ['Bash(git push:*)'], allow: ['Bash'] }, settingsFile: join(mkdtempSync(join(tmpdir(), 'dsh-h-')), 'settings.yaml') },
      [[{ id: 'c1', name: 'bash', arguments: { command: 'git status && git push origin' } }]], ran)
    const asked: PendingApproval[] = []
    h.ctx.approval.answerer(request => { asked.push(request); return 'rejected' })
    await turn(h)
    expect(ran).toEqual([])
    expect(asked).toHaveLength(1)
    expect(asked[0]).toMatchObject({ toolName: 'bash', askedBy: { text: 'Bash(git push:*)', kind: 'ask', source: 'user settings' } })
    // A compound command offers no wider rule: once or not at all.
    expect(asked[0]!.scopes).toBeUndefined()
    expect(data(h, 'approval/asked')[0]!.rule).toEqual({ text: 'Bash(git push:*)', kind: 'ask', source: 'user settings' })
    expect(results(h)[0]).toBe('Error: the user rejected tool "bash"')
    await h.dispose()
  })

  it('"for this session" is logged with the rule shown; the next matching request is granted from the log, also by a fresh rule set', async () => {
    const ran: string[] = []
    const h = await harness({ user: { ask: ['Bash(git push:*)'] } }, [
      [{ id: 'c1', name: 'bash', arguments: { command: 'git push origin main' } }],
      [{ id: 'c2', name: 'bash', arguments: { command: 'git push --tags' } }],
    ], ran)
    const asked: PendingApproval[] = []
    h.ctx.approval.answerer(request => { asked.push(request); return 'allowed-session' })
    await turn(h)
    expect(asked.map(request => [request.grants, request.scopes])).toEqual([['Bash(git push:*)', ['session']]])
    await turn(h)
    expect(asked).toHaveLength(1)
    expect(ran).toEqual(['bash:git push origin main', 'bash:git push --tags'])
    expect(data(h, 'approval/decided').map(d => [d.outcome, d.rule])).toEqual([
      ['allowed-session', { text: 'Bash(git push:*)', kind: 'allow', source: 'session' }],
      ['allowed-once', { text: 'Bash(git push:*)', kind: 'allow', source: 'session' }],
    ])
    const fresh = new PermissionRules(h.ctx, { root: h.session.header.cwd!, user: { ask: ['Bash(git push:*)'] } }, false)
    expect(fresh.ruling({ session: h.session, toolName: 'bash', callId: 'x', reason: '', arguments: '{"command":"git push"}' })?.rule)
      .toEqual({ text: 'Bash(git push:*)', kind: 'allow', source: 'session' })
    await h.dispose()
  })

  it("a deny rule judges a call's path from the session's own folder, as the tool reads it", async () => {
    const ran: string[] = []
    const root = mkdtempSync(join(tmpdir(), 'dsh-perm-'))
    const sub = join(root, 'sub')
    mkdirSync(sub)
    const h = await harness({ root, sessionCwd: sub, user: { deny: ['Read(./.env)'] } }, [[{ id: 'c1', name: 'read', arguments: { file_path: '../.env' } }]], ran)
    await turn(h)
    expect(ran).toEqual([])
    expect(results(h)[0]).toMatch(/refused by the permission rule Read\(\.\/\.env\)/)
    await h.dispose()
  })

  it('a session grant answers the ask rule that asked, not a narrower ask rule the grant happens to cover', async () => {
    const ran: string[] = []
    const h = await harness({ user: { ask: ['Bash(git push:*)', 'Bash(git push --force:*)'] } }, [
      [{ id: 'c1', name: 'bash', arguments: { command: 'git push origin main' } }],
      [{ id: 'c2', name: 'bash', arguments: { command: 'git push --force origin main' } }],
    ], ran)
    const asked: PendingApproval[] = []
    h.ctx.approval.answerer(request => { asked.push(request); return asked.length === 1 ? 'allowed-session' : 'rejected' })
    await turn(h)
    await turn(h)
    expect(asked.map(request => request.askedBy?.text)).toEqual(['Bash(git push:*)', 'Bash(git push --force:*)'])
    expect(ran).toEqual(['bash:git push origin main'])
    await h.dispose()
  })

  it('"always" appends the rule shown to settings.yaml, keeping the file\'s other content, and grants the next request', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-h-'))
    const settingsFile = join(home, 'settings.yaml')
    writeFileSync(settingsFile, '# my settings\nmodel:\n  default: deepseek-v4-pro # the good one\npermissions:\n  deny:\n    - Bash(rm:*)\n')
    const ran: string[] = []
    const h = await harness({ settingsFile, user: { deny: ['Bash(rm:*)'] } }, [[{ id: 'c1', name: 'probe' }], [{ id: 'c2', name: 'probe' }]], ran)
    const asked: PendingApproval[] = []
    h.ctx.approval.answerer(request => { asked.push(request); return 'allowed-always' })
    await turn(h)
    await turn(h)
    expect(asked.map(request => [request.grants, request.scopes])).toEqual([['probe', ['session', 'always']]])
    expect(ran).toEqual(['probe:', 'probe:'])
    expect(readFileSync(settingsFile, 'utf8')).toBe('# my settings\nmodel:\n  default: deepseek-v4-pro # the good one\npermissions:\n  deny:\n    - Bash(rm:*)\n  allow:\n    - probe\n')
    expect(data(h, 'approval/decided').map(d => d.rule)).toEqual([
      { text: 'probe', kind: 'allow', source: 'user settings' },
      { text: 'probe', kind: 'allow', source: 'user settings' },
    ])
    await h.dispose()
  })

  it('a bad rule in dsh\'s own settings stops the start with one clear error naming it', () => {
    expect(() => loadRules({ root: '/tmp', user: { allow: ['Bash(git * main)'] }, userFile: '/h/settings.yaml' }))
      .toThrow('permission rule "Bash(git * main)" (user settings): a command pattern is exact')
    expect(() => loadRules({ root: '/tmp', user: { allow: 'Bash' }, userFile: '/h/settings.yaml' }))
      .toThrow('/h/settings.yaml: permissions.allow must be a list of rules')
  })
})

describe('the rule an answer offers', () => {
  it('is the narrowest that covers the call; none for compounds, plans, network hosts and cordis runs', () => {
    const root = '/work/p'
    expect(suggestRule('bash', { command: 'git push origin main' }, root, root)).toBe('Bash(git push:*)')
    expect(suggestRule('bash', { command: 'touch /tmp/x' }, root, root)).toBe('Bash(touch /tmp/x)')
    expect(suggestRule('bash', { command: 'a && b' }, root, root)).toBeUndefined()
    expect(suggestRule('bash', { command: 'echo "a b"' }, root, root)).toBeUndefined()
    expect(suggestRule('bash', { command: 'echo $(x)' }, root, root)).toBeUndefined()
    expect(suggestRule('edit', { file_path: 'src/a.ts' }, root, root)).toBe('Edit(src/a.ts)')
    expect(suggestRule('write', { file_path: '/etc/hosts' }, root, root)).toBe('Write(//etc/hosts)')
    expect(suggestRule('web_fetch', { url: 'https://Docs.Example.com/x' }, root, root)).toBe('WebFetch(domain:docs.example.com)')
    expect(suggestRule('mcp__gh__create_issue', {}, root, root)).toBe('mcp__gh__create_issue')
    for (const tool of ['exit_plan_mode', 'network', 'cordis_run']) expect(suggestRule(tool, {}, root, root)).toBeUndefined()
  })
})

describe('rule sources: the project\'s files and trust', () => {
  const project = () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-proj-'))
    const dshHome = mkdtempSync(join(tmpdir(), 'dsh-home-'))
    mkdirSync(join(root, '.claude'))
    writeFileSync(join(root, '.claude', 'settings.json'), JSON.stringify({ permissions: { allow: ['Bash(npm run test:*)', 'Bash(git * main)'], deny: ['Read(./.env)'] } }))
    mkdirSync(join(root, '.dsh'))
    writeFileSync(join(root, '.dsh', 'settings.yaml'), 'permissions:\n  allow: [Bash]\n  deny: ["Bash(curl:*)"]\n')
    return { root, dshHome }
  }

  it('untrusted: .claude/settings.json is ignored and .dsh/settings.yaml gives only deny and ask rules, each said once', () => {
    const { root, dshHome } = project()
    const { rules, notices } = loadRules({ root, dshHome })
    expect(rules.allow).toEqual([])
    expect(rules.deny.map(rule => [rule.text, rule.source])).toEqual([['Bash(curl:*)', '.dsh/settings.yaml']])
    expect(notices).toEqual([
      'dsh: the allow rules of .dsh/settings.yaml are ignored until this folder is trusted (dsh trust on); its deny and ask rules apply',
      'dsh: the permission rules of .claude/settings.json are ignored: this folder is not trusted (dsh trust on)',
    ])
  })

  it('started in the home folder, ~/.claude/settings.json is the user\'s own file: its rules apply without trust', () => {
    const { root, dshHome } = project()
    const { rules } = loadRules({ root, dshHome, home: root })
    expect(rules.allow.map(rule => rule.source)).toEqual(['.dsh/settings.yaml', '.claude/settings.json'])
  })

  it('trusted: .claude/settings.json permissions apply as Claude Code wrote them (a rule dsh cannot read is skipped, said once); a changed file waits for trust again', () => {
    const { root, dshHome } = project()
    trustProject(dshHome, root)
    const { rules, notices } = loadRules({ root, dshHome })
    expect(rules.allow.map(rule => [rule.text, rule.source])).toEqual([['Bash', '.dsh/settings.yaml'], ['Bash(npm run test:*)', '.claude/settings.json']])
    expect(rules.deny.map(rule => rule.text)).toEqual(['Bash(curl:*)', 'Read(./.env)'])
    expect(notices).toEqual([expect.stringMatching(/^dsh: permission rule "Bash\(git \* main\)" \(\.claude\/settings\.json\): .*; skipped$/)])
    writeFileSync(join(root, '.claude', 'settings.json'), JSON.stringify({ permissions: { allow: ['Bash'] } }))
    const changed = loadRules({ root, dshHome })
    expect(changed.rules.allow.map(rule => rule.source)).toEqual(['.dsh/settings.yaml'])
    expect(changed.notices).toEqual(['dsh: the permission rules of .claude/settings.json are ignored: the file is new or changed since the folder was trusted (dsh trust on)'])
  })
})
