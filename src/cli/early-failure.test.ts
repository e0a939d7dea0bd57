/**
 * Rough edges of the launcher (#44.6), whole processes: a JSON run that fails before its first
 * turn still prints its one result object; a mistyped option names the nearest; launcher flags
 * before a subcommand keep it a subcommand instead of a task for the model.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'
import { nearest } from './suggest.js'
import { parseHeadlessArgs } from './headless.js'

describe('a headless run that fails before its first turn (#44.6)', () => {
  it('--output json without a key prints one result object naming MISSING_API_KEY; stream-json with an unknown session SESSION_NOT_FOUND', async () => {
    const { home, cwd } = tempHome()
    const noKey = await runDsh(['--output', 'json', 'hello'], { env: { DSH_HOME: home }, cwd })
    expect(noKey.code).toBe(1)
    expect(noKey.stdout.trim().split('\n').map(line => JSON.parse(line))).toEqual([
      { type: 'result', sessionId: null, output: '', reason: { kind: 'error', error: { code: 'MISSING_API_KEY', message: expect.stringContaining('DEEPSEEK_API_KEY is not set') } } },
    ])
    const unknown = await runDsh(['--output', 'stream-json', '--session', 'nope', 'hello'], { env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'k' }, cwd })
    expect(unknown.code).toBe(1)
    expect(JSON.parse(unknown.stdout)).toEqual({ type: 'result', sessionId: null, output: '', error: { code: 'SESSION_NOT_FOUND', message: 'session "nope" is not stored (jsonl backend)' } })
    // Text output keeps stdout empty: the line is on stderr.
    const text = await runDsh(['--session', 'nope', 'hello'], { env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'k' }, cwd })
    expect(text.stdout).toBe('')
    expect(text.stderr).toContain('session "nope" is not stored')
  })

  it('a mistyped option suggests the nearest and --help; one that is nothing like an option only points at --help', async () => {
    const { home, cwd } = tempHome()
    const typo = await runDsh(['--outptu', 'json', 'hello'], { env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'k' }, cwd })
    expect(typo.code).toBe(2)
    expect(typo.stderr).toContain('dsh: unknown option --outptu (did you mean --output?); see dsh --help')
    expect(nearest('--sesion', ['--output', '--session'])).toBe('--session')
    expect(nearest('--frobnicate', ['--output', '--session'])).toBeUndefined()
  })

  it('launcher flags before a subcommand keep it a subcommand: `dsh --patch FILE sessions` lists, nothing goes to a model', async () => {
    const { home, cwd } = tempHome()
    const patch = join(home, 'empty.patch.yml')
    writeFileSync(patch, '[]\n')
    // A model at a closed port: a task would fail with a transport error after retries.
    const listed = await runDsh(['--patch', patch, 'sessions'], { env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'k', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9' }, cwd })
    expect(listed.stderr).not.toContain('model request')
    expect(listed.stdout).toBe('no stored sessions\n')
    expect(listed.code).toBe(0)
  })

  it('a subcommand word after an app option is refused (exit 2), never sent as a task; after -- it is the task; a launcher flag after the subcommand\'s words is refused naming where it goes', async () => {
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_API_KEY: 'k', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9' }
    for (const args of [['--model', 'deepseek-v4-pro', 'sessions'], ['--output', 'json', 'web'], ['--permission-mode', 'read-only', 'trust', 'on']]) {
      const refused = await runDsh(args, { env, cwd })
      expect(refused.code, args.join(' ')).toBe(2)
      expect(refused.stderr).toContain(`dsh: "${args[2]}" is a subcommand: it goes before the options of a task (dsh ${args[2]} ...)`)
      expect(refused.stderr).not.toContain('model request')
    }
    expect(parseHeadlessArgs(['--model', 'deepseek-v4-pro', '--', 'sessions', 'are', 'slow']).task).toBe('sessions are slow')
    expect(parseHeadlessArgs(['list', 'the', 'sessions']).task).toBe('list the sessions')
    const json = await runDsh(['--output', 'json', 'sessions'], { env, cwd })
    expect(JSON.parse(json.stdout)).toMatchObject({ type: 'result', sessionId: null, reason: { kind: 'error', error: { code: 'USAGE' } } })
    expect((await runDsh(['sessions', '--patch', join(home, 'x.yml'), 'export'], { env, cwd })).stderr).not.toContain('launcher flag')
    const late = await runDsh(['sessions', 'export', 'abcd', '--patch', 'x.yml'], { env, cwd })
    expect(late.code).toBe(2)
    expect(late.stderr).toContain('dsh: sessions: --patch is a launcher flag: put it before the subcommand\'s words (dsh --patch ... sessions export ...)')
  })
})

describe('a bad model.default in settings (#44.6)', () => {
  it('names the settings file and the key and exits 1, a configuration error; --output json says CONFIG', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, 'settings.yaml'), 'model:\n  default: nosuch-model\n')
    const run = await runDsh(['--output', 'json', 'hello'], { env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'k' }, cwd })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(`dsh: ${join(home, 'settings.yaml')}, key "model.default": unknown model "nosuch-model" (available: `)
    expect(JSON.parse(run.stdout).reason.error.code).toBe('CONFIG')
    // A name given on the command line is a usage error (exit 2), as before.
    const flag = await runDsh(['--model', 'nosuch-model', 'hello'], { env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'k' }, cwd })
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain('unknown model "nosuch-model"')
  })
})
