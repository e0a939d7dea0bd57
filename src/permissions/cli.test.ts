/**
 * Permission rules through the real `dsh` process (headless), against the fake DeepSeek server:
 * --allow lets an escalation run without asking, a compound command is not covered by a prefix
 * rule, --deny refuses before anything runs, and settings.yaml and .claude/settings.json are read
 * as the docs say.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const envFor = (home: string) => ({ DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' })
const bashCall = (id: string, args: Record<string, unknown>) =>
  streamResponse([{ toolCall: { id, name: 'bash', arguments: JSON.stringify(args) } }, { finish: 'tool_calls', usage }])
const answer = (text: string) => streamResponse([{ text }, { finish: 'stop', usage }])

interface Event { type: string; data: Record<string, unknown> }
const eventsOf = (stdout: string): Event[] => stdout.trim().split('\n').map(line => JSON.parse(line)).filter(line => line.type === 'session_event').map(line => line.event)
const toolText = (before: number) => server.requests[before + 1]!.body.messages.find((m: { role: string }) => m.role === 'tool').content as string

describe('dsh --profile headless with permission rules', () => {
  it('--allow lets a matching escalation run without asking; the decision names the rule', async () => {
    const { home, cwd } = tempHome()
    const outside = mkdtempSync(join(tmpdir(), 'dsh-outside-'))
    const target = join(outside, 'file')
    server.enqueue(bashCall('c1', { command: `touch ${target}`, description: 'touch', sandbox_permissions: 'danger-full-access', justification: 'the user asked for it' }), answer('Touched.'))
    const result = await runDsh(['--profile', 'headless', '--output', 'stream-json', '--allow', 'Bash(touch:*)', 'touch it'], { cwd, env: envFor(home) })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(existsSync(target)).toBe(true)
    const decided = eventsOf(result.stdout).filter(event => event.type === 'approval/decided').map(event => event.data)
    expect(decided).toEqual([{ id: expect.any(String), outcome: 'allowed-once', rule: { text: 'Bash(touch:*)', kind: 'allow', source: 'command line' } }])
  })

  it('a prefix rule does not cover a compound command: `npm run test:x && touch /outside/file` is refused as before', async () => {
    const { home, cwd } = tempHome()
    const target = join(mkdtempSync(join(tmpdir(), 'dsh-outside-')), 'file')
    const command = `npm run test:x && touch ${target}`
    server.enqueue(bashCall('c1', { command, description: 'test', sandbox_permissions: 'danger-full-access', justification: 'tests' }), answer('Refused.'))
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--allow', 'Bash(npm run test:*)', '--allow', 'Bash(npm run test:x)', 'test it'], { cwd, env: envFor(home) })
    expect(existsSync(target)).toBe(false)
    expect(withoutSessionHint(result.stderr)).toMatch(/^dsh: bash needs approval \(escalate sandbox to danger-full-access: tests\) and headless runs cannot ask; it was refused/)
    expect(toolText(before)).toBe('Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel is available')
  })

  it('--deny refuses before anything runs, every part of the command, and tells the model which rule', async () => {
    const { home, cwd } = tempHome()
    server.enqueue(bashCall('c1', { command: 'touch first && rm -rf .', description: 'clean' }), answer('Denied.'))
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--deny', 'Bash(rm:*)', 'clean up'], { cwd, env: envFor(home) })
    expect(result.code).toBe(0)
    expect(existsSync(join(cwd, 'first'))).toBe(false)
    expect(toolText(before)).toBe('Error: bash was refused by the permission rule Bash(rm:*) (command line); nothing was run')
  })

  it('settings.yaml permissions apply; an untrusted folder\'s .claude/settings.json is ignored, said once on stderr', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, 'settings.yaml'), 'permissions:\n  deny:\n    - Bash(touch:*)\n')
    mkdirSync(join(cwd, '.claude'))
    writeFileSync(join(cwd, '.claude', 'settings.json'), JSON.stringify({ permissions: { allow: ['Bash'] } }))
    server.enqueue(bashCall('c1', { command: 'touch made', description: 'touch' }), answer('Denied.'))
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'make it'], { cwd, env: envFor(home) })
    expect(existsSync(join(cwd, 'made'))).toBe(false)
    expect(toolText(before)).toBe('Error: bash was refused by the permission rule Bash(touch:*) (user settings); nothing was run')
    const lines = withoutSessionHint(result.stderr).split('\n')
    expect(lines.filter(line => line === 'dsh: the permission rules of .claude/settings.json are ignored: this folder is not trusted (dsh trust on)')).toHaveLength(1)
  })

  it('an ask rule in a headless run fails closed, and the line names the rule rather than a mode', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, 'settings.yaml'), 'permissions:\n  ask:\n    - Bash(git push:*)\n')
    server.enqueue(bashCall('c1', { command: 'git push origin main', description: 'push' }), answer('Not pushed.'))
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'push it'], { cwd, env: envFor(home) })
    expect(withoutSessionHint(result.stderr)).toBe('dsh: bash needs approval (the permission rule Bash(git push:*) (user settings) asks before every matching call) and headless runs cannot ask; it was refused. The permission rule Bash(git push:*) (user settings) asks before it.\n')
    expect(toolText(before)).toBe('Error: tool "bash" requires approval, but no approval channel is available')
  })

  it('a rule that cannot mean anything stops the run before any request, naming the rule', async () => {
    const { home, cwd } = tempHome()
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--allow', 'Bash(git * main)', 'x'], { cwd, env: envFor(home) })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(/permission rule "Bash\(git \* main\)" \(command line\): a command pattern is exact/)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(server.requests.length).toBe(before)
  })
})
