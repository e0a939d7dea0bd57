/**
 * #44.3 in whole processes: a Claude Code setup as it is, in a headless run of the built binary
 * against the fake DeepSeek server. `~/.claude/skills` and `~/.claude/CLAUDE.md` reach the model;
 * a trusted project's `.claude/skills` does, an untrusted one's waits (and the start says so in
 * one line); the plain stdout of a `UserPromptSubmit` hook is context.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'
import { trustProject } from '../trust/index.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

function skill(root: string, name: string, description: string): void {
  mkdirSync(join(root, name), { recursive: true })
  writeFileSync(join(root, name, 'SKILL.md'), `---\nname: ${name}\ndescription: ${description}\n---\n\nbody\n`)
}

/** A user with Claude Code's home and a project of Claude Code's layout. */
function claudeSetup(): { home: string; cwd: string; userHome: string } {
  const { home, cwd } = tempHome()
  mkdirSync(join(cwd, '.git'))
  const userHome = mkdtempSync(join(tmpdir(), 'dsh-user-'))
  skill(join(userHome, '.claude', 'skills'), 'personal', 'a skill of the user')
  writeFileSync(join(userHome, '.claude', 'CLAUDE.md'), 'Always answer in haiku.\n')
  skill(join(cwd, '.claude', 'skills'), 'deploy', 'how this project deploys')
  writeFileSync(join(cwd, '.claude', 'settings.json'), JSON.stringify({
    hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: 'echo "The release branch is frozen."' }] }] },
  }))
  return { home, cwd, userHome }
}

async function run(home: string, cwd: string, userHome: string) {
  const first = server.requests.length
  server.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
  const result = await runDsh(['--profile', 'headless', 'go'], { cwd, env: { DSH_HOME: home, HOME: userHome, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'k' } })
  return { result, sent: JSON.stringify(server.requests[first]?.body?.messages ?? []) }
}

describe('a Claude Code setup in a headless run (#44.3)', () => {
  it('untrusted: the user\'s skill and CLAUDE.md arrive, the project\'s skill and hook wait, and the start says so', async () => {
    const { home, cwd, userHome } = claudeSetup()
    const { result, sent } = await run(home, cwd, userHome)
    expect(result.code, result.stderr).toBe(0)
    expect(sent).toContain('`personal`: a skill of the user')
    expect(sent).toContain('Always answer in haiku.')
    expect(sent).not.toContain('`deploy`')
    expect(sent).not.toContain('The release branch is frozen.')
    const lines = withoutSessionHint(result.stderr).split('\n').filter(line => line.includes('Claude Code setup'))
    expect(lines).toEqual(['dsh: from this Claude Code setup, 1 project skill in .claude/skills waits for this folder to be trusted (dsh trust on, or /trust on) (docs/skills.md, "Claude Code setups")'])
  })

  it('trusted: the project\'s skill is in the catalog and the hook\'s plain stdout is context; nothing to say at start', async () => {
    const { home, cwd, userHome } = claudeSetup()
    trustProject(home, cwd)
    const { result, sent } = await run(home, cwd, userHome)
    expect(result.code, result.stderr).toBe(0)
    expect(sent).toContain('`deploy`: how this project deploys')
    expect(sent).toContain('`personal`: a skill of the user')
    expect(sent).toContain('The release branch is frozen.')
    expect(result.stderr).not.toContain('Claude Code setup')
  })
})
