/**
 * `--session` from another folder: the session's stored folder is the working folder for the
 * tools and for what the model is told (the cwd runtime context and the AGENTS.md instructions),
 * never the shell's folder.
 */
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

let server: FakeDeepSeek
beforeAll(async () => { server = await FakeDeepSeek.start() })
afterAll(async () => { await server.close() })

const usage = { prompt_tokens: 10, completion_tokens: 3 }

function lastRuntimeContext(body: any): string {
  const texts = body.messages.filter((m: any) => m.role === 'user' && typeof m.content === 'string' && m.content.startsWith('Current runtime context.'))
  return texts.at(-1)?.content ?? ''
}

describe('--session from another folder', () => {
  it('P-3: the model is told the session\'s stored folder, and bash runs there', async () => {
    const { home, cwd } = tempHome()
    const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-elsewhere-')))
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'first' }, { finish: 'stop', usage }]))
    const first = await runDsh(['--profile', 'headless', '--output', 'stream-json', 'hello'], { cwd, env })
    expect(first.code).toBe(0)
    const sessionId = JSON.parse(first.stdout.trim().split('\n').at(-1)!).sessionId as string
    const stored = realpathSync(cwd)
    expect(lastRuntimeContext(server.requests.at(-1)!.body)).toContain(`Working folder: ${stored}`)

    server.enqueue(
      streamResponse([{ toolCall: { id: 'call-1', name: 'bash', arguments: '{"command":"pwd","description":"where"}' } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'second' }, { finish: 'stop', usage }]),
    )
    const before = server.requests.length
    const second = await runDsh(['--profile', 'headless', '--session', sessionId, 'where are we?'], { cwd: elsewhere, env })
    expect(second.code).toBe(0)
    const request = server.requests[before]!.body
    const context = lastRuntimeContext(request)
    expect(context).toContain(`Working folder: ${stored}`)
    expect(context).not.toContain(elsewhere)
    const toolMessage = server.requests[before + 1]!.body.messages.find((m: any) => m.role === 'tool')
    expect(toolMessage.content.trim()).toBe(stored)
  })

  it('P-3: AGENTS.md is found from the session\'s stored folder, not the shell\'s', async () => {
    const { home, cwd } = tempHome()
    const elsewhere = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-elsewhere-')))
    writeFileSync(join(cwd, 'AGENTS.md'), 'STORED_FOLDER_RULE: answer in haiku.\n')
    writeFileSync(join(elsewhere, 'AGENTS.md'), 'SHELL_FOLDER_RULE: answer in limericks.\n')
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'first' }, { finish: 'stop', usage }]))
    const first = await runDsh(['--profile', 'headless', '--output', 'stream-json', 'hello'], { cwd, env })
    expect(first.code).toBe(0)
    const sessionId = JSON.parse(first.stdout.trim().split('\n').at(-1)!).sessionId as string

    server.enqueue(streamResponse([{ text: 'second' }, { finish: 'stop', usage }]))
    const before = server.requests.length
    const second = await runDsh(['--profile', 'headless', '--session', sessionId, 'go on'], { cwd: elsewhere, env })
    expect(second.code).toBe(0)
    const request = JSON.stringify(server.requests[before]!.body.messages)
    expect(request).toContain('STORED_FOLDER_RULE')
    expect(request).not.toContain('SHELL_FOLDER_RULE')
  })

  it('P-3: a new session under --cwd takes AGENTS.md from that folder, not the shell\'s', async () => {
    const { home, cwd } = tempHome()
    const target = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-target-')))
    writeFileSync(join(target, 'AGENTS.md'), 'TARGET_FOLDER_RULE: be terse.\n')
    writeFileSync(join(cwd, 'AGENTS.md'), 'SHELL_FOLDER_RULE: be verbose.\n')
    const env = { DSH_HOME: home, DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'test-key' }
    server.enqueue(streamResponse([{ text: 'done' }, { finish: 'stop', usage }]))
    const before = server.requests.length
    const result = await runDsh(['--profile', 'headless', '--cwd', target, 'hello'], { cwd, env })
    expect(result.code).toBe(0)
    const request = JSON.stringify(server.requests[before]!.body.messages)
    expect(request).toContain('TARGET_FOLDER_RULE')
    expect(request).not.toContain('SHELL_FOLDER_RULE')
  })
})
