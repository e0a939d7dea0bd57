/**
 * A harness for built-in tool tests: a real `ctx.tools` (ToolsPlugin) with the built-in tools,
 * a temp working directory, and calls going through the full pipeline (validation, errors as
 * records), exactly as the agent loop makes them.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { ToolResultRecord } from '../src/tools/api.js'
import { ToolsPlugin } from '../src/tools/index.js'
import { BuiltinToolsPlugin, WebFetchToolPlugin, type BuiltinToolsConfig, type WebFetchToolConfig } from '../src/tools/builtin/index.js'
import type { Session } from '../src/session/api.js'

export interface CallOptions {
  readonly signal?: AbortSignal
  readonly session?: Session
  readonly cwd?: string
}

export interface ToolsHarness {
  readonly ctx: Context
  readonly cwd: string
  call(name: string, args: unknown, options?: CallOptions): Promise<ToolResultRecord>
  cleanup(): Promise<void>
}

export async function toolsHarness(config: BuiltinToolsConfig = {}, webFetch?: WebFetchToolConfig): Promise<ToolsHarness> {
  const ctx = new Context()
  await ctx.plugin(ToolsPlugin)
  await ctx.plugin(BuiltinToolsPlugin, config)
  if (webFetch) await ctx.plugin(WebFetchToolPlugin, webFetch)
  const cwd = await mkdtemp(join(tmpdir(), 'dsh-builtin-test-'))
  let calls = 0
  return {
    ctx,
    cwd,
    call(name, args, options = {}) {
      return ctx.tools.execute(
        { callId: `call-${++calls}`, name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
        {
          cwd: options.cwd ?? cwd,
          signal: options.signal ?? new AbortController().signal,
          ...(options.session ? { session: options.session } : {}),
        },
      )
    },
    async cleanup() {
      await rm(cwd, { recursive: true, force: true })
    },
  }
}

/** The concatenated text blocks of a result. */
export function resultText(record: ToolResultRecord): string {
  return record.content.map((block) => (block.type === 'text' ? block.text : '[image]')).join('')
}
