/**
 * Product-subagent scenarios (INDEX.md tag `subagent-product`) in both suites: which product
 * tools the recording's composition had (its tool schemas), and, where the recording called
 * them, a stand-in CLI that speaks Codex's `exec --json` stream and ends each call as the
 * recording's call ended (its answer, or a failure with the recorded HTTP status). The
 * recordings ran a fixed in-process provider, not a CLI, so which product a diagnostic names is
 * not reproduced; tool-result text is not compared (isError is).
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from 'cordis'
import { ClaudeCodeSubagentPlugin, CodexSubagentPlugin } from '../product-subagents/index.js'
import type { ToolResultMessage, UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/types.js'
import type { ProductToolConfig } from '../product-subagents/index.js'

/** Tool names of the product rows: `subagent_codex`, `subagent_claude_code`, and named instances of either. */
const PRODUCT_TOOL = /^subagent_(codex|claude_code)(_[a-z0-9_]+)?$/

export function isProductTool(name: string): boolean {
  return PRODUCT_TOOL.test(name)
}

/** A settlement notice of a background job (ours: plugin `jobs`; the recording's: `tool-jobs`). */
export function isJobNotice(message: UserMessage): boolean {
  const source = message.source as { kind: string; plugin?: string; form?: string }
  return source.kind === 'plugin' && (source.plugin === 'jobs' || source.plugin === 'tool-jobs') && source.form === 'notice'
}

/** What of a job notice is compared: the job it names (the wording is product text). */
export function jobNoticeProjection(message: UserMessage): { job: string | undefined } {
  const first = message.content[0]
  return { job: first?.type === 'text' ? /background job (\S+)/i.exec(first.text)?.[1] : undefined }
}

export interface ProductRows {
  /** Per product row, the tool names the recording offered. */
  readonly codex: readonly string[]
  readonly claudeCode: readonly string[]
  /** How each recorded product call ended, in call order. */
  readonly outcomes: readonly ProductOutcomeScript[]
}

export type ProductOutcomeScript = { readonly text: string } | { readonly httpStatus: number | undefined; readonly partial: string }

/** The product tools of a scenario's composition, or undefined when it had none. */
export function recordedProductRows(dir: string, events: readonly SessionEvent[]): ProductRows | undefined {
  const path = join(dir, 'tool-schemas.expected.json')
  const names = existsSync(path) ? ((JSON.parse(readFileSync(path, 'utf8')) as { initial?: { name: string }[] }).initial ?? []).map(tool => tool.name).filter(isProductTool) : []
  if (names.length === 0) return undefined
  const calls = new Map<string, string>()
  const outcomes: ProductOutcomeScript[] = []
  for (const event of events) {
    if (event.type === 'tool/call') {
      const data = event.data as { callId: string; name: string }
      if (isProductTool(data.name)) calls.set(data.callId, data.name)
    }
    if (event.type === 'tool/result') {
      const block = (event.data as { message: ToolResultMessage }).message.content[0]!
      if (!calls.has(block.toolCallId)) continue
      const text = block.content.map(part => part.type === 'text' ? part.text : '').join('')
      outcomes.push(scriptOf(text, block.isError, events))
    }
  }
  return { codex: names.filter(name => name.startsWith('subagent_codex')), claudeCode: names.filter(name => name.startsWith('subagent_claude_code')), outcomes }
}

/** A background start's outcome is its job's: the status the recorded notice or job_output gave. */
function scriptOf(text: string, isError: boolean, events: readonly SessionEvent[]): ProductOutcomeScript {
  const started = /^started background subagent job (\S+)$/.exec(text)?.[1]
  let outcome = text
  if (started !== undefined) {
    const notice = events.map(event => event.type === 'user/message' ? (event.data as UserMessage) : undefined)
      .find(message => message !== undefined && isJobNotice(message) && jobNoticeProjection(message).job === started)
    const first = notice?.content[0]
    outcome = first?.type === 'text' ? first.text : ''
    isError = /status: failed/.test(outcome)
  }
  if (!isError) return { text: outcome }
  const status = /HTTP status: (\d{3})/.exec(outcome)?.[1]
  const partial = /Partial output before the run ended:\n([\s\S]*)$/.exec(outcome)?.[1] ?? ''
  return { httpStatus: status === undefined ? undefined : Number(status), partial }
}

/** A stand-in for `codex exec --json`: call N ends as outcome N of `outcomes.json` beside it. */
const STAND_IN = `#!/usr/bin/env node
const { readFileSync, writeFileSync, existsSync } = require('node:fs')
const { join } = require('node:path')
const here = __dirname
const counter = join(here, 'calls')
const n = existsSync(counter) ? Number(readFileSync(counter, 'utf8')) : 0
writeFileSync(counter, String(n + 1))
const outcomes = JSON.parse(readFileSync(join(here, 'outcomes.json'), 'utf8'))
const outcome = outcomes[n]
const say = event => process.stdout.write(JSON.stringify(event) + '\\n')
say({ type: 'thread.started', thread_id: 'stand-in' })
say({ type: 'turn.started' })
if (outcome === undefined) { say({ type: 'turn.failed', error: { message: 'no recorded outcome for this call' } }); process.exit(1) }
if (typeof outcome.text === 'string') {
  say({ type: 'item.completed', item: { id: 'item_0', type: 'agent_message', text: outcome.text } })
  say({ type: 'turn.completed', usage: {} })
  process.exit(0)
}
if (outcome.partial) say({ type: 'item.completed', item: { id: 'item_0', type: 'agent_message', text: outcome.partial } })
const message = outcome.httpStatus === undefined ? 'the recorded run failed' : 'unexpected status ' + outcome.httpStatus
say({ type: 'turn.failed', error: { message } })
process.exit(1)
`

/** Writes the stand-in CLI into `folder`; the tool configs of the rows (all Codex-shaped). */
export function productRowConfigs(rows: ProductRows, folder: string): { codex: ProductToolConfig[]; claudeCode: ProductToolConfig[] } {
  const script = join(folder, 'codex-stand-in.cjs')
  writeFileSync(script, STAND_IN)
  chmodSync(script, 0o755)
  writeFileSync(join(folder, 'outcomes.json'), JSON.stringify(rows.outcomes))
  const command = [process.execPath, script]
  return {
    codex: rows.codex.map(name => ({ name, command })),
    // A Claude Code row with no calls recorded never starts its CLI.
    claudeCode: rows.claudeCode.map(name => ({ name })),
  }
}

/**
 * The recordings' provider settled at once, so a background call's job had ended (its notice
 * queued) before the call's result was committed. The replay holds such a call's result until
 * its job has ended, which gives the same order.
 */
export function holdBackgroundProductCalls(ctx: Context): void {
  ctx.on('tools/execute', async (execution, _context, next) => {
    const record = await next()
    if (!isProductTool(execution.name)) return record
    const id = (record.meta as { job?: { id?: unknown } } | undefined)?.job?.id
    if (typeof id !== 'string') return record
    const session = _context.session
    const running = session === undefined ? undefined : (ctx.get('jobs') as Context['jobs'] | undefined)?.list(session.id).find(job => job.id === id)
    if (running === undefined || (running.status !== 'running' && running.status !== 'stopping')) return record
    await new Promise<void>((resolve) => {
      const off = ctx.on('jobs/changed', (owner, job) => {
        if (owner !== session!.id || job.id !== id || job.status === 'running' || job.status === 'stopping') return
        off()
        resolve()
      })
    })
    return record
  })
}

/** The replay suite's product rows, their calls served by the stand-in (in a folder removed with `ctx`). */
export function productPlugins(ctx: Context, products: ProductRows | undefined): ReturnType<Context['plugin']>[] {
  if (products === undefined || products.outcomes.length === 0) return []
  return [ctx.plugin({
    name: 'replay-product-subagents',
    inject: ['tools'],
    apply(inner: Context) {
      const folder = mkdtempSync(join(tmpdir(), 'dsh-replay-product-'))
      inner.effect(() => () => rmSync(folder, { recursive: true, force: true }), 'stand-in folder')
      const rows = productRowConfigs(products, folder)
      holdBackgroundProductCalls(inner)
      if (rows.codex.length > 0) inner.plugin(CodexSubagentPlugin, { tools: rows.codex })
      if (rows.claudeCode.length > 0) inner.plugin(ClaudeCodeSubagentPlugin, { tools: rows.claudeCode })
    },
  })]
}

/** The protocol suite's patch rows: the recorded product rows, the stand-in written into `folder`. */
export function productPatchRows(products: ProductRows, folder: string): unknown[] {
  const rows = productRowConfigs(products, folder)
  return [{ insert: [
    ...(rows.codex.length > 0 ? [{ id: 'replay-subagent-codex', name: 'subagent-codex', config: { tools: rows.codex } }] : []),
    ...(rows.claudeCode.length > 0 ? [{ id: 'replay-subagent-claude-code', name: 'subagent-claude-code', config: { tools: rows.claudeCode } }] : []),
  ] }]
}
