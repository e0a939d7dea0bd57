import { describe, expect, it } from 'vitest'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls } from '../../test-support/scripted-model.js'
import { workerCodeRuntime } from '../code-runtime/worker.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import type { Tool } from '../tools/api.js'
import { CodeModePlugin, CODE_MODE_PLUGIN, type CodeModeConfig } from './index.js'
import { pngImage } from '../../test-support/images.js'
import { CODE_ONLY_TEXT, SDK_HEAD } from './texts.js'

/** Tools whose order of entry and exit the tests read: `look` is concurrency-safe, `change` is not. */
function recordingTools() {
  const trace: string[] = []
  const gates = new Map<string, () => void>()
  const waitFor = (key: string) => new Promise<void>((resolve) => gates.set(key, resolve))
  const look: Tool<{ key: string; hold?: boolean }> = {
    name: 'look', description: 'Looks at a key.', outputType: '{\n  seen: string;\n}',
    parameters: { type: 'object', properties: { key: { type: 'string', description: 'The key.' }, hold: { type: 'boolean' } }, required: ['key'] },
    isConcurrencySafe: () => true,
    async execute(args) {
      trace.push(`look:${args.key}:start`)
      if (args.hold === true) await waitFor(args.key)
      trace.push(`look:${args.key}:end`)
      return { content: [{ type: 'text', text: `saw ${args.key}` }], value: { seen: args.key } }
    },
  }
  const change: Tool<{ key: string }> = {
    name: 'change', description: 'Changes a key.',
    parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'], additionalProperties: false },
    async execute(args) {
      trace.push(`change:${args.key}`)
      if (args.key === 'bad') throw new Error(`cannot change "${args.key}"`)
      return { content: [{ type: 'text', text: `changed ${args.key}` }] }
    },
  }
  const snap: Tool<Record<string, never>> = {
    name: 'snap', description: 'Takes a picture.', parameters: { type: 'object', properties: {} },
    isConcurrencySafe: () => true,
    execute: () => ({ content: [{ type: 'text', text: 'a picture' }, { type: 'image', data: pngImage(1, 1).toString('base64'), mimeType: 'image/png' }], value: { taken: true } }),
  }
  return { trace, gates, tools: [look, change, snap] }
}

async function harness(code: string, config: CodeModeConfig = {}, after: string = 'done'): Promise<LoopHarness & ReturnType<typeof recordingTools>> {
  const recording = recordingTools()
  const h = await loopHarness({
    tools: recording.tools,
    responses: [toolCalls([{ id: 'outer', name: 'run_code', arguments: { code, description: 'Test program' } }]), text(after)],
    setup: async (ctx) => {
      await ctx.plugin(SystemPromptPlugin).await()
      await ctx.plugin(CodeModePlugin, { mode: 'both', codeRuntime: workerCodeRuntime(), ...config }).await()
    },
  })
  h.agent.followup('go')
  return Object.assign(h, recording)
}

const dispatches = (h: LoopHarness) => h.session.events
  .filter((event) => event.type.startsWith('tool/'))
  .map((event) => {
    const data = event.data as { subCallId?: string; name?: string; callId?: string; isError?: boolean }
    return event.type === 'tool/call' || event.type === 'tool/result' ? event.type : `${event.type} ${data.subCallId} ${data.name}${data.isError === true ? ' error' : ''}`
  })

const resultText = (h: LoopHarness) => {
  const result = h.of('tool/result')[0]!.data as unknown as { message: { content: [{ content: { text: string }[]; isError: boolean }] } }
  return { text: result.message.content[0].content.map((block) => block.text).join(''), isError: result.message.content[0].isError }
}

describe('code mode: run_code calls the session tools through the pipeline, in the log (#36)', () => {
  it('inner calls are dispatched and committed in order between tool/call and tool/result; logs then the value', async () => {
    const h = await harness(`
      const a = await tools.look({ key: "one" })
      await tools.change({ key: "two" })
      console.log("captured output")
      return a.seen + "+" + (await tools.look({ key: "three" })).seen`)
    await h.agent.whenIdle()
    expect(dispatches(h)).toEqual([
      'tool/call',
      'tool/code-dispatch-start outer:code:1 look', 'tool/code-dispatch outer:code:1 look',
      'tool/code-dispatch-start outer:code:2 change', 'tool/code-dispatch outer:code:2 change',
      'tool/code-dispatch-start outer:code:3 look', 'tool/code-dispatch outer:code:3 look',
      'tool/result',
    ])
    expect(resultText(h)).toEqual({ text: 'captured output\none+three', isError: false })
    const first = h.of('tool/code-dispatch')[0]!.data
    expect(first).toEqual({ rootCallId: 'outer', parentCallId: 'outer', subCallId: 'outer:code:1', name: 'look', arguments: { key: 'one' }, isError: false, content: [{ type: 'text', text: 'saw one' }] })
    await h.dispose()
  })

  it('a tool without a value gives the program its text; a failed call is a ToolCallError without "Error: "', async () => {
    const h = await harness(`
      const text = await tools.change({ key: "x" })
      try { await tools.change({ key: "bad" }) } catch (error) { return [text, error.toolName, error.message] }`)
    await h.agent.whenIdle()
    expect(resultText(h).text).toBe('[\n  "changed x",\n  "change",\n  "cannot change \\"bad\\""\n]')
    expect(dispatches(h)).toContain('tool/code-dispatch outer:code:2 change error')
    await h.dispose()
  })

  it('concurrency-safe calls overlap; a call that is not waits for them and runs alone', async () => {
    const h = await harness(`
      const both = Promise.all([tools.look({ key: "a", hold: true }), tools.look({ key: "b", hold: true })])
      const changed = tools.change({ key: "c" })
      await both
      await changed
      return "ok"`)
    // Both looks started before either ended: they overlap.
    await expect.poll(() => h.trace.length).toBe(2)
    expect(h.trace).toEqual(['look:a:start', 'look:b:start'])
    h.gates.get('b')!()
    await expect.poll(() => h.trace.length).toBe(3)
    // The exclusive change waits for look a as well.
    expect(h.trace).not.toContain('change:c')
    h.gates.get('a')!()
    await h.agent.whenIdle()
    expect(h.trace).toEqual(['look:a:start', 'look:b:start', 'look:b:end', 'look:a:end', 'change:c'])
    // Commits stay in the program's order.
    expect(dispatches(h).filter((line) => line.startsWith('tool/code-dispatch '))).toEqual([
      'tool/code-dispatch outer:code:1 look', 'tool/code-dispatch outer:code:2 look', 'tool/code-dispatch outer:code:3 change'])
    await h.dispose()
  })

  it('every inner call goes through tools/pre-execute (a denial reaches the program as a ToolCallError)', async () => {
    const h = await harness('try { await tools.change({ key: "x" }) } catch (error) { return error.message }')
    h.ctx.on('tools/pre-execute', async (execution, next) => execution.name === 'change' ? { kind: 'deny', reason: 'not today' } : next())
    await h.agent.whenIdle()
    expect(resultText(h).text).toBe('tool call denied: not today')
    expect(h.trace).toEqual([])
    await h.dispose()
  })

  it('a failed program is an error result naming the kind, with what it printed; its started calls are in the log', async () => {
    const h = await harness('await tools.look({ key: "k" }); console.log("before"); throw new Error("broken")')
    await h.agent.whenIdle()
    expect(resultText(h)).toEqual({ text: 'Error: code run failed (exception): Error: broken\nCaptured output:\nbefore', isError: true })
    expect(dispatches(h)).toEqual(['tool/call', 'tool/code-dispatch-start outer:code:1 look', 'tool/code-dispatch outer:code:1 look', 'tool/result'])
    await h.dispose()
  })

  it('cancelling the turn ends the program; the held call is aborted and nothing is dispatched after the result', async () => {
    const h = await harness('await tools.look({ key: "held", hold: true }); await tools.change({ key: "never" })')
    await expect.poll(() => h.trace).toEqual(['look:held:start'])
    h.agent.cancel()
    h.gates.get('held')!()
    await h.agent.whenIdle()
    const types = dispatches(h)
    expect(types.at(-1)).toBe('tool/result')
    expect(h.trace).not.toContain('change:never')
    await h.dispose()
  })

  it('an image an inner call returned joins the conversation after the outer result, for the next step, even when the program fails', async () => {
    const h = await harness('const shot = await tools.snap({}); throw new Error("after " + JSON.stringify(shot))')
    await h.agent.whenIdle()
    expect(resultText(h).text).toBe('Error: code run failed (exception): Error: after {"taken":true}')
    const types = h.types()
    const result = types.indexOf('tool/result')
    const splice = h.session.events.findIndex((event, index) => index > result && event.type === 'agent/inbox/spliced')
    expect(splice).toBeGreaterThan(result)
    expect(types.indexOf('step/end', result)).toBeGreaterThan(splice)
    const inserted = (h.session.events[splice]!.data as { target: string; inserted: { source: unknown; content: { type: string }[] }[] })
    expect(inserted.target).toBe('next-step')
    expect(inserted.inserted[0]!.source).toEqual({ kind: 'plugin', plugin: CODE_MODE_PLUGIN })
    expect(inserted.inserted[0]!.content.map((block) => block.type)).toEqual(['text', 'image'])
    // The next request carries it.
    expect(JSON.stringify(h.model.requests[1]!.messages)).toContain('"plugin":"tools-code-mode"')
    await h.dispose()
  })

  it('code: the model sees run_code alone, the code-only rule and the SDK; a direct call to another tool is refused', async () => {
    const recording = recordingTools()
    const h = await loopHarness({
      tools: recording.tools,
      responses: [toolCalls([{ id: 'direct', name: 'look', arguments: { key: 'x' } }]), text('ok')],
      setup: async (ctx) => {
        await ctx.plugin(SystemPromptPlugin).await()
        await ctx.plugin(CodeModePlugin, { mode: 'code', codeRuntime: workerCodeRuntime() }).await()
      },
    })
    h.agent.followup('go')
    await h.agent.whenIdle()
    const request = h.model.requests[0]!
    expect(request.tools?.map((tool) => tool.name)).toEqual(['run_code'])
    expect(request.system).toContain(CODE_ONLY_TEXT)
    expect(request.system).toContain(SDK_HEAD)
    expect(request.system).toContain('  look: {\n    /** The key. */\n    key: string;\n    hold?: boolean;\n  } & Record<string, JsonValue>;')
    expect(request.system).toContain('  look: {\n    seen: string;\n  };')
    expect(request.system).toContain('  change: JsonValue;')
    expect(request.system).not.toContain('run_code: {')
    expect(resultText(h)).toEqual({ text: 'Error: unknown tool "look": only `run_code` is callable directly — call `look` from inside a `run_code` program instead', isError: true })
    expect(recording.trace).toEqual([])
    await h.dispose()
  })

  it('both: every tool and run_code, the SDK without the code-only rule; native: no run_code at all', async () => {
    for (const mode of ['both', 'native'] as const) {
      const h = await loopHarness({
        tools: recordingTools().tools,
        responses: [text('ok')],
        setup: async (ctx) => {
          await ctx.plugin(SystemPromptPlugin).await()
          await ctx.plugin(CodeModePlugin, { mode, codeRuntime: workerCodeRuntime() }).await()
        },
      })
      h.agent.followup('go')
      await h.agent.whenIdle()
      const request = h.model.requests[0]!
      expect(request.tools?.map((tool) => tool.name)).toEqual(mode === 'both' ? ['change', 'look', 'run_code', 'snap'] : ['change', 'look', 'snap'])
      expect(request.system?.includes(SDK_HEAD)).toBe(mode === 'both')
      expect(request.system).not.toContain(CODE_ONLY_TEXT)
      await h.dispose()
    }
  })
})
