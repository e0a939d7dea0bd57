/**
 * The `subagent-codex` and `subagent-claude-code` rows: each registers one tool per configured
 * entry (default one, named after the product). Nothing runs until the model calls a tool; every
 * registration is an effect of the row, so unloading it removes the tools and stops its children.
 */
import type { Context } from 'cordis'
import { serviceLookup } from '../kernel/index.js'
import type { JobsService } from '../tools/jobs.js'
import '../tools/api.js'
import type { ProductDriver, ProductToolConfig } from './api.js'
import { claudeCodeDriver } from './claude-code.js'
import { codexDriver } from './codex.js'
import { productTool } from './tool.js'

export interface ProductSubagentConfig {
  /** The tools this row offers (default: one with the product's defaults). */
  readonly tools?: readonly ProductToolConfig[]
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/

function register(ctx: Context, driver: ProductDriver, config: ProductSubagentConfig): void {
  const tools = config.tools ?? [{}]
  if (!Array.isArray(tools) || tools.length === 0) throw new Error(`${driver.defaultTool}: tools must be a non-empty list`)
  const names = new Set<string>()
  const jobs = serviceLookup(ctx, 'jobs') as () => JobsService | undefined
  // Unloading the row stops the children it started.
  const unloaded = new AbortController()
  ctx.effect(() => () => unloaded.abort(), 'product subagent children')
  for (const entry of tools) {
    const name = entry.name ?? driver.defaultTool
    if (!TOOL_NAME.test(name)) throw new Error(`${driver.defaultTool}: tool name ${JSON.stringify(name)} must be 1-64 letters, digits, _ or -`)
    if (names.has(name)) throw new Error(`${driver.defaultTool}: two tools are named "${name}"`)
    names.add(name)
    ctx.effect(() => ctx.tools.register(productTool(ctx, driver, { ...entry, name }, jobs, unloaded.signal)), `tool ${name}`)
  }
}

export class CodexSubagentPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context, config: ProductSubagentConfig = {}) {
    register(ctx, codexDriver, config)
  }
}

export class ClaudeCodeSubagentPlugin {
  static readonly inject = ['tools']
  constructor(ctx: Context, config: ProductSubagentConfig = {}) {
    register(ctx, claudeCodeDriver, config)
  }
}
