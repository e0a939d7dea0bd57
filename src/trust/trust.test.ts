/**
 * Project trust (docs/security.md, "Project trust"): what a folder would run, trusting and
 * revoking it, and `/trust on` in a live runtime, where the project's real MCP server (stdio)
 * starts at once and its hook file is loaded before the next step.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { testServerEntry } from '../../test-support/mcp.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { CommandsPlugin } from '../commands/index.js'
import { readSettings } from '../config/home.js'
import { HooksPlugin } from '../hooks/index.js'
import { McpPlugin } from '../mcp/plugin.js'
import { defineTool } from '../tools/index.js'
import { readTrustedProjects, trustListProblem, trustProject } from './index.js'
import { formatTrustStatus, needsTrust, ProjectTrustPlugin, projectTrustStatus, revokeFolder, settingsStore, trustFolder, trustNotice } from './plugin.js'

const hookFile = { hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'echo "not in this project" >&2; exit 2' }] }] } }

function project(options: { hooks?: boolean; mcp?: boolean } = {}): { home: string; folder: string; userHome: string } {
  const root = mkdtempSync(join(tmpdir(), 'dsh-trust-'))
  const home = join(root, 'dsh-home')
  const folder = join(root, 'project')
  const userHome = join(root, 'user')
  for (const dir of [home, folder, userHome]) mkdirSync(dir, { recursive: true })
  if (options.hooks !== false) {
    mkdirSync(join(folder, '.claude'))
    writeFileSync(join(folder, '.claude', 'settings.json'), JSON.stringify(hookFile))
  }
  if (options.mcp !== false) writeFileSync(join(folder, '.mcp.json'), JSON.stringify({ mcpServers: { demo: testServerEntry() } }))
  return { home, folder, userHome }
}

describe('project trust: what a folder runs, trusting and revoking it', () => {
  it('lists the hook files with their events and the .mcp.json servers with what they run', () => {
    const { home, folder, userHome } = project()
    writeFileSync(join(folder, '.claude', 'settings.local.json'), JSON.stringify({ permissions: { allow: [] } }))
    const status = projectTrustStatus(folder, home, undefined, userHome)
    expect(status.trustedBy).toBeUndefined()
    // A settings file without hooks runs nothing and is not listed.
    expect(status.hookFiles).toEqual([{ path: join('.claude', 'settings.json'), events: ['PreToolUse'] }])
    expect(status.mcp).toEqual({ servers: [{ name: 'demo', runs: `${process.execPath} ${testServerEntry().args}` }], pinned: false })
    expect(needsTrust(status)).toBe(true)
  })

  it('#44.3: the folder\'s .claude/skills are named: waiting until the folder is trusted, in use after; they need no trust of their own', () => {
    const { home, folder, userHome } = project({ hooks: false, mcp: false })
    for (const name of ['deploy', 'ship']) {
      mkdirSync(join(folder, '.claude', 'skills', name), { recursive: true })
      writeFileSync(join(folder, '.claude', 'skills', name, 'SKILL.md'), `---\nname: ${name}\ndescription: x\n---\n`)
    }
    const before = projectTrustStatus(folder, home, undefined, userHome)
    expect(needsTrust(before)).toBe(false)
    expect(formatTrustStatus(before).split('\n').slice(1)).toEqual([
      'It has no project files that run code (hooks, .mcp.json).',
      'Its .claude/skills (2 skills) count once the folder is trusted.',
      'Trust it with `/trust on` (or `dsh trust on` in the folder).',
    ])
    trustProject(home, folder)
    expect(formatTrustStatus(projectTrustStatus(folder, home, undefined, userHome)).split('\n').slice(1)).toEqual([
      'It has no project files that run code (hooks, .mcp.json).',
      'Its .claude/skills (2 skills) are in use.',
    ])
    // Started in the home folder, ~/.claude/skills is the user's own.
    mkdirSync(join(userHome, '.claude', 'skills', 'mine'), { recursive: true })
    expect(projectTrustStatus(userHome, home, undefined, userHome).claudeSkills).toBeUndefined()
  })

  it('a folder with nothing that runs code needs no trust', () => {
    const { home, folder, userHome } = project({ hooks: false, mcp: false })
    expect(needsTrust(projectTrustStatus(folder, home, undefined, userHome))).toBe(false)
  })

  it('started in the home folder, the user\'s own hook file is not a project file', () => {
    const { home, userHome } = project()
    mkdirSync(join(userHome, '.claude'))
    writeFileSync(join(userHome, '.claude', 'settings.json'), JSON.stringify(hookFile))
    expect(projectTrustStatus(userHome, home, undefined, userHome).hookFiles).toEqual([])
  })

  it('trusting records the folder and pins .mcp.json; a changed .mcp.json needs trust again; revoking undoes both', async () => {
    const { home, folder, userHome } = project()
    const trusted = await trustFolder(folder, home)
    expect(readTrustedProjects(home)).toEqual([folder])
    expect(trusted.trustedBy).toBe(folder)
    expect(trusted.mcp?.pinned).toBe(true)
    expect(needsTrust(trusted)).toBe(false)
    writeFileSync(join(folder, '.mcp.json'), JSON.stringify({ mcpServers: { demo: testServerEntry(), other: { command: 'evil' } } }))
    const changed = projectTrustStatus(folder, home, undefined, userHome)
    expect(changed.trustedBy).toBe(folder)
    expect(changed.mcp?.pinned).toBe(false)
    expect(needsTrust(changed)).toBe(true)
    expect(revokeFolder(folder, home)).toEqual({ folder: true, mcp: true })
    expect(readTrustedProjects(home)).toEqual([])
    expect(readSettings(home).mcp?.trustedProjects).toEqual({})
    expect(revokeFolder(folder, home)).toEqual({ folder: false, mcp: false })
  })

  it('an ancestor\'s entry covers the folder, and revoking the folder leaves it', () => {
    const { home, folder, userHome } = project({ mcp: false })
    trustProject(home, join(folder, '..'))
    expect(projectTrustStatus(folder, home, undefined, userHome).trustedBy).toBe(join(folder, '..'))
    expect(revokeFolder(folder, home)).toEqual({ folder: false, mcp: false })
    expect(readTrustedProjects(home)).toEqual([join(folder, '..')])
  })

  it('a malformed trust list trusts nothing, says so, and is not overwritten by trusting', async () => {
    const { home, folder, userHome } = project({ mcp: false })
    const broken = '{"projects": ["/one", "/two",]}'
    writeFileSync(join(home, 'trusted-projects.json'), broken)
    expect(readTrustedProjects(home)).toEqual([])
    expect(trustListProblem(home)).toBe(`${join(home, 'trusted-projects.json')} is not valid JSON: nothing in it is trusted until it is fixed`)
    expect(formatTrustStatus(projectTrustStatus(folder, home, undefined, userHome))).toContain('is not valid JSON')
    await expect(trustFolder(folder, home)).rejects.toThrow(/trusted-projects.json is not valid JSON/)
    expect(() => revokeFolder(folder, home)).toThrow(/trusted-projects.json is not valid JSON/)
    expect(readFileSync(join(home, 'trusted-projects.json'), 'utf8')).toBe(broken)
    writeFileSync(join(home, 'trusted-projects.json'), JSON.stringify({ projects: 'not a list' }))
    expect(trustListProblem(home)).toMatch(/"projects" must be a list of folders/)
  })

  it('the notice for surfaces that do not ask (editors, the web): what waits, a broken trust list, and nothing once trusted', async () => {
    const { home, folder, userHome } = project({ mcp: false })
    const status = () => projectTrustStatus(folder, home, undefined, userHome)
    expect(trustNotice(status())).toBe([
      `${folder} brings code that runs with your user's rights once the folder is trusted; until then none of it runs:`,
      `  hooks   ${join('.claude', 'settings.json')} (PreToolUse)`,
      'Type /trust on to trust the folder and start it (/trust shows what it runs).',
    ].join('\n'))
    writeFileSync(join(home, 'trusted-projects.json'), '{"projects": [')
    expect(trustNotice(status())).toContain(`Warning: ${join(home, 'trusted-projects.json')} is not valid JSON`)
    writeFileSync(join(home, 'trusted-projects.json'), JSON.stringify({ projects: [] }))
    await trustFolder(folder, home)
    expect(trustNotice(status())).toBeUndefined()
  })

  it('the settings store keeps other settings when a pin is added', async () => {
    const { home, folder } = project({ hooks: false })
    settingsStore(home).write({ mcpServers: { kept: { command: 'x' } } })
    await trustFolder(folder, home)
    expect(readSettings(home).mcpServers).toEqual({ kept: { command: 'x' } })
    expect(readFileSync(join(home, 'trusted-projects.json'), 'utf8')).toContain(folder)
  })
})

function resultTexts(h: LoopHarness): string[] {
  return h.of('tool/result').map(e => { const block = e.data.message.content[0]!.content[0]!; return block.type === 'text' ? block.text : '' })
}

describe('/trust in a live runtime', () => {
  const bash = defineTool({
    name: 'bash',
    description: 'pretend bash: echoes its command',
    schema: z.object({ command: z.string() }),
    execute: ({ command }) => ({ content: [{ type: 'text', text: `ran ${command}` }] }),
  })
  let h: LoopHarness | undefined
  afterEach(async () => {
    await h?.dispose()
    h = undefined
  })

  async function runtime(folder: string, home: string, userHome: string, responses: Parameters<typeof loopHarness>[0] extends infer O ? O extends { responses?: infer R } ? R : never : never) {
    const lines: string[] = []
    h = await loopHarness({
      cwd: folder,
      tools: [bash],
      responses,
      setup: async (ctx) => {
        await ctx.plugin(CommandsPlugin).await()
        await ctx.plugin(HooksPlugin, { cwd: folder, dshHome: home, userHome, untrustedNotice: false }).await()
        await ctx.plugin(McpPlugin, { cwd: folder, settings: settingsStore(home), log: (line: string) => { lines.push(line) }, untrustedNotice: false }).await()
        await ctx.plugin(ProjectTrustPlugin, { cwd: folder, dshHome: home }).await()
      },
    })
    return { h, lines }
  }

  it('/trust says what would run; /trust on starts the MCP server now and the hooks guard the next step', async () => {
    const { home, folder, userHome } = project()
    const { h } = await runtime(folder, home, userHome, [
      toolCalls([{ id: 'c1', name: 'bash', arguments: { command: 'rm -rf build' } }]),
      text('done'),
      toolCalls([{ id: 'c2', name: 'bash', arguments: { command: 'rm -rf build' } }]),
      text('done'),
    ])
    expect(h.ctx.mcp.servers().map(server => [server.name, server.state])).toEqual([['demo', 'untrusted']])
    const status = await h.ctx.commands.execute(h.agent, '/trust')
    expect(status).toEqual({ kind: 'success', text: expect.stringContaining(`${folder} is not trusted.`) })
    expect(status?.text).toContain('hooks   .claude/settings.json (PreToolUse)')
    expect(status?.text).toContain('MCP     demo: ')

    // Untrusted: the hook does not run.
    h.agent.followup('clean up')
    await h.agent.whenIdle()
    expect(resultTexts(h)).toEqual(['ran rm -rf build'])

    expect(await h.ctx.commands.execute(h.agent, '/hooks')).toEqual({ kind: 'success', text: `No hooks loaded.\nWaiting for this folder to be trusted (/trust on): ${join('.claude', 'settings.json')}` })

    const outcome = await h.ctx.commands.execute(h.agent, '/trust on')
    expect(outcome?.kind).toBe('success')
    expect(await h.ctx.commands.execute(h.agent, '/hooks')).toEqual({ kind: 'success', text: `1 hook command loaded:\n  PreToolUse       Bash        ${join('.claude', 'settings.json')}: ${hookFile.hooks.PreToolUse[0]!.hooks[0]!.command}` })
    expect(outcome?.text).toContain(`Trusted ${folder}:`)
    expect(outcome?.text).toMatch(/MCP {5}demo: connected, \d+ tools/)
    expect(h.ctx.mcp.servers().map(server => [server.name, server.state])).toEqual([['demo', 'connected']])
    expect(h.ctx.tools.get('mcp__demo__echo')).toBeDefined()

    h.agent.followup('clean up again')
    await h.agent.whenIdle()
    expect(resultTexts(h)[1]).toBe('Error: not in this project')
    expect(h.of('hook/result').map(e => (e.data as { decision: string }).decision)).toEqual(['block'])
  })

  it('/trust off revokes; an unknown argument is an error outcome', async () => {
    const { home, folder, userHome } = project({ mcp: false })
    const { h } = await runtime(folder, home, userHome, [])
    await h.ctx.commands.execute(h.agent, '/trust on')
    expect(readTrustedProjects(home)).toEqual([folder])
    const off = await h.ctx.commands.execute(h.agent, '/trust off')
    expect(off).toEqual({ kind: 'success', text: `Revoked trust in ${folder}. What already runs stops at the next start.` })
    expect(readTrustedProjects(home)).toEqual([])
    expect(await h.ctx.commands.execute(h.agent, '/trust maybe')).toEqual({ kind: 'error', text: 'unknown argument "maybe": use /trust, /trust on or /trust off' })
  })
})

describe('trust is pinned by content (security #42.3)', () => {
  const planted = { hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: 'touch /tmp/planted' }] }] } }

  function hooksIn(folder: string, home: string, userHome: string) {
    const warnings: string[] = []
    const ctx = { sessions: { registerEventType: () => () => {} }, effect: () => {}, inject: () => {}, on: () => {}, get: (name: string) => name === 'host' ? { stderr: { write: (line: string) => warnings.push(line) } } : undefined, logger: () => ({ warn: () => {} }) }
    const plugin = new HooksPlugin(ctx as never, { cwd: folder, dshHome: home, userHome })
    return { commands: plugin.loaded.flatMap(group => group.hooks.map(hook => hook.command)), warnings: warnings.join('') }
  }

  it('a hook file written after the folder was trusted waits for trust again and says which file changed', () => {
    const { home, folder, userHome } = project({ hooks: false, mcp: false })
    trustProject(home, folder)
    // The model (or a pull) plants a hook file in the trusted folder.
    mkdirSync(join(folder, '.claude'))
    writeFileSync(join(folder, '.claude', 'settings.json'), JSON.stringify(planted))
    const first = hooksIn(folder, home, userHome)
    expect(first.commands).toEqual([])
    expect(first.warnings).toContain(`${join(folder, '.claude', 'settings.json')} are not loaded: the file is new or changed since the folder was trusted`)
    const status = projectTrustStatus(folder, home, undefined, userHome)
    expect(needsTrust(status)).toBe(true)
    expect(formatTrustStatus(status)).toContain('.claude/settings.json (PreToolUse): new or changed since the folder was trusted')
    // Trusting again pins the file as it is now: it loads.
    trustProject(home, folder)
    expect(hooksIn(folder, home, userHome).commands).toEqual(['touch /tmp/planted'])
    expect(needsTrust(projectTrustStatus(folder, home, undefined, userHome))).toBe(false)
  })

  it('a trusted hook file that changes (one byte) waits again; the pins hold hashes, never content', () => {
    const { home, folder, userHome } = project({ mcp: false })
    trustProject(home, folder)
    expect(hooksIn(folder, home, userHome).commands).toHaveLength(1)
    writeFileSync(join(folder, '.claude', 'settings.json'), JSON.stringify(planted))
    expect(hooksIn(folder, home, userHome).commands).toEqual([])
    const stored = readFileSync(join(home, 'trusted-projects.json'), 'utf8')
    expect(stored).not.toContain('touch')
    expect(JSON.parse(stored).pins[join(folder, '.claude', 'settings.json')]).toMatch(/^[0-9a-f]{64}$/)
  })

  it('a folder trusted before pins existed (no pin) waits for trust again', () => {
    const { home, folder, userHome } = project({ mcp: false })
    writeFileSync(join(home, 'trusted-projects.json'), JSON.stringify({ projects: [folder] }))
    expect(hooksIn(folder, home, userHome).commands).toEqual([])
    expect(needsTrust(projectTrustStatus(folder, home, undefined, userHome))).toBe(true)
  })

  it('revoking drops the folder\'s pins', () => {
    const { home, folder } = project({ mcp: false })
    trustProject(home, folder)
    revokeFolder(folder, home)
    expect(JSON.parse(readFileSync(join(home, 'trusted-projects.json'), 'utf8')).pins).toBeUndefined()
  })
})
