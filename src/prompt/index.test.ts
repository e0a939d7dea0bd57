import { Context, Service } from 'cordis'
import { describe, expect, it } from 'vitest'
import type { ToolSchema } from '../llm/types.js'
import { bindScopeParent, scopedContext, type ScopeKey } from '../scope/index.js'
import {
  DEFAULT_PERSONA,
  HARNESS_SECTION,
  interpolate,
  renderRuntimeContextMessage,
  RUNTIME_CONTEXT_PREFIX,
  RuntimeContextsPlugin,
  SystemPromptPlugin,
  type SystemPromptConfig,
} from './index.js'

async function setup(config: SystemPromptConfig = {}) {
  const root = new Context()
  await root.plugin(SystemPromptPlugin, config)
  return { root, prompt: root.systemPrompt }
}

/** A prompt with the built-ins shadowed away, so a test sees only its own sections. */
async function bare() {
  const { root, prompt } = await setup({ persona: '' })
  const scope = {}
  const ctx = scopedContext(root, scope)
  ctx.systemPrompt.section({ name: 'harness', order: -100, text: '' })
  return { root, prompt, scope, ctx }
}

describe('Y-1 sections', () => {
  it('Y-1: built-in harness identity (order -100) comes before the persona (order 0)', async () => {
    const { prompt } = await setup()
    const { system } = await prompt.assemble()
    expect(HARNESS_SECTION.order).toBe(-100)
    expect(system).toBe(`${HARNESS_SECTION.text}\n\n${DEFAULT_PERSONA}`)
    expect(system).toMatch(/^You are running inside dsh/)
  })

  it('Y-1: sections are sorted by order and joined by one blank line; ties keep registration order', async () => {
    const { prompt } = await setup({ persona: 'PERSONA' })
    prompt.section({ name: 'late', order: 200, text: 'LATE' })
    prompt.section({ name: 'tie-a', order: 50, text: 'TIE-A\n\n' })
    prompt.section({ name: 'tie-b', order: 50, text: '\n\nTIE-B' })
    prompt.section({ name: 'early', order: -200, text: 'EARLY' })
    const { system } = await prompt.assemble()
    expect(system).toBe(['EARLY', HARNESS_SECTION.text, 'PERSONA', 'TIE-A', 'TIE-B', 'LATE'].join('\n\n'))
  })

  it('Y-1: empty sections are dropped (empty text, blank text, fn returning undefined or blank)', async () => {
    const { prompt, ctx } = await bare()
    ctx.systemPrompt.section({ name: 'a', order: 1, text: 'A' })
    ctx.systemPrompt.section({ name: 'empty', order: 2, text: '' })
    ctx.systemPrompt.section({ name: 'blank', order: 3, text: ' \n\t\n' })
    ctx.systemPrompt.section({ name: 'none', order: 4, fn: () => undefined })
    ctx.systemPrompt.section({ name: 'blank-fn', order: 5, fn: async () => '\n' })
    ctx.systemPrompt.section({ name: 'b', order: 6, fn: async () => 'B' })
    const { system } = await ctx.systemPrompt.assemble()
    expect(system).toBe('A\n\nB')
    expect((await prompt.assemble()).system).toBe(HARNESS_SECTION.text)
  })

  it('Y-1: assembled per call: fn sections and variable functions run again on every assemble', async () => {
    const { ctx } = await bare()
    let n = 0
    let v = 0
    ctx.systemPrompt.variable('count', () => String(++v))
    ctx.systemPrompt.section({ name: 'fn', order: 1, fn: () => `fn ${++n}` })
    ctx.systemPrompt.section({ name: 'text', order: 2, text: 'var {{count}} {{count}}' })
    expect((await ctx.systemPrompt.assemble()).system).toBe('fn 1\n\nvar 1 1')
    expect((await ctx.systemPrompt.assemble()).system).toBe('fn 2\n\nvar 2 2')
  })

  it('Y-1: a bad section is refused with an error naming it', async () => {
    const { prompt } = await setup()
    expect(() => prompt.section({ name: 'x', order: 1 })).toThrow('system prompt section "x": give exactly one of text or fn')
    expect(() => prompt.section({ name: 'x', order: 1, text: 'a', fn: () => 'b' })).toThrow(/exactly one of text or fn/)
    expect(() => prompt.section({ name: 'x', order: Number.NaN, text: 'a' })).toThrow('system prompt section "x": order must be a finite number')
    expect(() => prompt.section({ name: '', order: 1, text: 'a' })).toThrow(/non-empty string name/)
    prompt.section({ name: 'dup', order: 1, text: 'a' })
    expect(() => prompt.section({ name: 'dup', order: 1, text: 'b' })).toThrow(/"dup" is already registered globally/)
  })

  it('Y-1: a failing fn section fails the assembly with the section name', async () => {
    const { prompt } = await setup()
    prompt.section({ name: 'broken', order: 5, fn: () => { throw new Error('disk gone') } })
    await expect(prompt.assemble()).rejects.toThrow('system prompt section "broken" failed: disk gone')
  })
})

describe('Y-1 variables', () => {
  const lookup = (vars: Record<string, string | undefined>) => (name: string) =>
    name in vars ? ({ known: true, value: vars[name] } as const) : ({ known: false } as const)

  it('Y-1: {{variable}} is replaced (blanks inside the braces ignored); values are not re-interpolated', () => {
    expect(interpolate('Hi {{ user }}, in {{cwd}}.', lookup({ user: 'ann', cwd: '/w' }))).toBe('Hi ann, in /w.')
    expect(interpolate('{{a}}', lookup({ a: '{{b}}' }))).toBe('{{b}}')
    expect(interpolate('no braces', lookup({}))).toBe('no braces')
  })

  it('Y-1: an unknown variable throws, naming it', () => {
    expect(() => interpolate('x {{nope}} y', lookup({}), 'section "s"')).toThrow('section "s": unknown variable {{nope}}')
    expect(() => interpolate('{{}}', lookup({}))).toThrow('unknown variable {{}}')
  })

  it('Y-1: an undefined variable throws', () => {
    expect(() => interpolate('{{later}}', lookup({ later: undefined }))).toThrow('variable {{later}} is undefined')
  })

  it('Y-1: "{{" is literal only when no "}}" follows anywhere later', () => {
    expect(interpolate('use {{ for maps', lookup({}))).toBe('use {{ for maps')
    expect(interpolate('{{a}} then {{ open', lookup({ a: 'A' }))).toBe('A then {{ open')
    // A "}}" much later still closes the placeholder, so the typo is caught instead of leaking.
    expect(() => interpolate('use {{ for maps\n\nand close with }} later', lookup({}))).toThrow(/unknown variable \{\{for maps/)
  })

  it('Y-1: section text interpolates registered variables; fn sections receive the defined values', async () => {
    const { ctx } = await bare()
    ctx.systemPrompt.variable('project', 'dsh')
    ctx.systemPrompt.variable('absent', () => undefined)
    let received: Readonly<Record<string, string>> | undefined
    ctx.systemPrompt.section({ name: 'text', order: 1, text: 'Project {{project}}.' })
    ctx.systemPrompt.section({ name: 'fn', order: 2, fn: (vars) => { received = vars; return `fn sees ${vars.project}` } })
    expect((await ctx.systemPrompt.assemble()).system).toBe('Project dsh.\n\nfn sees dsh')
    expect(received).toEqual({ project: 'dsh' })
  })

  it('Y-1: a section using an unknown or undefined variable fails the assembly', async () => {
    const { prompt } = await setup()
    prompt.variable('absent', () => undefined)
    const dispose = prompt.section({ name: 'bad', order: 1, text: '{{missing}}' })
    await expect(prompt.assemble()).rejects.toThrow('system prompt section "bad": unknown variable {{missing}}')
    dispose()
    prompt.section({ name: 'bad2', order: 1, text: '{{absent}}' })
    await expect(prompt.assemble()).rejects.toThrow('system prompt section "bad2": variable {{absent}} is undefined')
  })

  it('Y-1: a failing or non-string variable function fails the assembly, naming the variable', async () => {
    const { prompt } = await setup()
    prompt.variable('broken', () => { throw new Error('no git') })
    prompt.variable('number', (() => 42) as never)
    const a = prompt.section({ name: 'a', order: 1, text: '{{broken}}' })
    await expect(prompt.assemble()).rejects.toThrow('system prompt variable "broken" failed: no git')
    a()
    prompt.section({ name: 'b', order: 1, text: '{{number}}' })
    await expect(prompt.assemble()).rejects.toThrow('system prompt variable "number": must give a string or undefined')
  })

  it('Y-1: variables are scoped: nearest wins', async () => {
    const { root, prompt } = await setup()
    const agent = {}
    prompt.variable('who', 'global')
    prompt.section({ name: 'who', order: 1, text: 'who={{who}}' })
    scopedContext(root, agent).systemPrompt.variable('who', 'agent')
    expect((await prompt.assemble()).system).toContain('who=global')
    expect((await prompt.assemble(agent)).system).toContain('who=agent')
  })
})

describe('Y-1 scoping (per agent, like tools)', () => {
  it('Y-1: an agent section is seen by that agent only; registering through agent ctx defaults to its scope', async () => {
    const { root, prompt } = await setup({ persona: 'P' })
    const agent = {}
    const other = {}
    const agentCtx = scopedContext(root, agent)
    agentCtx.systemPrompt.section({ name: 'agent-notes', order: 10, text: 'NOTES' })
    expect((await prompt.assemble()).system).not.toContain('NOTES')
    expect((await prompt.assemble(other)).system).not.toContain('NOTES')
    expect((await prompt.assemble(agent)).system).toContain('NOTES')
    // Assembling through the agent's ctx defaults to its scope.
    expect((await agentCtx.systemPrompt.assemble()).system).toContain('NOTES')
  })

  it('Y-1: an agent persona shadows the built-in in place (nearest wins); a child scope inherits it', async () => {
    const { root, prompt } = await setup({ persona: 'GLOBAL PERSONA' })
    const agent = {}
    const child = {}
    bindScopeParent(child, agent)
    prompt.section({ name: 'tail', order: 0, text: 'TAIL' })
    scopedContext(root, agent).systemPrompt.section({ name: 'persona', order: 0, text: 'AGENT PERSONA' })
    const expected = [HARNESS_SECTION.text, 'AGENT PERSONA', 'TAIL'].join('\n\n')
    expect((await prompt.assemble(agent)).system).toBe(expected)
    expect((await prompt.assemble(child)).system).toBe(expected)
    expect((await prompt.assemble()).system).toBe([HARNESS_SECTION.text, 'GLOBAL PERSONA', 'TAIL'].join('\n\n'))
  })

  it('Y-1/K-6: registrations are effects of the calling plugin and vanish when it unloads', async () => {
    const { root, prompt } = await setup({ persona: 'P' })
    const fiber = root.plugin({
      inject: ['systemPrompt'],
      apply: (ctx: Context) => {
        ctx.systemPrompt.section({ name: 'plugin', order: 5, text: 'FROM PLUGIN' })
        ctx.systemPrompt.context({ name: 'plugin-ctx', render: () => 'CTX' })
      },
    })
    await fiber
    expect((await prompt.assemble()).system).toContain('FROM PLUGIN')
    await fiber.dispose()
    const after = await prompt.assemble()
    expect(after.system).not.toContain('FROM PLUGIN')
    expect(after.contexts).toEqual([])
  })

  it('Y-1: the disposer returned by section() removes it', async () => {
    const { prompt } = await setup({ persona: 'P' })
    const dispose = prompt.section({ name: 'temp', order: 1, text: 'TEMP' })
    expect((await prompt.assemble()).system).toContain('TEMP')
    dispose()
    expect((await prompt.assemble()).system).not.toContain('TEMP')
  })
})

describe('Y-1 complete sections', () => {
  it('Y-1: one active complete section replaces every other section', async () => {
    const { prompt } = await setup()
    prompt.variable('name', 'dsh')
    prompt.section({ name: 'extra', order: 5, text: 'EXTRA' })
    prompt.section({ name: 'whole', order: 50, text: 'Only me, {{name}}.', complete: true })
    expect((await prompt.assemble()).system).toBe('Only me, dsh.')
  })

  it('Y-1: two active complete sections are an error naming both', async () => {
    const { prompt } = await setup()
    prompt.section({ name: 'one', order: 1, text: '1', complete: true })
    prompt.section({ name: 'two', order: 2, text: '2', complete: true })
    await expect(prompt.assemble()).rejects.toThrow('system prompt: at most one complete section may be active, found "one", "two"')
  })

  it('Y-1: activity is per scope: an agent complete section does not affect other scopes', async () => {
    const { root, prompt } = await setup({ persona: 'P' })
    const a = {}
    const b = {}
    scopedContext(root, a).systemPrompt.section({ name: 'whole', order: 0, text: 'A ONLY', complete: true })
    scopedContext(root, b).systemPrompt.section({ name: 'whole', order: 0, text: 'B ONLY', complete: true })
    expect((await prompt.assemble(a)).system).toBe('A ONLY')
    expect((await prompt.assemble(b)).system).toBe('B ONLY')
    expect((await prompt.assemble()).system).toBe(`${HARNESS_SECTION.text}\n\nP`)
  })

  it('Y-1: an agent can shadow a global complete section by name (still one active)', async () => {
    const { root, prompt } = await setup()
    const agent = {}
    prompt.section({ name: 'whole', order: 0, text: 'GLOBAL WHOLE', complete: true })
    scopedContext(root, agent).systemPrompt.section({ name: 'whole', order: 0, text: 'AGENT WHOLE', complete: true })
    expect((await prompt.assemble(agent)).system).toBe('AGENT WHOLE')
  })
})

function schema(name: string): ToolSchema {
  return { name, description: `${name} tool`, parameters: { type: 'object' } }
}

class FakeTools extends Service {
  scopes: (ScopeKey | undefined)[] = []
  constructor(ctx: Context, private readonly names: string[]) {
    super(ctx, 'tools')
  }

  schemas(scope?: ScopeKey): ToolSchema[] {
    this.scopes.push(scope)
    return this.names.map(schema)
  }
}

describe('Y-1 tool schemas', () => {
  it('Y-1: without a tools service the assembly has no tools (ctx.get, no inject needed)', async () => {
    const { prompt } = await setup()
    expect((await prompt.assemble()).tools).toEqual([])
  })

  it('Y-1: tool schemas come from ctx.tools for the scope, sorted by name', async () => {
    const { root, prompt } = await setup()
    await root.plugin(FakeTools, ['write', 'bash', 'read'])
    const agent = {}
    const { tools } = await prompt.assemble(agent)
    expect(tools.map((t) => t.name)).toEqual(['bash', 'read', 'write'])
    const fake = root.get('tools') as unknown as FakeTools
    expect(fake.scopes).toEqual([agent])
  })

  it('Y-1: an explicit tool order puts the named tools first, the rest by name', async () => {
    const { root, prompt } = await setup({ toolOrder: ['write', 'read'] })
    await root.plugin(FakeTools, ['write', 'bash', 'read', 'edit'])
    const { tools } = await prompt.assemble()
    expect(tools.map((t) => t.name)).toEqual(['write', 'read', 'bash', 'edit'])
  })
})

describe('Y-1 runtime contexts', () => {
  it('Y-1: contexts render in order, empty ones dropped, and never enter the system text', async () => {
    const { prompt } = await setup({ persona: 'P' })
    prompt.context({ name: 'late', order: 5, render: async () => 'LATE' })
    prompt.context({ name: 'gone', order: 1, render: () => undefined })
    prompt.context({ name: 'blank', order: 2, render: () => '  ' })
    prompt.context({ name: 'early', order: -1, render: () => 'EARLY' })
    prompt.context({ name: 'default-order', render: () => 'ZERO' })
    const assembly = await prompt.assemble()
    expect(assembly.contexts).toEqual([
      { name: 'early', text: 'EARLY' },
      { name: 'default-order', text: 'ZERO' },
      { name: 'late', text: 'LATE' },
    ])
    expect(assembly.system).not.toMatch(/EARLY|LATE|ZERO/)
  })

  it('Y-1: contexts are scoped like sections', async () => {
    const { root, prompt } = await setup()
    const agent = {}
    scopedContext(root, agent).systemPrompt.context({ name: 'policy', render: () => 'read-only' })
    expect((await prompt.assemble()).contexts).toEqual([])
    expect((await prompt.assemble(agent)).contexts).toEqual([{ name: 'policy', text: 'read-only' }])
  })

  it('Y-1: RuntimeContextsPlugin provides cwd and the day-precision date, removed on unload', async () => {
    const { root, prompt } = await setup()
    const fiber = root.plugin(RuntimeContextsPlugin, { cwd: '/work/project', now: () => new Date(2026, 0, 5, 23, 59) })
    await fiber
    const { contexts, system } = await prompt.assemble()
    expect(contexts).toEqual([
      { name: 'cwd', text: 'Working folder: /work/project' },
      { name: 'date', text: "Today's date: 2026-01-05" },
    ])
    expect(system).not.toContain('/work/project')
    await fiber.dispose()
    expect((await prompt.assemble()).contexts).toEqual([])
  })

  it('A-3: the runtime-context message begins "Current runtime context." and lists each context', () => {
    const text = renderRuntimeContextMessage([
      { name: 'cwd', text: 'Working folder: /w' },
      { name: 'date', text: "Today's date: 2026-01-05" },
    ])
    expect(RUNTIME_CONTEXT_PREFIX).toBe('Current runtime context.')
    expect(text.startsWith('Current runtime context.')).toBe(true)
    expect(text).toContain('[cwd]\nWorking folder: /w\n\n[date]\nToday\'s date: 2026-01-05')
  })

  it('A-3: with no contexts left the message is the "none" variant, still with the prefix', () => {
    const text = renderRuntimeContextMessage([])
    expect(text.startsWith('Current runtime context.')).toBe(true)
    expect(text).toMatch(/None/)
    expect(text).not.toBe(renderRuntimeContextMessage([{ name: 'cwd', text: 'x' }]))
  })
})

describe('Y-1 system-prompt/assemble waterfall', () => {
  it('K-4/Y-1: system-prompt/assemble is dispatched as a waterfall over the result', async () => {
    const { root, prompt } = await setup({ persona: 'P' })
    const order: string[] = []
    root.on('system-prompt/assemble', async (assembly, next) => {
      order.push('outer:before')
      expect(assembly.system).toContain('P')
      const inner = await next()
      order.push('outer:after')
      return { ...inner, system: `${inner.system}\n\nOUTER` }
    })
    root.on('system-prompt/assemble', async (_assembly, next) => {
      order.push('inner')
      const result = await next()
      return { ...result, system: `${result.system}\n\nINNER` }
    })
    const { system } = await prompt.assemble()
    expect(order).toEqual(['outer:before', 'inner', 'outer:after'])
    expect(system.endsWith('P\n\nINNER\n\nOUTER')).toBe(true)
  })

  it('K-4/Y-1: a listener that does not call next() short-circuits the assembly', async () => {
    const { root, prompt } = await setup()
    let innerRan = false
    root.on('system-prompt/assemble', async () => ({ system: 'REPLACED', tools: [], contexts: [] }))
    root.on('system-prompt/assemble', async (_a, next) => { innerRan = true; return next() })
    expect((await prompt.assemble()).system).toBe('REPLACED')
    expect(innerRan).toBe(false)
  })

  it('P-4/Y-1: an agent-tagged assemble listener only rewrites that agent\'s prompt', async () => {
    const { root, prompt } = await setup({ persona: 'P' })
    const agent = {}
    scopedContext(root, agent).on('system-prompt/assemble', async (_a, next) => {
      const result = await next()
      return { ...result, system: `${result.system}\n\nAGENT ONLY` }
    })
    expect((await prompt.assemble({})).system).not.toContain('AGENT ONLY')
    expect((await prompt.assemble(agent)).system).toContain('AGENT ONLY')
  })
})
