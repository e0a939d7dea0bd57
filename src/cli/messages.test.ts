/**
 * The launcher's own messages, read as a new user would: complete sentences, and one list of
 * profiles wherever profiles are listed.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { repoRoot, runDsh, tempHome } from '../../test-support/run-dsh.js'

describe('launcher messages', () => {
  it('an invalid YAML patch layer is named with its line and column and the reason, nothing dangling', async () => {
    const { home, cwd } = tempHome()
    const patch = join(cwd, 'broken.patch.yml')
    writeFileSync(patch, '- id: a\nname: [unclosed\n')
    const result = await runDsh(['--profile', 'headless', '--patch', patch, 'hello'], { cwd, env: { DSH_HOME: home } })
    expect(result.code).toBe(1)
    const lines = result.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(patch)
    expect(lines[0]).toMatch(/invalid YAML at line 2, column \d+: \S/)
    expect(lines[0]).not.toMatch(/:\s*$/)
  })

  it('--help and the unknown-profile error list the same shipped profiles', async () => {
    const { home, cwd } = tempHome()
    const help = await runDsh(['--help'], { cwd, env: { DSH_HOME: home } })
    const unknown = await runDsh(['--profile', 'nope', 'hello'], { cwd, env: { DSH_HOME: home } })
    expect(unknown.code).toBe(1)
    const fromError = /shipped: ([^;)]+)/.exec(unknown.stderr)?.[1]?.split(', ').sort()
    const fromHelp = /shipped: ([a-z0-9, -]+)\n/.exec(help.stdout)?.[1]?.split(', ').sort()
    expect(fromError).toBeDefined()
    expect(fromHelp).toEqual(fromError)
  })

  it('--help names every option the headless and terminal apps accept, the sessions subcommands and DSH_PERMISSION_MODE', async () => {
    const { home, cwd } = tempHome()
    const help = (await runDsh(['--help'], { cwd, env: { DSH_HOME: home } })).stdout
    const parsers = ['src/cli/headless.ts', 'src/tui/args.ts'].map(file => readFileSync(join(repoRoot, file), 'utf8')).join('\n')
    const options = new Set([...parsers.matchAll(/'(--[a-z][a-z-]+)'/g)].map(match => match[1]))
    expect(options).toContain('--permission-mode')
    for (const option of options) expect(help, option).toContain(option)
    for (const command of ['sessions repair', 'sessions export', 'sessions import', 'DSH_PERMISSION_MODE']) expect(help).toContain(command)
  })
})
