/**
 * The `lsp` tool against the real typescript-language-server on a small TypeScript project:
 * navigation, hover, symbols, diagnostics (also appended to edit results), and a server killed
 * in the middle of a call.
 */
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ToolsPlugin } from '../tools/index.js'
import { BuiltinToolsPlugin } from '../tools/builtin/index.js'
import type { ToolResultRecord } from '../tools/api.js'
import { alive, HAS_TS_SERVER, MAIN_TS, TS_SERVER_MISSING, tsProject, until } from '../../test-support/lsp.js'
import { LspPlugin, type LspPluginConfig } from './index.js'

if (!HAS_TS_SERVER) console.warn(`skipping the lsp tool tests: ${TS_SERVER_MISSING}`)

const text = (record: ToolResultRecord) => record.content.map(block => block.type === 'text' ? block.text : '').join('\n')

interface Harness {
  readonly ctx: Context
  readonly plugin: LspPlugin
  call(name: string, args: unknown): Promise<ToolResultRecord>
  dispose(): Promise<void>
}

async function harness(cwd: string, config: LspPluginConfig = {}): Promise<Harness> {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  await ctx.plugin(BuiltinToolsPlugin)
  let plugin: LspPlugin | undefined
  const fiber = ctx.plugin({ name: 'lsp-under-test', inject: ['tools'], apply: (inner: Context) => { plugin = new LspPlugin(inner, config) } })
  await fiber.await()
  let calls = 0
  return {
    ctx,
    plugin: plugin!,
    call: (name, args) => ctx.tools.execute({ callId: `call-${++calls}`, name, arguments: JSON.stringify(args) }, { cwd, signal: new AbortController().signal }),
    async dispose() {
      await fiber.dispose()
    },
  }
}

describe.skipIf(!HAS_TS_SERVER)('lsp with typescript-language-server', () => {
  let dir: string
  let h: Harness
  let onSent: ((method: string, pid: number | undefined) => void) | undefined
  beforeAll(async () => {
    dir = tsProject()
    h = await harness(dir, { restartDelayMs: 10, sent: (method, pid) => onSent?.(method, pid) })
  })
  afterAll(async () => {
    await h.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it('goToDefinition lands on the class declaration in the other file', async () => {
    const record = await h.call('lsp', { operation: 'goToDefinition', file_path: 'src/main.ts', line: 3, character: 20 })
    expect(record.isError).toBe(false)
    expect(text(record).split('\n')[0]).toBe('src/shapes.ts:5:14')
  }, 60_000)

  it('findReferences lists the declaration and every use, with the line', async () => {
    const record = await h.call('lsp', { operation: 'findReferences', file_path: 'src/shapes.ts', line: 12, character: 14 })
    expect(text(record)).toBe([
      'src/shapes.ts:12:14: export const unit: number = 1',
      "src/main.ts:1:18: import { Square, unit } from './shapes.js'",
      'src/main.ts:3:27: const square = new Square(unit)',
      'src/main.ts:4:46: export const total: number = square.area() + unit',
    ].join('\n'))
  }, 60_000)

  it('goToImplementation finds the class behind an interface', async () => {
    const record = await h.call('lsp', { operation: 'goToImplementation', file_path: 'src/shapes.ts', line: 1, character: 18 })
    expect(text(record)).toBe('src/shapes.ts:5:14')
  }, 60_000)

  it('hover shows the type as plain text', async () => {
    const record = await h.call('lsp', { operation: 'hover', file_path: 'src/main.ts', line: 3, character: 7 })
    expect(text(record)).toBe('const square: Square')
  }, 60_000)

  it('documentSymbol is an indented list', async () => {
    const record = await h.call('lsp', { operation: 'documentSymbol', file_path: 'src/shapes.ts', line: 1, character: 1 })
    const lines = text(record).split('\n')
    expect(lines).toContain('interface Shape 1:18')
    expect(lines).toContain('  method area 2:3')
    expect(lines).toContain('class Square 5:14')
    expect(lines).toContain('  property side 6:24')
    expect(lines).toContain('constant unit 12:14')
  }, 60_000)

  it('workspaceSymbol looks up the identifier at the cursor', async () => {
    const record = await h.call('lsp', { operation: 'workspaceSymbol', file_path: 'src/main.ts', line: 1, character: 11 })
    expect(text(record)).toContain('src/shapes.ts:5:1 class Square')
  }, 60_000)

  it('diagnostics report a type broken on disk since the last query', async () => {
    expect(text(await h.call('lsp', { operation: 'diagnostics', file_path: 'src/main.ts', line: 1, character: 1 }))).toBe('No diagnostics in src/main.ts.')
    writeFileSync(join(dir, 'src', 'main.ts'), MAIN_TS.replace('total: number', 'total: string'))
    try {
      const record = await h.call('lsp', { operation: 'diagnostics', file_path: 'src/main.ts', line: 1, character: 1 })
      expect(text(record)).toBe("src/main.ts:4:14 error Type 'number' is not assignable to type 'string'. (typescript 2322)")
    } finally {
      writeFileSync(join(dir, 'src', 'main.ts'), MAIN_TS)
    }
  }, 60_000)

  it('a server killed in the middle of a call gives a clear error, and the next call starts it again', async () => {
    await h.call('lsp', { operation: 'hover', file_path: 'src/main.ts', line: 3, character: 7 })
    const [before] = h.plugin.queries.pool.running()
    expect(before?.pid).toBeTypeOf('number')
    // Stopped first, so it cannot answer before the kill lands; killed once the request is written.
    process.kill(-before!.pid!, 'SIGSTOP')
    onSent = (method, pid) => { if (method === 'textDocument/references' && pid === before!.pid) process.kill(-pid!, 'SIGKILL') }
    const record = await h.call('lsp', { operation: 'findReferences', file_path: 'src/shapes.ts', line: 12, character: 14 })
    expect(record.isError).toBe(true)
    expect(text(record)).toMatch(/^Error: lsp: the typescript language server exited \(signal SIGKILL\) during textDocument\/references.*; the next call starts it again$/)
    expect(record.error).toEqual({ name: 'LspError', code: 'LSP_SERVER_FAILED' })
    await until(() => !alive(before!.pid!), 'the killed server to be gone')
    const again = await h.call('lsp', { operation: 'goToDefinition', file_path: 'src/main.ts', line: 3, character: 20 })
    expect(text(again).split('\n')[0]).toBe('src/shapes.ts:5:14')
    const [after] = h.plugin.queries.pool.running()
    expect(after!.pid).not.toBe(before!.pid)
  }, 60_000)
})

describe.skipIf(!HAS_TS_SERVER)('lsp diagnostics in edit results (diagnosticsOnEdit)', () => {
  let dir: string
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it('an edit that breaks a type gets the diagnostics appended; a clean one gets none; unloading stops the server', async () => {
    dir = tsProject()
    const h = await harness(dir, { diagnosticsOnEdit: true })
    try {
      await h.call('read', { file_path: 'src/main.ts' })
      const broken = await h.call('edit', { file_path: 'src/main.ts', old_string: 'total: number', new_string: 'total: string' })
      expect(broken.isError).toBe(false)
      expect(broken.content).toHaveLength(2)
      expect(text(broken)).toContain("Diagnostics (lsp):\nsrc/main.ts:4:14 error Type 'number' is not assignable to type 'string'. (typescript 2322)")
      const fixed = await h.call('edit', { file_path: 'src/main.ts', old_string: 'total: string', new_string: 'total: number' })
      expect(fixed.content).toHaveLength(1)
      const written = await h.call('write', { file_path: 'src/extra.ts', content: 'export const n: number = "x"\n' })
      expect(text(written)).toContain("src/extra.ts:1:14 error Type 'string' is not assignable to type 'number'.")
    } finally {
      const pids = h.plugin.queries.pool.running().map(server => server.pid!)
      expect(pids).toHaveLength(1)
      await h.dispose()
      await until(() => pids.every(pid => !alive(pid)), 'the servers to stop with the plugin')
    }
  }, 60_000)
})
