/**
 * A real headless run (the built binary against the fake DeepSeek server) with a project's
 * `.claude/settings.json`: a PreToolUse script denies a bash command, a PostToolUse hook adds
 * context, and the project must be trusted first.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'
import { trustProject } from '../trust/index.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

function project(cwd: string): void {
  mkdirSync(join(cwd, '.claude', 'hooks'), { recursive: true })
  writeFileSync(join(cwd, '.claude', 'hooks', 'guard.sh'), [
    'payload=$(cat)',
    'case "$payload" in',
    '  *\'"rm \'*) echo "rm is not allowed in this project" >&2; exit 2 ;;',
    'esac',
    'exit 0',
    '',
  ].join('\n'))
  writeFileSync(join(cwd, '.claude', 'settings.json'), JSON.stringify({
    hooks: {
      PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'sh "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh"' }] }],
      PostToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: `echo '${JSON.stringify({ hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: 'The audit log recorded this command.' } })}'` }] }],
    },
  }))
}

function script(): void {
  server.enqueue(
    streamResponse([{ toolCall: { id: 'call-1', name: 'bash', arguments: '{"command":"rm -rf build","description":"clean"}' } }, { finish: 'tool_calls', usage }]),
    streamResponse([{ toolCall: { id: 'call-2', name: 'bash', arguments: '{"command":"echo kept","description":"echo"}' } }, { finish: 'tool_calls', usage }]),
    streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
  )
}

function sessionEvents(home: string): { type: string; data: any }[] {
  const dir = join(home, 'sessions')
  const files = readdirSync(dir, { recursive: true }).map(String).filter(name => name.endsWith('.jsonl'))
  return readFileSync(join(dir, files[0]!), 'utf8').trim().split('\n').slice(1).map(line => JSON.parse(line))
}

describe('hooks in a real headless run', () => {
  it('HK-5, HK-7: a trusted project PreToolUse script denies bash; PostToolUse context reaches the next request', async () => {
    const { home, cwd } = tempHome()
    project(cwd)
    trustProject(home, cwd)
    mkdirSync(join(cwd, 'build'))
    script()
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', 'clean up'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' } })
    expect(withoutSessionHint(result.stderr)).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('done\n')
    // The denied command never ran.
    expect(readdirSync(cwd)).toContain('build')
    const second = server.requests[before + 1]!.body
    expect(second.messages.find((m: { role: string }) => m.role === 'tool')).toMatchObject({ tool_call_id: 'call-1', content: 'Error: rm is not allowed in this project' })
    const third = server.requests[before + 2]!.body
    const last = third.messages.slice(-2)
    expect(last[0]).toMatchObject({ role: 'tool', tool_call_id: 'call-2', content: 'kept\n' })
    expect(last[1]).toMatchObject({ role: 'user', content: 'The audit log recorded this command.' })
    const hookEvents = sessionEvents(home).filter(e => e.type.startsWith('hook/')).map(e => [e.type, e.data.handlerId, e.data.decision])
    expect(hookEvents).toEqual([
      ['hook/invoked', 'claude-code:PreToolUse:1', undefined], ['hook/result', 'claude-code:PreToolUse:1', 'block'],
      ['hook/invoked', 'claude-code:PreToolUse:2', undefined], ['hook/result', 'claude-code:PreToolUse:2', 'pass'],
      ['hook/invoked', 'claude-code:PostToolUse:1', undefined], ['hook/result', 'claude-code:PostToolUse:1', 'pass'],
    ])
  })

  it('an untrusted project\'s hooks do not run, and the user is told why', async () => {
    const { home, cwd } = tempHome()
    project(cwd)
    mkdirSync(join(cwd, 'build'))
    script()
    const result = await runDsh(['--profile', 'headless', 'clean up'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' } })
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(/not trusted/)
    expect(readdirSync(cwd)).not.toContain('build')
  })
})
