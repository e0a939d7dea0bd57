/**
 * The `lsp` plugin row: registers the `lsp` tool and, with `diagnosticsOnEdit`, appends the
 * diagnostics of a file write or edit changed to their result (around the tool body,
 * `tools/execute`). No server starts until a call needs one; unloading the plugin stops them all.
 */
import type { Context } from 'cordis'
import type { TextBlock } from '../llm/types.js'
import type { ToolContext, ToolExecution, ToolResultRecord } from '../tools/api.js'
import { sandboxingOf } from '../tools/builtin/sandboxing.js'
import { checkSettings, type LspSettings } from './config.js'
import type { PoolOptions } from './pool.js'
import { LspQueries } from './queries.js'
import { createLspTool } from './tool.js'

export interface LspPluginConfig extends LspSettings, PoolOptions {
  /** The tool's own deadline (default 120000 ms: a first call starts the server). */
  readonly toolTimeoutMs?: number
}

const EDITING_TOOLS = new Set(['write', 'edit'])

export class LspPlugin {
  static readonly inject = ['tools']
  readonly queries: LspQueries

  constructor(ctx: Context, config: LspPluginConfig = {}) {
    checkSettings(config)
    const queries = this.queries = new LspQueries(config, sandboxingOf(ctx))
    ctx.effect(() => ctx.tools.register(createLspTool(queries, config.toolTimeoutMs)))
    ctx.effect(() => () => { void queries.dispose() })
    if (config.diagnosticsOnEdit === true) {
      ctx.on('tools/execute', async (execution: ToolExecution, context: ToolContext, next: () => Promise<ToolResultRecord>) => {
        const record = await next()
        if (!EDITING_TOOLS.has(execution.name) || record.isError) return record
        const path = (record.meta as { path?: unknown } | undefined)?.path
        if (typeof path !== 'string' || !queries.handles(path)) return record
        const note = await queries.afterWrite(path, context)
        if (note === undefined) return record
        const block: TextBlock = { type: 'text', text: note }
        return { ...record, content: [...record.content, block] }
      })
    }
  }
}
