/**
 * `dsh trust` through the real binary (docs/security.md, "Project trust"): the status of a
 * folder, `on` (after which a headless run starts the project's MCP server and runs its hook
 * without a flag), `list` and `off`.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { testServerEntry } from '../../test-support/mcp.js'
import { runDsh, tempHome, withoutSessionHint } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

function project(cwd: string): void {
  mkdirSync(join(cwd, '.claude'))
  writeFileSync(join(cwd, '.claude', 'settings.json'), JSON.stringify({
    hooks: { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'echo "rm is not allowed here" >&2; exit 2' }] }] },
  }))
  writeFileSync(join(cwd, '.mcp.json'), JSON.stringify({ mcpServers: { proj: testServerEntry() } }))
}

describe('dsh trust', () => {
  it('says what an untrusted folder would run; on trusts it and the next run starts its server and runs its hook; list; off', async () => {
    const { home, cwd } = tempHome()
    project(cwd)
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    const status = await runDsh(['trust'], { cwd, env })
    expect(status.code).toBe(0)
    expect(status.stdout).toBe([
      `${cwd} is not trusted.`,
      'Project files that run code, with your user\'s rights, once trusted:',
      '  hooks   .claude/settings.json (PreToolUse)',
      `  MCP     proj: ${process.execPath} ${String(testServerEntry().args)}`,
      'Trust it with `dsh trust on`.',
      '',
    ].join('\n'))

    const on = await runDsh(['trust', 'on'], { cwd, env })
    expect(on.code).toBe(0)
    expect(on.stdout).toContain(`Trusted ${cwd}:`)
    expect((await runDsh(['trust', 'list'], { cwd, env })).stdout).toBe(`${cwd}\n`)
    const trusted = await runDsh(['trust'], { cwd, env })
    expect(trusted.stdout).toContain(`${cwd} is trusted.\nProject files that run code, with your user's rights:\n`)
    expect(trusted.stdout).toContain('Revoke with `dsh trust off`.')

    mkdirSync(join(cwd, 'build'))
    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-1', name: 'bash', arguments: '{"command":"rm -rf build","description":"clean"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'done' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const run = await runDsh(['--profile', 'headless', 'clean up'], { cwd, env })
    expect(run.code).toBe(0)
    // No notice about trust; the server's own stderr line is all it printed.
    expect(withoutSessionHint(run.stderr)).toBe('[mcp proj] test server basic started\n')
    expect(server.requests[before]!.body.tools.map((tool: { function: { name: string } }) => tool.function.name)).toContain('mcp__proj__echo')
    expect(server.requests[before + 1]!.body.messages.find((m: { role: string }) => m.role === 'tool')).toMatchObject({ content: 'Error: rm is not allowed here' })
    expect(readdirSync(cwd)).toContain('build')

    const off = await runDsh(['trust', 'off'], { cwd, env })
    expect(off.stdout).toBe(`Revoked trust in ${cwd}. What already runs stops at the next start.\n`)
    expect((await runDsh(['trust', 'list'], { cwd, env })).stdout).toBe('No trusted folders.\n')
    expect((await runDsh(['trust'], { cwd, env })).stdout).toContain(`${cwd} is not trusted.`)
  })

  it('--cwd names another folder; a bad option is a usage error', async () => {
    const { home, cwd } = tempHome()
    project(cwd)
    const elsewhere = await runDsh(['trust', 'on', '--cwd', cwd], { cwd: home, env: { DSH_HOME: home } })
    expect(elsewhere.code).toBe(0)
    expect(elsewhere.stdout).toContain(`Trusted ${cwd}:`)
    const bad = await runDsh(['trust', 'on', '--bogus'], { cwd, env: { DSH_HOME: home } })
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('dsh trust: unknown option --bogus')
  })
})
