import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls, type ScriptedCall } from '../../test-support/scripted-model.js'
import { ApprovalPlugin, type ApprovalConfig } from '../approval/service.js'
import { CodeModePlugin } from '../code-mode/index.js'
import { toolDeclarations } from '../code-mode/declarations.js'
import { workerCodeRuntime } from '../code-runtime/worker.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { EVENTS } from './api.js'
import { CordisDynamicPlugin, type CordisDynamicConfig } from './index.js'
import { CORDIS_OUTPUT_TYPES, CORDIS_SECTION_TEXT, CORDIS_TOOL_NAMES, CORDIS_TOOLS } from './texts.js'

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..')
const ADVANCED = join(SRC, '../../shared/fixtures/dsh/examples/acp-agent/tests/snapshots/advanced-toolchain')

interface Options {
  readonly config?: CordisDynamicConfig
  readonly approval?: ApprovalConfig
  readonly codeMode?: boolean
}

/** The fiber of the last harness's CordisDynamicPlugin (the restart test disposes it). */
let cordisFiber: { dispose(): Promise<void> } | undefined

async function harness(calls: readonly (readonly ScriptedCall[])[], options: Options = {}): Promise<LoopHarness> {
  return loopHarness({
    responses: [...calls.map((batch) => toolCalls(batch)), text('done')],
    setup: async (ctx) => {
      await ctx.plugin(SystemPromptPlugin).await()
      if (options.approval !== undefined) await ctx.plugin(ApprovalPlugin, options.approval).await()
      if (options.codeMode === true) await ctx.plugin(CodeModePlugin, { mode: 'both', codeRuntime: workerCodeRuntime() }).await()
      cordisFiber = await ctx.plugin(CordisDynamicPlugin, options.config ?? {}).await()
    },
  })
}

async function turn(h: LoopHarness, prompt = 'go'): Promise<void> {
  h.agent.followup(prompt)
  await h.agent.whenIdle()
}

interface Result { callId: string; text: string; isError: boolean; meta?: unknown }
function results(h: LoopHarness): Result[] {
  return h.of('tool/result').map((event) => {
    const data = event.data as unknown as { message: { content: [{ toolCallId: string; content: { text: string }[]; isError: boolean }] }; meta?: unknown }
    const part = data.message.content[0]
    return { callId: part.toolCallId, text: part.content.map((block) => block.text).join(''), isError: part.isError, ...(data.meta !== undefined ? { meta: data.meta } : {}) }
  })
}
const result = (h: LoopHarness, callId: string) => results(h).find((entry) => entry.callId === callId)!

const define = (id: string, host: string | undefined, extra: Record<string, unknown> = {}): ScriptedCall => ({
  id, name: 'cordis_define',
  arguments: { plugin: { kind: 'new', idPrefix: 'snap' }, name: 'Snapshot Marker', purpose: 'Exercise the lifecycle.', code: host === undefined ? {} : { host }, ...extra },
})
const call = (id: string, name: string, args: Record<string, unknown> = {}): ScriptedCall => ({ id, name, arguments: args })
const requestTools = (h: LoopHarness) => h.model.requests.map((request) => (request.tools ?? []).map((tool) => tool.name))

/** The host half of the recorded python `advanced` scenario: a tool that doubles a number. */
const DOUBLE = `return (ctx) => {
  harness.registerTool(ctx, harness.defineTool({
    name: 'snapshot_double',
    description: 'Double a number for executable snapshot verification.',
    parameters: { value: { type: 'number', required: true } },
    output: { schema: { type: 'number' }, render(_args, value) { return [{ type: 'text', text: String(value) }] } },
    async execute(args) { return args.value * 2 }
  }))
}`

describe('cordis_* self-extension (#36)', () => {
  it('define → run → inspect → stop → undefine: recorded texts, meta and ids', async () => {
    const h = await harness([
      [define('d', 'return { apply() {} }')],
      [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })],
      [call('i', 'cordis_inspect_self', { pluginId: 'snap-1' })],
      [call('s', 'cordis_stop', { pluginId: 'snap-1' }), call('s2', 'cordis_stop', { pluginId: 'snap-1' })],
      [call('u', 'cordis_undefine', { pluginId: 'snap-1' })],
      [call('gone', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })],
    ])
    await turn(h)
    expect(result(h, 'd')).toEqual({ callId: 'd', isError: false, text: 'Defined snap-1/pkg-1 (Snapshot Marker); it is not running yet. Use cordis_run to activate this Package.', meta: { pluginId: 'snap-1', packageId: 'pkg-1' } })
    expect(result(h, 'r')).toEqual({ callId: 'r', isError: false, text: 'snap-1/pkg-1 is running (run-1).', meta: { pluginId: 'snap-1', packageId: 'pkg-1', pluginRunId: 'run-1' } })
    expect(JSON.parse(result(h, 'i').text)).toMatchObject({ mode: 'plugin', pluginId: 'snap-1', state: 'running', currentPackageId: 'pkg-1', activeRun: { pluginRunId: 'run-1', packageId: 'pkg-1' } })
    expect(result(h, 's').text).toBe('Dynamic Plugin snap-1 is stopped; its definition and versions remain.')
    expect(result(h, 's2')).toMatchObject({ isError: false, text: result(h, 's').text })
    expect(result(h, 'u').text).toBe('Removed dynamic Plugin snap-1 and all of its Packages.')
    expect(result(h, 'gone')).toMatchObject({ isError: true, text: 'Error: no dynamic plugin "snap-1" in this process — it may have been removed or lost on DSH restart' })
    await h.dispose()
  })

  it('run_code programs get the structured values (the recorded advanced-toolchain program)', async () => {
    const h = await harness([
      [define('d', 'return { apply() {} }', { purpose: 'Exercise the dynamic Cordis Package lifecycle in the snapshot.' })],
      [call('code', 'run_code', { code: "const run = await tools.cordis_run({ pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' });\nconst inspected = await tools.cordis_inspect_self({ pluginId: 'snap-1' });\nreturn { run, inspected };", description: 'Run and inspect' })],
    ], { codeMode: true })
    await turn(h)
    expect(JSON.parse(result(h, 'code').text)).toEqual({
      run: { status: 'running', pluginId: 'snap-1', packageId: 'pkg-1', pluginRunId: 'run-1', currentPackageId: 'pkg-1', host: { status: 'running', provides: [], waitingFor: [] }, client: { status: 'absent', waitingFor: [] } },
      inspected: {
        mode: 'plugin', pluginId: 'snap-1', name: 'Snapshot Marker', packageCount: 1, state: 'running', currentPackageId: 'pkg-1',
        activeRun: { pluginRunId: 'run-1', packageId: 'pkg-1' },
        packages: [{ packageId: 'pkg-1', name: 'Snapshot Marker', purpose: 'Exercise the dynamic Cordis Package lifecycle in the snapshot.', hasHostHalf: true, hasClientHalf: false, isCurrent: true, isNext: false }],
      },
    })
    // The SDK declares the recorded value types.
    expect(h.model.requests[0]!.system).toContain('cordis_undefine: {\n    pluginId: string;\n    wasRunning: boolean;\n  };')
    expect(h.model.requests[0]!.system).toContain(CORDIS_SECTION_TEXT)
    await h.dispose()
  })

  it('a host half registers a tool: it joins the next request (header change), answers, and leaves after undefine', async () => {
    const h = await harness([
      [define('d', DOUBLE)],
      [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })],
      [call('x', 'snapshot_double', { value: 21 })],
      [call('u', 'cordis_undefine', { pluginId: 'snap-1' })],
    ])
    await turn(h)
    expect(result(h, 'x')).toEqual({ callId: 'x', isError: false, text: '42' })
    const tools = requestTools(h)
    expect(tools.map((names) => names.includes('snapshot_double'))).toEqual([false, false, true, true, false])
    expect(h.of('request/header').map((event) => (event.data as { reason: string }).reason)).toEqual(['initial', 'change', 'change'])
    expect(h.ctx.tools.get('snapshot_double', h.agent.scope)).toBeUndefined()
    await h.dispose()
  })

  it('a plugin that throws on load is refused and fully unwound', async () => {
    const host = "return { apply(ctx) { ctx.get('tools').register(harness.defineTool({ name: 'early', description: 'made before the throw', execute: () => 1 })); throw new Error('broken on purpose') } }"
    const h = await harness([
      [define('d', host)],
      [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })],
      [call('p', 'cordis_inspect_self', { pluginId: 'snap-1', packageId: 'pkg-1' })],
    ])
    await turn(h)
    expect(result(h, 'r').isError).toBe(true)
    expect(result(h, 'r').text).toContain('snap-1/pkg-1 failed to start (run-1): broken on purpose')
    expect(h.ctx.tools.get('early', h.agent.scope)).toBeUndefined()
    expect(requestTools(h).some((names) => names.includes('early'))).toBe(false)
    const pkg = JSON.parse(result(h, 'p').text)
    expect(pkg).toMatchObject({ mode: 'package', isCurrent: false, isNext: true, source: { host } })
    expect(pkg.diagnostics).toEqual([expect.objectContaining({ runId: 'run-1', level: 'error', message: 'broken on purpose' })])
    await h.dispose()
  })

  it('an infinite loop in the synchronous part times out and is unwound', async () => {
    const host = "return { inject: ['tools'], apply(ctx) { ctx.tools.register(harness.defineTool({ name: 'early', description: 'x', execute: () => 1 })); while (true) {} } }"
    const h = await harness([[define('d', host)], [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })]], { config: { vmTimeoutMs: 20 } })
    await turn(h)
    expect(result(h, 'r')).toMatchObject({ isError: true })
    expect(result(h, 'r').text).toMatch(/timed out/)
    expect(h.ctx.tools.get('early', h.agent.scope)).toBeUndefined()
    await h.dispose()
  })

  it('require, process and fetch are absent with a hint; undeclared services and events are refused', async () => {
    const h = await harness([
      [define('d1', "require('node:fs'); return { apply() {} }"), call('d2', 'cordis_define', { plugin: { kind: 'new', idPrefix: 'evt' }, name: 'E', purpose: 'p', code: { host: "return { apply(ctx) { ctx.on('session/created', () => {}) } }" } }),
        call('d3', 'cordis_define', { plugin: { kind: 'new', idPrefix: 'svc' }, name: 'S', purpose: 'p', code: { host: 'return { apply(ctx) { ctx.tools.list() } }' } })],
      [call('r1', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' }), call('r2', 'cordis_run', { pluginId: 'evt-1', packageId: 'pkg-2', mode: 'run' }), call('r3', 'cordis_run', { pluginId: 'svc-1', packageId: 'pkg-3', mode: 'run' })],
      [call('bad', 'cordis_define', { plugin: { kind: 'new', idPrefix: 'snap' }, name: 'T', purpose: 'p', code: { host: 'const x: number = 1' } })],
    ])
    await turn(h)
    expect(result(h, 'r1').text).toContain('require is not available in a dynamic Cordis plugin')
    expect(result(h, 'r2').text).toContain('event "session/created" is not available to dynamic plugins')
    expect(result(h, 'r3').text).toContain("add inject: ['tools']")
    expect(result(h, 'bad')).toMatchObject({ isError: true })
    expect(result(h, 'bad').text).toContain('does not compile')
    await h.dispose()
  })

  it('scoping: a tool a plugin registers is visible to its agent only, and its plugins to its session only', async () => {
    const h = await harness([[define('d', DOUBLE)], [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })]])
    await turn(h)
    const other = h.ctx.agents.create({ cwd: process.cwd() })
    expect(h.ctx.tools.get('snapshot_double', h.agent.scope)).toBeDefined()
    expect(h.ctx.tools.get('snapshot_double', other.scope)).toBeUndefined()
    expect(h.ctx.tools.get('snapshot_double')).toBeUndefined()
    const outcome = await h.ctx.tools.execute({ callId: 'o', name: 'cordis_stop', arguments: '{"pluginId":"snap-1"}', scope: other.scope }, { cwd: process.cwd(), signal: new AbortController().signal, session: other.session })
    expect(outcome.isError).toBe(true)
    // Disposing the agent disposes the run with it.
    await h.agent.dispose()
    expect(h.ctx.tools.list(h.agent.scope).some((tool) => tool.name === 'snapshot_double')).toBe(false)
    await other.dispose()
  })

  it('under an asking policy, running a host half asks; a rejection leaves nothing running', async () => {
    const h = await harness([[define('d', DOUBLE)], [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })], [call('i', 'cordis_inspect_self', { pluginId: 'snap-1' })]],
      { approval: { mode: 'danger-full-access', policy: 'ask', runtimeContexts: false } })
    const asked: string[] = []
    h.ctx.approval.answerer((request) => { asked.push(`${request.toolName} ${request.reason}`); return 'rejected' })
    await turn(h)
    expect(asked).toEqual(['cordis_run run model-written plugin code in the dsh process (not sandboxed): snap-1/pkg-1 (Snapshot Marker)'])
    expect(h.of('approval/decided').map((event) => (event.data as { outcome: string }).outcome)).toEqual(['rejected'])
    expect(result(h, 'r')).toMatchObject({ isError: true })
    expect(result(h, 'r').text).toContain('Do not request approval again')
    expect(h.ctx.tools.get('snapshot_double', h.agent.scope)).toBeUndefined()
    expect(JSON.parse(result(h, 'i').text)).toMatchObject({ state: 'rejected', nextPackageId: 'pkg-1' })
    expect(JSON.parse(result(h, 'i').text).currentPackageId).toBeUndefined()
    await h.dispose()
  })

  it('allowed once, it runs; under never it runs without asking, as recorded', async () => {
    for (const [policy, answer] of [['ask', 'allowed-once'], ['never', undefined]] as const) {
      const h = await harness([[define('d', DOUBLE)], [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })]],
        { approval: { mode: 'danger-full-access', policy, runtimeContexts: false } })
      h.ctx.approval.answerer(() => answer)
      await turn(h)
      expect(result(h, 'r')).toMatchObject({ isError: false, text: expect.stringMatching(/^snap-1\/pkg-1 is running \(run-\d+\)\.$/) })
      expect(h.of('approval/asked')).toHaveLength(policy === 'ask' ? 1 : 0)
      expect(h.ctx.tools.get('snapshot_double', h.agent.scope)).toBeDefined()
      await h.dispose()
    }
  })

  it('a client half has no page here: the run reports awaiting, current is unchanged', async () => {
    const h = await harness([
      [define('d', undefined, { code: { client: 'return { apply() {} }' } })],
      [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })],
      [call('q', 'cordis_inspect_query', { platform: 'client', provider: 'Slots', method: 'listSubTree' })],
    ])
    await turn(h)
    expect(result(h, 'r').text).toMatch(/^snap-1\/pkg-1 is awaiting user approval \(run-\d+\)\.\nNo browser page is connected/)
    expect(result(h, 'q')).toMatchObject({ isError: true })
    await h.dispose()
  })

  it('definitions live in process memory: after a restart the session is told they were lost, and nothing re-runs', async () => {
    const h = await harness([
      [define('d', DOUBLE)], [call('r', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })],
    ])
    await turn(h)
    h.model.push(toolCalls([call('i', 'cordis_inspect_self'), call('r2', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })]), text('done'))
    // The plugin restarts (as the process would): its table is empty.
    await cordisFiber!.dispose()
    await h.ctx.plugin(CordisDynamicPlugin).await()
    await turn(h, 'again')
    const listed = JSON.parse(result(h, 'i').text)
    expect(listed).toEqual({ mode: 'plugins', plugins: [], notice: expect.stringContaining('snap-1') })
    expect(result(h, 'r2')).toMatchObject({ isError: true, text: expect.stringContaining('defined earlier in this session') })
    expect(h.ctx.tools.get('snapshot_double', h.agent.scope)).toBeUndefined()
    await h.dispose()
  })

  it('versions: run refuses a package other than current, update switches and stops the old run; listeners and timers go with it', async () => {
    const v1 = "return { apply(ctx) { ctx.on('tools/result', (execution) => { console.log('saw ' + execution.name) }); ctx.effect(() => () => console.log('v1 effect disposed')) } }"
    const v2 = "return { inject: ['tools'], apply(ctx) { ctx.setInterval(() => {}, 60000); ctx.tools.register(harness.defineTool({ name: 'v2_only', description: 'v2', execute: () => ({ ok: true }) })) } }"
    const h = await harness([
      [define('d1', v1)],
      [call('r1', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-1', mode: 'run' })],
      [call('d2', 'cordis_define', { plugin: { kind: 'existing', pluginId: 'snap-1' }, name: 'Snapshot Marker 2', purpose: 'v2', code: { host: v2 } })],
      [call('wrong', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-2', mode: 'run' })],
      [call('up', 'cordis_run', { pluginId: 'snap-1', packageId: 'pkg-2', mode: 'update' })],
      [call('v', 'v2_only')],
      [call('p1', 'cordis_inspect_self', { pluginId: 'snap-1', packageId: 'pkg-1' })],
    ])
    await turn(h)
    expect(result(h, 'd2').text).toBe('Defined snap-1/pkg-2 (Snapshot Marker 2); it is not running yet. Use cordis_run to activate this Package.')
    expect(result(h, 'wrong')).toMatchObject({ isError: true, text: 'Error: package "pkg-2" differs from current "pkg-1"; use mode "update"' })
    expect(result(h, 'up')).toMatchObject({ isError: false, text: 'snap-1/pkg-2 is running (run-2).' })
    expect(result(h, 'v')).toMatchObject({ isError: false, text: '{\n  "ok": true\n}' })
    const diagnostics = JSON.parse(result(h, 'p1').text).diagnostics.map((entry: { message: string }) => entry.message)
    // v1 heard the results committed while it ran (its own run's, d2, wrong), then the update disposed its effect.
    expect(diagnostics).toEqual(['saw cordis_run', 'saw cordis_define', 'saw cordis_run', 'v1 effect disposed'])
    await h.dispose()
  })

  it('inspect: the tools service contract, an event with its mode, the directories, the provider list', async () => {
    const h = await harness([[
      call('s', 'cordis_inspect_query', { platform: 'host', provider: 'Service', method: 'listService', input: { service: 'tools' } }),
      call('e', 'cordis_inspect_query', { platform: 'host', provider: 'Event', method: 'listEvents', input: { event: 'tools/pre-execute' } }),
      call('t', 'cordis_inspect_query', { platform: 'host', provider: 'Tool', method: 'listTools' }),
      call('b', 'cordis_inspect_query', { platform: 'host', provider: 'Builtin', method: 'listBuiltins', input: { name: 'harness.defineTool' } }),
      call('l', 'cordis_inspect_list'),
      call('x', 'cordis_inspect_query', { platform: 'host', provider: 'Service', method: 'listService', input: { service: 'sessions' } }),
    ]])
    await turn(h)
    const service = JSON.parse(result(h, 's').text)
    expect(service).toMatchObject({ platform: 'host', provider: 'Service', method: 'listService', data: { mode: 'service', service: { key: 'tools', access: { hardDependency: { inject: ['tools'], expression: 'ctx.tools' } } }, referencedTypes: [] } })
    expect(service.data.service.methods.map((m: { signature: string }) => m.signature)).toContain('register(definition: DynamicToolDefinition): () => void')
    expect(JSON.parse(result(h, 'e').text).data).toMatchObject({ mode: 'event', event: { name: 'tools/pre-execute', mode: 'waterfall' } })
    expect(JSON.parse(result(h, 't').text).data.tools.map((t: { name: string }) => t.name)).toEqual([...CORDIS_TOOL_NAMES].sort())
    expect(JSON.parse(result(h, 'b').text).data.builtins).toHaveLength(1)
    expect(JSON.parse(result(h, 'l').text).providers.map((p: { provider: string }) => p.provider)).toEqual(['Service', 'Event', 'Builtin', 'Tool'])
    expect(result(h, 'x')).toMatchObject({ isError: true, text: expect.stringContaining('no service "sessions"') })
    await h.dispose()
  })

  it.skipIf(!existsSync(ADVANCED))('the schemas, section and SDK declarations are the recorded ones (advanced-toolchain)', () => {
    const recorded = JSON.parse(readFileSync(join(ADVANCED, 'tool-schemas.expected.json'), 'utf8')).initial as { name: string }[]
    for (const name of CORDIS_TOOL_NAMES) expect({ name, ...CORDIS_TOOLS[name] }).toEqual(recorded.find((tool) => tool.name === name))
    const prompt = readFileSync(join(ADVANCED, 'system-prompt.expected.md'), 'utf8')
    expect(prompt).toContain(`\n\n${CORDIS_SECTION_TEXT}\n\n`)
    const block = prompt.slice(prompt.indexOf('```ts\n') + 6, prompt.lastIndexOf('\n```'))
    const ours = toolDeclarations(CORDIS_TOOL_NAMES.map((name) => ({ schema: { name, ...CORDIS_TOOLS[name] }, outputType: CORDIS_OUTPUT_TYPES[name] })))
    const entries = [...`${ours}\n`.matchAll(/^ {2}(?:\/\*\*[\s\S]*?\n {2})?cordis_[a-z_]+: [\s\S]*?;\n(?= {2}|\})/gm)].map((match) => match[0])
    expect(entries).toHaveLength(14)
    for (const entry of entries) expect(block).toContain(entry)
  })

  it('every tool has the recorded name set; event modes match the @mode of their declarations', () => {
    expect([...CORDIS_TOOL_NAMES].sort()).toEqual(['cordis_define', 'cordis_inspect_list', 'cordis_inspect_query', 'cordis_inspect_self', 'cordis_run', 'cordis_stop', 'cordis_undefine'])
    const declared = ['tools/api.ts', 'agent/api.ts'].map((file) => readFileSync(join(SRC, file), 'utf8')).join('\n')
    for (const event of EVENTS) {
      const at = declared.indexOf(`'${event.name}'(`)
      expect(at, event.name).toBeGreaterThan(0)
      const doc = declared.slice(declared.lastIndexOf('/**', at), at)
      expect(/@mode (\w+)/.exec(doc)?.[1], event.name).toBe(event.mode)
    }
  })
})
