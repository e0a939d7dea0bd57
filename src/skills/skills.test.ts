import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { CommandsPlugin } from '../commands/index.js'
import { discoverSkills, SkillDiscoveryCache, skillRoots, SkillsPlugin } from './index.js'

function skill(root: string, name: string, front: Record<string, string>, body: string): void {
  mkdirSync(join(root, name), { recursive: true })
  const meta = Object.entries(front).map(([key, value]) => `${key}: ${value}`).join('\n')
  writeFileSync(join(root, name, 'SKILL.md'), `---\n${meta}\n---\n\n${body}\n`)
}

function project(): { cwd: string; skills: string; home: string } {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-skills-'))
  mkdirSync(join(cwd, '.git'))
  const home = mkdtempSync(join(tmpdir(), 'dsh-skills-home-'))
  return { cwd, skills: join(cwd, '.dsh', 'skills'), home }
}

const catalogs = (h: Awaited<ReturnType<typeof loopHarness>>) => h.of('user/message').map(e => e.data).filter(m => (m.source as { kind: string }).kind === 'skill-catalog')
const entriesOf = (message: { source: unknown }) => (message.source as { entries: { name: string }[] }).entries.map(e => e.name)

describe('skills: discovery (SK-3)', () => {
  it('SK-3: duplicates resolve by root rank; invalid frontmatter drops only that skill; flat files count', () => {
    const { cwd, skills, home } = project()
    skill(skills, 'shared', { name: 'shared', description: 'project copy' }, 'project body')
    skill(join(home, 'skills'), 'shared', { name: 'shared', description: 'home copy' }, 'home body')
    skill(join(home, 'skills'), 'bad-flag', { name: 'bad-flag', description: 'x', 'user-invocable': 'maybe' }, 'x')
    skill(join(home, 'skills'), 'BadName', { name: 'BadName', description: 'x' }, 'x')
    skill(join(home, 'skills', '.system'), 'hidden', { name: 'hidden', description: 'x' }, 'x')
    mkdirSync(join(cwd, '.agents', 'skills'), { recursive: true })
    writeFileSync(join(cwd, '.agents', 'skills', 'flat.md'), '---\nname: flat\ndescription: a flat file\ndisable-model-invocation: yes\n---\nflat body\n')
    const warnings: string[] = []
    const found = discoverSkills(skillRoots({ cwd: join(cwd), dshHome: home }), message => warnings.push(message))
    expect(found.map(s => [s.name, s.description, s.modelInvocable])).toEqual([['flat', 'a flat file', false], ['shared', 'project copy', true]])
    expect(warnings.join('\n')).toMatch(/bad-flag[\s\S]*user-invocable must be true or false/)
    expect(warnings.join('\n')).toMatch(/BadName[\s\S]*kebab-case/)
  })
})

describe('skills: Claude Code setups as they are (#44.3)', () => {
  it('SK-3: a project\'s .claude/skills and ~/.claude/skills are found; .agents wins a duplicate over .claude, the project over the user', () => {
    const { cwd, home } = project()
    const claudeHome = join(home, 'claude-home')
    skill(join(cwd, '.claude', 'skills'), 'deploy', { name: 'deploy', description: 'project claude' }, 'x')
    skill(join(cwd, '.claude', 'skills'), 'shared', { name: 'shared', description: 'project claude copy' }, 'x')
    skill(join(cwd, '.agents', 'skills'), 'shared', { name: 'shared', description: 'agents copy' }, 'x')
    skill(join(claudeHome, 'skills'), 'personal', { name: 'personal', description: 'user claude' }, 'x')
    skill(join(claudeHome, 'skills'), 'deploy', { name: 'deploy', description: 'user claude copy' }, 'x')
    const found = discoverSkills(skillRoots({ cwd, dshHome: home, claudeHome }))
    expect(found.map(s => [s.name, s.description])).toEqual([['deploy', 'project claude'], ['personal', 'user claude'], ['shared', 'agents copy']])
  })
})

describe('skills: discovery cache (SK-2, SK-3)', () => {
  // Each change gets its own explicit mtime (as edits at different moments would); changes inside
  // one clock tick are what the racy window covers (last test).
  let tick = 1_000_000
  const touch = (...paths: string[]) => { tick += 10; for (const path of paths) utimesSync(path, tick, tick) }

  it('SK-3: with the cache, added, edited (same size) and removed skills are seen exactly as without it', () => {
    const { cwd, skills, home } = project()
    const roots = skillRoots({ cwd, dshHome: home })
    const cache = new SkillDiscoveryCache(() => Date.now() + 60_000)
    const both = () => {
      const cached = discoverSkills(roots, () => {}, cache)
      expect(cached).toEqual(discoverSkills(roots))
      return cached.map(s => `${s.name}:${s.description}`)
    }
    skill(skills, 'alpha', { name: 'alpha', description: 'first' }, 'a')
    touch(join(skills, 'alpha', 'SKILL.md'), join(skills, 'alpha'), skills)
    expect(both()).toEqual(['alpha:first'])
    expect(cache.files.size).toBe(1)
    expect(both()).toEqual(['alpha:first'])
    // A new skill folder in a root already listed.
    skill(skills, 'beta', { name: 'beta', description: 'second' }, 'b')
    touch(join(skills, 'beta', 'SKILL.md'), join(skills, 'beta'), skills)
    expect(both()).toEqual(['alpha:first', 'beta:second'])
    // A SKILL.md added to a folder that had none.
    mkdirSync(join(skills, 'gamma'))
    touch(join(skills, 'gamma'), skills)
    expect(both()).toEqual(['alpha:first', 'beta:second'])
    writeFileSync(join(skills, 'gamma', 'SKILL.md'), '---\nname: gamma\ndescription: third\n---\nc\n')
    touch(join(skills, 'gamma', 'SKILL.md'), join(skills, 'gamma'))
    expect(both()).toEqual(['alpha:first', 'beta:second', 'gamma:third'])
    // An edit that keeps the size.
    skill(skills, 'alpha', { name: 'alpha', description: 'FIRST' }, 'a')
    touch(join(skills, 'alpha', 'SKILL.md'))
    expect(both()).toEqual(['alpha:FIRST', 'beta:second', 'gamma:third'])
    // A removed skill, and a root that appears later.
    rmSync(join(skills, 'beta'), { recursive: true })
    touch(skills)
    skill(join(home, 'skills'), 'delta', { name: 'delta', description: 'home' }, 'd')
    touch(join(home, 'skills', 'delta', 'SKILL.md'), join(home, 'skills', 'delta'), join(home, 'skills'))
    expect(both()).toEqual(['alpha:FIRST', 'delta:home', 'gamma:third'])
  })

  it('SK-3: an invalid skill warns at every discovery, cached or not', () => {
    const { cwd, skills, home } = project()
    skill(skills, 'bad', { name: 'Bad', description: 'x' }, 'x')
    touch(join(skills, 'bad', 'SKILL.md'), join(skills, 'bad'), skills)
    const cache = new SkillDiscoveryCache(() => Date.now() + 60_000)
    const warnings: string[] = []
    discoverSkills(skillRoots({ cwd, dshHome: home }), message => warnings.push(message), cache)
    discoverSkills(skillRoots({ cwd, dshHome: home }), message => warnings.push(message), cache)
    expect(warnings).toHaveLength(2)
    expect(warnings[1]).toMatch(/kebab-case/)
  })

  it('SK-2: what changed within the racy window is read again, never kept', () => {
    const { cwd, skills, home } = project()
    skill(skills, 'fresh', { name: 'fresh', description: 'just written' }, 'x')
    const cache = new SkillDiscoveryCache()
    expect(discoverSkills(skillRoots({ cwd, dshHome: home }), () => {}, cache).map(s => s.name)).toEqual(['fresh'])
    expect(cache.files.size).toBe(0)
    expect(cache.folders.has(skills)).toBe(false)
  })
})

describe('skills on a live agent', () => {
  it('SK-1, SK-2: the catalog lists model-invocable skills once; the skill tool loads the current body; an edit between turns applies', async () => {
    const { cwd, skills } = project()
    skill(skills, 'deploy', { name: 'deploy', description: 'How to deploy <safely>' }, 'Version one.')
    skill(skills, 'user-only', { name: 'user-only', description: 'not for the model', 'disable-model-invocation': 'true' }, 'x')
    const h = await loopHarness({
      cwd,
      responses: [
        toolCalls([{ id: 'c1', name: 'skill', arguments: { name: 'deploy' } }]), text('ok'),
        toolCalls([{ id: 'c2', name: 'skill', arguments: { name: 'deploy' } }, { id: 'c3', name: 'skill', arguments: { name: 'user-only' } }]), text('ok'),
      ],
      setup: async (ctx) => { await ctx.plugin(SkillsPlugin, { cwd, agentsHome: join(cwd, 'none') }).await() },
    })
    h.agent.followup('deploy it')
    await h.agent.whenIdle()
    const first = catalogs(h)
    expect(first).toHaveLength(1)
    expect(entriesOf(first[0]!)).toEqual(['deploy'])
    expect((first[0]!.content[0] as { text: string }).text).toContain('- `deploy`: How to deploy &lt;safely&gt;')
    const resultText = (i: number) => (h.of('tool/result')[i]!.data.message.content[0].content[0] as { text: string }).text
    expect(resultText(0)).toContain(`Base directory for this skill: ${join(skills, 'deploy')}`)
    expect(resultText(0)).toContain('<skill_instructions>\nVersion one.\n</skill_instructions>')

    // Edited between the two turns: the next load reads the new body, the catalog is replaced once.
    skill(skills, 'deploy', { name: 'deploy', description: 'How to deploy, revised' }, 'Version two.')
    h.agent.followup('again')
    await h.agent.whenIdle()
    expect(resultText(1)).toContain('<skill_instructions>\nVersion two.\n</skill_instructions>')
    expect(resultText(2)).toBe('Error: skill "user-only" is not available for model invocation')
    const all = catalogs(h)
    expect(all).toHaveLength(2)
    expect((all[1]!.content[0] as { text: string }).text).toContain('How to deploy, revised')
    await h.dispose()
  })

  it('SK-4: no catalog without model-invocable skills or without the skill tool', async () => {
    const { cwd, skills } = project()
    skill(skills, 'only-user', { name: 'only-user', description: 'x', 'disable-model-invocation': 'on' }, 'x')
    const h = await loopHarness({ cwd, responses: [text('PONG')], setup: async (ctx) => { await ctx.plugin(SkillsPlugin, { cwd, agentsHome: join(cwd, 'none') }).await() } })
    h.agent.followup('ping')
    await h.agent.whenIdle()
    expect(catalogs(h)).toEqual([])
    await h.dispose()
  })

  it('/name of a user-invocable skill queues its <skill_content> as the prompt; /skills lists them', async () => {
    const { cwd, skills } = project()
    skill(skills, 'review', { name: 'review', description: 'Review a change' }, 'Check the tests first.')
    skill(skills, 'model-only', { name: 'model-only', description: 'x', 'user-invocable': 'false' }, 'x')
    const h = await loopHarness({
      cwd, responses: [text('reviewed')],
      setup: async (ctx) => {
        await ctx.plugin(CommandsPlugin).await()
        await ctx.plugin(SkillsPlugin, { cwd, agentsHome: join(cwd, 'none') }).await()
      },
    })
    expect(h.ctx.commands.get('model-only', h.agent.scope)).toBeUndefined()
    const listed = await h.ctx.commands.execute(h.agent, '/skills')
    expect(listed).toMatchObject({ kind: 'success', text: expect.stringContaining('review — Review a change') })
    await h.ctx.commands.execute(h.agent, '/review the parser')
    await h.agent.whenIdle()
    const prompt = (h.of('user/message')[0]!.data.content[0] as { text: string }).text
    expect(prompt).toMatch(/^<skill_content name="review">[\s\S]*Check the tests first\.[\s\S]*<\/skill_content>\n\nthe parser$/)
    expect(h.of('tool/call')).toEqual([])
    await h.dispose()
  })
})
