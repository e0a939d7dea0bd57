import { statSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { ToolsPlugin } from '../index.js'
import { BuiltinToolsPlugin, SPILL_THRESHOLD_BYTES, spillIfLarge, spillOutput } from './index.js'
import { toolsHarness } from '../../../test-support/builtin-tools.js'

describe('BuiltinToolsPlugin', () => {
  it('T-1: registers the default set (no web_fetch); schemas are plain JSON Schema objects', async () => {
    const h = await toolsHarness()
    try {
      expect(h.ctx.tools.list().map((tool) => tool.name)).toEqual(['bash', 'edit', 'glob', 'grep', 'read', 'todo_write', 'write'])
      for (const schema of h.ctx.tools.schemas()) {
        expect(schema.parameters.type).toBe('object')
        expect(schema.parameters).not.toHaveProperty('$schema')
      }
      const bash = h.ctx.tools.schemas().find((schema) => schema.name === 'bash')!
      expect((bash.parameters as { required: string[] }).required).toEqual(['command', 'description'])
    } finally {
      await h.cleanup()
    }
  })

  it('T-2: read, glob and grep run in parallel; bash, write, edit and todo_write are exclusive', async () => {
    const h = await toolsHarness()
    try {
      const mode = (name: string, args: unknown) => h.ctx.tools.executionMode({ callId: 'c', name, arguments: JSON.stringify(args) }).kind
      expect(mode('read', { file_path: 'a' })).toBe('parallel')
      expect(mode('glob', { pattern: '*' })).toBe('parallel')
      expect(mode('grep', { pattern: 'x' })).toBe('parallel')
      expect(mode('bash', { command: 'ls', description: 'list' })).toBe('exclusive')
      expect(mode('write', { file_path: 'a', content: '' })).toBe('exclusive')
      expect(mode('edit', { file_path: 'a', old_string: 'a', new_string: 'b' })).toBe('exclusive')
      expect(mode('todo_write', { todos: [] })).toBe('exclusive')
    } finally {
      await h.cleanup()
    }
  })

  it('a tool set to false is left out, and disposing the plugin unregisters every tool (effects)', async () => {
    const ctx = new Context()
    await ctx.plugin(ToolsPlugin)
    const fiber = await ctx.plugin(BuiltinToolsPlugin, { bash: false, grep: false })
    expect(ctx.tools.list().map((tool) => tool.name)).toEqual(['edit', 'glob', 'read', 'todo_write', 'write'])
    await fiber.dispose()
    expect(ctx.tools.list()).toEqual([])
  })

  it('tool configs reach the tools (descriptions state the configured limits)', async () => {
    const h = await toolsHarness({ read: { maxLines: 10 }, glob: { maxResults: 7 } })
    try {
      expect(h.ctx.tools.get('read')!.description).toContain('At most 10 lines')
      expect(h.ctx.tools.get('glob')!.description).toContain('at most 7 paths')
    } finally {
      await h.cleanup()
    }
  })
})

describe('output spill', () => {
  it('keeps text within 50 KB as is', async () => {
    const text = 'a'.repeat(SPILL_THRESHOLD_BYTES)
    expect(await spillIfLarge(text, 'test')).toEqual({ text })
  })

  it('replaces larger text with a preview and the path of a 0600 file in a private 0700 folder', async () => {
    const text = 'line\n'.repeat(20_000)
    const result = await spillIfLarge(text, 'test')
    expect(result.path).toBeDefined()
    expect(await readFile(result.path!, 'utf8')).toBe(text)
    expect(statSync(result.path!).mode & 0o777).toBe(0o600)
    expect(statSync(dirname(result.path!)).mode & 0o777).toBe(0o700)
    expect(result.text.startsWith('line\nline\n')).toBe(true)
    expect(result.text).toContain(`${text.length} bytes in total; the full output is saved to ${result.path}`)
    expect(Buffer.byteLength(result.text)).toBeLessThan(SPILL_THRESHOLD_BYTES)
  })

  it('spillOutput spills each large text block and lists the files in meta.spilled', async () => {
    const output = await spillOutput({ content: [{ type: 'text', text: 'small' }, { type: 'text', text: 'x'.repeat(60_000) }], meta: { kept: 1 } }, 'test')
    expect(output.content[0]).toEqual({ type: 'text', text: 'small' })
    const meta = output.meta as { kept: number; spilled: string[] }
    expect(meta.kept).toBe(1)
    expect(meta.spilled).toHaveLength(1)
    expect((output.content[1] as { text: string }).text).toContain(meta.spilled[0])
  })
})
