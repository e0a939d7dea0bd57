/**
 * The cordis row in a whole headless process (#36): off by default (the request carries no
 * cordis_* tool and nothing of the plugin is loaded); DSH_CORDIS_TOOLS=1 offers the seven tools
 * and the section, and a defined host half runs in the process and registers a tool the next
 * request carries.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { stringify as stringifyYaml } from 'yaml'
import { FakeDeepSeek, streamResponse } from '../../test-support/fake-deepseek.js'
import { runDsh, tempHome } from '../../test-support/run-dsh.js'

let model: FakeDeepSeek
beforeEach(async () => { model = await FakeDeepSeek.start() })
afterEach(async () => { await model.close() })
const usage = { prompt_tokens: 100, completion_tokens: 5 }
type Body = { tools?: { function: { name: string } }[]; messages: { role: string; content: string }[] }
const names = (index: number) => ((model.requests[index]!.body as Body).tools ?? []).map((tool) => tool.function.name)

describe('cordis_* in a headless run (#36)', () => {
  it('off by default: no cordis tool, no section', async () => {
    const { home, cwd } = tempHome()
    model.enqueue(streamResponse([{ text: 'ok' }, { finish: 'stop', usage }]))
    const result = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k' } })
    expect(result.code, result.stderr).toBe(0)
    expect(names(0).filter((name) => name.startsWith('cordis_'))).toEqual([])
    expect((model.requests[0]!.body as Body).messages[0]!.content).not.toContain('# Dynamic Cordis Plugins')
  })

  it('DSH_CORDIS_TOOLS=1 (or tools.cordis in settings): define and run a host half whose tool joins the next request', async () => {
    const { home, cwd } = tempHome()
    writeFileSync(join(home, 'settings.yaml'), stringifyYaml({ tools: { cordis: true } }))
    const host = "return { inject: ['tools'], apply(ctx) { ctx.tools.register(harness.defineTool({ name: 'e2e_echo', description: 'Echo.', parameters: { text: { type: 'string', required: true } }, execute: (args) => args.text })) } }"
    model.enqueue(
      streamResponse([{ toolCall: { id: 'd', name: 'cordis_define', arguments: JSON.stringify({ plugin: { kind: 'new', idPrefix: 'echo' }, name: 'Echo', purpose: 'Echo text.', code: { host } }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'r', name: 'cordis_run', arguments: JSON.stringify({ pluginId: 'echo-1', packageId: 'pkg-1', mode: 'run' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'e', name: 'e2e_echo', arguments: JSON.stringify({ text: 'E2E_OK' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'E2E_OK' }, { finish: 'stop', usage }]),
    )
    // danger-full-access runs with policy never: the host half runs as recorded, without asking.
    const result = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_PERMISSION_MODE: 'danger-full-access' } })
    expect(result.code, result.stderr).toBe(0)
    expect(names(0).filter((name) => name.startsWith('cordis_'))).toHaveLength(7)
    expect((model.requests[0]!.body as Body).messages[0]!.content).toContain('# Dynamic Cordis Plugins')
    expect(names(1)).not.toContain('e2e_echo')
    expect(names(2)).toContain('e2e_echo')
    const last = model.requests[3]!.body as Body
    expect(last.messages.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual([
      'Defined echo-1/pkg-1 (Echo); it is not running yet. Use cordis_run to activate this Package.', 'echo-1/pkg-1 is running (run-1).', 'E2E_OK'])
    const sessions = join(home, 'sessions')
    const file = readdirSync(sessions, { recursive: true }).map(String).find((name) => name.endsWith('.jsonl'))!
    const reasons = readFileSync(join(sessions, file), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { type: string; data: { reason?: string } })
      .filter((event) => event.type === 'request/header').map((event) => event.data.reason)
    expect(reasons).toEqual(['initial', 'change'])
  })

  it('under the default asking policy a headless run has no one to ask: the host half does not run, and the result says why', async () => {
    const { home, cwd } = tempHome()
    model.enqueue(
      streamResponse([{ toolCall: { id: 'd', name: 'cordis_define', arguments: JSON.stringify({ plugin: { kind: 'new', idPrefix: 'echo' }, name: 'Echo', purpose: 'p', code: { host: 'return { apply() {} }' } }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ toolCall: { id: 'r', name: 'cordis_run', arguments: JSON.stringify({ pluginId: 'echo-1', packageId: 'pkg-1', mode: 'run' }) } }, { finish: 'tool_calls', usage }]),
      streamResponse([{ text: 'no' }, { finish: 'stop', usage }]),
    )
    const result = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_CORDIS_TOOLS: '1' } })
    expect(result.code, result.stderr).toBe(0)
    const tool = (model.requests[2]!.body as Body).messages.filter((message) => message.role === 'tool').map((message) => message.content)
    expect(tool[1]).toMatch(/^Error: echo-1\/pkg-1 needs approval to run its host code in the dsh process, and no one can answer here/)
  })

  it('a bad DSH_CORDIS_TOOLS is a clear error', async () => {
    const { home, cwd } = tempHome()
    const result = await runDsh(['go'], { cwd, env: { DSH_HOME: home, DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'k', DSH_CORDIS_TOOLS: 'yes' } })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain('DSH_CORDIS_TOOLS must be 1 or 0')
  })
})
