/**
 * Runs product-subagent calls under a real sandbox (bubblewrap) and prints their results as one
 * JSON line. Run as a child so a test can run it under another uid. Argument: a JSON list of runs
 * `{ product: 'codex' | 'claude', mode, cwd, tool }`.
 */
import { Context } from 'cordis'
import { SessionsServicePlugin } from '../src/session/index.js'
import { ToolsPlugin } from '../src/tools/index.js'
import { SandboxPlugin } from '../src/sandbox/service.js'
import { ClaudeCodeSubagentPlugin, CodexSubagentPlugin, type ProductToolConfig } from '../src/product-subagents/index.js'
import type { SandboxMode } from '../src/sandbox/modes.js'

export interface SandboxedRun {
  readonly product: 'codex' | 'claude'
  readonly mode: SandboxMode
  readonly cwd: string
  readonly tool: ProductToolConfig
}

const runs = JSON.parse(process.argv[2]!) as SandboxedRun[]
const results: { isError: boolean; text: string }[] = []
for (const run of runs) {
  const ctx = new Context()
  const plugin = run.product === 'codex' ? CodexSubagentPlugin : ClaudeCodeSubagentPlugin
  for (const fiber of [ctx.plugin(SessionsServicePlugin), ctx.plugin(ToolsPlugin), ctx.plugin(SandboxPlugin, { workspaceRoot: run.cwd, mode: run.mode, shellHost: false }), ctx.plugin(plugin, { tools: [run.tool] })]) await fiber.await()
  const session = ctx.sessions.create({ cwd: run.cwd })
  const name = run.product === 'codex' ? 'subagent_codex' : 'subagent_claude_code'
  const record = await ctx.tools.execute({ callId: 'c1', name, arguments: JSON.stringify({ description: 'probe', prompt: 'Say it.' }) }, { cwd: run.cwd, signal: new AbortController().signal, session })
  results.push({ isError: record.isError, text: record.content.map(part => part.type === 'text' ? part.text : '').join('') })
}
process.stdout.write(`${JSON.stringify({ uid: process.getuid?.(), results })}\n`)
process.exit(0)
