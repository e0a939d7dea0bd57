/**
 * #44.3: a Claude Code setup as it is. A project's `.claude/skills` counts in a trusted folder
 * only (as its hook files do), and is found as soon as the folder is trusted; what dsh does not
 * take from the setup is said in one line at start, not left silent.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { text } from '../../test-support/scripted-model.js'
import { trustChecker, trustProject } from '../trust/index.js'
import { claudeSetupNotice } from './claude-setup.js'
import { discoverSkills, skillRoots, SkillsPlugin } from './index.js'

function skill(root: string, name: string, description: string): void {
  mkdirSync(join(root, name), { recursive: true })
  writeFileSync(join(root, name, 'SKILL.md'), `---\nname: ${name}\ndescription: ${description}\n---\n\nbody\n`)
}

function setup(): { cwd: string; dshHome: string; claudeHome: string } {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-claude-project-'))
  mkdirSync(join(cwd, '.git'))
  const dshHome = mkdtempSync(join(tmpdir(), 'dsh-claude-home-'))
  const claudeHome = join(mkdtempSync(join(tmpdir(), 'dsh-claude-user-')), '.claude')
  mkdirSync(claudeHome)
  return { cwd, dshHome, claudeHome }
}

const names = (options: Parameters<typeof skillRoots>[0]) => discoverSkills(skillRoots(options)).map(s => s.name)

describe('a project\'s .claude/skills waits for trust (#44.3)', () => {
  it('untrusted: not found (the user\'s ~/.claude/skills and the project\'s .agents/skills are); trusted: found at the next look', () => {
    const { cwd, dshHome, claudeHome } = setup()
    skill(join(cwd, '.claude', 'skills'), 'deploy', 'project claude')
    skill(join(cwd, '.agents', 'skills'), 'lint', 'project agents')
    skill(join(claudeHome, 'skills'), 'personal', 'user claude')
    const projectTrusted = trustChecker(dshHome)
    expect(names({ cwd, dshHome, claudeHome, projectTrusted })).toEqual(['lint', 'personal'])
    trustProject(dshHome, cwd)
    expect(names({ cwd, dshHome, claudeHome, projectTrusted })).toEqual(['deploy', 'lint', 'personal'])
    // A subfolder of a trusted folder is trusted.
    mkdirSync(join(cwd, 'sub'))
    expect(names({ cwd: join(cwd, 'sub'), dshHome, claudeHome, projectTrusted })).toEqual(['deploy', 'lint', 'personal'])
  })

  it('started in the home folder, ~/.claude/skills is the user\'s own: no trust step', () => {
    const { dshHome, claudeHome } = setup()
    const home = join(claudeHome, '..')
    mkdirSync(join(home, '.git'))
    skill(join(claudeHome, 'skills'), 'personal', 'user claude')
    expect(names({ cwd: home, dshHome, claudeHome, projectTrusted: () => false })).toEqual(['personal'])
  })

  it('the skills plugin: the catalog of an untrusted folder leaves .claude/skills out, and takes it in once the folder is trusted', async () => {
    const { cwd, dshHome, claudeHome } = setup()
    skill(join(cwd, '.claude', 'skills'), 'deploy', 'project claude')
    skill(join(claudeHome, 'skills'), 'personal', 'user claude')
    const h = await loopHarness({
      cwd, responses: [text('one'), text('two')],
      setup: async (ctx) => { await ctx.plugin(SkillsPlugin, { cwd, dshHome, claudeHome, agentsHome: join(cwd, 'none'), projectTrusted: trustChecker(dshHome) }).await() },
    })
    h.agent.followup([{ type: 'text', text: 'first' }])
    await h.agent.whenIdle()
    trustProject(dshHome, cwd)
    h.agent.followup([{ type: 'text', text: 'second' }])
    await h.agent.whenIdle()
    const catalogs = h.of('user/message').map(e => e.data.source as { kind: string; entries?: { name: string }[] }).filter(source => source.kind === 'skill-catalog')
    expect(catalogs.map(source => source.entries!.map(entry => entry.name))).toEqual([['personal'], ['deploy', 'personal']])
    await h.dispose()
  })
})

describe('one line at start for what dsh does not take (#44.3)', () => {
  it('names each difference of the setup in one line', () => {
    const { cwd, claudeHome } = setup()
    skill(join(cwd, '.claude', 'skills'), 'deploy', 'x')
    skill(join(cwd, '.claude', 'skills'), 'ship', 'x')
    mkdirSync(join(cwd, '.claude', 'commands'))
    writeFileSync(join(cwd, '.claude', 'commands', 'review.md'), 'Review the diff\n')
    mkdirSync(join(claudeHome, 'agents'))
    writeFileSync(join(claudeHome, 'agents', 'tester.md'), '---\nname: tester\n---\n')
    writeFileSync(join(cwd, 'CLAUDE.local.md'), 'mine\n')
    writeFileSync(join(cwd, 'AGENTS.md'), 'agents\n')
    writeFileSync(join(cwd, 'CLAUDE.md'), 'claude\n')
    writeFileSync(join(claudeHome, 'CLAUDE.md'), 'See @~/notes/style.md\n@docs/more.md\n')
    expect(claudeSetupNotice({ cwd, claudeHome, projectTrusted: () => false })).toBe(
      'dsh: from this Claude Code setup, 2 project skills in .claude/skills wait for this folder to be trusted (dsh trust on, or /trust on); '
      + '.claude/commands (custom commands) is not read: a skill (.claude/skills/NAME/SKILL.md) is a /NAME command here; '
      + '~/.claude/agents (subagent definitions) is not read; CLAUDE.local.md is not read; a CLAUDE.md beside an AGENTS.md is not read (AGENTS.md is); '
      + '@ imports in CLAUDE.md are not followed (the file is shown as written) (docs/skills.md, "Claude Code setups")')
  })

  it('says nothing for a setup dsh takes as it is (skills, CLAUDE.md, a trusted folder)', () => {
    const { cwd, claudeHome } = setup()
    skill(join(cwd, '.claude', 'skills'), 'deploy', 'x')
    skill(join(claudeHome, 'skills'), 'personal', 'x')
    writeFileSync(join(cwd, 'CLAUDE.md'), 'Use pnpm. Mail me@example.com\n')
    writeFileSync(join(claudeHome, 'CLAUDE.md'), 'general\n')
    expect(claudeSetupNotice({ cwd, claudeHome, projectTrusted: () => true })).toBeUndefined()
    expect(claudeSetupNotice({ cwd, claudeHome })).toBeUndefined()
  })
})
