import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ToolsPlugin } from '../tools/index.js'
import type { Tool, ToolContext, ToolResultRecord } from '../tools/api.js'
import { TimeoutPolicy, TimeoutPolicyPlugin, TOOL_TIMEOUT, type TimeoutPolicyConfig } from './timeout-policy.js'

/** A tool that waits for its signal (or `ms`), and says which ended it. */
function waiting(name: string, ms: number, seen: { signal?: AbortSignal; ended?: string } = {}): Tool {
  return {
    name, description: 'waits', parameters: { type: 'object' },
    execute: (_args, context: ToolContext) => new Promise(resolve => {
      seen.signal = context.signal
      const timer = setTimeout(() => { seen.ended = 'finished'; resolve({ content: [{ type: 'text', text: `${name} finished` }] }) }, ms)
      context.signal.addEventListener('abort', () => {
        clearTimeout(timer)
        seen.ended = `aborted: ${(context.signal.reason as Error).name}`
        resolve({ content: [{ type: 'text', text: `${name} stopped` }] })
      }, { once: true })
    }),
  }
}

let ctx: Context
let calls = 0
async function setup(config: TimeoutPolicyConfig, tools: readonly Tool[]): Promise<void> {
  ctx = new Context()
  await ctx.plugin(ToolsPlugin).await()
  for (const tool of tools) ctx.tools.register(tool)
  await ctx.plugin(TimeoutPolicyPlugin, config).await()
}
function run(name: string, args: unknown = {}, signal = new AbortController().signal): Promise<ToolResultRecord> {
  return ctx.tools.execute({ callId: `c${++calls}`, name, arguments: JSON.stringify(args) }, { cwd: process.cwd(), signal })
}
const textOf = (record: ToolResultRecord) => record.content.map(block => block.type === 'text' ? block.text : '').join('')

describe('the tool timeout policy (guard-timeout-policy)', () => {
  it('ends a slow call at its deadline with TOOL_TIMEOUT naming the policy, and leaves a fast one alone', async () => {
    const slow = {}
    const fast = {}
    await setup({ tools: { slow_tool: 50, fast_tool: 60_000 } }, [waiting('slow_tool', 60_000, slow), waiting('fast_tool', 1, fast)])
    const ended = await run('slow_tool')
    expect(ended.isError).toBe(true)
    expect(ended.error).toEqual({ name: 'ToolTimeoutError', code: TOOL_TIMEOUT })
    expect(textOf(ended)).toBe('Error: tool call timed out after 50ms: slow_tool ran past the deadline set by the tool timeout policy (tools.slow_tool = 50 in guard-timeout-policy)')
    // The body saw the deadline as a cancel and stopped before the result came back.
    expect(slow).toMatchObject({ ended: 'aborted: TimeoutError' })
    const passed = await run('fast_tool')
    expect(passed).toEqual({ content: [{ type: 'text', text: 'fast_tool finished' }], isError: false })
    expect(fast).toMatchObject({ ended: 'finished' })
  })

  it('exempts a call run in the background', async () => {
    const seen = {}
    await setup({ defaultMs: 20 }, [waiting('starter', 80, seen)])
    const record = await run('starter', { run_in_background: true })
    expect(textOf(record)).toBe('starter finished')
    // Without the flag the default deadline applies.
    expect((await run('starter', { run_in_background: false })).error?.code).toBe(TOOL_TIMEOUT)
  })

  it('a cancel of the caller stays a cancel, not a timeout, and the body gets the caller\'s abort', async () => {
    const seen: { signal?: AbortSignal; ended?: string } = {}
    await setup({ tools: { slow_tool: 60_000 } }, [waiting('slow_tool', 60_000, seen)])
    const controller = new AbortController()
    const pending = run('slow_tool', {}, controller.signal)
    await new Promise<void>(resolve => { const poll = () => seen.signal !== undefined ? resolve() : setImmediate(poll); poll() })
    controller.abort(new DOMException('the user cancelled', 'AbortError'))
    const record = await pending
    expect(record.error?.code).toBe('ABORTED')
    expect(seen.ended).toBe('aborted: AbortError')
  })

  it('picks the exact name, then the most specific pattern, then the default; cap bounds all; 0 exempts', () => {
    const policy = new TimeoutPolicy({ tools: { 'mcp__*': 120_000, 'mcp__db__*': 5_000, mcp__db__slow: 0, web_fetch: 60_000, 'huge': 900_000 }, defaultMs: 300_000, capMs: 600_000 })
    expect(policy.budget('web_fetch')).toEqual({ ms: 60_000, rule: 'tools.web_fetch' })
    expect(policy.budget('mcp__git__log')).toEqual({ ms: 120_000, rule: 'tools.mcp__*' })
    expect(policy.budget('mcp__db__query')).toEqual({ ms: 5_000, rule: 'tools.mcp__db__*' })
    expect(policy.budget('mcp__db__slow')).toBeUndefined()
    expect(policy.budget('read')).toEqual({ ms: 300_000, rule: 'defaultMs' })
    expect(policy.budget('huge')).toEqual({ ms: 600_000, rule: 'capMs' })
    expect(new TimeoutPolicy({ capMs: 1_000 }).budget('bash')).toEqual({ ms: 1_000, rule: 'capMs' })
    expect(new TimeoutPolicy({}).budget('bash')).toBeUndefined()
  })

  it('bad settings fail at load with a clear error', () => {
    expect(() => new TimeoutPolicy({ tools: { web_fetch: -1 } })).toThrow(/tools.web_fetch must be milliseconds/)
    expect(() => new TimeoutPolicy({ tools: { web_fetch: '60s' as never } })).toThrow(/not "60s"/)
    expect(() => new TimeoutPolicy({ tools: [] as never })).toThrow(/tools must map tool names/)
    expect(() => new TimeoutPolicy({ defaultMs: 0 })).toThrow(/defaultMs must be a positive number/)
    expect(() => new TimeoutPolicy({ capMs: Number.NaN })).toThrow(/capMs must be a positive number/)
    expect(() => new TimeoutPolicy({ default: 5 } as never)).toThrow(/unknown setting "default"/)
  })

  it('unloading the plugin removes the deadlines', async () => {
    await setup({ defaultMs: 20 }, [waiting('slowish', 80)])
    expect((await run('slowish')).error?.code).toBe(TOOL_TIMEOUT)
    const fresh = new Context()
    await fresh.plugin(ToolsPlugin).await()
    fresh.tools.register(waiting('slowish', 80))
    const fiber = fresh.plugin(TimeoutPolicyPlugin, { defaultMs: 20 })
    await fiber.await()
    await fiber.dispose()
    const record = await fresh.tools.execute({ callId: 'x', name: 'slowish', arguments: '{}' }, { cwd: process.cwd(), signal: new AbortController().signal })
    expect(textOf(record)).toBe('slowish finished')
  })
})

describe('the policy and bash', () => {
  let cwd: string
  beforeEach(() => { cwd = mkdtempSync(join(tmpdir(), 'dsh-guard-bash-')) })
  afterEach(() => { rmSync(cwd, { recursive: true, force: true }) })

  it('a bash budget shorter than the command kills its process tree and answers TOOL_TIMEOUT; bash\'s own shorter timeout still answers as bash does', async () => {
    const { BuiltinToolsPlugin } = await import('../tools/builtin/index.js')
    ctx = new Context()
    await ctx.plugin(ToolsPlugin).await()
    await ctx.plugin(BuiltinToolsPlugin).await()
    await ctx.plugin(TimeoutPolicyPlugin, { tools: { bash: 300 } }).await()
    const bash = (args: object) => ctx.tools.execute({ callId: `b${++calls}`, name: 'bash', arguments: JSON.stringify({ description: 'test', ...args }) }, { cwd, signal: new AbortController().signal })
    const started = Date.now()
    const ended = await bash({ command: 'sleep 30' })
    expect(ended.error?.code).toBe(TOOL_TIMEOUT)
    expect(Date.now() - started).toBeLessThan(20_000)
    const own = await bash({ command: 'sleep 30', timeoutMs: 100 })
    expect(textOf(own)).toContain('[timed out after 100 ms]')
    expect(own.error?.code).not.toBe(TOOL_TIMEOUT)
  })
})
