import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { loopHarness, type LoopHarness } from '../../test-support/agent-harness.js'
import { text, toolCalls, type ScriptedResponse } from '../../test-support/scripted-model.js'
import type { LlmCallOptions, TextBlock, UserMessage } from '../llm/types.js'
import type { Session } from '../session/api.js'
import { SystemPromptPlugin } from '../prompt/index.js'
import { SubagentsPlugin, SubagentToolsPlugin } from '../subagents/index.js'
import { defineTool } from '../tools/index.js'
import { HooksPlugin, parseHookFile, type HookFileSource } from './index.js'

const echo = defineTool({
  name: 'bash', description: 'pretend bash', schema: z.object({ command: z.string() }),
  execute: ({ command }) => ({ content: [{ type: 'text', text: `ran ${command}` }] }),
})

const firstUserText = (request: LlmCallOptions) => {
  const first = request.messages.find(m => m.role === 'user' && m.source.kind === 'user')
  return (first?.content.find(b => b.type === 'text') as TextBlock | undefined)?.text ?? ''
}
const isHookContext = (data: unknown) => ((data as { inserted?: UserMessage[] }).inserted ?? []).some(m => (m.source as { plugin?: string }).plugin === 'hooks-claude-code')

describe('hooks: SubagentStart / SubagentStop (HK-11, Claude Code only)', () => {
  it('HK-11: SubagentStart context reaches the live child, SubagentStop observes the end; no hook/* records; Codex files ignore both', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-subagent-hooks-'))
    writeFileSync(join(cwd, 'cc.json'), JSON.stringify({ hooks: {
      SubagentStart: [{ matcher: 'general-purpose', hooks: [{ type: 'command', command: 'cat > start.json; printf \'{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"CHILD_RULES"}}\'' }] }],
      SubagentStop: [{ hooks: [{ type: 'command', command: 'cat > stop.json' }] }],
    } }))
    writeFileSync(join(cwd, 'codex.json'), JSON.stringify({ hooks: { SubagentStart: [{ hooks: [{ type: 'command', command: 'touch codex-ran' }] }] } }))
    const files: HookFileSource[] = [{ dialect: 'claude-code', path: 'cc.json' }, { dialect: 'codex', path: 'codex.json' }]
    let plugin!: HooksPlugin
    class Probe extends HooksPlugin { constructor(ctx: Context, config: ConstructorParameters<typeof HooksPlugin>[1]) { super(ctx, config); plugin = this } }
    let h!: LoopHarness
    const childRequests: LlmCallOptions[] = []
    let child: Session | undefined
    // The child's first step waits until the detached SubagentStart hook has injected its context.
    const waitForContext = () => new Promise<void>((resolve) => {
      if (child!.events.some(e => e.type === 'agent/inbox/spliced' && isHookContext(e.data))) return resolve()
      const off = h.ctx.on('session/event', (session, event) => {
        if (session === child && event.type === 'agent/inbox/spliced' && isHookContext(event.data)) { off(); resolve() }
      })
    })
    const parentScript: ScriptedResponse[] = [toolCalls([{ id: 'c1', name: 'subagent', arguments: { description: 'Child', prompt: 'Reply OK', run_in_background: false } }]), text('PARENT_DONE')]
    const childScript: ScriptedResponse[] = [
      async () => { await waitForContext(); return toolCalls([{ id: 'k1', name: 'bash', arguments: { command: 'ls' } }]) },
      text('CHILD_OK'),
    ]
    const respond: ScriptedResponse = (request, signal) => {
      const key = firstUserText(request)
      if (key === 'Reply OK') childRequests.push(request)
      const next = (key === 'Reply OK' ? childScript : parentScript).shift()
      if (next === undefined) throw new Error(`no response left for ${key}`)
      return typeof next === 'function' ? next(request, signal) : next
    }
    h = await loopHarness({
      cwd, tools: [echo], responses: Array.from({ length: 6 }, () => respond),
      setup: async (ctx) => {
        await ctx.plugin(SystemPromptPlugin).await()
        await ctx.plugin(SubagentsPlugin).await()
        await ctx.plugin(SubagentToolsPlugin).await()
        await ctx.plugin(Probe, { cwd, files, discover: false }).await()
        ctx.on('session/created', (session) => { if (session.header.parentSession !== undefined) child = session })
      },
    })
    h.agent.followup('delegate')
    await h.agent.whenIdle()
    await plugin.settled()
    expect(child).toBeDefined()
    const start = JSON.parse(readFileSync(join(cwd, 'start.json'), 'utf8')) as Record<string, unknown>
    expect(start).toEqual({ session_id: child!.id, transcript_path: '', cwd, hook_event_name: 'SubagentStart', agent_id: child!.id, agent_type: 'general-purpose' })
    // The context was part of the child's second request.
    const second = JSON.stringify(childRequests[1]!.messages)
    expect(second).toContain('CHILD_RULES')
    const stop = JSON.parse(readFileSync(join(cwd, 'stop.json'), 'utf8')) as Record<string, unknown>
    expect(stop).toMatchObject({ session_id: h.session.id, hook_event_name: 'SubagentStop', stop_hook_active: false, agent_id: child!.id, agent_type: 'general-purpose', last_assistant_message: 'CHILD_OK' })
    expect([...h.session.events, ...child!.events].filter(e => e.type.startsWith('hook/'))).toEqual([])
    expect(() => readFileSync(join(cwd, 'codex-ran'))).toThrow()
    expect(h.of('tool/result').map(e => JSON.stringify(e.data))[0]).toContain('CHILD_OK')
    await h.dispose()
  })

  it('HK-1: SubagentStart/SubagentStop matchers are validated (an invalid regex rejects the file); Codex drops them', () => {
    expect(() => parseHookFile(JSON.stringify({ hooks: { SubagentStop: [{ matcher: '(', hooks: [{ type: 'command', command: 'true' }] }] } }), 'claude-code')).toThrow(/not a valid regular expression/)
    const cc = parseHookFile(JSON.stringify({ hooks: { SubagentStart: [{ matcher: 'general-purpose', hooks: [{ type: 'command', command: 'true' }] }] } }), 'claude-code')
    expect(cc.groups.map(g => [g.point, g.test('general-purpose'), g.test('other')])).toEqual([['SubagentStart', true, false]])
    expect(parseHookFile(JSON.stringify({ hooks: { SubagentStart: [{ matcher: '(', hooks: [{ type: 'command', command: 'true' }] }] } }), 'codex').groups).toEqual([])
  })
})
