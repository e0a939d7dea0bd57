import { describe, expect, it } from 'vitest'
import { loopHarness } from '../../test-support/agent-harness.js'
import { SCRIPTED_MODEL } from '../../test-support/scripted-model.js'
import { text } from '../../test-support/scripted-model.js'
import { CommandsPlugin } from './index.js'
import { ApprovalPlugin } from '../approval/service.js'
import { compactNumber as compact } from '../host/numbers.js'

async function harness(responses: Parameters<typeof text>[0][] = []) {
  return loopHarness({
    responses: responses.map(value => text(value)),
    setup: async (ctx) => { await ctx.plugin(CommandsPlugin).await() },
  })
}

describe('slash commands: one registry (ctx.commands)', () => {
  it('parses `/name args` keeping the leading space of the arguments, and nothing else', async () => {
    const h = await harness()
    expect(h.ctx.commands.parse('/permission read-only')).toEqual({ name: 'permission', args: ' read-only' })
    expect(h.ctx.commands.parse('/compact')).toEqual({ name: 'compact', args: '' })
    expect(h.ctx.commands.parse('/compact  \n')).toEqual({ name: 'compact', args: '' })
    expect(h.ctx.commands.parse('hello /compact')).toBeUndefined()
    expect(h.ctx.commands.parse('/ nothing')).toBeUndefined()
    await h.dispose()
  })

  it('runs a registered command between turns as a command/run + command/done pair; unknown names are prompts', async () => {
    const h = await harness()
    const seen: string[] = []
    const dispose = h.ctx.commands.register({ name: 'echo', description: 'echo', run: ({ args }) => { seen.push(args); return { kind: 'success', text: `said${args}` } } })
    expect(await h.ctx.commands.execute(h.agent, '/echo hi there')).toEqual({ kind: 'success', text: 'said hi there' })
    expect(seen).toEqual([' hi there'])
    const [run, done] = h.session.events.filter(e => e.type.startsWith('command/'))
    expect(run).toMatchObject({ type: 'command/run', data: { name: 'echo', args: ' hi there', source: { kind: 'user' } } })
    expect(done).toMatchObject({ type: 'command/done', data: { commandId: (run!.data as { commandId: string }).commandId, kind: 'success', text: 'said hi there' } })
    expect(h.types()).not.toContain('turn/start')
    expect(await h.ctx.commands.execute(h.agent, '/nope')).toBeUndefined()
    dispose()
    expect(h.ctx.commands.get('echo')).toBeUndefined()
    await h.dispose()
  })

  it('a failing command logs an error outcome and never throws; a prompt outcome queues a turn', async () => {
    const h = await harness(['ran'])
    h.ctx.commands.register({ name: 'boom', description: 'fails', run: () => { throw new Error('kaput') } })
    h.ctx.commands.register({ name: 'ask', description: 'asks the model', run: ({ args }) => ({ kind: 'prompt', input: `question:${args}` }) })
    expect(await h.ctx.commands.execute(h.agent, '/boom')).toEqual({ kind: 'error', text: '/boom failed: kaput' })
    await h.ctx.commands.execute(h.agent, '/ask x')
    await h.agent.whenIdle()
    const prompt = h.of('user/message')[0]!.data.content[0] as { text: string }
    expect(prompt.text).toBe('question: x')
    await h.dispose()
  })

  it('lists commands sorted by name, per agent scope, and announces changes', async () => {
    const h = await harness()
    let changes = 0
    h.ctx.on('commands/changed', () => { changes++ })
    const off = h.ctx.commands.register({ name: 'zeta', description: 'z', run: () => ({ kind: 'success' }) }, h.agent.scope)
    h.ctx.commands.register({ name: 'alpha', description: 'a', run: () => ({ kind: 'success' }) })
    expect(h.ctx.commands.list(h.agent.scope).map(c => c.name)).toEqual(['alpha', 'context', 'cost', 'model', 'status', 'zeta'])
    expect(h.ctx.commands.list().map(c => c.name)).toEqual(['alpha', 'context', 'cost', 'model', 'status'])
    off()
    expect(changes).toBe(3)
    expect(() => h.ctx.commands.register({ name: 'bad name', description: '', run: () => ({ kind: 'success' }) })).toThrow(/must match/)
    await h.dispose()
  })

  it('/model shows the route and refuses unknown models', async () => {
    const h = await harness()
    const shown = await h.ctx.commands.execute(h.agent, '/model')
    expect(shown).toMatchObject({ kind: 'success' })
    expect((shown as { text: string }).text).toContain(`Model: ${SCRIPTED_MODEL}`)
    expect(await h.ctx.commands.execute(h.agent, '/model nope')).toMatchObject({ kind: 'error', text: expect.stringContaining('Unknown model "nope"') })
    await h.dispose()
  })
})

describe('/permission (AP-5)', () => {
  it('AP-5: shows the preset in force and the choices, switches through ctx.approval.selectPreset, refuses unknown names', async () => {
    const h = await loopHarness({ setup: async (ctx) => { await ctx.plugin(ApprovalPlugin).await(); await ctx.plugin(CommandsPlugin).await() } })
    expect(await h.ctx.commands.execute(h.agent, '/permission')).toEqual({
      kind: 'success',
      text: 'Permission preset: workspace-write (sandbox workspace-write, approvals ask)\nPresets: read-only, workspace-write, danger-full-access',
    })
    expect(await h.ctx.commands.execute(h.agent, '/permission read-only')).toEqual({ kind: 'success', text: 'Permission preset: read-only (sandbox read-only, approvals ask)' })
    expect(h.types().filter(t => t === 'permission/preset' || t === 'sandbox/mode' || t === 'approval/policy')).toEqual(['permission/preset', 'sandbox/mode'])
    expect(h.ctx.approval.mode(h.session)).toBe('read-only')
    // Already in force: nothing appended.
    await h.ctx.commands.execute(h.agent, '/permission read-only')
    expect(h.of('permission/preset')).toHaveLength(1)
    const bad = await h.ctx.commands.execute(h.agent, '/permission yolo')
    expect(bad).toEqual({ kind: 'error', text: 'Unknown permission preset "yolo". Presets: read-only, workspace-write, danger-full-access' })
    expect(h.of('permission/preset')).toHaveLength(1)
    expect(h.of('command/run').map(e => e.data.args)).toEqual([undefined, ' read-only', ' read-only', ' yolo'])
    await h.dispose()
  })

  it('is not registered without ctx.approval', async () => {
    const h = await loopHarness({ setup: async (ctx) => { await ctx.plugin(CommandsPlugin).await() } })
    expect(h.ctx.commands.get('permission')).toBeUndefined()
    await h.dispose()
  })
})

describe('/network (security #40.1)', () => {
  it('shows the network mode and what each means, switches through ctx.approval.setNetwork (logged once), refuses unknown modes', async () => {
    const h = await loopHarness({ setup: async (ctx) => { await ctx.plugin(ApprovalPlugin, { network: 'allowlist' }).await(); await ctx.plugin(CommandsPlugin).await() } })
    const shown = await h.ctx.commands.execute(h.agent, '/network')
    expect(shown).toEqual({
      kind: 'success',
      text: [
        'Network of sandboxed commands: allowlist',
        "  full       share this machine's network",
        '* allowlist  only hosts in sandbox.allowedHosts (a proxy asks about others)',
        '  none       no network at all',
        'Switch with /network full|allowlist|none',
      ].join('\n'),
    })
    expect(await h.ctx.commands.execute(h.agent, '/network none')).toEqual({ kind: 'success', text: 'Network of sandboxed commands: none — no network at all' })
    expect(h.ctx.approval.network(h.session)).toBe('none')
    await h.ctx.commands.execute(h.agent, '/network none')
    expect(h.of('sandbox/network').map(e => e.data)).toEqual([{ network: 'none' }])
    const bad = await h.ctx.commands.execute(h.agent, '/network open')
    expect(bad).toEqual({ kind: 'error', text: 'Unknown network mode "open". Modes: full, allowlist, none' })
    expect(h.of('sandbox/network')).toHaveLength(1)
    await h.dispose()
  })

  it('says that danger-full-access runs commands unconfined, and is not registered without ctx.approval', async () => {
    const h = await loopHarness({ setup: async (ctx) => { await ctx.plugin(ApprovalPlugin).await(); await ctx.plugin(CommandsPlugin).await() } })
    h.ctx.approval.selectPreset(h.session, 'danger-full-access')
    const shown = await h.ctx.commands.execute(h.agent, '/network')
    expect(shown?.text).toMatch(/^Network of sandboxed commands: full\n/)
    expect(shown?.text).toContain('The sandbox is danger-full-access: commands run unconfined')
    expect((await h.ctx.commands.execute(h.agent, '/network allowlist'))?.text).toContain('commands run unconfined')
    await h.dispose()
    const bare = await loopHarness({ setup: async (ctx) => { await ctx.plugin(CommandsPlugin).await() } })
    expect(bare.ctx.commands.get('network')).toBeUndefined()
    await bare.dispose()
  })
})

describe('slash commands in a real headless run', () => {
  it('`dsh --profile headless /model` runs the command (no model request) and prints its text', async () => {
    const { runDsh, tempHome, withoutSessionHint } = await import('../../test-support/run-dsh.js')
    const { home, cwd } = tempHome()
    const result = await runDsh(['--profile', 'headless', '/model'], { cwd, env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'test-key', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9' } })
    expect(withoutSessionHint(result.stderr)).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^Model: deepseek-v4-flash \(deepseek-official\)\n/)
    const failed = await runDsh(['--profile', 'headless', '/model', 'nope'], { cwd, env: { DSH_HOME: home, DEEPSEEK_API_KEY: 'test-key', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9' } })
    expect(failed.code).toBe(1)
    expect(failed.stderr).toMatch(/Unknown model "nope"/)
  })

  it('AP-5, PM-1: the base bundle serves `/permission` and `/plan` in a real headless run (no model request)', async () => {
    const { runDsh, tempHome, withoutSessionHint } = await import('../../test-support/run-dsh.js')
    const { home, cwd } = tempHome()
    const env = { DSH_HOME: home, DEEPSEEK_API_KEY: 'test-key', DEEPSEEK_BASE_URL: 'http://127.0.0.1:9' }
    const shown = await runDsh(['--profile', 'headless', '/permission'], { cwd, env })
    expect(withoutSessionHint(shown.stderr)).toBe('')
    expect(shown.stdout).toMatch(/^Permission preset: workspace-write \(sandbox workspace-write, approvals ask\)\nPresets: read-only, workspace-write, danger-full-access\n/)
    const plan = await runDsh(['--profile', 'headless', '/plan'], { cwd, env })
    expect(withoutSessionHint(plan.stderr)).toBe('')
    expect(plan.code).toBe(0)
    expect(plan.stdout).toBe('Plan mode on.\n')
  })
})

describe('/status', () => {
  it('says the session, folder, model, permission, the tokens so far, the context in use and the cost when the model has a price', async () => {
    const usage = { inputTokens: 800, cacheReadTokens: 1200, outputTokens: 40, reasoningTokens: 10 }
    const priced = await loopHarness({
      responses: [text('one', { usage }), text('two', { usage })],
      setup: async (ctx) => {
        await ctx.plugin(CommandsPlugin, { prices: { [SCRIPTED_MODEL]: { input: 2, output: 8, cacheRead: 0.5 } } }).await()
        await ctx.plugin(ApprovalPlugin).await()
      },
    })
    priced.agent.followup('first')
    await priced.agent.whenIdle()
    priced.agent.followup('second')
    await priced.agent.whenIdle()
    const outcome = await priced.ctx.commands.execute(priced.agent, '/status')
    expect(outcome?.kind).toBe('success')
    expect(outcome!.text!.split('\n')).toEqual([
      `Session     ${priced.agent.id} (2 turns, 2 steps)`,
      `Folder      ${process.cwd()}`,
      `Model       ${SCRIPTED_MODEL} (${priced.agent.config.provider})`,
      'Permission  workspace-write (sandbox workspace-write, approvals ask)',
      // 2 × (800 uncached + 1200 cached) in.
      'Tokens      4.0k in (2.4k cached) · 80 out (20 reasoning)',
      // The last request: 800 + 1200 in, 40 out, of the scripted model's 128k.
      'Context     2.0k of 128k (2%)',
      // 2 × (800 × 2 + 1200 × 0.5 + 40 × 8) / 1e6
      'Cost        $0.0050',
    ])
    await priced.dispose()
  })

  it('without a price it says how to add one; before any request there are no tokens', async () => {
    const h = await harness()
    const outcome = await h.ctx.commands.execute(h.agent, '/status')
    expect(outcome!.text!.split('\n').slice(3)).toEqual([
      'Tokens      none yet',
      `Cost        unknown: no price for ${SCRIPTED_MODEL} (add model.prices to settings.yaml)`,
    ])
    await h.dispose()
  })
})

describe('/cost and /context', () => {
  const usage = { inputTokens: 800, cacheReadTokens: 1200, outputTokens: 40, reasoningTokens: 10 }
  it('/cost: the total, by model, the tokens and the last turn; /context: the window as the last answer left it, split into system, tools and messages', async () => {
    const h = await loopHarness({
      responses: [text('one', { usage }), text('two', { usage })],
      setup: async (ctx) => { await ctx.plugin(CommandsPlugin, { prices: { [SCRIPTED_MODEL]: { input: 2, output: 8, cacheRead: 0.5 } } }).await() },
    })
    h.agent.followup('first')
    await h.agent.whenIdle()
    h.agent.followup('second')
    await h.agent.whenIdle()
    const cost = await h.ctx.commands.execute(h.agent, '/cost')
    expect(cost!.text!.split('\n')).toEqual([
      'Total         $0.0050 (2 turns, 2 steps)',
      `Model         ${SCRIPTED_MODEL}: $0.0050 · 2 steps`,
      'Tokens        4.0k in (2.4k cached) · 80 out (20 reasoning)',
      'Last turn     $0.0025',
    ])
    const header = (h.session.events.findLast(e => e.type === 'request/header')!.data as { header: { system: string; tools: unknown[] } }).header
    const system = Math.round(header.system.length / 4)
    const tools = Math.round(JSON.stringify(header.tools).length / 4)
    const context = await h.ctx.commands.execute(h.agent, '/context')
    const lines = context!.text!.split('\n')
    expect(lines[0]).toBe('Context       2.0k of 128k (2%), as of the last answer')
    expect(lines[1]).toBe(`  System      ~${system} (estimated)`)
    expect(lines[2]).toMatch(new RegExp(`^  Tools       ~${tools} \\(\\d+ tools?, estimated\\)$`))
    expect(lines[3]).toBe(`  Messages    ~${compact(2040 - system - tools)} (the rest)`)
    expect(lines[4]).toMatch(/^Free          12[56]k \(98%\)$/)
    await h.dispose()
  })

  it('before any request: nothing spent and no context yet; without a price /cost says how to add one', async () => {
    const h = await harness()
    expect((await h.ctx.commands.execute(h.agent, '/cost'))!.text).toBe(`Nothing spent yet; no price for ${SCRIPTED_MODEL} (add model.prices to settings.yaml).`)
    expect((await h.ctx.commands.execute(h.agent, '/context'))!.text).toBe(`No request answered yet; ${SCRIPTED_MODEL} has a window of 128k tokens.`)
    await h.dispose()
  })
})
