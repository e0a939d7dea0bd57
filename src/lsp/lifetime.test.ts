/**
 * The lsp tool's failure paths, with a fake server (test-support/lsp-fake-server.mjs) that hangs
 * or crashes at start, a sandbox runner wrapping the server, and hostile arguments.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, chmodSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ToolsPlugin } from '../tools/index.js'
import type { ToolResultRecord } from '../tools/api.js'
import { SandboxPlugin } from '../sandbox/index.js'
import { commandRunner } from '../sandbox/runner.js'
import { alive, fakeServer, until } from '../../test-support/lsp.js'
import { LspPlugin, type LspPluginConfig } from './index.js'

const text = (record: ToolResultRecord) => record.content.map(block => block.type === 'text' ? block.text : '').join('\n')

let dir: string
let ctx: Context
let plugin: LspPlugin
let fiber: { dispose(): unknown } | undefined
let calls = 0

async function load(config: LspPluginConfig, setup?: (ctx: Context) => Promise<void>): Promise<void> {
  ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  await setup?.(ctx)
  const loaded = ctx.plugin({ name: 'lsp-under-test', inject: ['tools'], apply: (inner: Context) => { plugin = new LspPlugin(inner, config) } })
  await loaded.await()
  fiber = loaded
}

const call = (args: unknown, cwd = dir) => ctx.tools.execute({ callId: `call-${++calls}`, name: 'lsp', arguments: JSON.stringify(args) }, { cwd, signal: new AbortController().signal })
const starts = () => existsSync(join(dir, 'starts.log')) ? readFileSync(join(dir, 'starts.log'), 'utf8').trim().split('\n') : []

beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-lsp-fake-')))
  writeFileSync(join(dir, 'a.fake'), 'const value = 1\nvalue\n')
})
afterEach(async () => {
  await fiber?.dispose()
  await plugin?.queries.dispose()
  rmSync(dir, { recursive: true, force: true })
})

describe('lsp with a fake server', () => {
  it('lists locations up to the limit, then the recorded omitted line', async () => {
    await load({ servers: fakeServer('answer'), maxLocations: 1 })
    const record = await call({ operation: 'goToDefinition', file_path: 'a.fake', line: 1, character: 7 })
    expect(record.isError).toBe(false)
    expect(text(record)).toBe('a.fake:1:7\n… 1 more location omitted (limit 1).')
  })

  it('a server that hangs gets the request deadline, is stopped, and the next call starts a new one', async () => {
    await load({ servers: fakeServer('hang', join(dir, 'starts.log')), requestTimeoutMs: 300, restartDelayMs: 1 })
    const first = await call({ operation: 'goToDefinition', file_path: 'a.fake', line: 1, character: 7 })
    expect(first.isError).toBe(true)
    expect(text(first)).toBe('Error: lsp: the fake language server did not answer textDocument/definition within 300 ms; it was stopped and the next call starts it again')
    const [pid] = starts().map(line => Number(line.split(' ')[1]))
    await until(() => !alive(pid!), 'the hung server to be killed')
    const second = await call({ operation: 'hover', file_path: 'a.fake', line: 1, character: 7 })
    expect(text(second)).toContain('did not answer textDocument/hover within 300 ms')
    expect(starts()).toHaveLength(2)
  })

  it('a server that crashes at start is tried maxStarts times with growing waits, then given up with its stderr', async () => {
    const waits: number[] = []
    await load({ servers: fakeServer('crash', join(dir, 'starts.log')), maxStarts: 3, restartDelayMs: 5, sleep: async (ms) => { waits.push(ms) } })
    const first = await call({ operation: 'goToDefinition', file_path: 'a.fake', line: 1, character: 7 })
    expect(first.isError).toBe(true)
    expect(text(first)).toBe('Error: lsp: the fake language server failed 3 times in a row and was given up (last: exited with code 3 (stderr: fake server: cannot start)); fix it or lsp.servers.fake in settings.yaml (docs/lsp.md)')
    expect(first.error).toEqual({ name: 'LspError', code: 'LSP_SERVER_FAILED' })
    expect(starts()).toHaveLength(3)
    expect(waits).toEqual([5, 20])
    // Given up: the next call says so at once, starting nothing.
    const second = await call({ operation: 'goToDefinition', file_path: 'a.fake', line: 1, character: 7 })
    expect(text(second)).toBe(text(first))
    expect(starts()).toHaveLength(3)
  })

  it('runs the server under the sandbox runner (read-only profile) when the session is confined', async () => {
    const log = join(dir, 'runner.log')
    const wrapper = join(dir, 'runner.sh')
    // A runner command: argv is `runner.sh --mode M --root R -- program args...`.
    writeFileSync(wrapper, `#!/bin/sh\necho "$2 $4" >> '${log}'\nshift 5\nexec "$@"\n`)
    chmodSync(wrapper, 0o755)
    await load({ servers: fakeServer('answer') }, async (ctx) => {
      await ctx.plugin(SandboxPlugin, { runner: commandRunner({ command: [wrapper] }), mode: 'workspace-write', workspaceRoot: dir }).await()
    })
    const record = await call({ operation: 'goToDefinition', file_path: 'a.fake', line: 1, character: 7 })
    expect(text(record)).toBe('a.fake:1:7\na.fake:2:1')
    expect(readFileSync(log, 'utf8').trim().split('\n')).toContain(`read-only ${dir}`)
  })

  it('the server gets no credentials of dsh\'s environment', async () => {
    await load({ servers: fakeServer('answer') })
    process.env.DEEPSEEK_API_KEY = 'sk-test-not-for-servers'
    try {
      expect(text(await call({ operation: 'hover', file_path: 'a.fake', line: 1, character: 1 }))).toBe('DEEPSEEK_API_KEY unset')
    } finally {
      delete process.env.DEEPSEEK_API_KEY
    }
  })

  it('a cancelled call ends at once, without waiting for the server', async () => {
    const controller = new AbortController()
    await load({ servers: fakeServer('hang'), requestTimeoutMs: 60_000, sent: () => controller.abort() })
    const record = await ctx.tools.execute({ callId: 'cancelled', name: 'lsp', arguments: JSON.stringify({ operation: 'hover', file_path: 'a.fake', line: 1, character: 1 }) }, { cwd: dir, signal: controller.signal })
    expect(record.isError).toBe(true)
    expect(text(record)).toMatch(/cancelled|aborted/)
  })

  it('unloading the plugin stops its servers', async () => {
    await load({ servers: fakeServer('answer', join(dir, 'starts.log')) })
    await call({ operation: 'goToDefinition', file_path: 'a.fake', line: 1, character: 7 })
    const [pid] = starts().map(line => Number(line.split(' ')[1]))
    expect(alive(pid!)).toBe(true)
    await fiber!.dispose()
    await until(() => !alive(pid!), 'the server to stop with its plugin')
  })
})

describe('lsp refuses bad calls clearly', () => {
  beforeEach(async () => { await load({ servers: fakeServer('answer') }) })

  it('a file outside the workspace', async () => {
    const outside = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-lsp-outside-')))
    try {
      writeFileSync(join(outside, 'b.fake'), 'x\n')
      const record = await call({ operation: 'hover', file_path: join(outside, 'b.fake'), line: 1, character: 1 })
      expect(text(record)).toBe(`Error: lsp: ${join(outside, 'b.fake')} is outside the workspace (${dir}); the language servers answer for the workspace's files only`)
      expect(record.error?.code).toBe('LSP_OUTSIDE_WORKSPACE')
      // A link inside the workspace to a file outside it is outside too.
      mkdirSync(join(dir, 'sub'))
      const { symlinkSync } = await import('node:fs')
      symlinkSync(join(outside, 'b.fake'), join(dir, 'sub', 'link.fake'))
      expect((await call({ operation: 'hover', file_path: 'sub/link.fake', line: 1, character: 1 })).error?.code).toBe('LSP_OUTSIDE_WORKSPACE')
    } finally {
      rmSync(outside, { recursive: true, force: true })
    }
  })

  it('a file on the sandbox\'s deny-read list, as read refuses it', async () => {
    await fiber?.dispose()
    await load({ servers: fakeServer('answer') }, async (ctx) => {
      // The workspace is the home folder here: its ~/.ssh is hidden.
      await ctx.plugin(SandboxPlugin, { mode: 'workspace-write', workspaceRoot: dir, home: dir, dshHome: join(dir, '.dsh') }).await()
    })
    mkdirSync(join(dir, '.ssh'))
    writeFileSync(join(dir, '.ssh', 'key.fake'), 'secret\n')
    const record = await call({ operation: 'hover', file_path: '.ssh/key.fake', line: 1, character: 1 })
    expect(text(record)).toBe(`Error: lsp: .ssh/key.fake is hidden from tools by the sandbox's deny-read list (rule ~/.ssh; sandbox.denyRead / sandbox.allowRead in settings.yaml; danger-full-access lifts it)`)
    expect(record.error?.code).toBe('FS_READ_DENIED')
  })

  it('a missing file, a line or character out of range', async () => {
    expect(text(await call({ operation: 'hover', file_path: 'missing.fake', line: 1, character: 1 }))).toBe(`Error: lsp: file not found: ${join(dir, 'missing.fake')}`)
    expect(text(await call({ operation: 'hover', file_path: 'a.fake', line: 9, character: 1 }))).toBe('Error: lsp: line 9 is past the end of a.fake (3 lines)')
    expect(text(await call({ operation: 'hover', file_path: 'a.fake', line: 2, character: 7 }))).toBe('Error: lsp: character 7 is past the end of line 2 of a.fake (5 UTF-16 code units; columns are one-based)')
  })

  it('a language with no server names the setting', async () => {
    writeFileSync(join(dir, 'c.py'), 'x = 1\n')
    const record = await call({ operation: 'goToDefinition', file_path: 'c.py', line: 1, character: 1 })
    expect(text(record)).toBe('Error: lsp: no language server is configured for .py files; add one under lsp.servers in settings.yaml (extensions, command, args; docs/lsp.md)')
    expect(record.error?.code).toBe('LSP_NO_SERVER')
  })

  it('a configured program that is not installed names where it looked and the setting', async () => {
    await plugin.queries.dispose()
    await load({ servers: { nope: { extensions: ['nope'], command: 'dsh-no-such-language-server' } } })
    writeFileSync(join(dir, 'd.nope'), 'x\n')
    const record = await call({ operation: 'hover', file_path: 'd.nope', line: 1, character: 1 })
    expect(text(record)).toBe("Error: lsp: dsh-no-such-language-server (the nope language server) was not found in dsh's node_modules/.bin or PATH; install it, or set lsp.servers.nope.command in settings.yaml (docs/lsp.md)")
  })

  it("a program in the workspace's own node_modules/.bin is never run: a cloned project cannot choose the code the lsp tool starts", async () => {
    await plugin.queries.dispose()
    await load({ servers: { planted: { extensions: ['planted'], command: 'dsh-planted-language-server' } } })
    const bin = join(dir, 'node_modules', '.bin')
    mkdirSync(bin, { recursive: true })
    const marker = join(dir, 'planted-ran')
    writeFileSync(join(bin, 'dsh-planted-language-server'), `#!/bin/sh\ntouch ${JSON.stringify(marker)}\n`, { mode: 0o755 })
    writeFileSync(join(dir, 'e.planted'), 'x\n')
    const record = await call({ operation: 'hover', file_path: 'e.planted', line: 1, character: 1 })
    expect(text(record)).toBe("Error: lsp: dsh-planted-language-server (the planted language server) was not found in dsh's node_modules/.bin or PATH; install it, or set lsp.servers.planted.command in settings.yaml (docs/lsp.md)")
    expect(existsSync(marker)).toBe(false)
  })

  it('invalid arguments', async () => {
    expect(text(await call({ operation: 'rename', file_path: 'a.fake', line: 1, character: 1 }))).toBe('Error: invalid arguments for lsp: operation: must be one of goToDefinition, findReferences, goToImplementation, hover, documentSymbol, workspaceSymbol, diagnostics, not "rename"')
    expect(text(await call({ operation: 'hover', file_path: 'a.fake', line: 0, character: 1 }))).toBe('Error: invalid arguments for lsp: line: must be a whole number from 1 (one-based), not 0')
    expect(text(await call({ operation: 'hover', file_path: 'a.fake', line: 1, character: 1.5 }))).toBe('Error: invalid arguments for lsp: character: must be a whole number from 1 (one-based), not 1.5')
    expect(text(await call({ operation: 'hover', file_path: '', line: 1, character: 1 }))).toBe('Error: invalid arguments for lsp: file_path: must be a non-empty path')
  })

  it('a malformed servers setting is refused at load', () => {
    expect(() => new LspPlugin(new Context() as never, { servers: { bad: { extensions: [], command: 'x' } } })).toThrow('lsp.servers.bad.extensions must be a non-empty list of file extensions')
  })
})
